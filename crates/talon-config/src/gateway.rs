//! The `gateway` section: the limits of a gateway node, every key
//! optional (absent keys keep the gateway's defaults). OpenClaw configs
//! carry other `gateway` keys (port, bind, auth): they are not read here
//! and load unchanged.
//!
//! ```json5
//! gateway: {
//!   limits: { callsPerSecond: 50, burst: 200, maxStreams: 4096,
//!             maxBodyBytes: 4194304, maxConnections: 16384,
//!             headerReadTimeoutMs: 10000, stalledWriteTimeoutMs: 30000,
//!             wsPingIntervalMs: 30000, sseHeartbeatIntervalMs: 15000 },
//!   runs: { maxConcurrent: 64, maxQueued: 10000, drainGraceMs: 30000 },
//!   openai: { enabled: true, onApproval: "wait", approvalWaitMs: 60000 },
//! }
//! ```
//!
//! `gateway.controlUi.basePath` (`"/talon"`) is the path prefix a reverse
//! proxy puts the dashboard under: the gateway answers under it as well as
//! at `/`, and the dashboard's page links, loads and calls under it.
//!
//! `gateway.openai` is the OpenAI-compatible surface (`/v1/models`,
//! `/v1/chat/completions`, `/v1/responses`): `enabled` absent means on
//! only while the gateway listens on a loopback address; `onApproval` says
//! what a call that needs an approval does (`wait` up to
//! `approvalWaitMs` for an answer from the SDK or the dashboard, then it is
//! denied; `deny` at once).
//!
//! `gateway.limits` also takes `inputBytesPerSecond` and `inputBurstBytes`
//! (the bytes of write-method bodies a token may send) and
//! `maxStoredBytes` (the store's quota), `maxStoredBytesPerSubject` and
//! `maxStoredBytesPerToken` (what one subject's, or one token's, records
//! may hold); `maxStreamsPerToken`,
//! `maxStreamsPerSubject` and `maxRequestsPerSubject` (the streams and the
//! requests in flight of every token bound to one subject),
//! `maxRequestsPerToken`, `streamBytesPerToken` and `slowReaderTimeoutMs`
//! (one token's share of the streams and of the requests in flight, the
//! bytes its streams may hold unsent, and how long a stream may wait for
//! room before it ends); `bodyReadTimeoutMs` and
//! `minBodyBytesPerSecond` (how long a request body may take to arrive). `gateway.security` and
//! `gateway.environments` are read by [`crate::security`]. The keys, their
//! bounds and docs are declared once in [`crate::model::GatewaySection`].

use std::time::Duration;

pub use crate::model::OpenAiApproval;
use crate::{Config, ConfigError, Result};

