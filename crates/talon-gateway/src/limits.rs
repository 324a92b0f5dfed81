//! Limits that keep the gateway up under abuse: a token bucket per token
//! (every call, on any transport, and every stream opened takes one), a
//! second bucket per token for the bytes of the bodies of methods that
//! write (what piles up in the store: inputs, messages, settings), a
//! quota on the bytes the store holds ([`StoredBytes`]), a cap on the
//! streams open at once (SSE streams and WebSocket subscriptions
//! together), and the connection limits [`crate::serve`] and the
//! WebSocket transport apply.
//!
//! | over | answer |
//! |---|---|
//! | calls per second | `rate_limited`, `retryAfterMs` |
//! | write bytes per second | `rate_limited`, `retryAfterMs` |
//! | stored bytes | `quota_exceeded` (not retryable) |
//! | open streams | `unavailable`, `retryAfterMs` |

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use talon_protocol::gateway::{ApiError, ErrorCode};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How the gateway limits its callers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Calls (and stream opens) per second per token, sustained.
    pub calls_per_second: f64,
    /// Calls a token may make at once after being idle.
    pub burst: u32,
    /// Streams open at once, gateway-wide.
    pub max_streams: usize,
    /// The largest request body or WebSocket frame.
    pub max_body_bytes: usize,
    /// Connections open at once; more wait to be accepted until one
    /// closes.
    pub max_connections: usize,
    /// A request's head must arrive within this (else the connection is
    /// closed: a client trickling headers holds nothing for long).
    pub header_read_timeout: Duration,
    /// Data sent on a connection that the peer has not acknowledged for
    /// this long closes it (`TCP_USER_TIMEOUT`): a peer that vanished, or
    /// a reader that stopped reading its stream. It resumes by cursor.
    pub stalled_write_timeout: Duration,
    /// WebSocket connections are pinged this often; one from which
    /// nothing (not even a pong) arrives for two intervals is closed.
    pub ws_ping_interval: Duration,
    /// An SSE stream with nothing sent for this long gets a heartbeat
    /// comment, so proxies and clients keep it open.
    pub sse_heartbeat_interval: Duration,
    /// Bytes of write-method bodies per second per token, sustained.
    pub input_bytes_per_second: u64,
    /// Bytes of write-method bodies a token may send at once after being
    /// idle (at least `max_body_bytes`, so one largest body always fits).
    pub input_burst_bytes: u64,
    /// Once the store holds this many bytes (database and artifact
    /// files), methods that write answer `quota_exceeded` (`None`: no
    /// quota).
    pub max_stored_bytes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            calls_per_second: 50.0,
            burst: 200,
            max_streams: 4096,
            max_body_bytes: 4 << 20,
            max_connections: 16_384,
            header_read_timeout: Duration::from_secs(10),
            stalled_write_timeout: Duration::from_secs(30),
            ws_ping_interval: Duration::from_secs(30),
            sse_heartbeat_interval: Duration::from_secs(15),
            input_bytes_per_second: 256 << 10,
            input_burst_bytes: 16 << 20,
            max_stored_bytes: None,
        }
    }
}

/// Buckets beyond this many are swept of idle ones.
const SWEEP_AT: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The per-token buckets and the stream cap.
#[derive(Debug)]
pub(crate) struct Limiter {
    limits: Limits,
    buckets: Mutex<HashMap<String, Bucket>>,
    bytes: Mutex<HashMap<String, Bucket>>,
    streams: Arc<Semaphore>,
}

impl Limiter {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            limits,
            buckets: Mutex::new(HashMap::new()),
            bytes: Mutex::new(HashMap::new()),
            streams: Arc::new(Semaphore::new(limits.max_streams)),
        }
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Takes one call from `token_id`'s bucket, or says when to retry.
    pub(crate) fn take(&self, token_id: &str) -> Result<(), ApiError> {
        let rate = self.limits.calls_per_second.max(f64::MIN_POSITIVE);
        let burst = f64::from(self.limits.burst.max(1));
        let wait_ms = take_from(&self.buckets, token_id, 1.0, rate, burst)?;
        if wait_ms == 0 {
            return Ok(());
        }
        Err(ApiError::new(
            ErrorCode::RateLimited,
            format!(
                "this token is over its rate ({} calls/s, bursts of {})",
                self.limits.calls_per_second, self.limits.burst
            ),
        )
        .with_retry_after_ms(wait_ms))
    }

    /// Takes `len` bytes from `token_id`'s byte bucket when `method`
    /// writes (reads are not metered), or says when to retry.
    pub(crate) fn take_bytes(
        &self,
        token_id: &str,
        method: &str,
        len: usize,
    ) -> Result<(), ApiError> {
        let writes = talon_protocol::gateway::Method::from_name(method)
            .is_some_and(|m| m.spec().effect == talon_protocol::gateway::Effect::Write);
        if !writes || len == 0 {
            return Ok(());
        }
        let rate = self.limits.input_bytes_per_second.max(1) as f64;
        let burst = self
            .limits
            .input_burst_bytes
            .max(self.limits.max_body_bytes as u64)
            .max(1) as f64;
        let wait_ms = take_from(&self.bytes, token_id, len as f64, rate, burst)?;
        if wait_ms == 0 {
            return Ok(());
        }
        Err(ApiError::new(
            ErrorCode::RateLimited,
            format!(
                "this token is over its write volume ({} bytes/s, bursts of {} bytes)",
                self.limits.input_bytes_per_second, burst as u64
            ),
        )
        .with_retry_after_ms(wait_ms)
        .with_details(serde_json::json!({"limit": "inputBytesPerSecond"})))
    }

    /// A place for one more open stream, held until the stream ends.
    pub(crate) fn stream(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.streams.clone().try_acquire_owned().map_err(|_| {
            ApiError::new(
                ErrorCode::Unavailable,
                format!(
                    "the gateway has {} streams open, its limit",
                    self.limits.max_streams
                ),
            )
            .with_retry_after_ms(1_000)
        })
    }
}

