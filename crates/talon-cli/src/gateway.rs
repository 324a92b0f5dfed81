//! `talon gateway`: serve the protocol on one port (`talon token`, in
//! `tokens.rs`, shares its config and store look-up).
//!
//! Both find the config as `talon exec` does (optional) and the store from
//! `$TALON_DATABASE_URL`, else `store.url`, else SQLite under
//! `$TALON_STATE_DIR`. Exit status: 0 on success, 1 when the store or the
//! socket fails, 2 on a usage error.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use talon_protocol::gateway::bounded::AgentId;

use std::sync::Arc;

use clap::Args;
use talon_config::Config;
use talon_gateway::GatewayConfig;
use talon_protocol::gateway::{Agent, AgentSource};
use talon_runtime::{Host, ModelRoute};
use talon_store::StoreConfig;

/// `talon gateway`.
#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// Where to listen: `HOST:PORT`, `localhost:PORT`, `:PORT` or `PORT`
    /// (both loopback), `[::1]:PORT`; `0.0.0.0:PORT` for every interface.
    /// Anything but loopback is logged as a warning.
    #[arg(long, default_value = DEFAULT_LISTEN, value_parser = parse_listen)]
    listen: SocketAddr,
    /// The config file (default: $TALON_CONFIG, else ~/.talon/talon.json5 if present).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Start with a new, empty store even though the state directory has
    /// served before (it holds an admin token) and its database is missing
    /// or empty; the old admin token is moved aside, never overwritten.
    /// Without it such a start is refused.
    #[arg(long)]
    new_store: bool,
    /// Serve every run's model from this mock script instead of the
    /// provider (builds with the `mock-model` feature).
    #[cfg(feature = "mock-model")]
    #[arg(long, value_name = "FILE")]
    mock_script: Option<PathBuf>,
}

pub(crate) fn fail(code: u8, message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "talon: {message}");
    ExitCode::from(code)
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| fail(1, &format!("starting the async runtime: {e}")))
}

/// Where a gateway listens unless told (and where `talon dashboard` points).
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:7420";

/// `--listen`'s forms: an address, a host name and port, `:PORT` or a
/// bare port (loopback).
fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    use std::net::{Ipv4Addr, ToSocketAddrs as _};
    let text = text.trim();
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("{p:?} is not a port (0-65535); e.g. --listen 127.0.0.1:7420"))
    };
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(p) = text.strip_prefix(':') {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port(p)?)));
    }
    if !text.contains(':') {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port(text)?)));
    }
    let Some((host, p)) = text.rsplit_once(':') else {
        return Err(format!("{text:?}: expected HOST:PORT"));
    };
    let p = port(p)?;
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, p)));
    }
    (host, p)
        .to_socket_addrs()
        .map_err(|e| format!("{host:?} is not an address or a host name here: {e}"))?
        .next()
        .ok_or_else(|| format!("{host:?} has no address"))
}

/// The config, and the store it names.
pub(crate) fn store_config(
    path: Option<&std::path::Path>,
) -> Result<(Config, StoreConfig), ExitCode> {
    let config = Config::load(path).map_err(|e| fail(2, &e.to_string()))?;
    // Checked before any section is read, so a bad value is reported with
    // its file, line and column.
    config
        .check_at_start()
        .map_err(|e| fail(2, &e.to_string()))?;
    let settings = config.store().map_err(|e| fail(2, &e.to_string()))?;
    let state_dir = talon_config::state_dir();
    let store = match settings.url {
        Some(url) => StoreConfig::at(url, state_dir),
        None => StoreConfig::embedded(state_dir),
    };
    Ok((config, store))
}

