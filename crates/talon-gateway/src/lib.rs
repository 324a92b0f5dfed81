//! The Talon gateway: the protocol's method table served over one port
//! (HTTP calls, Server-Sent Events, WebSocket), behind tokens and scopes,
//! over the durable store, with the node's run engine executing agent
//! runs ([`runs`]) on a [`talon_runtime::Host`].
//!
//! Every request meets the Host, Origin and CORS guard first
//! (`auth::guard`); calls then go through one path for every transport
//! (`call::serve_call`: token, method, scope, the store's health, params
//! decoded against their caps, dispatch). Records are looked up as the
//! caller may see them (`auth::owned`: a bound token sees its subject's and
//! agents' only). Open streams and sockets end with their token
//! (`auth::revocation`). Environments take only what the admin's
//! [`EnvironmentPolicy`] names. The threat model is in ARCHITECTURE.md.
//!
//! Operating it: every request gets the gateway's own request id
//! (`req_<24 hex>`, a client's `x-request-id` only logged beside it),
//! returned on every response; at `info` each
//! request and each WebSocket call logs an access line (target
//! `talon::access`) and each step of a run one line (target `talon::run`:
//! created, with the creating request's id; started; waiting for an
//! approval or an answer; resolved; finished, with status, duration and
//! error code) (`observe`). `GET /metrics` serves Prometheus text to a
//! token holding `metrics.read` (`observe::metrics`): requests by method and
//! status and their latency, WebSocket calls by outcome, open SSE streams
//! and sockets, runs created, ended by status and their duration, the
//! queue's depth, running and waiting runs, pending approvals, the latency
//! of the appends the gateway waits on, store faults and the store's
//! health.
//!
//! # Modules
//!
//! Each layer imports only the layers under it (one small circle is left,
//! inside the engine: `runs/exec.rs` and `runs/start.rs`):
//!
//! ```text
//! lib       start, Running, GatewayConfig
//! router    every route ─► the handlers, auth::guard, observe::access
//! handlers  transport/, openai/, observe::scrape ─► call, auth, state
//!           api/ (impl Handler for Api) ─► state, auth, schedules/, tasks/, runs/
//! call      serve_call ─► state, auth::identity; dispatch reaches api/ through the trait
//! auth      caller, stream_caller, guard ─► state
//! state     Shared, Api ─► schedules/, runs/, tail, limits/, observe::metrics, openai::policy,
//!           auth::{tokens, revocation, browsers}
//! schedules/ the scheduler: claims each due slot once, starts its run ─► tasks/, runs/
//! tasks/    the ledger: sub-agents, processes, the follower, notices ─► runs/, error
//! runs/     the engine ─► observe, memory, error, talon_environments
//! leaves    error, frame, memory, limits/, observe::metrics, auth::identity
//! ```
//!
//! - `tasks/`: background tasks (see its doc): the sub-agent tools and the
//!   background processes' `process` tool and ledger side the engine adds
//!   to a run through `Engine::add_tools` (so the engine imports nothing
//!   above it; it holds the node's process registry), the follower `start`
//!   spawns, and the notices.
//! - `schedules/`: the scheduler `start` spawns (each firing a `cron` task
//!   in the ledger) and the handle `Api` wakes when a schedule changes.
//! - `state`: `Shared`, what every route and every method shares, and
//!   `Api`, the method table's part of it (the store, the config's agents,
//!   the engine, the tail). A leaf as axum's state is: it imports no handler,
//!   router or transport module; they import it.
//! - `router`: every route to its handler, behind the guard and the access
//!   log; only `start` imports it.
//! - `call`: `serve_call`, the call path of every transport for an
//!   authenticated caller: a ticket calls nothing; then the method (unknown:
//!   `not_found`), then the scope the table names for it (`forbidden`,
//!   before the params are read), the store's health for a write, the
//!   quotas for what stores, then the params (strictly decoded), then
//!   `dispatch` to `api/`. Every error is
//!   `{"error": ApiError}` with the code's status (and `Retry-After` when
//!   retryable).
//! - `auth/`: `caller` and `stream_caller` (the bearer token, or a stream's
//!   ticket, then one call from the token's rate).
//!   - `identity`: `Caller` (scopes, binding, a ticket's one stream) and the
//!     namespace of its idempotency keys.
//!   - `tokens`: secrets are `talon_` + 64 hex digits (256 random bits),
//!     stored as their plain SHA-256 only (no key to share between nodes),
//!     compared in constant time, never logged; a store without tokens gets an
//!     admin token on the first start, written to `<state_dir>/admin.token`
//!     (0600). `authenticate` answers one `unauthenticated` for missing,
//!     malformed, unknown, expired and revoked tokens alike. Stream tickets
//!     (`tkt_`, single use, short-lived, `session.read`) open the one stream
//!     they name (`TicketStream`): a ticket's `Caller` has `ticket` set, calls
//!     no method (`serve_call` refuses it) and opens nothing else
//!     (`Caller::may_open`, the socket's one subscription in `transport::ws`).
//!     A browser's WebSocket sends its token as its first frame instead.
//!   - `revocation`: one task per node reads recent revocations every 250 ms;
//!     each stream and socket holds a `Liveness` that wakes on them and at its
//!     token's expiry, ending the SSE stream with `event: error` or closing
//!     the socket with `4001`/`4002`.
//!   - `owned`: what a caller may see (a bound token: its subject's and
//!     agents' records only); every route's look-ups and every list's `Owner`.
//!   - `browsers` (the rules) and `guard` (the middleware): the Host
//!     allow-list (loopback, the listen address, `gateway.security.allowedHosts`;
//!     else `421`), the Origin check (the gateway's own origin, port included,
//!     or a listed one; else `403`) and CORS for listed origins only.
//! - `transport/`: the handlers of the wire.
//!   - `http`: `POST /v1/<method>` (bodies read up to `max_body_bytes`),
//!     `GET /healthz` (no auth) and `GET /v1/openapi.json`.
//!   - `stream`, over `tail` and `frame`: SSE (`GET /v1/runs/{runId}/events`,
//!     `GET /v1/events`). Streams read committed events, never a run's memory,
//!     a page at a time as the socket drains, from the node's live tail when
//!     their cursor is inside it, else from the store; woken by the tail, the
//!     store's commit watch or a 1 s poll, with a heartbeat after
//!     `sse_heartbeat_interval` of silence. `Follow` is the one live reader
//!     both transports use. `Delivery` (`frame`) is an event rendered once as
//!     its SSE frame, shared by every subscriber. The tail keeps the last
//!     envelopes (at most 4,096 and 2 MiB) so many subscribers of one run cost
//!     one store read per commit; it holds only events read from the store.
//!   - `ws`: `GET /v1/ws`, the same calls as frames through the same
//!     `serve_call`, and `events.subscribe`/`events.unsubscribe` (at most 16
//!     per connection); each connection writes through one bounded queue, so
//!     a slow reader slows only itself; pings every `ws_ping_interval`.
//!   - `content`: artifacts' bytes with `ETag` and one `Range`.
//!   - `docs`: `GET /` and `GET /docs` (no auth), the reference rendered by
//!     the Redoc bundle vendored in `assets/redoc/` (pinned hash) under a
//!     strict Content-Security-Policy.
//!   - `body`: a request body within its size, deadline and minimum rate, else
//!     refused and the connection closed.
//!   - `serve`: the accept loop (hyper HTTP/1.1 with upgrades): at most
//!     `max_connections`, a request head within `header_read_timeout`, TCP
//!     keepalive and `TCP_USER_TIMEOUT` (`stalled_write_timeout`) on every
//!     socket; shutdown lets each connection finish its exchange.
//! - `limits/`: a token bucket per token for every call and stream opened
//!   (`rate_limited` with `retryAfterMs`); open streams capped gateway-wide
//!   (`unavailable`, retryable), per token and per subject, requests in
//!   flight per token (`rate_limited`, `details.limit`), and a per-token
//!   budget of the bytes its streams hold unsent (`Budget`: `stream::Follow`
//!   takes a page's share before reading it, each frame holds its share until
//!   the socket writer drops it; a stream that waits past
//!   `slow_reader_timeout` ends `slow_reader`). `quota`: stored bytes per
//!   subject and per token (a recount every 5 s, and a reservation per
//!   admitted write in between), beside the store's quota (`stored`, which
//!   environments' footprints count in).
//! - `observe/`: request ids and the task's call (`observe`), the access log
//!   (`access`), the counters (`metrics`) and `GET /metrics` (`scrape`).
//! - `memory`: after runs end and streams close, `malloc_trim(0)` on a
//!   blocking thread, at most every 2 s (the crate's one `unsafe` call, with
//!   its reason).
//! - `api/`: the method table, `impl Handler for Api` over the store and the
//!   engine: agents, sessions (including compaction: the agent's model
//!   summarises the session into a compaction record), runs, models (never
//!   showing a key), artifacts, approvals and questions (`api/answers.rs`:
//!   first answer wins, the loser gets `conflict` with the winner; a
//!   question's answer is checked against its choices and schema),
//!   `tools.list` (`api/toolspace.rs`, from `Host::tool_space`, never a
//!   server's command, URL or keys), `tools.invoke` (`api/invoke.rs`: a run
//!   on the session whose request carries the call, made by
//!   `talon_runtime::Start::Invoke`; the idempotency key is the run's),
//!   environments (`api/environments.rs`), tokens (`api/tokens.rs`). Client
//!   tools in `runs.create` are checked by `RunsCreateParams::check`; a turn
//!   calling one ends the run `completed` with the call pending, and the
//!   app's next run answers with `tool` input messages
//!   (`talon_runtime::conversation`).
//! - Environments: the providers are `talon_environments`' (the public
//!   contract, `local`, `ssh`, `forge`); the gateway's part is the
//!   `environments.*` methods (`api/environments.rs`) and the engine, which
//!   holds the providers (`Engine::providers`), binds a run to its
//!   environment (secrets by admin-given name, the network narrowed, never
//!   widened) and collects its changes after it (`runs/artifacts.rs`). Bound
//!   values are redacted from tool results and errors (`RunSpec::redact`) and
//!   from every stored event and artifact (`StoreSink`), with
//!   `talon_tools::redact`.
//! - `openai/`: the OpenAI-compatible surface (`/v1/models`,
//!   `/v1/chat/completions`, `/v1/responses`), on by default only on loopback
//!   (`policy`): each call is methods of the table through `serve_call` as
//!   the caller, each created call a `runs.create` (`create`: the model, the
//!   session, the idempotency key); streams are `Follow`s through
//!   `talon_protocol::openai`'s projections; Responses' sequence numbers are
//!   event ids × 1024, so a resume is a cursor. `docs/openai.md` is the
//!   user's view.
//! - `runs/`: the node's run engine. `control.rs`: `submit` (under the lane lock; applies the
//!   session's `multitaskStrategy`, stores the run `queued` with `run.created`), `cancel`, `wait`.
//!   A dispatcher claims runs (`Store::claim_run`) while the node has room, renews leases every 5
//!   s, follows other nodes' cancel requests and, on PostgreSQL, takes back runs whose lease
//!   lapsed; it wakes on local submits, `Store::runs_changed` and every 500 ms. `exec.rs`:
//!   `execute` hands the host's one front (`start.rs`: `talon_runtime::Host::start` with a
//!   `RunSpec`: the run's ids, the store as its `RunSink`, the policy, the durable `RunHooks`, the
//!   session's history as a `Conversation` from the last compaction on) and runs the handle; its
//!   events go through `StoreSink` (`sink.rs`: ordered, batched appends; the loop never waits for a
//!   commit; the terminal event is held back) and it ends with `end_run`, its row and its terminal
//!   event in one commit. Checkpoints (`talon_runtime::Turn`, the stored form) are
//!   stored once every event before them is durable (`resume.rs`). `recover.rs` takes back a dead node's runs: in
//!   line with a committed terminal event, `cancelled` if a cancel was asked, requeued when every
//!   call started after the checkpoint was `replaySafe` (at most `MAX_RESUMES`, 3), else `failed`
//!   (`unavailable`, `details.reason: "interrupted"`). `drain` refuses new runs, gives running ones
//!   `drain_grace`, then cancels them; runs waiting on a person are left to the next start.
//! - `runs/approvals.rs`, `runs/person.rs`, `runs/questions.rs`: durable approvals and questions.
//!   The policy is `talon_tools::approvals`; `DurableApprover` stores an `Approval` and
//!   `approval.requested`, waits on the engine's resolution watch and a store poll (`person.rs`,
//!   the one wait of both), reports `approval.resolved` (durable before a non-replay-safe tool
//!   runs), and applies remembered decisions (`reused: true`). `DurableQuestions` is the gateway's
//!   executor of `ask_user`.
//! - `runs/artifacts.rs`: `file` and `diff` artifacts for each successful `write`/`edit`, a `log`
//!   artifact for an `exec` whose output was cut, and a `trajectory` artifact for every run (its
//!   events as JSON, cut at 16 MiB, keys redacted); expired artifacts are purged by a task.

