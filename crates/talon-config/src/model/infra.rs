//! The sections that set up the gateway's surroundings: the store, the
//! gateway itself (limits, runs, the OpenAI surface, security,
//! environments) and diagnostics.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{NonEmpty, openclaw};

/// Where the gateway keeps its state.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct StoreSection {
    /// sqlite:PATH or postgres://… ($TALON_DATABASE_URL wins).
    #[schemars(length(min = 1))]
    pub url: Option<String>,
    /// How long the store keeps things.
    pub retention: Retention,
}

/// How long the store keeps things.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Retention {
    /// Days (fractions allowed): events older than this are removed.
    #[schemars(range(max = 36_500.0), extend("exclusiveMinimum" = 0))]
    pub max_age_days: Option<f64>,
    /// At most this many events.
    #[schemars(range(min = 1))]
    pub max_events: Option<u64>,
    /// Days (fractions allowed): artifacts older than this are purged (default 30).
    #[schemars(range(max = 36_500.0), extend("exclusiveMinimum" = 0))]
    pub artifact_max_age_days: Option<f64>,
}

fn gateway_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &[
            "port",
            "bind",
            "auth",
            "mode",
            "tailscale",
            "remote",
            "reload",
            "tls",
            "http",
            "nodes",
            "trustedProxies",
        ],
        "OpenClaw's; `talon gateway --listen` sets the address.",
    );
}

/// The gateway.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = gateway_openclaw)]
pub struct GatewaySection {
    /// The gateway's limits.
    pub limits: Limits,
    /// Run scheduling.
    pub runs: Runs,
    /// The OpenAI-compatible surface.
    pub openai: OpenAi,
    /// Hosts, origins and tickets.
    pub security: Security,
    /// What environments may use.
    pub environments: Environments,
    /// The dashboard a person opens on the gateway.
    pub control_ui: ControlUi,
}

fn control_ui_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &[
            "enabled",
            "root",
            "allowedOrigins",
            "dangerouslyAllowHostHeaderOriginFallback",
            "allowInsecureAuth",
            "dangerouslyDisableDeviceAuth",
        ],
        "OpenClaw's; browser origins are gateway.security.allowedOrigins.",
    );
}

/// The dashboard a person opens on the gateway.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = control_ui_openclaw)]
pub struct ControlUi {
    /// The path prefix the dashboard is reached under behind a reverse proxy (`/talon`); the gateway answers under it as well as at `/`.
    #[schemars(length(max = 128))]
    pub base_path: Option<NonEmpty>,
}