/// The node's limits: the `gateway` section over the defaults.
fn limits(
    settings: &talon_config::GatewaySettings,
) -> (talon_gateway::Limits, talon_gateway::RunLimits) {
    let d = talon_gateway::Limits::default();
    let limits = talon_gateway::Limits {
        calls_per_second: settings.calls_per_second.unwrap_or(d.calls_per_second),
        burst: settings.burst.unwrap_or(d.burst),
        max_streams: settings.max_streams.unwrap_or(d.max_streams),
        max_streams_per_token: settings
            .max_streams_per_token
            .unwrap_or(d.max_streams_per_token),
        max_streams_per_subject: settings
            .max_streams_per_subject
            .unwrap_or(d.max_streams_per_subject),
        max_requests_per_token: settings
            .max_requests_per_token
            .unwrap_or(d.max_requests_per_token),
        max_requests_per_subject: settings
            .max_requests_per_subject
            .unwrap_or(d.max_requests_per_subject),
        stream_bytes_per_token: settings
            .stream_bytes_per_token
            .unwrap_or(d.stream_bytes_per_token),
        slow_reader_timeout: settings
            .slow_reader_timeout
            .unwrap_or(d.slow_reader_timeout),
        body_read_timeout: settings.body_read_timeout.unwrap_or(d.body_read_timeout),
        min_body_bytes_per_second: settings
            .min_body_bytes_per_second
            .unwrap_or(d.min_body_bytes_per_second),
        max_body_bytes: settings.max_body_bytes.unwrap_or(d.max_body_bytes),
        max_connections: settings.max_connections.unwrap_or(d.max_connections),
        header_read_timeout: settings
            .header_read_timeout
            .unwrap_or(d.header_read_timeout),
        stalled_write_timeout: settings
            .stalled_write_timeout
            .unwrap_or(d.stalled_write_timeout),
        ws_ping_interval: settings.ws_ping_interval.unwrap_or(d.ws_ping_interval),
        sse_heartbeat_interval: settings
            .sse_heartbeat_interval
            .unwrap_or(d.sse_heartbeat_interval),
        input_bytes_per_second: settings
            .input_bytes_per_second
            .unwrap_or(d.input_bytes_per_second),
        input_burst_bytes: settings.input_burst_bytes.unwrap_or(d.input_burst_bytes),
        max_stored_bytes: settings.max_stored_bytes.or(d.max_stored_bytes),
        max_stored_bytes_per_subject: settings
            .max_stored_bytes_per_subject
            .or(d.max_stored_bytes_per_subject),
        max_stored_bytes_per_token: settings
            .max_stored_bytes_per_token
            .or(d.max_stored_bytes_per_token),
    };
    let r = talon_gateway::RunLimits::default();
    let runs = talon_gateway::RunLimits {
        max_concurrent: settings.max_concurrent_runs.unwrap_or(r.max_concurrent),
        max_queued: settings.max_queued_runs.unwrap_or(r.max_queued),
        drain_grace: settings.drain_grace.unwrap_or(r.drain_grace),
        ..r
    };
    (limits, runs)
}

/// The OpenAI-compatible surface's policy: `gateway.openai` over the
/// defaults (on only on loopback; wait a minute for an approval).
fn openai_policy(settings: &talon_config::OpenAiSettings) -> talon_gateway::OpenAiPolicy {
    let wait = settings
        .approval_wait
        .unwrap_or(talon_gateway::DEFAULT_APPROVAL_WAIT);
    talon_gateway::OpenAiPolicy {
        enabled: settings.enabled,
        on_approval: match settings.on_approval {
            Some(talon_config::OpenAiApproval::Deny) => talon_gateway::ApprovalRule::Deny,
            Some(talon_config::OpenAiApproval::Wait) | None => {
                talon_gateway::ApprovalRule::Wait(wait)
            }
        },
    }
}

/// The agents `agents.list[]` declares.
pub(crate) fn config_agents(config: &Config) -> Vec<Agent> {
    let Ok(document) = config.document() else {
        return Vec::new();
    };
    document
        .agents
        .list
        .iter()
        .filter_map(|entry| {
            Some(Agent {
                id: AgentId::new(entry.id.clone()?),
                name: entry.name.clone(),
                description: entry.description.clone(),
                model: entry
                    .common
                    .model
                    .as_ref()
                    .and_then(|m| m.reference())
                    .map(str::to_owned),
                source: AgentSource::Config,
                created_at: None,
                updated_at: None,
            })
        })
        .collect()
}