mod api;
mod auth;
mod call;
mod error;
mod frame;
mod limits;
mod memory;
mod observe;
mod openai;
mod router;
mod runs;
mod schedules;
mod state;
mod tail;
mod tasks;
mod transport;

pub use auth::browser;
pub use auth::tokens;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use talon_protocol::gateway::Agent;
use talon_runtime::Host;
use talon_store::{Store, StoreConfig};

pub use auth::revocation::{CLOSE_EXPIRED, CLOSE_REVOKED};
pub use error::{GatewayError, Result, api_error};
pub use limits::Limits;
pub use openai::policy::{ApprovalRule, DEFAULT_APPROVAL_WAIT, OpenAiPolicy};
pub use runs::{LEASE, RunLimits};
pub use state::Api;
pub use talon_environments::forge::Forge;
pub use talon_environments::ssh::{SshHost, SshHosts};
pub use talon_environments::{EnvironmentPolicy, SecretSource};
pub use talon_wire::browsers::BrowserPolicy;
pub use transport::serve::STREAM_SEND_BUFFER;

/// How a gateway runs.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Where it listens.
    pub listen: SocketAddr,
    /// `$TALON_STATE_DIR`.
    pub state_dir: PathBuf,
    /// Its store.
    pub store: StoreConfig,
    /// The agents the config file declares.
    pub config_agents: Vec<Agent>,
    /// Rate, stream and size limits.
    pub limits: Limits,
    /// Where runs execute: the config, its models, its MCP servers.
    pub host: Arc<Host>,
    /// Limits of this node's runs.
    pub runs: RunLimits,
    /// This node's id in the store (a fresh one per start when absent).
    pub node: Option<String>,
    /// The hosts it answers to and the browser origins it serves.
    pub browsers: BrowserPolicy,
    /// How long a stream ticket may wait to be used.
    pub ticket_ttl: std::time::Duration,
    /// Where environments' workspaces may come from and the secrets they
    /// may bind.
    pub environments: EnvironmentPolicy,
    /// The hosts the `ssh` provider may use (`gateway.environments.sshHosts`;
    /// none: no `ssh` provider).
    pub ssh_hosts: SshHosts,
    /// The OpenAI-compatible surface (`gateway.openai`).
    pub openai: OpenAiPolicy,
    /// The path prefix a reverse proxy puts the dashboard under
    /// (`gateway.controlUi.basePath`, checked by
    /// `talon_config::base_path_of`; `""` for none): the gateway answers
    /// under it as well as at `/`.
    pub base_path: String,
}