/// The gateway's limits (absent: the gateway's defaults).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Limits {
    /// Calls a token may make per second.
    #[schemars(range(max = 1e9), extend("exclusiveMinimum" = 0))]
    pub calls_per_second: Option<f64>,
    /// Calls above the rate a token may burst.
    #[schemars(range(min = 1, max = 4_294_967_295_u32))]
    pub burst: Option<u32>,
    /// Open SSE and WebSocket streams.
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_streams: Option<u64>,
    /// Open streams of one token (default 64).
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_streams_per_token: Option<u64>,
    /// Open streams of every token bound to one subject (default 256).
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_streams_per_subject: Option<u64>,
    /// Requests of one token in flight, WebSockets included (default 64).
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_requests_per_token: Option<u64>,
    /// Requests in flight of every token bound to one subject (default 256).
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_requests_per_subject: Option<u64>,
    /// Bytes one token's streams may hold unsent (default 16 MiB).
    #[schemars(range(min = 1, max = 1_099_511_627_776_u64))]
    pub stream_bytes_per_token: Option<u64>,
    /// Milliseconds a stream may wait for room in its token's budget before it ends.
    #[schemars(range(min = 1, max = 86_400_000))]
    pub slow_reader_timeout_ms: Option<u64>,
    /// Milliseconds a request body may take to arrive.
    #[schemars(range(min = 1, max = 86_400_000))]
    pub body_read_timeout_ms: Option<u64>,
    /// The slowest a request body may arrive after 5 s (default 1024).
    #[schemars(range(min = 1, max = 1_099_511_627_776_u64))]
    pub min_body_bytes_per_second: Option<u64>,
    /// The largest request body.
    #[schemars(range(min = 1, max = 1_073_741_824))]
    pub max_body_bytes: Option<u64>,
    /// Open connections.
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_connections: Option<u64>,
    /// Milliseconds a request head may take.
    #[schemars(range(min = 1, max = 86_400_000))]
    pub header_read_timeout_ms: Option<u64>,
    /// Milliseconds of unacknowledged data before a connection is dropped.
    #[schemars(range(min = 1, max = 86_400_000))]
    pub stalled_write_timeout_ms: Option<u64>,
    /// Milliseconds between WebSocket pings.
    #[schemars(range(min = 1, max = 86_400_000))]
    pub ws_ping_interval_ms: Option<u64>,
    /// Milliseconds of idle before an SSE stream gets a heartbeat comment.
    #[schemars(range(min = 1, max = 86_400_000))]
    pub sse_heartbeat_interval_ms: Option<u64>,
    /// Bytes a token may write per second.
    #[schemars(range(min = 1, max = 1_099_511_627_776_u64))]
    pub input_bytes_per_second: Option<u64>,
    /// Bytes above the rate a token may burst.
    #[schemars(range(min = 1, max = 1_099_511_627_776_u64))]
    pub input_burst_bytes: Option<u64>,
    /// The store's quota.
    #[schemars(range(min = 1, max = 1_125_899_906_842_624_u64))]
    pub max_stored_bytes: Option<u64>,
    /// What the records of one subject's tokens may hold, in bytes.
    #[schemars(range(min = 1, max = 1_125_899_906_842_624_u64))]
    pub max_stored_bytes_per_subject: Option<u64>,
    /// What the records one token made may hold, in bytes.
    #[schemars(range(min = 1, max = 1_125_899_906_842_624_u64))]
    pub max_stored_bytes_per_token: Option<u64>,
}

/// Run scheduling.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Runs {
    /// Runs at once (default 64).
    #[schemars(range(min = 1, max = 65_536))]
    pub max_concurrent: Option<u64>,
    /// Runs waiting (default 10000).
    #[schemars(range(min = 1, max = 4_294_967_295_u32))]
    pub max_queued: Option<u32>,
    /// Milliseconds running runs may go on at shutdown.
    #[schemars(range(min = 1, max = 86_400_000))]
    pub drain_grace_ms: Option<u64>,
}

/// What an OpenAI-compatible call that needs an approval does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OpenAiApproval {
    /// Waits for an answer from the SDK or the dashboard, up to
    /// `approvalWaitMs`; then the call is denied.
    Wait,
    /// Denied at once.
    Deny,
}

/// The OpenAI-compatible surface.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct OpenAi {
    /// Serve /v1/models, /v1/chat/completions and /v1/responses (absent: only on a loopback address).
    pub enabled: Option<bool>,
    /// A call that needs an approval waits for an answer up to approvalWaitMs (wait), or is denied at once (deny).
    pub on_approval: Option<OpenAiApproval>,
    /// Milliseconds `wait` waits.
    #[schemars(range(min = 1, max = 86_400_000))]
    pub approval_wait_ms: Option<u64>,
}

/// Hosts, origins and tickets.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Security {
    /// Host names the gateway answers to (`*.example.com` for subdomains).
    #[schemars(length(max = 1024))]
    pub allowed_hosts: Vec<NonEmpty>,
    /// Browser origins allowed (`scheme://host[:port]`).
    #[schemars(length(max = 1024))]
    pub allowed_origins: Vec<NonEmpty>,
    /// How long a stream ticket lives.
    #[schemars(range(min = 1, max = 3_600_000))]
    pub stream_ticket_ttl_ms: Option<u64>,
}

/// What environments may use.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Environments {
    /// Directories environments may be created from (absolute).
    #[schemars(length(max = 1024))]
    pub source_roots: Vec<NonEmpty>,
    /// Git repositories by name.
    pub repositories: BTreeMap<String, NonEmpty>,
    /// Secrets an environment may be given, by name.
    pub secrets: BTreeMap<String, SecretSource>,
    /// Forges by name (an environment's settings.pullRequest.forge).
    pub forges: BTreeMap<String, Forge>,
    /// Hosts the ssh environment provider may run workspaces on, by name (settings.host): {host, port?, user, hostKey (pinned: "ssh-ed25519 AAAA..."), identity: {secret: NAME}, workdir?, sandbox?: "bubblewrap" | "none", leaseSeconds?}; read by talon-gateway's own declaration.
    pub ssh_hosts: BTreeMap<String, Map<String, Value>>,
}