/// What the gateway lets browsers and environments reach, from the
/// `gateway.security` and `gateway.environments` sections.
fn policies(
    config: &Config,
) -> Result<
    (
        talon_gateway::BrowserPolicy,
        Option<std::time::Duration>,
        talon_gateway::EnvironmentPolicy,
    ),
    String,
> {
    let security = config.security().map_err(|e| e.to_string())?;
    let environments = config.environments().map_err(|e| e.to_string())?;
    let browsers = talon_gateway::BrowserPolicy {
        allowed_hosts: security.allowed_hosts,
        allowed_origins: security.allowed_origins,
    };
    let policy = talon_gateway::EnvironmentPolicy {
        source_roots: environments.source_roots,
        repositories: environments.repositories,
        secrets: environments
            .secrets
            .into_iter()
            .map(|(name, source)| {
                let source = match source {
                    talon_config::SecretRef::Env(var) => talon_gateway::SecretSource::Env(var),
                    talon_config::SecretRef::File(path) => talon_gateway::SecretSource::File(path),
                };
                (name, source)
            })
            .collect(),
        forges: environments
            .forges
            .into_iter()
            .map(|(name, forge)| {
                let forge = talon_gateway::Forge {
                    api: forge.api,
                    remote: forge.remote,
                    repository: forge.repository,
                    token: forge.token,
                };
                (name, forge)
            })
            .collect(),
    };
    Ok((browsers, security.stream_ticket_ttl, policy))
}