/// The `gateway` section, as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewaySettings {
    /// `gateway.limits.callsPerSecond`: calls per second per token.
    pub calls_per_second: Option<f64>,
    /// `gateway.limits.burst`: calls a token may make at once.
    pub burst: Option<u32>,
    /// `gateway.limits.maxStreams`: streams open at once.
    pub max_streams: Option<usize>,
    /// `gateway.limits.maxStreamsPerToken`: one token's open streams.
    pub max_streams_per_token: Option<usize>,
    /// `gateway.limits.maxStreamsPerSubject`: the open streams of every
    /// token bound to one subject.
    pub max_streams_per_subject: Option<usize>,
    /// `gateway.limits.maxRequestsPerToken`: one token's requests in
    /// flight.
    pub max_requests_per_token: Option<usize>,
    /// `gateway.limits.maxRequestsPerSubject`: the requests in flight of
    /// every token bound to one subject.
    pub max_requests_per_subject: Option<usize>,
    /// `gateway.limits.streamBytesPerToken`: bytes one token's streams
    /// may hold unsent.
    pub stream_bytes_per_token: Option<u64>,
    /// `gateway.limits.slowReaderTimeoutMs`: how long a stream may wait
    /// for room in its token's budget.
    pub slow_reader_timeout: Option<Duration>,
    /// `gateway.limits.bodyReadTimeoutMs`: a request body's deadline.
    pub body_read_timeout: Option<Duration>,
    /// `gateway.limits.minBodyBytesPerSecond`: the slowest a body may
    /// arrive, after its first seconds.
    pub min_body_bytes_per_second: Option<u64>,
    /// `gateway.limits.maxBodyBytes`: the largest body or frame.
    pub max_body_bytes: Option<usize>,
    /// `gateway.limits.maxConnections`: connections open at once.
    pub max_connections: Option<usize>,
    /// `gateway.limits.headerReadTimeoutMs`: a request head's deadline.
    pub header_read_timeout: Option<Duration>,
    /// `gateway.limits.stalledWriteTimeoutMs`: unacknowledged data this
    /// long drops a connection.
    pub stalled_write_timeout: Option<Duration>,
    /// `gateway.limits.wsPingIntervalMs`: how often WebSocket peers are
    /// pinged.
    pub ws_ping_interval: Option<Duration>,
    /// `gateway.limits.sseHeartbeatIntervalMs`: idle time before an SSE
    /// stream gets a heartbeat comment.
    pub sse_heartbeat_interval: Option<Duration>,
    /// `gateway.runs.maxConcurrent`: runs a node executes at once.
    pub max_concurrent_runs: Option<usize>,
    /// `gateway.runs.maxQueued`: queued runs before `runs.create` refuses.
    pub max_queued_runs: Option<u32>,
    /// `gateway.runs.drainGraceMs`: how long running runs may go on at
    /// shutdown.
    pub drain_grace: Option<Duration>,
    /// `gateway.limits.inputBytesPerSecond`: write-body bytes per second
    /// per token.
    pub input_bytes_per_second: Option<u64>,
    /// `gateway.limits.inputBurstBytes`: write-body bytes at once.
    pub input_burst_bytes: Option<u64>,
    /// `gateway.limits.maxStoredBytes`: the store's quota.
    pub max_stored_bytes: Option<u64>,
    /// `gateway.limits.maxStoredBytesPerSubject`: what one subject's
    /// records may hold.
    pub max_stored_bytes_per_subject: Option<u64>,
    /// `gateway.limits.maxStoredBytesPerToken`: what the records one token
    /// made may hold.
    pub max_stored_bytes_per_token: Option<u64>,
    /// `gateway.openai`: the OpenAI-compatible surface.
    pub openai: OpenAiSettings,
}

/// `gateway.openai`, as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenAiSettings {
    /// `gateway.openai.enabled` (absent: on only on a loopback address).
    pub enabled: Option<bool>,
    /// `gateway.openai.onApproval`.
    pub on_approval: Option<OpenAiApproval>,
    /// `gateway.openai.approvalWaitMs`: how long `wait` waits.
    pub approval_wait: Option<Duration>,
}

