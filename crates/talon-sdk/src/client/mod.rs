//! The low-level client: one connection configuration, a transport (HTTP
//! or WebSocket) for calls, Server-Sent Events for event streams, and the
//! retry loop. Every method of the protocol is a typed function on
//! [`Client`], generated from the method table (`crate::generated`); the
//! functions here are what those call, and what the table cannot say
//! (streams, artifact bytes, a call by name).

mod http;
pub mod sse;
mod ws;

use std::sync::Arc;
use std::time::Duration;
use talon_protocol::gateway::bounded::{ArtifactId, IdempotencyKey};

use serde::Serialize;
use serde::de::DeserializeOwned;
use talon_protocol::gateway::Method;
use talon_protocol::gateway::params::EventsSubscribeParams;

use crate::error::{Error, Result};
pub use sse::{EventStream, StreamQuery};
pub use ws::Subscription;

/// How calls travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Transport {
    /// `POST /v1/<method>`, one request per call.
    #[default]
    Http,
    /// One WebSocket (`GET /v1/ws`) for every call, opened on the first
    /// and reopened after it drops; needed for [`Client::subscribe`].
    WebSocket,
}

/// When and how often a failed call is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// The wait before the first retry; it doubles each time.
    pub initial_backoff: Duration,
    /// The longest wait between tries (a server's `retryAfterMs` may ask
    /// for longer and is honoured up to [`RetryPolicy::max_retry_after`]).
    pub max_backoff: Duration,
    /// The longest `retryAfterMs` the client waits out; a longer one is
    /// returned to the caller as the error.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn never() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The wait before retry number `retry` (1-based) after `error`, or
    /// `None` when the error is not worth retrying or the tries are spent.
    pub fn delay(&self, retry: u32, error: &Error) -> Option<Duration> {
        if retry >= self.max_attempts || !error.retryable() {
            return None;
        }
        if let Some(after) = error.retry_after() {
            return (after <= self.max_retry_after).then_some(after);
        }
        let exponent = retry.saturating_sub(1).min(16);
        let base = self.initial_backoff.saturating_mul(1 << exponent);
        let capped = base.min(self.max_backoff);
        // Up to a quarter of jitter, so that clients cut off together do
        // not come back together.
        let jitter = capped.mul_f64(f64::from(random_u32() % 256) / 1024.0);
        Some(capped.saturating_add(jitter))
    }
}

/// How to reach a gateway.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The gateway's base URL, e.g. `http://127.0.0.1:7777`.
    pub url: String,
    /// The bearer token.
    pub token: String,
    /// How calls travel.
    pub transport: Transport,
    /// Retries of failed calls.
    pub retry: RetryPolicy,
    /// How long to wait for a connection to open.
    pub connect_timeout: Duration,
}

impl ClientConfig {
    /// HTTP calls to `url` with `token` and the default retries.
    pub fn new(url: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            token: token.into(),
            transport: Transport::Http,
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// Whether a call may be sent again after a retryable failure (chosen by
/// the generated code from the method's effect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// A read, or a write carrying an idempotency key.
    Safe,
    /// A write that could act twice.
    #[allow(
        dead_code,
        reason = "the generator emits it for a write without an idempotency key; every write has one today"
    )]
    Never,
}

/// The low-level client: cheap to clone (clones share connections).
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: http::HttpTransport,
    ws: Option<ws::WsTransport>,
    retry: RetryPolicy,
}

