//! What tests script and inspect on the forge: the [`RecordedRequest`]s
//! it keeps ([`super::Forge::requests`]) and the [`Failure`]s it answers
//! the next API calls with ([`super::Forge::fail_next`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::API_PREFIX;

/// A request the forge received, for assertions.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, e.g. `/api/v3/repos/acme/widgets/pulls`.
    pub path: String,
    /// The query string, if any (undecoded).
    pub query: Option<String>,
    /// The headers in order (lowercase names). `authorization` is
    /// redacted: `Bearer [token]` when it carried the forge's token,
    /// `Bearer [wrong]` otherwise, `Basic USER:[token]` / `Basic
    /// USER:[wrong]` for basic auth.
    pub headers: Vec<(String, String)>,
    /// The body (a pack for a push).
    pub body: Vec<u8>,
    /// The status the forge answered.
    pub status: u16,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// Whether it was a REST API call (not git).
    pub fn is_api(&self) -> bool {
        self.path.starts_with(API_PREFIX)
    }
}

/// A scripted failure of an API call ([`super::Forge::fail_next`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The status answered.
    pub status: u16,
    /// Headers added to the answer.
    pub headers: Vec<(String, String)>,
    /// The JSON body answered.
    pub body: Value,
    /// Whether the call takes effect before the failure is answered (a
    /// response lost on the way back: a retried create then finds the pull
    /// request). By default it does not.
    pub apply: bool,
}

impl Failure {
    /// Answers `status` with `{"message": <its reason>}`.
    pub fn status(status: u16) -> Failure {
        let reason = StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Error");
        Failure {
            status,
            headers: Vec::new(),
            body: json!({ "message": reason }),
            apply: false,
        }
    }

    /// GitHub's primary rate limit: 403 with `x-ratelimit-remaining: 0`
    /// and `x-ratelimit-reset` (epoch seconds) `reset_in` from now.
    pub fn rate_limited(reset_in: Duration) -> Failure {
        let reset = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_add(reset_in)
            .as_secs();
        Failure {
            status: 403,
            headers: vec![
                ("x-ratelimit-limit".to_owned(), "5000".to_owned()),
                ("x-ratelimit-remaining".to_owned(), "0".to_owned()),
                ("x-ratelimit-used".to_owned(), "5000".to_owned()),
                ("x-ratelimit-reset".to_owned(), reset.to_string()),
                ("x-ratelimit-resource".to_owned(), "core".to_owned()),
            ],
            body: json!({
                "message": "API rate limit exceeded for installation ID 1.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            }),
            apply: false,
        }
    }

    /// GitHub's secondary rate limit: 403 with `retry-after` (seconds).
    pub fn secondary_rate_limit(retry_after: Duration) -> Failure {
        Failure {
            status: 403,
            headers: vec![("retry-after".to_owned(), retry_after.as_secs().to_string())],
            body: json!({
                "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
            }),
            apply: false,
        }
    }

    /// Adds a header to the answer.
    pub fn with_header(mut self, name: &str, value: &str) -> Failure {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }

    /// Lets the call take effect before the failure is answered.
    pub fn after_applying(mut self) -> Failure {
        self.apply = true;
        self
    }
}
