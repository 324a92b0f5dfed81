//! Request ids and the access log.
//!
//! Every request gets the gateway's own id, a fresh `req_<24 hex digits>`;
//! the response carries it back in `x-request-id`, whatever the answer
//! (guard refusals and 404s included). A client's `x-request-id` (1 to 128
//! visible ASCII characters, else dropped) is logged beside it as
//! `client_request_id` and goes nowhere else: not into events, traces or
//! answers, so no client can make its request pass for another's. Each request is logged at `info`
//! under the target `talon::access`, one line when its response head goes
//! out: HTTP method, path (never the query, which may hold a ticket),
//! status, duration, the token's id and name once it authenticated, and
//! the request ids. A WebSocket call logs its own line (`transport=ws`,
//! the call's method and outcome, the connection's request id and the
//! frame's id). The request's handling runs inside a `request` span naming
//! its id, so every line it logs carries it; a run created by the request
//! logs it beside the run's id.
//!
//! Inside it, a `request` span of the target `talon::trace` is the
//! request's OpenTelemetry span when the binary exports traces (`otel.*`
//! fields, HTTP semantic-convention attributes), inside the caller's
//! trace when it sent a valid W3C `traceparent`. Spans of that target are
//! never written to the log, and log spans are never exported.

pub(crate) mod access;
pub(crate) mod metrics;
pub(crate) mod scrape;

use std::sync::{Arc, OnceLock};

use axum::http::HeaderValue;

/// The request id header.
pub(crate) const REQUEST_ID: &str = "x-request-id";
/// The longest request id taken from a client.
pub(crate) const MAX_REQUEST_ID: usize = 128;
/// The longest path logged.
pub(super) const MAX_PATH: usize = 200;

/// What the access log learns of a call while it is served.
#[derive(Debug)]
pub(crate) struct Call {
    /// Its request id.
    pub request_id: String,
    /// The token that authenticated it: id and name.
    token: OnceLock<(String, Option<String>)>,
}

impl Call {
    pub(super) fn new(request_id: String) -> Self {
        Self {
            request_id,
            token: OnceLock::new(),
        }
    }

    pub(super) fn token(&self) -> (&str, &str) {
        match self.token.get() {
            Some((id, name)) => (id, name.as_deref().unwrap_or("")),
            None => ("", ""),
        }
    }
}

tokio::task_local! {
    pub(super) static CALL: Arc<Call>;
}

/// The request id of the call being served on this task, if any.
pub(crate) fn request_id() -> Option<String> {
    CALL.try_with(|call| call.request_id.clone()).ok()
}

/// Runs `work` as part of the call `request_id` names (a run executing
/// for the call that created it): [`request_id`] answers it inside, so
/// what the run appends carries it. Nothing is logged for it.
pub(crate) async fn on_behalf_of<F: std::future::Future>(
    request_id: Option<String>,
    work: F,
) -> F::Output {
    match request_id {
        Some(id) => CALL.scope(Arc::new(Call::new(id)), work).await,
        None => work.await,
    }
}

/// Sets `requestId` on the events that have none to the call being
/// served's.
pub(crate) fn stamp(events: &mut [talon_protocol::Event]) {
    let Some(id) = request_id() else {
        return;
    };
    for event in events {
        if event.request_id.is_none() {
            event.request_id = Some(id.clone());
        }
    }
}

/// Notes the token that authenticated the call being served.
pub(crate) fn authenticated(caller: &crate::auth::identity::Caller) {
    let _ = CALL.try_with(|call| {
        let _ = call
            .token
            .set((caller.token_id.clone(), caller.name.clone()));
    });
}

/// The client's request id when it is acceptable: logged beside the
/// gateway's own as `client_request_id`, never adopted.
pub(crate) fn accepted(value: Option<&HeaderValue>) -> Option<String> {
    let bytes = value?.as_bytes();
    let fits =
        (1..=MAX_REQUEST_ID).contains(&bytes.len()) && bytes.iter().all(|b| b.is_ascii_graphic());
    // Visible ASCII only, so it is valid UTF-8.
    fits.then(|| String::from_utf8_lossy(bytes).into_owned())
}

/// A fresh request id, `req_<24 hex digits>`.
pub(super) fn minted() -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: a process-unique counter still tells requests
        // apart in the log.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return format!("req_{n:024x}");
    }
    format!("req_{}", hex::encode(bytes))
}

pub(super) fn authenticated_as(call: &Call, caller: &crate::auth::identity::Caller) {
    let _ = call
        .token
        .set((caller.token_id.clone(), caller.name.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_bounded_and_printable() {
        let take = |s: &[u8]| accepted(HeaderValue::from_bytes(s).ok().as_ref());
        assert_eq!(take(b"abc-123_X.y"), Some("abc-123_X.y".into()));
        assert_eq!(take(&[b'a'; 128]), Some("a".repeat(128)));
        assert_eq!(take(&[b'a'; 129]), None);
        assert_eq!(take(b""), None);
        assert_eq!(take(b"has space"), None);
        assert_eq!(take(b"tab\there"), None);
        assert_eq!(take("caf\u{e9}".as_bytes()), None);
        let id = minted();
        assert_eq!(id.len(), 28);
        assert!(id.starts_with("req_"));
        assert!(accepted(HeaderValue::from_str(&id).ok().as_ref()).is_some());
    }
}
