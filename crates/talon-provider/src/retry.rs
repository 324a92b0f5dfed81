//! The retry policy both providers share: which failed replies are tried
//! again, how long to wait first, and the error a failure finally is.
//!
//! A reply is retried when `x-should-retry` says `true`; never when it says
//! `false`; otherwise when its status is 408, 409, 429 or 5xx (529 is
//! Anthropic's "overloaded"), except a 429 whose body says the spend limit
//! was reached. The wait is the server's `retry-after-ms` (milliseconds),
//! else its `retry-after` (seconds, fractions allowed, or an HTTP date,
//! counted from now), when between 0 and 60 s; else an exponential backoff from
//! [`FIRST_BACKOFF`] with jitter (each wait is 75–100% of its step). Every
//! wait is at most [`MAX_BACKOFF`]. The waits are plain sleeps inside the
//! request's future, so the run's cancellation (one `select!` over the
//! whole request) still interrupts them.

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use crate::error::ProviderError;

/// First backoff step; each retry doubles it.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between attempts (a larger server hint is cut to it).
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The largest server hint honoured as such; a larger one is ignored.
const MAX_HINT: Duration = Duration::from_secs(60);

/// Exponential backoff with jitter.
#[derive(Debug)]
pub(crate) struct Backoff {
    step: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            step: FIRST_BACKOFF,
        }
    }
}

impl Backoff {
    /// The wait before the next attempt: the server's hint if it gave a
    /// usable one, else this step with jitter. The step doubles either way.
    pub(crate) fn next(&mut self, headers: &HeaderMap) -> Duration {
        let step = self.step;
        self.step = (self.step * 2).min(MAX_BACKOFF);
        server_wait(headers)
            .unwrap_or_else(|| jitter(step))
            .min(MAX_BACKOFF)
    }
}

/// `step` scaled by a random factor in [0.75, 1.0].
fn jitter(step: Duration) -> Duration {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let factor = 0.75 + 0.25 * (random % 1001) as f64 / 1000.0;
    step.mul_f64(factor)
}

/// The server's wait hint: `retry-after-ms`, then `retry-after` in
/// seconds or as an HTTP date; only a value in (0, 60 s] counts.
pub(crate) fn server_wait(headers: &HeaderMap) -> Option<Duration> {
    server_wait_at(headers, SystemTime::now())
}

/// [`server_wait`] with `now` given (an HTTP date is a wait from it).
fn server_wait_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let wait = match number("retry-after-ms") {
        Some(ms) => Duration::from_secs_f64(ms / 1000.0),
        None => match number("retry-after") {
            Some(seconds) => Duration::from_secs_f64(seconds.min(3600.0)),
            None => http_date_wait(headers.get("retry-after")?.to_str().ok()?, now)?,
        },
    };
    (wait <= MAX_HINT).then_some(wait)
}

/// The wait until an HTTP date (IMF-fixdate, or the obsolete RFC 850 and
/// asctime forms RFC 7231 asks recipients to read); none for a past one.
fn http_date_wait(text: &str, now: SystemTime) -> Option<Duration> {
    let at = httpdate::parse_http_date(text.trim()).ok()?;
    at.duration_since(now).ok().filter(|wait| !wait.is_zero())
}

/// Whether a failed reply is worth another attempt. `body` is its text
/// (for the spend-limit 429).
pub(crate) fn should_retry(status: u16, headers: &HeaderMap, body: &str) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    if status == 429 && spend_limit(body) {
        return false;
    }
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// A 429 body saying the account's spend limit was reached (retrying
/// cannot help).
pub(crate) fn spend_limit(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body).is_ok_and(|v| {
        v["error"]["details"]["error_code"].as_str() == Some("enforced_spend_limit_reached")
    })
}

/// A request's whole life under its cancellation and its time budget,
/// for both wires: cancellation first (a token cancelled before the
/// request starts sends nothing), then `budget`, past which the request
/// is `Timeout`.
pub(crate) async fn bounded<T>(
    provider: &str,
    budget: Duration,
    cancel: &tokio_util::sync::CancellationToken,
    request: impl std::future::Future<Output = Result<T, ProviderError>>,
) -> Result<T, ProviderError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ProviderError::Cancelled),
        outcome = tokio::time::timeout(budget, request) => match outcome {
            Ok(result) => result,
            Err(_) => Err(ProviderError::Timeout {
                provider: provider.to_owned(),
                timeout_ms: budget.as_millis() as u64,
            }),
        },
    }
}

/// A failed reply's fate: `Ok(wait)` to retry after `wait` (logged), or
/// the error it ends as. One rule for both wires; `message` is the wire's
/// reading of the error body.
#[allow(
    clippy::too_many_arguments,
    reason = "the reply's parts and the request's identity, each used once"
)]
pub(crate) fn after_failure(
    provider: &str,
    model: &str,
    status: u16,
    headers: &HeaderMap,
    text: &str,
    attempt: u32,
    max_retries: u32,
    backoff: &mut Backoff,
    message: impl FnOnce(&str) -> String,
) -> Result<Duration, ProviderError> {
    let retryable = should_retry(status, headers, text);
    if retryable && attempt <= max_retries {
        let wait = backoff.next(headers);
        tracing::warn!(
            provider,
            status,
            attempt,
            wait_ms = wait.as_millis() as u64,
            "model request failed; retrying"
        );
        return Ok(wait);
    }
    Err(status_error(
        provider,
        model,
        status,
        attempt,
        retryable,
        message(text),
    ))
}

