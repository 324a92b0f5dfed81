//! Limits that keep the gateway up under abuse: a token bucket per token
//! (every call, on any transport, and every stream opened takes one), a
//! second bucket per token for the bytes of the bodies of methods that
//! write (what piles up in the store: inputs, messages, settings), a
//! quota on the bytes the store holds ([`stored::StoredBytes`]; per
//! subject and per token, [`quota`]), caps on the
//! streams open at once (SSE streams and WebSocket subscriptions
//! together), gateway-wide and per token, a budget per token of the bytes
//! its streams hold unsent ([`Budget`]: a stream that waits on it past
//! `slow_reader_timeout` ends, and its reader resumes by cursor), and the
//! connection limits [`crate::transport::serve`] and the WebSocket transport apply.
//!
//! | over | answer |
//! |---|---|
//! | calls per second | `rate_limited`, `retryAfterMs` |
//! | write bytes per second | `rate_limited`, `retryAfterMs` |
//! | stored bytes | `quota_exceeded` (not retryable) |
//! | open streams, gateway-wide | `unavailable`, `retryAfterMs` |
//! | open streams of one token | `rate_limited`, `details.limit`, `retryAfterMs` |
//! | bytes held unsent, too long | the stream ends: `unavailable`, `details.reason: "slow_reader"` |

pub(crate) mod quota;
pub(crate) mod stored;

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
    /// Streams one token may have open at once, so that no token takes
    /// every place.
    pub max_streams_per_token: usize,
    /// Streams the tokens bound to one subject may have open at once, so
    /// that no subject (minting itself token after token) takes every
    /// place.
    pub max_streams_per_subject: usize,
    /// Requests one token may have in flight at once (calls, OpenAI
    /// requests, WebSocket connections), so that no token takes every
    /// connection.
    pub max_requests_per_token: usize,
    /// Requests the tokens bound to one subject may have in flight at
    /// once.
    pub max_requests_per_subject: usize,
    /// The bytes of events one token's streams may hold read but not yet
    /// written to their sockets, together: what unread streams cost is
    /// bounded by this, not by their number or their events' size.
    pub stream_bytes_per_token: u64,
    /// A stream that has waited this long for room in its token's
    /// `stream_bytes_per_token` (its reader, or its siblings', not
    /// reading) ends with `unavailable` (`details.reason: "slow_reader"`);
    /// its reader resumes from its cursor.
    pub slow_reader_timeout: Duration,
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
    /// A request body must have arrived whole within this.
    pub body_read_timeout: Duration,
    /// After its first 5 s a request body must arrive at least this fast
    /// (bytes a second), so a trickled body frees its connection soon.
    pub min_body_bytes_per_second: u64,
    /// Bytes of write-method bodies per second per token, sustained.
    pub input_bytes_per_second: u64,
    /// Bytes of write-method bodies a token may send at once after being
    /// idle (at least `max_body_bytes`, so one largest body always fits).
    pub input_burst_bytes: u64,
    /// Once the store holds this many bytes (database and artifact
    /// files), methods that write answer `quota_exceeded` (`None`: no
    /// quota).
    pub max_stored_bytes: Option<u64>,
    /// What the records of one subject's tokens may hold, in bytes (none:
    /// no such quota).
    pub max_stored_bytes_per_subject: Option<u64>,
    /// What the records one token made may hold, in bytes (none: no such
    /// quota).
    pub max_stored_bytes_per_token: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            calls_per_second: 50.0,
            burst: 200,
            max_streams: 4096,
            max_streams_per_token: 64,
            max_streams_per_subject: 256,
            max_requests_per_token: 64,
            max_requests_per_subject: 256,
            stream_bytes_per_token: 16 << 20,
            slow_reader_timeout: Duration::from_secs(30),
            max_body_bytes: talon_protocol::gateway::caps::DEFAULT_MAX_BODY_BYTES,
            max_connections: 16_384,
            header_read_timeout: Duration::from_secs(10),
            stalled_write_timeout: Duration::from_secs(30),
            ws_ping_interval: Duration::from_secs(30),
            sse_heartbeat_interval: Duration::from_secs(15),
            body_read_timeout: Duration::from_secs(30),
            min_body_bytes_per_second: 1024,
            input_bytes_per_second: 256 << 10,
            input_burst_bytes: 16 << 20,
            max_stored_bytes: None,
            max_stored_bytes_per_subject: None,
            max_stored_bytes_per_token: None,
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

