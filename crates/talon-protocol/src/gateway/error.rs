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
    /// Structured details: which fields appear depends on the code (each
    /// field says where it is sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Box<ErrorDetails>>,
}

/// An error's structured details: every key the gateway sends, typed and
/// documented once here (the SDKs' types are generated from it); keys a
/// newer gateway adds are kept as they came (in Rust, in `other`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDetails {
    /// `forbidden`: the scope the method needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `unsupported`, `method_not_allowed`: the method asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Why, as a stable word: `unauthenticated` (`missing`, `unknown`,
    /// `expired`, `revoked`, `ticket`, ...), `forbidden` (`origin`,
    /// `host`), `unavailable` (`starting`, `draining`, `store`,
    /// `slow_reader`, ...), a run's failure (`interrupted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `invalid_request`: the field at fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// `invalid_request`: every reason an answer was refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// `rate_limited`, `quota_exceeded`, a run's limit: which limit (the
    /// config key's last part: `maxStreamsPerToken`, `maxTurns`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// With `limit`: the limit's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    /// `quota_exceeded`: the bytes stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_bytes: Option<u64>,
    /// `quota_exceeded`: the quota, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_bytes: Option<u64>,
    /// `cursor_expired`: the cursor given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// `cursor_expired`: the oldest event still kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_id: Option<String>,
    /// `conflict` on an approval: the decision that won.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Box<super::Approval>>,
    /// `conflict` on a question: the answer that won.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<Box<super::Question>>,
    /// `conflict` on an environment: the environment as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Box<super::Environment>>,
    /// `conflict` (`multitaskStrategy: reject`): the session's live runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active_run_ids: Vec<super::bounded::RunId>,
    /// `tools.invoke`: the run that made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<super::bounded::RunId>,
    /// `not_found` on a token: the token id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    /// A tool call's failure: the tool's error code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_error: Option<String>,
    /// A tool call that did not complete: how it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// A run's check that failed (`offeredTools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// A run interrupted with its node: the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// A run interrupted with its node: why it was not resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_resumed: Option<String>,
    /// `invalid_request` on a range: the content's size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `quota_exceeded` on a workspace: the bytes still free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room_bytes: Option<u64>,
    /// An environment's SSH host (its configured name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// `forbidden` on an SSH host: the hosts this gateway has (at most 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// `not_found` on an environment provider: the providers there are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<String>,
    /// A model call's failure: the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// A model call's failure (`unknown_model`): the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A model call's failure: the provider's HTTP status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u64>,
    /// A model call's failure (`provider_unreachable`): the provider's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// A model call's failure (`provider_timeout`): the time limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A model call's failure (`provider_stalled`): how long nothing came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<u64>,
    /// The underlying failure, as text (an unreadable store record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Keys this version does not know (from a newer gateway).
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

impl ErrorDetails {
    /// Details naming only `reason`.
    pub fn reason(reason: impl Into<String>) -> Self {
        Self {
            reason: Some(reason.into()),
            ..Self::default()
        }
    }

    /// Details naming only `field`.
    pub fn field(field: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            ..Self::default()
        }
    }

    /// Details naming only `limit`.
    pub fn limit(limit: impl Into<String>) -> Self {
        Self {
            limit: Some(limit.into()),
            ..Self::default()
        }
    }
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
    pub fn with_details(mut self, details: ErrorDetails) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// Adds a retry delay.
    pub fn with_retry_after_ms(mut self, ms: u64) -> Self {
        self.retry_after_ms = Some(ms);
        self
    }

    /// `forbidden`, naming the missing scope.
    pub fn forbidden(scope: super::Scope) -> Self {
        super::refuse::forbidden(scope.as_str())
    }

    /// `unsupported`, for a method the gateway does not implement.
    pub fn unsupported(method: &str) -> Self {
        super::refuse::unsupported(method)
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
        use super::refuse;
        match self {
            AuthRefusal::Missing => refuse::no_token(),
            AuthRefusal::Malformed => refuse::malformed_token(),
            AuthRefusal::Unknown => refuse::unknown_token(),
            AuthRefusal::Revoked => refuse::revoked_token(),
            AuthRefusal::Expired => refuse::expired_token(),
        }
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