impl GatewayConfig {
    /// Loopback on `port`, the embedded store under `state_dir`, runs on
    /// `host`.
    pub fn local(state_dir: impl Into<PathBuf>, port: u16, host: Arc<Host>) -> Self {
        let state_dir = state_dir.into();
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], port)),
            store: StoreConfig::embedded(&state_dir),
            state_dir,
            config_agents: Vec::new(),
            limits: Limits::default(),
            host,
            runs: RunLimits::default(),
            node: None,
            browsers: BrowserPolicy::default(),
            ticket_ttl: tokens::TICKET_TTL,
            environments: EnvironmentPolicy::default(),
            ssh_hosts: SshHosts::default(),
            openai: OpenAiPolicy::default(),
            base_path: String::new(),
        }
    }
}

/// A gateway that is serving.
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The admin token minted on this first start (print it once).
    pub admin_token: Option<String>,
    /// Its store.
    pub store: Store,
    base_path: String,
    engine: runs::Engine,
    dispatcher: tokio::task::JoinHandle<()>,
    closing: tokio::sync::watch::Sender<bool>,
    shutdown: tokio::sync::watch::Sender<bool>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// This node's id.
    pub fn node(&self) -> &str {
        self.engine.node()
    }

    /// Where a browser reaches its dashboard: its address (loopback when
    /// it listens on every address) and the base path.
    pub fn base_url(&self) -> String {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        format!("http://{addr}{}", self.base_path)
    }

    /// A new one-time sign-in link to the dashboard with the admin's
    /// scopes, minted under the root admin token (so revoking it revokes
    /// the link and what it signed in); `None` when that token is revoked
    /// or expired.
    pub async fn login_link(&self) -> Result<Option<String>> {
        let now = self.store.now_ms();
        let Some(admin) = browser::root_admin(&self.store, now).await? else {
            return Ok(None);
        };
        let code =
            browser::mint_login(&self.store, admin.scopes.clone(), Some(&admin), now).await?;
        Ok(Some(code.link(&self.base_url(), None)))
    }

    /// Drains: refuses new runs, lets running ones finish within the
    /// grace period (then cancels them), ends open streams and WebSocket
    /// connections once every run's last event is committed and sent to
    /// them (clients resume by cursor), stops accepting connections, finishes the
    /// requests in flight, and closes the store once every event is
    /// durable.
    ///
    /// Whatever the store's state, each step after the drain is bounded
    /// ([`SHUTDOWN_STEP`]): requests still in flight then are cut, and a
    /// store that cannot write is left as it is (what was committed stays;
    /// the next start recovers the rest).
    pub async fn shutdown(mut self) {
        self.engine.drain().await;
        self.dispatcher.abort();
        let _ = self.closing.send(true);
        let _ = self.shutdown.send(true);
        match tokio::time::timeout(SHUTDOWN_STEP, &mut self.server).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(error))) => tracing::warn!(%error, "the server ended with an error"),
            Ok(Err(error)) => tracing::warn!(%error, "the server task ended abnormally"),
            Err(_) => {
                tracing::warn!("requests still in flight after the drain were cut");
                self.server.abort();
            }
        }
        if tokio::time::timeout(SHUTDOWN_STEP, self.store.close())
            .await
            .is_err()
        {
            tracing::error!("the store did not close in time; what it had committed stays");
        }
    }
}