/// The per-token buckets and the stream caps.
#[derive(Debug)]
pub(crate) struct Limiter {
    limits: Limits,
    buckets: Mutex<HashMap<String, Bucket>>,
    bytes: Mutex<HashMap<String, Bucket>>,
    streams: Arc<Semaphore>,
    tokens: Mutex<HashMap<String, Arc<TokenStreams>>>,
    /// Each subject's places among the open streams.
    subjects: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Each subject's places among the requests in flight.
    subject_requests: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// Whose a stream is: its token's, and the subject the token is bound to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Holder<'a> {
    /// The token's id.
    pub token: &'a str,
    /// Its subject (none: an unbound token, capped per token only).
    pub subject: Option<&'a str>,
}

/// One token's share of the stream and request limits.
#[derive(Debug)]
struct TokenStreams {
    /// Places among its open streams.
    open: Arc<Semaphore>,
    /// Places among its requests in flight (a WebSocket is one while it
    /// is open).
    requests: Arc<Semaphore>,
    /// Its budget of bytes held unsent, in KiB.
    bytes: Arc<Semaphore>,
}

/// A stream's places among the open streams (gateway-wide and its
/// token's) and its token's byte budget, held while it lives.
#[derive(Debug)]
pub(crate) struct StreamPermit {
    _global: OwnedSemaphorePermit,
    _own: OwnedSemaphorePermit,
    _subject: Option<OwnedSemaphorePermit>,
    /// Keeps the token's entry alive (the sweep keeps entries in use).
    _token: Arc<TokenStreams>,
    pub(crate) budget: Budget,
}

/// A place among a token's requests in flight.
#[derive(Debug)]
pub(crate) struct RequestPermit {
    _permit: OwnedSemaphorePermit,
    _subject: Option<OwnedSemaphorePermit>,
    _token: Arc<TokenStreams>,
}

/// A token's budget of bytes its streams hold unsent, in KiB.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    kib: Arc<Semaphore>,
    capacity: u32,
    wait: Duration,
}

/// Memory held against a [`Budget`]: returned when dropped (a frame
/// hands it to the socket writer, which drops it once written).
pub(crate) type Held = OwnedSemaphorePermit;

impl Budget {
    /// KiB `bytes` counts for (at least 1, at most the whole budget, so
    /// one event larger than the budget still goes out alone).
    pub(crate) fn kib(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, self.capacity)
    }

    /// Takes `kib` if the budget has it now.
    pub(crate) fn try_take(&self, kib: u32) -> Option<Held> {
        self.kib
            .clone()
            .try_acquire_many_owned(kib.clamp(1, self.capacity))
            .ok()
    }

    /// Takes `kib`, waiting for the token's other frames to be written,
    /// at most `slow_reader_timeout`; past it, the `slow_reader` error
    /// that ends the stream.
    pub(crate) async fn take(&self, kib: u32) -> Result<Held, ApiError> {
        let kib = kib.clamp(1, self.capacity);
        match tokio::time::timeout(self.wait, self.kib.clone().acquire_many_owned(kib)).await {
            Ok(Ok(held)) => Ok(held),
            _ => Err(ApiError::new(
                ErrorCode::Unavailable,
                format!(
                    "this token's streams hold {} KiB not yet read (gateway.limits.streamBytesPerToken) and waited {} ms: this stream ends; resume from its last event id",
                    self.capacity,
                    self.wait.as_millis()
                ),
            )
            .with_details(talon_protocol::gateway::ErrorDetails::reason("slow_reader"))),
        }
    }
}