/// {env: "VARIABLE"} or {file: "/absolute/path"}.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SecretSource {
    /// A variable of the gateway's environment.
    #[schemars(length(min = 1))]
    pub env: Option<String>,
    /// An absolute path.
    #[schemars(length(min = 1))]
    pub file: Option<String>,
}

/// A forge environments' changes become pull requests on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Forge {
    /// The REST API's base URL (`https://api.github.com`, or a GitHub Enterprise, Gitea or Forgejo `.../api/v3`).
    #[schemars(length(min = 1))]
    pub api: Option<String>,
    /// The repository's git URL pushes go to (http or https).
    #[schemars(length(min = 1))]
    pub remote: Option<String>,
    /// owner/repo.
    #[schemars(length(min = 1))]
    pub repository: Option<String>,
    /// The name of the secret (gateway.environments.secrets) holding its token.
    #[schemars(length(min = 1))]
    pub token: Option<String>,
}

fn cron_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &[
            "store",
            "retry",
            "webhook",
            "webhookToken",
            "webhookSsrfPolicy",
            "sessionRetention",
            "runLog",
            "failureDestination",
            "failureAlert",
            "triggers",
        ],
        "OpenClaw's; Talon keeps schedules in its store (schedules.*) and does not read it.",
    );
}

/// Schedules (OpenClaw's `cron`): the schedules themselves are made with
/// `schedules.create` and kept in the store; this section says whether
/// this node fires them and how many of their runs may be live at once.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = cron_openclaw)]
pub struct CronSection {
    /// false: this node fires no schedule (other nodes on the same store
    /// still do; `schedules.run` still fires one here). Default true.
    pub enabled: Option<bool>,
    /// Most runs of firings live at once across every node (default 8): a
    /// slot due while that many are live waits for one to end, and one
    /// that waited past a minute goes by its schedule's `catchUp`.
    #[schemars(range(min = 1, max = 256))]
    pub max_concurrent_runs: Option<u32>,
}

fn diagnostics_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &["flags", "stuckSessionWarnMs", "cacheTrace"],
        "OpenClaw's.",
    );
}

/// Diagnostics: OpenTelemetry traces.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = diagnostics_openclaw)]
pub struct DiagnosticsSection {
    /// false turns every diagnostic export off.
    pub enabled: Option<bool>,
    /// OpenTelemetry export (OpenClaw's diagnostics.otel).
    pub otel: Otel,
}

fn otel_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &["metrics"],
        "OpenClaw's OTLP metrics; Talon serves /metrics.",
    );
    openclaw(
        schema,
        &["logs"],
        "OpenClaw's OTLP logs; Talon does not export logs.",
    );
    openclaw(
        schema,
        &["flushIntervalMs", "captureContent"],
        "OpenClaw's.",
    );
}

/// The OTLP protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum OtlpProtocol {
    /// The one Talon speaks.
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

/// OpenTelemetry export (OpenClaw's diagnostics.otel).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = otel_openclaw)]
pub struct Otel {
    /// Export OpenTelemetry traces over OTLP/HTTP (default false).
    pub enabled: Option<bool>,
    /// The collector's OTLP/HTTP base URL; /v1/traces is added ($OTEL_EXPORTER_OTLP_ENDPOINT when absent, else http://localhost:4318).
    #[schemars(length(min = 1))]
    pub endpoint: Option<String>,
    /// The OTLP protocol (only http/protobuf).
    pub protocol: Option<OtlpProtocol>,
    /// The service.name resource attribute (default talon).
    #[schemars(length(min = 1))]
    pub service_name: Option<String>,
    /// Headers sent with every export (also $OTEL_EXPORTER_OTLP_HEADERS).
    pub headers: BTreeMap<String, String>,
    /// Export spans (default true).
    pub traces: Option<bool>,
    /// The share of new traces kept, 0 to 1 (default 1).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub sample_rate: Option<f64>,
}
