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
//! `gateway.environments` are read by [`crate::security`].

use std::time::Duration;

use serde_json::Value;

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

/// What an OpenAI-compatible call that needs an approval does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiApproval {
    /// Waits for an answer from the SDK or the dashboard, up to
    /// `approvalWaitMs`; then the call is denied.
    Wait,
    /// Denied at once.
    Deny,
}

impl Config {
    /// The `gateway` section.
    pub fn gateway(&self) -> Result<GatewaySettings> {
        let count = |key: &str, max: u64| self.whole(key, max);
        let ms = |key: &str| {
            self.whole(key, 86_400_000)
                .map(|v| v.map(Duration::from_millis))
        };
        let calls_per_second = match self.get("gateway.limits.callsPerSecond") {
            None => None,
            Some(v) => match v.as_f64() {
                Some(rate) if rate > 0.0 && rate <= 1e9 => Some(rate),
                _ => {
                    return Err(invalid(
                        "gateway.limits.callsPerSecond",
                        "expected a number above 0 (at most 1e9)",
                    ));
                }
            },
        };
        Ok(GatewaySettings {
            calls_per_second,
            burst: count("gateway.limits.burst", u64::from(u32::MAX))?.map(narrow),
            max_streams: count("gateway.limits.maxStreams", 1 << 20)?.map(size),
            max_streams_per_token: count("gateway.limits.maxStreamsPerToken", 1 << 20)?.map(size),
            max_streams_per_subject: count("gateway.limits.maxStreamsPerSubject", 1 << 20)?
                .map(size),
            max_requests_per_token: count("gateway.limits.maxRequestsPerToken", 1 << 20)?.map(size),
            max_requests_per_subject: count("gateway.limits.maxRequestsPerSubject", 1 << 20)?
                .map(size),
            stream_bytes_per_token: count("gateway.limits.streamBytesPerToken", 1 << 40)?,
            slow_reader_timeout: ms("gateway.limits.slowReaderTimeoutMs")?,
            body_read_timeout: ms("gateway.limits.bodyReadTimeoutMs")?,
            min_body_bytes_per_second: count("gateway.limits.minBodyBytesPerSecond", 1 << 40)?,
            max_body_bytes: count("gateway.limits.maxBodyBytes", 1 << 30)?.map(size),
            max_connections: count("gateway.limits.maxConnections", 1 << 20)?.map(size),
            header_read_timeout: ms("gateway.limits.headerReadTimeoutMs")?,
            stalled_write_timeout: ms("gateway.limits.stalledWriteTimeoutMs")?,
            ws_ping_interval: ms("gateway.limits.wsPingIntervalMs")?,
            sse_heartbeat_interval: ms("gateway.limits.sseHeartbeatIntervalMs")?,
            max_concurrent_runs: count("gateway.runs.maxConcurrent", 1 << 16)?.map(size),
            max_queued_runs: count("gateway.runs.maxQueued", u64::from(u32::MAX))?.map(narrow),
            drain_grace: ms("gateway.runs.drainGraceMs")?,
            input_bytes_per_second: count("gateway.limits.inputBytesPerSecond", 1 << 40)?,
            input_burst_bytes: count("gateway.limits.inputBurstBytes", 1 << 40)?,
            max_stored_bytes: count("gateway.limits.maxStoredBytes", 1 << 50)?,
            max_stored_bytes_per_subject: count(
                "gateway.limits.maxStoredBytesPerSubject",
                1 << 50,
            )?,
            max_stored_bytes_per_token: count("gateway.limits.maxStoredBytesPerToken", 1 << 50)?,
            openai: self.openai_settings()?,
        })
    }

    fn openai_settings(&self) -> Result<OpenAiSettings> {
        let enabled = match self.get("gateway.openai.enabled") {
            None => None,
            Some(Value::Bool(on)) => Some(*on),
            Some(_) => return Err(invalid("gateway.openai.enabled", "expected true or false")),
        };
        let on_approval = match self.get("gateway.openai.onApproval") {
            None => None,
            Some(Value::String(s)) if s == "wait" => Some(OpenAiApproval::Wait),
            Some(Value::String(s)) if s == "deny" => Some(OpenAiApproval::Deny),
            Some(_) => {
                return Err(invalid(
                    "gateway.openai.onApproval",
                    "expected \"wait\" or \"deny\"",
                ));
            }
        };
        Ok(OpenAiSettings {
            enabled,
            on_approval,
            approval_wait: self
                .whole("gateway.openai.approvalWaitMs", 86_400_000)?
                .map(Duration::from_millis),
        })
    }

    /// A whole number above 0, at most `max`, if given.
    pub(crate) fn whole(&self, key: &str, max: u64) -> Result<Option<u64>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if v > 0 && v <= max => Ok(Some(v)),
                _ => Err(invalid(
                    key,
                    &format!("expected a whole number above 0 (at most {max})"),
                )),
            },
            Some(_) => Err(invalid(key, "expected a whole number")),
        }
    }
}

pub(crate) fn invalid(key: &str, message: &str) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        message: message.to_owned(),
    }
}

/// A count already bounded to `u32`.
fn narrow(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
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
