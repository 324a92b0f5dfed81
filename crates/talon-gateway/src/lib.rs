//! The Talon gateway: the protocol's method table served over one port
//! (HTTP calls, Server-Sent Events, WebSocket), behind tokens and scopes,
//! over the durable store, with the node's run engine executing agent
//! runs ([`runs`]) on a [`talon_runtime::Host`].
//!
//! Every request meets the Host, Origin and CORS guard first (`guard`);
//! calls then go through one path for both transports (`http::serve_call`:
//! token, method, scope, the store's health, params decoded against their
//! caps, dispatch). Open streams and sockets end with their token
//! (`revocation`). Environments take only what the admin's
//! [`EnvironmentPolicy`] names. The threat model is in ARCHITECTURE.md.
//!
//! Operating it: every request gets a request id (the client's
//! `x-request-id` when it is 1 to 128 visible ASCII characters, else a
//! minted `req_<24 hex>`), returned on every response; at `info` each
//! request and each WebSocket call logs an access line (target
//! `talon::access`) and each step of a run one line (target `talon::run`:
//! created, with the creating request's id; started; waiting for an
//! approval or an answer; resolved; finished, with status, duration and
//! error code) (`observe`). `GET /metrics` serves Prometheus text to a
//! token holding `metrics.read` (`metrics`): requests by method and
//! status and their latency, WebSocket calls by outcome, open SSE streams
//! and sockets, runs created, ended by status and their duration, the
//! queue's depth, running and waiting runs, pending approvals, the latency
//! of the appends the gateway waits on, store faults and the store's
//! health.

mod api;
mod content;
mod docs;
mod environments;
mod error;
mod frame;
mod guard;
mod http;
mod limits;
mod memory;
mod metrics;
mod observe;
mod revocation;
mod runs;
mod serve;
mod stream;
mod tail;
pub mod tokens;
mod ws;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use talon_protocol::gateway::Agent;
use talon_runtime::Host;
use talon_store::{Store, StoreConfig};

pub use api::Api;
pub use environments::{EnvironmentPolicy, SecretSource};
pub use error::{GatewayError, Result, api_error};
pub use guard::BrowserPolicy;
pub use limits::Limits;
pub use revocation::{CLOSE_EXPIRED, CLOSE_REVOKED};
pub use runs::{LEASE, RunLimits};

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
    let store = talon_store::open(&config.store).await?;
    let admin_token =
        tokens::bootstrap_admin(&store, &config.state_dir, talon_store::now_ms()).await?;
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
    let openapi = serde_json::to_vec(&talon_protocol::openapi::openapi())
        .map_err(|e| GatewayError::Document(e.to_string()))?;
    let node = match config.node.clone() {
        Some(node) => node,
        None => runs::new_id("node").map_err(|e| GatewayError::Random(e.message))?,
    };
    let metrics = Arc::new(metrics::Metrics::default());
    let engine = runs::Engine::new(
        store.clone(),
        config.store.clone(),
        node,
        config.host.clone(),
        config.runs.clone(),
        Arc::new(config.environments.clone()),
        metrics.clone(),
    );
    let dispatcher = engine
        .start()
        .await
        .map_err(|e| GatewayError::Recovery(e.message))?;
    let (closing, closing_seen) = tokio::sync::watch::channel(false);
    let tail = tail::Tail::start(store.clone(), closing_seen.clone());
    let shared = Arc::new(http::Shared {
        tail,
        engine: engine.clone(),
        metrics,
        api: Api::new(store.clone(), config.config_agents.clone(), engine.clone())
            .with_ticket_ttl(config.ticket_ttl),
        store: store.clone(),
        openapi: openapi.into(),
        limiter: limits::Limiter::new(config.limits),
        revocations: revocation::Revocations::start(store.clone(), closing_seen.clone()),
        stored: limits::StoredBytes::start(
            store.clone(),
            config.limits.max_stored_bytes,
            closing_seen.clone(),
        )
        .await,
        closing: closing_seen,
        browsers: config.browsers.clone(),
        listen: addr,
    });
    let app = http::router(shared);
    let (shutdown, stop) = tokio::sync::watch::channel(false);
    let limits = config.limits;
    let server = tokio::spawn(async move { serve::serve(listener, app, limits, stop).await });
    Ok(Running {
        addr,
        admin_token,
        store,
        engine,
        dispatcher,
        closing,
        shutdown,
        server,
    })
}