impl Limiter {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            limits,
            buckets: Mutex::new(HashMap::new()),
            bytes: Mutex::new(HashMap::new()),
            streams: Arc::new(Semaphore::new(limits.max_streams)),
            tokens: Mutex::new(HashMap::new()),
            subjects: Mutex::new(HashMap::new()),
            subject_requests: Mutex::new(HashMap::new()),
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
        .with_details(talon_protocol::gateway::ErrorDetails::limit(
            "inputBytesPerSecond",
        )))
    }

    /// A place for one more open stream of `holder`'s (gateway-wide, its
    /// token's and its subject's), held until the stream ends, with the
    /// token's byte budget.
    pub(crate) fn stream(&self, holder: Holder<'_>) -> Result<StreamPermit, ApiError> {
        let token_id = holder.token;
        let global = self.streams.clone().try_acquire_owned().map_err(|_| {
            ApiError::new(
                ErrorCode::Unavailable,
                format!(
                    "the gateway has {} streams open, its limit",
                    self.limits.max_streams
                ),
            )
            .with_retry_after_ms(1_000)
        })?;
        let token = self.share(token_id)?;
        let own =
            token.open.clone().try_acquire_owned().map_err(|_| {
                ApiError::new(
                ErrorCode::RateLimited,
                format!(
                    "this token has {} streams open, its limit (gateway.limits.maxStreamsPerToken)",
                    self.limits.max_streams_per_token
                ),
            )
            .with_retry_after_ms(1_000)
            .with_details(talon_protocol::gateway::ErrorDetails::limit("maxStreamsPerToken"))
            })?;
        let budget = Budget {
            kib: token.bytes.clone(),
            capacity: self.budget_kib(),
            wait: self.limits.slow_reader_timeout,
        };
        let subject = match holder.subject {
            None => None,
            Some(subject) => Some(places(&self.subjects, subject, self.limits.max_streams_per_subject)?.try_acquire_owned().map_err(|_| {
                ApiError::new(
                    ErrorCode::RateLimited,
                    format!(
                        "this token's subject has {} streams open, its limit (gateway.limits.maxStreamsPerSubject)",
                        self.limits.max_streams_per_subject
                    ),
                )
                .with_retry_after_ms(1_000)
                .with_details(talon_protocol::gateway::ErrorDetails::limit("maxStreamsPerSubject"))
            })?),
        };
        Ok(StreamPermit {
            _global: global,
            _own: own,
            _subject: subject,
            _token: token,
            budget,
        })
    }

    /// A place among `token_id`'s requests in flight, held until it is
    /// answered (a WebSocket's, until it closes).
    pub(crate) fn request(&self, holder: Holder<'_>) -> Result<RequestPermit, ApiError> {
        let token = self.share(holder.token)?;
        let permit = token.requests.clone().try_acquire_owned().map_err(|_| {
            ApiError::new(
                ErrorCode::RateLimited,
                format!(
                    "this token has {} requests in flight, its limit (gateway.limits.maxRequestsPerToken)",
                    self.limits.max_requests_per_token
                ),
            )
            .with_retry_after_ms(1_000)
            .with_details(talon_protocol::gateway::ErrorDetails::limit("maxRequestsPerToken"))
        })?;
        let subject = match holder.subject {
            None => None,
            Some(subject) => Some(
                places(&self.subject_requests, subject, self.limits.max_requests_per_subject)?
                    .try_acquire_owned()
                    .map_err(|_| {
                        ApiError::new(
                            ErrorCode::RateLimited,
                            format!(
                                "this token's subject has {} requests in flight, its limit (gateway.limits.maxRequestsPerSubject)",
                                self.limits.max_requests_per_subject
                            ),
                        )
                        .with_retry_after_ms(1_000)
                        .with_details(talon_protocol::gateway::ErrorDetails::limit("maxRequestsPerSubject"))
                    })?,
            ),
        };
        Ok(RequestPermit {
            _permit: permit,
            _subject: subject,
            _token: token,
        })
    }

    /// `token_id`'s share, made on first use; entries nothing holds are
    /// swept once there are many.
    fn share(&self, token_id: &str) -> Result<Arc<TokenStreams>, ApiError> {
        let Ok(mut tokens) = self.tokens.lock() else {
            return Err(ApiError::new(
                ErrorCode::Internal,
                "stream limiter poisoned",
            ));
        };
        if tokens.len() >= SWEEP_AT {
            tokens.retain(|_, t| Arc::strong_count(t) > 1);
        }
        Ok(tokens
            .entry(token_id.to_owned())
            .or_insert_with(|| {
                Arc::new(TokenStreams {
                    open: Arc::new(Semaphore::new(self.limits.max_streams_per_token.max(1))),
                    requests: Arc::new(Semaphore::new(self.limits.max_requests_per_token.max(1))),
                    bytes: Arc::new(Semaphore::new(self.budget_kib() as usize)),
                })
            })
            .clone())
    }

    /// `stream_bytes_per_token` in KiB (at least 64).
    fn budget_kib(&self) -> u32 {
        u32::try_from(self.limits.stream_bytes_per_token / 1024)
            .unwrap_or(u32::MAX)
            .max(64)
    }
}

/// `subject`'s `size` places in `map`, made on first use; entries nothing
/// holds are swept once there are many.
fn places(
    map: &Mutex<HashMap<String, Arc<Semaphore>>>,
    subject: &str,
    size: usize,
) -> Result<Arc<Semaphore>, ApiError> {
    let Ok(mut subjects) = map.lock() else {
        return Err(ApiError::new(ErrorCode::Internal, "limiter poisoned"));
    };
    let full = size.max(1);
    if subjects.len() >= SWEEP_AT {
        subjects.retain(|_, s| s.available_permits() < full);
    }
    Ok(subjects
        .entry(subject.to_owned())
        .or_insert_with(|| Arc::new(Semaphore::new(full)))
        .clone())
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

#[cfg(test)]
mod tests;
