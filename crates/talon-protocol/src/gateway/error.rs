//! The gateway's one error shape, on every transport: `{code, message,
//! retryable, retryAfterMs?, details?}`, with a closed, documented list of
//! codes and the HTTP status each maps to.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What went wrong, as a stable code. Servers send only the codes listed
/// here; a client decodes a code it does not know as [`ErrorCode::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request is malformed: bad JSON, a missing or wrong-typed field,
    /// a value out of range. Not worth retrying unchanged.
    InvalidRequest,
    /// No token, or one that is unknown, expired or revoked.
    Unauthenticated,
    /// The token lacks the scope the method needs (`details.scope` names
    /// it).
    Forbidden,
    /// The addressed resource does not exist, or the token may not see it.
    NotFound,
    /// The request conflicts with the resource's state: an approval already
    /// decided, an idempotency key reused with other parameters.
    Conflict,
    /// Too many requests; `retryAfterMs` says when to try again.
    RateLimited,
    /// The gateway cannot serve this now (starting, draining, a dependency
    /// down); retryable.
    Unavailable,
    /// The method exists in the protocol but this gateway does not
    /// implement it (the seed's "future API", e.g. `tasks.*`).
    Unsupported,
    /// The operation did not finish within its deadline.
    Timeout,
    /// An event cursor older than what the gateway keeps (`details.oldestId`
    /// names the oldest event still available).
    CursorExpired,
    /// A bug or an unexpected failure inside the gateway.
    Internal,
    /// The gateway keeps no more: its stored bytes reached the configured
    /// quota (`gateway.limits.maxStoredBytes`). Nothing was written; an
    /// operator (or retention) must free room first, so it is not retried.
    QuotaExceeded,
    /// The path exists but not with this HTTP method (a `GET` on
    /// `/v1/<method>`, which takes `POST`); the `Allow` header says which.
    MethodNotAllowed,
    /// A code this client does not know (sent by a newer gateway).
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    /// Every code a gateway sends, in documentation order.
    pub const ALL: [ErrorCode; 13] = [
        Self::InvalidRequest,
        Self::Unauthenticated,
        Self::Forbidden,
        Self::NotFound,
        Self::Conflict,
        Self::RateLimited,
        Self::Unavailable,
        Self::Unsupported,
        Self::Timeout,
        Self::CursorExpired,
        Self::Internal,
        Self::QuotaExceeded,
        Self::MethodNotAllowed,
    ];

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::Unauthenticated => "unauthenticated",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::RateLimited => "rate_limited",
            Self::Unavailable => "unavailable",
            Self::Unsupported => "unsupported",
            Self::Timeout => "timeout",
            Self::CursorExpired => "cursor_expired",
            Self::Internal => "internal",
            Self::QuotaExceeded => "quota_exceeded",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Unknown => "unknown",
        }
    }

    /// The HTTP status of a response carrying this error.
    pub fn http_status(self) -> u16 {
        match self {
            Self::InvalidRequest => 400,
            Self::Unauthenticated => 401,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::Conflict => 409,
            Self::CursorExpired => 410,
            Self::RateLimited => 429,
            Self::Internal | Self::Unknown => 500,
            Self::Unsupported => 501,
            Self::Unavailable => 503,
            Self::Timeout => 504,
            Self::QuotaExceeded => 507,
        }
    }

    /// Whether the same request may succeed later.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            Self::RateLimited | Self::Unavailable | Self::Timeout | Self::Internal
        )
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as every transport carries it (over HTTP, inside
/// `{"error": ...}` with the code's status).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiError {
    /// The stable code.
    pub code: ErrorCode,
    /// A human-readable explanation; not for matching.
    pub message: String,
    /// Whether the same request may succeed later.
    pub retryable: bool,
    /// When to retry, in milliseconds from now (`rate_limited`,
    /// `unavailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// Structured details: `scope` for `forbidden`, `oldestId` for
    /// `cursor_expired`, `field` for `invalid_request`, the winning
    /// decision for `conflict` on an approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl ApiError {
    /// An error with `code`'s retryability and no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retryable: code.retryable(),
            retry_after_ms: None,
            details: None,
        }
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Adds a retry delay.
    pub fn with_retry_after_ms(mut self, ms: u64) -> Self {
        self.retry_after_ms = Some(ms);
        self
    }

    /// `forbidden`, naming the missing scope.
    pub fn forbidden(scope: super::Scope) -> Self {
        Self::new(
            ErrorCode::Forbidden,
            format!("this token lacks the `{}` scope", scope.as_str()),
        )
        .with_details(serde_json::json!({ "scope": scope.as_str() }))
    }

    /// `unsupported`, for a method the gateway does not implement.
    pub fn unsupported(method: &str) -> Self {
        Self::new(
            ErrorCode::Unsupported,
            format!("`{method}` is not supported by this gateway yet"),
        )
        .with_details(serde_json::json!({ "method": method }))
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

/// Why a request was not authenticated: `details.reason` of its
/// `unauthenticated` error, and its message. Telling these apart reveals
/// nothing about which tokens exist: `revoked` and `expired` are said only
/// to whoever holds that token's secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthRefusal {
    /// No `Authorization` header.
    Missing,
    /// A header that is not `Bearer talon_...`.
    Malformed,
    /// A well-formed token this gateway does not know.
    Unknown,
    /// The token was revoked.
    Revoked,
    /// The token's lifetime has passed.
    Expired,
}