impl Config {
    /// The `gateway` section (its bounds are the declaration's,
    /// [`crate::model::Limits`], enforced when the config was read).
    pub fn gateway(&self) -> Result<GatewaySettings> {
        let gateway = &self.document()?.gateway;
        let (limits, runs) = (&gateway.limits, &gateway.runs);
        let ms = |v: Option<u64>| v.map(Duration::from_millis);
        Ok(GatewaySettings {
            calls_per_second: limits.calls_per_second,
            burst: limits.burst,
            max_streams: limits.max_streams.map(size),
            max_streams_per_token: limits.max_streams_per_token.map(size),
            max_streams_per_subject: limits.max_streams_per_subject.map(size),
            max_requests_per_token: limits.max_requests_per_token.map(size),
            max_requests_per_subject: limits.max_requests_per_subject.map(size),
            stream_bytes_per_token: limits.stream_bytes_per_token,
            slow_reader_timeout: ms(limits.slow_reader_timeout_ms),
            body_read_timeout: ms(limits.body_read_timeout_ms),
            min_body_bytes_per_second: limits.min_body_bytes_per_second,
            max_body_bytes: limits.max_body_bytes.map(size),
            max_connections: limits.max_connections.map(size),
            header_read_timeout: ms(limits.header_read_timeout_ms),
            stalled_write_timeout: ms(limits.stalled_write_timeout_ms),
            ws_ping_interval: ms(limits.ws_ping_interval_ms),
            sse_heartbeat_interval: ms(limits.sse_heartbeat_interval_ms),
            max_concurrent_runs: runs.max_concurrent.map(size),
            max_queued_runs: runs.max_queued,
            drain_grace: ms(runs.drain_grace_ms),
            input_bytes_per_second: limits.input_bytes_per_second,
            input_burst_bytes: limits.input_burst_bytes,
            max_stored_bytes: limits.max_stored_bytes,
            max_stored_bytes_per_subject: limits.max_stored_bytes_per_subject,
            max_stored_bytes_per_token: limits.max_stored_bytes_per_token,
            openai: OpenAiSettings {
                enabled: gateway.openai.enabled,
                on_approval: gateway.openai.on_approval,
                approval_wait: ms(gateway.openai.approval_wait_ms),
            },
        })
    }
}

/// `gateway.controlUi.basePath`, checked: `""` for none (or `/`), else
/// `/` and path segments of unreserved characters, no trailing `/`, no
/// `.` or `..` segment.
pub fn base_path_of(text: Option<&str>) -> Result<String> {
    let Some(text) = text.map(str::trim).filter(|t| *t != "/") else {
        return Ok(String::new());
    };
    let segments: Vec<&str> = text.strip_prefix('/').unwrap_or("").split('/').collect();
    let valid = text.starts_with('/')
        && text.len() <= 128
        && segments.iter().all(|seg| {
            !seg.is_empty()
                && *seg != "."
                && *seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
        });
    if !valid {
        return Err(invalid(
            "gateway.controlUi.basePath",
            &format!(
                "{text:?} is not a path prefix: `/` and segments of letters, digits, `-._~`, no trailing `/` (e.g. \"/talon\")"
            ),
        ));
    }
    Ok(text.to_owned())
}

impl Config {
    /// `gateway.controlUi.basePath` ([`base_path_of`]).
    pub fn dashboard_base_path(&self) -> Result<String> {
        let control = &self.document()?.gateway.control_ui;
        base_path_of(control.base_path.as_ref().map(|p| p.0.as_str()))
    }
}

pub(crate) fn invalid(key: &str, message: &str) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        message: message.to_owned(),
    }
}