/// How long each step of a shutdown after the drain may take.
pub const SHUTDOWN_STEP: std::time::Duration = std::time::Duration::from_secs(1);

/// Opens the store, mints the admin token on a first start, binds and
/// serves. Returns once it is ready (`/healthz` answers).
pub async fn start(config: GatewayConfig) -> Result<Running> {
    // Which isolation commands get, said once at start (and by /healthz):
    // the host's probe (a sandbox run, the filters, the copy of /etc)
    // runs while the store opens.
    let host = config.host.clone();
    let probe = tokio::task::spawn_blocking(move || host.jails().defaults().status());
    let store = talon_store::open(&config.store).await?;
    let admin_token = tokens::bootstrap_admin(&store, &config.state_dir, store.now_ms()).await?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| GatewayError::Bind {
            addr: config.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| GatewayError::Bind {
        addr: config.listen,
        source,
    })?;
    if !addr.ip().is_loopback() {
        tracing::warn!(%addr, "listening beyond loopback: every client that can reach this address needs a token");
    }
    let node = match config.node.clone() {
        Some(node) => node,
        None => {
            let mut bytes = [0u8; 12];
            getrandom::fill(&mut bytes).map_err(GatewayError::Random)?;
            format!("node_{}", hex::encode(bytes))
        }
    };
    let metrics = Arc::new(observe::metrics::Metrics::default());
    tokio::spawn(memory::trim_after(metrics.closed()));
    let sandbox = probe.await.unwrap_or_else(|e| talon_jail::Status {
        mode: "unavailable",
        network: talon_jail::Network::Off,
        reason: Some(format!("the probe failed: {e}")),
        processes: None,
    });
    match sandbox.mode {
        "bubblewrap" => {
            tracing::info!(network = ?sandbox.network, processes = ?sandbox.processes, "commands run sandboxed (bubblewrap)")
        }
        "off" => tracing::warn!(
            "commands run UNSANDBOXED, as the gateway's user (agents.defaults.sandbox.mode is \"off\")"
        ),
        _ => {
            tracing::warn!(reason = ?sandbox.reason, "commands are refused: this host cannot sandbox them")
        }
    }
    let ssh = if config.ssh_hosts.is_empty() {
        None
    } else {
        Some(Arc::new(
            talon_environments::ssh::Ssh::new(config.ssh_hosts.clone(), &config.environments)
                .map_err(GatewayError::Ssh)?,
        ))
    };
    let engine = runs::Engine::new(
        store.clone(),
        config.store.clone(),
        node,
        config.host.clone(),
        config.runs.clone(),
        runs::Environments {
            policy: Arc::new(config.environments.clone()),
            ssh,
        },
        metrics.clone(),
    );
    // The task ledger: sub-agent tools for the runs that may spawn, and
    // the follower moving each task with its run.
    let ledger = tasks::Ledger::new(engine.clone());
    engine.add_tools(tasks::spawn::more_tools(ledger.clone()));
    let dispatcher = engine.start().await.map_err(GatewayError::Recovery)?;
    tokio::spawn(tasks::follow::follow(ledger.clone()));
    // The scheduler: fires due schedules, each firing a task.
    let schedules = schedules::Schedules::new(ledger);
    tokio::spawn(schedules::run(schedules.clone()));
    let (closing, closing_seen) = tokio::sync::watch::channel(false);
    let tail = tail::Tail::start(store.clone(), closing_seen.clone());
    let stored = limits::stored::StoredBytes::start(
        store.clone(),
        config.limits.max_stored_bytes,
        closing_seen.clone(),
    )
    .await;
    let shared = Arc::new(state::Shared {
        tail: tail.clone(),
        engine: engine.clone(),
        metrics,
        api: Api::new(
            store.clone(),
            config.config_agents.clone(),
            engine.clone(),
            schedules,
        )
        .with_ticket_ttl(config.ticket_ttl)
        .with_tail(tail.clone())
        .with_stored(stored.clone()),
        store: store.clone(),
        openapi: std::sync::OnceLock::new(),
        limiter: limits::Limiter::new(config.limits),
        revocations: auth::revocation::Revocations::start(store.clone(), closing_seen.clone()),
        stored,
        quotas: limits::quota::Quotas::start(
            store.clone(),
            config.limits.max_stored_bytes_per_subject,
            config.limits.max_stored_bytes_per_token,
            closing_seen.clone(),
        )
        .await,
        closing: closing_seen,
        browsers: config.browsers.clone(),
        listen: addr,
        openai: config.openai.clone(),
        started_at: store.now_ms(),
        sandbox,
        page: transport::dashboard::Page::render(&config.base_path),
    });
    let app = router::under(&config.base_path, router::router(shared));
    let (shutdown, stop) = tokio::sync::watch::channel(false);
    let limits = config.limits;
    let server =
        tokio::spawn(async move { transport::serve::serve(listener, app, limits, stop).await });
    Ok(Running {
        addr,
        admin_token,
        store,
        base_path: config.base_path.clone(),
        engine,
        dispatcher,
        closing,
        shutdown,
        server,
    })
}