/// The error a failed reply is once no retry is left (or none applies):
/// 401/403 a rejected key, 404 an unknown model, a retryable status (or
/// a spend-limit 429) the provider being unavailable, anything else a
/// refused request.
pub(crate) fn status_error(
    provider: &str,
    model: &str,
    status: u16,
    attempts: u32,
    retryable: bool,
    message: String,
) -> ProviderError {
    let provider = provider.to_owned();
    match status {
        401 | 403 => ProviderError::Auth {
            provider,
            status,
            message,
        },
        404 => ProviderError::UnknownModel {
            provider,
            model: model.to_owned(),
            message,
        },
        _ if retryable || status == 429 || status >= 500 => ProviderError::Unavailable {
            provider,
            status,
            attempts,
            message,
        },
        _ => ProviderError::Status {
            provider,
            status,
            message,
        },
    }
}

/// An error body's message: `error.message` when it is JSON of either
/// provider's shape, else the text itself, at most 500 characters either
/// way (an HTML page from a proxy stays short).
pub(crate) fn error_message(text: &str) -> String {
    let message = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| text.trim().to_owned());
    message.chars().take(500).collect()
}

/// Whether `DEBUG_MODEL_TRANSPORT=1` is set (read once per process).
static TRANSPORT: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| talon_protocol::debug::DebugSwitch::ModelTransport.is_on());

/// `DEBUG_MODEL_TRANSPORT=1`: one line per model request as its answer
/// starts: the provider, the endpoint (never a key: those travel in
/// headers), the attempt, the status and how long the answer took to
/// start (target `talon::model_transport`).
pub(crate) fn log_transport(
    provider: &str,
    url: &str,
    attempt: u32,
    status: u16,
    since: std::time::Instant,
) {
    if *TRANSPORT {
        let endpoint = url.split('?').next().unwrap_or(url);
        tracing::info!(
            target: "talon::model_transport",
            provider,
            endpoint,
            attempt,
            status,
            elapsed_ms = since.elapsed().as_millis() as u64,
            "model request"
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    type Headers<'a> = &'a [(&'static str, &'a str)];

    #[test]
    fn the_server_hint_wins_in_its_order_and_range() {
        let cases: [(Headers<'_>, Option<Duration>); 14] = [
            (
                &[("retry-after-ms", "250.5")],
                Some(Duration::from_micros(250_500)),
            ),
            (&[("retry-after", "1.5")], Some(Duration::from_millis(1500))),
            (
                &[("retry-after-ms", "100"), ("retry-after", "9")],
                Some(Duration::from_millis(100)),
            ),
            (&[("retry-after", "61")], None),
            (&[("retry-after", "0")], None),
            (
                &[("retry-after", "Wed, 21 Oct 2015 07:28:20 GMT")],
                Some(Duration::from_secs(20)),
            ),
            (
                &[("retry-after", "Wednesday, 21-Oct-15 07:28:05 GMT")],
                Some(Duration::from_secs(5)),
            ),
            (
                &[("retry-after", "Wed Oct 21 07:29:00 2015")],
                Some(Duration::from_secs(60)),
            ),
            (&[("retry-after", "Wed, 21 Oct 2015 07:29:01 GMT")], None),
            (&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")], None),
            (&[("retry-after", "Wed, 21 Oct 2015 07:27:00 GMT")], None),
            (&[("retry-after", "Wed, 21 Oct 2015 25:00:00 GMT")], None),
            (&[("retry-after", "soon")], None),
            (
                &[
                    ("retry-after-ms", "100"),
                    ("retry-after", "Wed, 21 Oct 2015 07:28:20 GMT"),
                ],
                Some(Duration::from_millis(100)),
            ),
        ];
        // 2015-10-21T07:28:00Z, the dates' "now".
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let got: Vec<_> = cases
            .iter()
            .map(|(h, _)| server_wait_at(&headers(h), now))
            .collect();
        let want: Vec<_> = cases.iter().map(|(_, w)| *w).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        let mut backoff = Backoff::default();
        let none = HeaderMap::new();
        for n in 0..10u32 {
            let step = (FIRST_BACKOFF * 2u32.pow(n)).min(MAX_BACKOFF);
            let wait = backoff.next(&none);
            assert!(
                wait >= step.mul_f64(0.75) && wait <= step,
                "attempt {n}: {wait:?} not within 75–100% of {step:?}"
            );
        }
    }

    #[test]
    fn which_failures_are_retried() {
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"cap","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        let none = HeaderMap::new();
        let got: Vec<bool> = [
            should_retry(408, &none, ""),
            should_retry(409, &none, ""),
            should_retry(429, &none, ""),
            should_retry(500, &none, ""),
            should_retry(529, &none, ""),
            should_retry(400, &none, ""),
            should_retry(401, &none, ""),
            should_retry(429, &none, spend),
            should_retry(529, &headers(&[("x-should-retry", "false")]), ""),
            should_retry(400, &headers(&[("x-should-retry", "true")]), ""),
        ]
        .into();
        assert_eq!(
            got,
            vec![
                true, true, true, true, true, false, false, false, false, true
            ]
        );
    }

    #[test]
    fn error_messages_are_bounded() {
        let html = format!("<html>{}</html>", "x".repeat(10_000));
        assert_eq!(error_message(&html).chars().count(), 500);
        assert_eq!(
            error_message(r#"{"type":"error","error":{"type":"x","message":"Overloaded"}}"#),
            "Overloaded"
        );
    }
}