pub fn run_gateway(args: GatewayArgs) -> ExitCode {
    let (config, mut store) = match store_config(args.config.as_deref()) {
        Ok(found) => found,
        Err(code) => return code,
    };
    // A state directory that has served (it holds the admin token) must
    // not start over with an empty store by accident.
    let token_file = store
        .state_dir
        .join(talon_gateway::tokens::ADMIN_TOKEN_FILE);
    if token_file.exists() && !args.new_store {
        store.on_missing = talon_store::OnMissing::Refuse;
    }
    let (browsers, ticket_ttl, environments) = match policies(&config) {
        Ok(found) => found,
        Err(message) => return fail(2, &message),
    };
    // The `ssh` provider's hosts, typed (its own serde declaration).
    // The `ssh` provider's hosts: the config declares them as objects by
    // name, and talon-environments' own serde declaration reads each.
    let declared = match config.document() {
        Ok(document) => &document.gateway.environments.ssh_hosts,
        Err(e) => return fail(2, &e.to_string()),
    };
    let mut ssh_hosts = talon_gateway::SshHosts::new();
    for (name, host) in declared {
        match serde_json::from_value(serde_json::Value::Object(host.clone())) {
            Ok(host) => ssh_hosts.insert(name.clone(), host),
            Err(e) => return fail(2, &format!("gateway.environments.sshHosts.{name}: {e}")),
        };
    }
    let (limits, mut run_limits, openai) = match config.gateway() {
        Ok(settings) => {
            let (limits, runs) = limits(&settings);
            (limits, runs, openai_policy(&settings.openai))
        }
        Err(e) => return fail(2, &e.to_string()),
    };
    let base_path = match config.dashboard_base_path() {
        Ok(base) => base,
        Err(e) => return fail(2, &e.to_string()),
    };
    match config.store() {
        Ok(settings) => {
            if let Some(age) = settings.max_artifact_age {
                run_limits.artifact_max_age = Some(age);
            }
            run_limits.event_retention = talon_store::Retention {
                max_age: settings.max_event_age,
                max_events: settings.max_events,
            };
        }
        Err(e) => return fail(2, &e.to_string()),
    }
    let traces = match config
        .otel()
        .map_err(|e| e.to_string())
        .and_then(|file| crate::otlp::settings(&file, &crate::otlp::ProcessEnv))
    {
        Ok(traces) => traces,
        Err(message) => return fail(2, &message),
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let traces = traces.and_then(crate::otlp::start);
        #[cfg(feature = "mock-model")]
        let script = args.mock_script.as_deref();
        #[cfg(not(feature = "mock-model"))]
        let script = None;
        let mock = match crate::mock::start(script).await {
            Ok(mock) => mock,
            Err(message) => return fail(2, &message),
        };
        let route = ModelRoute {
            base_url: mock.as_ref().map(crate::mock::url),
        };
        let agents = config_agents(&config);
        // With neither a provider nor the mock, every run would fail: say
        // so at start, with where to look.
        let no_model = mock.is_none()
            && talon_runtime::provider::providers(&config).is_ok_and(|all| all.is_empty());
        let host = match Host::new(Arc::new(config), route) {
            Ok(host) => Arc::new(host),
            Err(e) => return fail(2, &e.to_string()),
        };
        let gateway = GatewayConfig {
            listen: args.listen,
            state_dir: store.state_dir.clone(),
            config_agents: agents,
            limits,
            runs: run_limits,
            browsers,
            ticket_ttl: ticket_ttl.unwrap_or(talon_gateway::tokens::TICKET_TTL),
            environments,
            ssh_hosts,
            openai,
            base_path,
            ..GatewayConfig::local(store.state_dir.clone(), args.listen.port(), host)
        };
        let gateway = GatewayConfig { store, ..gateway };
        let running = match talon_gateway::start(gateway).await {
            Ok(running) => running,
            Err(talon_gateway::GatewayError::Store(talon_store::StoreError::Missing(what))) => {
                return fail(
                    1,
                    &format!(
                        "{what}, but the state directory has served before ({} exists): refusing to start over with an empty store. Restore the database, point store.url at it, or start with --new-store to create a new one",
                        token_file.display()
                    ),
                );
            }
            Err(e) => return fail(1, &e.to_string()),
        };
        if let Some(token) = &running.admin_token {
            let _ = writeln!(
                std::io::stderr(),
                "talon gateway: first start: an admin token was written to {}; it is shown once:",
                talon_config::state_dir()
                    .join(talon_gateway::tokens::ADMIN_TOKEN_FILE)
                    .display()
            );
            let _ = writeln!(std::io::stdout(), "{token}");
        }
        let _ = writeln!(
            std::io::stderr(),
            "talon gateway: listening on http://{}",
            running.addr
        );
        if no_model {
            let _ = writeln!(
                std::io::stderr(),
                "talon gateway: no model is configured (models.providers is empty), so every run will fail; \
                 add a provider (docs/configuration.md){OR_MOCK}"
            );
        }
        match running.login_link().await {
            Ok(Some(link)) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "talon gateway: dashboard (this link signs in once, within 15 minutes): {link}"
                );
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "no dashboard sign-in link: minting it failed"),
        }
        wait_for_signal().await;
        let _ = writeln!(std::io::stderr(), "talon gateway: shutting down");
        running.shutdown().await;
        if let Some(traces) = traces {
            traces.flush(crate::otlp::SHUTDOWN_FLUSH).await;
        }
        ExitCode::SUCCESS
    })
}

/// The other way to serve runs without a provider, where the build has it.
#[cfg(feature = "mock-model")]
const OR_MOCK: &str = " or start with --mock-script FILE";
#[cfg(not(feature = "mock-model"))]
const OR_MOCK: &str = "";

/// SIGTERM or SIGINT (Ctrl-C).
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn listen_takes_the_forms_people_write() {
        let cases = [
            ("127.0.0.1:7420", Ok("127.0.0.1:7420")),
            ("localhost:7440", Ok("127.0.0.1:7440")),
            ("LOCALHOST:1", Ok("127.0.0.1:1")),
            (":7440", Ok("127.0.0.1:7440")),
            ("7440", Ok("127.0.0.1:7440")),
            ("[::1]:7420", Ok("[::1]:7420")),
            ("0.0.0.0:80", Ok("0.0.0.0:80")),
            (
                "localhost:99999",
                Err("\"99999\" is not a port (0-65535); e.g. --listen 127.0.0.1:7420"),
            ),
            (
                ":x",
                Err("\"x\" is not a port (0-65535); e.g. --listen 127.0.0.1:7420"),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(
                super::parse_listen(text).map(|a| a.to_string()),
                expected.map(str::to_owned).map_err(str::to_owned),
                "{text}"
            );
        }
    }
}