impl AuthRefusal {
    /// The reason's word.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthRefusal::Missing => "missing",
            AuthRefusal::Malformed => "malformed",
            AuthRefusal::Unknown => "unknown",
            AuthRefusal::Revoked => "revoked",
            AuthRefusal::Expired => "expired",
        }
    }

    /// The error, with `details.reason`.
    pub fn error(self) -> ApiError {
        let message = match self {
            AuthRefusal::Missing => {
                "no token: send Authorization: Bearer <token> (`talon token create` makes one)"
            }
            AuthRefusal::Malformed => "the Authorization header is not `Bearer talon_<secret>`",
            AuthRefusal::Unknown => "this token is not known to this gateway",
            AuthRefusal::Revoked => "this token was revoked",
            AuthRefusal::Expired => "this token has expired",
        };
        ApiError::new(ErrorCode::Unauthenticated, message)
            .with_details(serde_json::json!({"reason": self.as_str()}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_spelled_and_mapped_as_documented() {
        let table: Vec<(String, u16, bool)> = ErrorCode::ALL
            .iter()
            .map(|c| {
                (
                    serde_json::to_value(c)
                        .unwrap()
                        .as_str()
                        .unwrap()
                        .to_owned(),
                    c.http_status(),
                    c.retryable(),
                )
            })
            .collect();
        let expected = [
            ("invalid_request", 400, false),
            ("unauthenticated", 401, false),
            ("forbidden", 403, false),
            ("not_found", 404, false),
            ("conflict", 409, false),
            ("rate_limited", 429, true),
            ("unavailable", 503, true),
            ("unsupported", 501, false),
            ("timeout", 504, true),
            ("cursor_expired", 410, false),
            ("internal", 500, true),
            ("quota_exceeded", 507, false),
            ("method_not_allowed", 405, false),
        ]
        .map(|(c, s, r)| (c.to_owned(), s, r));
        assert_eq!(table, expected);
        for code in ErrorCode::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
    }

    #[test]
    fn unknown_codes_decode_and_the_shape_is_whole() {
        let e: ApiError = serde_json::from_value(serde_json::json!({
            "code": "quota_exhausted", "message": "m", "retryable": false
        }))
        .unwrap();
        assert_eq!(e.code, ErrorCode::Unknown);
        let e = ApiError::forbidden(super::super::Scope::AgentRun).with_retry_after_ms(5);
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({
                "code": "forbidden",
                "message": "this token lacks the `agent.run` scope",
                "retryable": false,
                "retryAfterMs": 5,
                "details": {"scope": "agent.run"}
            })
        );
    }
}