impl Client {
    /// A client for `config` (no connection is opened yet).
    pub fn new(config: ClientConfig) -> Result<Self> {
        let http = http::HttpTransport::new(&config)?;
        let ws = match config.transport {
            Transport::WebSocket => Some(ws::WsTransport::new(&config, http.base())?),
            Transport::Http => None,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                ws,
                retry: config.retry,
            }),
        })
    }

    /// The gateway's base URL.
    pub fn base_url(&self) -> &url::Url {
        self.inner.http.base()
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.inner.retry
    }

    /// `GET /healthz`: whether the gateway answers.
    pub async fn health(&self) -> Result<()> {
        self.inner.http.health().await
    }

    /// Calls a method by name with JSON params (for a method newer than
    /// this SDK). Sent once: no retry.
    pub async fn call_raw(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value> {
        self.send(method, &params).await
    }

    /// One typed call with the retries `retry` allows.
    pub(crate) async fn call<P: Serialize, R: DeserializeOwned>(
        &self,
        method: Method,
        params: &P,
        retry: Retry,
    ) -> Result<R> {
        let params = serde_json::to_value(params).map_err(|e| Error::decode(method.name(), e))?;
        let mut attempt = 1;
        loop {
            let error = match self.send(method.name(), &params).await {
                Ok(value) => {
                    return serde_json::from_value(value)
                        .map_err(|e| Error::decode(format!("the result of {}", method.name()), e));
                }
                Err(error) => error,
            };
            let delay = match retry {
                Retry::Safe => self.inner.retry.delay(attempt, &error),
                Retry::Never => None,
            };
            let Some(delay) = delay else {
                return Err(error);
            };
            tracing::debug!(method = method.name(), attempt, ?delay, %error, "retrying");
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    async fn send(&self, method: &str, params: &serde_json::Value) -> Result<serde_json::Value> {
        match &self.inner.ws {
            Some(ws) => ws.call(method, params.clone()).await,
            None => self.inner.http.call(method, params).await,
        }
    }

    /// One run's events as Server-Sent Events, after `after` (from the
    /// first when `None`). The stream ends after the run's terminal event;
    /// a connection cut before it ends the stream with a
    /// [`Error::Transport`] (the high-level `Run::events` resumes by
    /// itself).
    pub async fn stream_run_events(&self, run_id: &str, after: Option<u64>) -> Result<EventStream> {
        let path = format!("v1/runs/{}/events", url_segment(run_id));
        self.inner
            .http
            .stream(&path, &StreamQuery::default(), after, true)
            .await
    }

    /// Every event the token may see, filtered, after `after`. It never
    /// ends by itself; a cut ends it with [`Error::Transport`].
    pub async fn stream_events(
        &self,
        query: &StreamQuery,
        after: Option<u64>,
    ) -> Result<EventStream> {
        self.inner
            .http
            .stream("v1/events", query, after, false)
            .await
    }

    /// Live events on the WebSocket (`events.subscribe`): a replay after
    /// `params.after`, then the live tail. Needs [`Transport::WebSocket`].
    pub async fn subscribe(&self, params: EventsSubscribeParams) -> Result<Subscription> {
        match &self.inner.ws {
            Some(ws) => ws.subscribe(params).await,
            None => Err(Error::invalid(
                "subscriptions need the WebSocket transport (ClientConfig.transport)",
            )),
        }
    }

    /// Copies an artifact's bytes into `writer`: asks `artifacts.download`
    /// where they are, then streams them (`GET`, same token); returns how
    /// many.
    pub async fn download_artifact<W>(&self, artifact_id: &str, writer: &mut W) -> Result<u64>
    where
        W: tokio::io::AsyncWrite + Unpin + ?Sized,
    {
        let place = self
            .artifacts_download(talon_protocol::gateway::params::ArtifactRef {
                artifact_id: ArtifactId::new(artifact_id),
                run_id: None,
            })
            .await?;
        // The URL is relative to the gateway: keep the base's path.
        let path = place.url.trim_start_matches('/');
        self.inner.http.download(path, writer).await
    }
}

/// A fresh idempotency key: 128 random bits, hex.
pub(crate) fn idempotency_key() -> talon_protocol::gateway::bounded::IdempotencyKey {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness: fall back to time and a counter, still
        // unique within this process.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        return IdempotencyKey::new(format!("sdk-{t:x}-{n:x}"));
    }
    IdempotencyKey::new(format!("sdk-{}", hex::encode(bytes)))
}

fn random_u32() -> u32 {
    let mut bytes = [0u8; 4];
    let _ = getrandom::fill(&mut bytes);
    u32::from_le_bytes(bytes)
}

/// `text` as one URL path segment.
fn url_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b':') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use talon_protocol::gateway::{ApiError, ErrorCode};

    use super::*;

    #[test]
    fn backoff_doubles_honours_retry_after_and_stops() {
        let policy = RetryPolicy::default();
        let unavailable = Error::Api(ApiError::new(ErrorCode::Unavailable, "busy"));
        let first = policy.delay(1, &unavailable).unwrap();
        let second = policy.delay(2, &unavailable).unwrap();
        assert!(first >= Duration::from_millis(100) && first <= Duration::from_millis(125));
        assert!(second >= Duration::from_millis(200) && second <= Duration::from_millis(250));
        assert_eq!(policy.delay(4, &unavailable), None);
        let limited =
            Error::Api(ApiError::new(ErrorCode::RateLimited, "slow").with_retry_after_ms(700));
        assert_eq!(policy.delay(1, &limited), Some(Duration::from_millis(700)));
        let long =
            Error::Api(ApiError::new(ErrorCode::RateLimited, "slow").with_retry_after_ms(60_000));
        assert_eq!(policy.delay(1, &long), None);
        let missing = Error::Api(ApiError::new(ErrorCode::NotFound, "gone"));
        assert_eq!(policy.delay(1, &missing), None);
    }

    #[test]
    fn keys_are_unique_and_segments_are_escaped() {
        assert_ne!(idempotency_key(), idempotency_key());
        assert_eq!(url_segment("run_1:a/b c"), "run_1:a%2Fb%20c");
    }
}