/// A count already bounded to fit `usize`.
fn size(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GatewaySettings> {
        Config::parse(text, None).and_then(|c| c.gateway())
    }

    #[test]
    fn the_dashboards_base_path_is_a_clean_prefix() {
        let base = |text: &str| Config::parse(text, None).and_then(|c| c.dashboard_base_path());
        assert_eq!(base("{}").unwrap(), "");
        assert_eq!(base("{gateway: {controlUi: {basePath: '/'}}}").unwrap(), "");
        assert_eq!(
            base("{gateway: {controlUi: {basePath: '/ops/talon', enabled: true, allowedOrigins: []}}}")
                .unwrap(),
            "/ops/talon"
        );
        for bad in [
            "talon", "/talon/", "//x", "/a/../b", "/a b", "/x?y", "/%2e%2e", "/..",
        ] {
            let error = base(&format!(
                "{{gateway: {{controlUi: {{basePath: {bad:?}}}}}}}"
            ))
            .unwrap_err()
            .to_string();
            assert!(
                error.contains("gateway.controlUi.basePath"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn every_key_is_read_and_absent_ones_stay_unset() {
        let settings = parse(
            "{gateway: {port: 18789, bind: 'loopback',
               limits: {callsPerSecond: 2.5, burst: 10, maxStreams: 8, maxBodyBytes: 1024,
                        maxConnections: 100, headerReadTimeoutMs: 500,
                        stalledWriteTimeoutMs: 2000, wsPingIntervalMs: 1000,
                        sseHeartbeatIntervalMs: 250, inputBytesPerSecond: 1000,
                        inputBurstBytes: 8192, maxStoredBytes: 1073741824,
                        maxStoredBytesPerSubject: 1048576, maxStoredBytesPerToken: 524288,
                        maxStreamsPerToken: 3, maxStreamsPerSubject: 6, maxRequestsPerToken: 5,
                        maxRequestsPerSubject: 7,
                        streamBytesPerToken: 65536,
                        slowReaderTimeoutMs: 700, bodyReadTimeoutMs: 900,
                        minBodyBytesPerSecond: 10},
               runs: {maxConcurrent: 4, maxQueued: 50, drainGraceMs: 3000},
               openai: {enabled: false, onApproval: 'deny', approvalWaitMs: 1500}}}",
        )
        .unwrap();
        assert_eq!(
            settings,
            GatewaySettings {
                calls_per_second: Some(2.5),
                burst: Some(10),
                max_streams: Some(8),
                max_streams_per_token: Some(3),
                max_streams_per_subject: Some(6),
                max_requests_per_token: Some(5),
                max_requests_per_subject: Some(7),
                stream_bytes_per_token: Some(65536),
                slow_reader_timeout: Some(Duration::from_millis(700)),
                body_read_timeout: Some(Duration::from_millis(900)),
                min_body_bytes_per_second: Some(10),
                max_body_bytes: Some(1024),
                max_connections: Some(100),
                header_read_timeout: Some(Duration::from_millis(500)),
                stalled_write_timeout: Some(Duration::from_secs(2)),
                ws_ping_interval: Some(Duration::from_secs(1)),
                sse_heartbeat_interval: Some(Duration::from_millis(250)),
                max_concurrent_runs: Some(4),
                max_queued_runs: Some(50),
                drain_grace: Some(Duration::from_secs(3)),
                input_bytes_per_second: Some(1000),
                input_burst_bytes: Some(8192),
                max_stored_bytes: Some(1 << 30),
                max_stored_bytes_per_subject: Some(1 << 20),
                max_stored_bytes_per_token: Some(1 << 19),
                openai: OpenAiSettings {
                    enabled: Some(false),
                    on_approval: Some(OpenAiApproval::Deny),
                    approval_wait: Some(Duration::from_millis(1500)),
                },
            }
        );
        assert_eq!(parse("{}").unwrap(), GatewaySettings::default());
    }

    #[test]
    fn bad_values_name_their_key() {
        for (text, key) in [
            (
                "{gateway: {limits: {callsPerSecond: 0}}}",
                "gateway.limits.callsPerSecond",
            ),
            ("{gateway: {limits: {burst: -1}}}", "gateway.limits.burst"),
            (
                "{gateway: {limits: {maxStreams: 1.5}}}",
                "gateway.limits.maxStreams",
            ),
            (
                "{gateway: {limits: {maxConnections: '10'}}}",
                "gateway.limits.maxConnections",
            ),
            (
                "{gateway: {limits: {headerReadTimeoutMs: 0}}}",
                "gateway.limits.headerReadTimeoutMs",
            ),
            (
                "{gateway: {runs: {maxConcurrent: 1e12}}}",
                "gateway.runs.maxConcurrent",
            ),
            (
                "{gateway: {openai: {onApproval: 'ask'}}}",
                "gateway.openai.onApproval",
            ),
            (
                "{gateway: {openai: {enabled: 'yes'}}}",
                "gateway.openai.enabled",
            ),
        ] {
            match parse(text) {
                Err(ConfigError::Invalid { key: got, .. }) => assert_eq!(got, key, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