/// Takes `amount` from `token_id`'s bucket in `buckets` (refilled at
/// `rate` per second up to `burst`): 0 when taken, else the milliseconds
/// until it could be (at least 1). Idle full buckets are swept once there
/// are many.
fn take_from(
    buckets: &Mutex<HashMap<String, Bucket>>,
    token_id: &str,
    amount: f64,
    rate: f64,
    burst: f64,
) -> Result<u64, ApiError> {
    let now = Instant::now();
    let Ok(mut buckets) = buckets.lock() else {
        return Err(ApiError::new(ErrorCode::Internal, "rate limiter poisoned"));
    };
    if buckets.len() >= SWEEP_AT {
        let full_after = Duration::from_secs_f64(burst / rate);
        buckets.retain(|_, b| now.duration_since(b.at) < full_after);
    }
    let bucket = buckets.entry(token_id.to_owned()).or_insert(Bucket {
        tokens: burst,
        at: now,
    });
    bucket.tokens = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(burst);
    bucket.at = now;
    if bucket.tokens >= amount {
        bucket.tokens -= amount;
        return Ok(0);
    }
    Ok((((amount - bucket.tokens) / rate * 1000.0).ceil() as u64).max(1))
}

/// How often the store's size is measured against the quota.
const MEASURE_EVERY: Duration = Duration::from_secs(5);

/// The bytes the store holds, measured every [`MEASURE_EVERY`], against
/// the quota.
#[derive(Debug, Clone)]
pub(crate) struct StoredBytes {
    held: Arc<std::sync::atomic::AtomicU64>,
    quota: Option<u64>,
}

impl StoredBytes {
    /// Measures `store` once, then until `closing` (only when there is a
    /// quota).
    pub(crate) async fn start(
        store: talon_store::Store,
        quota: Option<u64>,
        mut closing: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        let held = Arc::new(std::sync::atomic::AtomicU64::new(0));
        if quota.is_some() {
            if let Ok(bytes) = store.stored_bytes().await {
                held.store(bytes, std::sync::atomic::Ordering::Relaxed);
            }
            let measured = held.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(MEASURE_EVERY);
                tick.tick().await;
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = closing.wait_for(|c| *c) => return,
                    }
                    match store.stored_bytes().await {
                        Ok(bytes) => measured.store(bytes, std::sync::atomic::Ordering::Relaxed),
                        Err(error) => tracing::debug!(%error, "the store's size could not be read"),
                    }
                }
            });
        }
        Self { held, quota }
    }

    /// `quota_exceeded` once the store holds its quota.
    pub(crate) fn check(&self) -> Result<(), ApiError> {
        let Some(quota) = self.quota else {
            return Ok(());
        };
        let held = self.held.load(std::sync::atomic::Ordering::Relaxed);
        if held < quota {
            return Ok(());
        }
        Err(ApiError::new(
            ErrorCode::QuotaExceeded,
            format!(
                "the store holds {held} bytes, its quota (gateway.limits.maxStoredBytes) is {quota}: nothing more is written until room is freed"
            ),
        )
        .with_details(serde_json::json!({"storedBytes": held, "quotaBytes": quota})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_says_when_to_retry() {
        let limiter = Limiter::new(Limits {
            calls_per_second: 10.0,
            burst: 3,
            ..Limits::default()
        });
        for _ in 0..3 {
            limiter.take("a").unwrap();
        }
        let refused = limiter.take("a").unwrap_err();
        assert_eq!(refused.code, ErrorCode::RateLimited);
        assert!(
            refused
                .retry_after_ms
                .is_some_and(|ms| (1..=100).contains(&ms)),
            "{refused:?}"
        );
        // Another token has its own bucket.
        limiter.take("b").unwrap();
        std::thread::sleep(Duration::from_millis(120));
        limiter.take("a").unwrap();
    }

    #[test]
    fn streams_are_capped_and_released() {
        let limiter = Limiter::new(Limits {
            max_streams: 2,
            ..Limits::default()
        });
        let a = limiter.stream().unwrap();
        let _b = limiter.stream().unwrap();
        assert_eq!(limiter.stream().unwrap_err().code, ErrorCode::Unavailable);
        drop(a);
        let _again = limiter.stream().unwrap();
    }
}
