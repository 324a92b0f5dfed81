//! OpenAI's error envelope, `{"error": {message, type, param, code}}`,
//! and the mapping from Talon's errors: the HTTP status stays Talon's
//! (but `cursor_expired`, 410 natively, is OpenAI's 400
//! `stream_cursor_expired`), `type` is OpenAI's class, `code` a stable
//! string, and Talon's own `code`, `retryable` and `details` ride along
//! as extra keys (both official clients keep unknown keys).
//!
//! The official clients retry 408, 409, 429 and 5xx unless the response
//! says `x-should-retry: false`, and they send no idempotency key: a
//! retried `POST` would start a second run. [`OpenAiError::should_retry`]
//! is therefore `true` only for an error that happened before any run was
//! created and that Talon marks retryable.

use serde::Serialize;

use crate::gateway::{ApiError, ErrorCode};

/// The body of an error response (and of a streamed error).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpenAiErrorBody {
    /// The error.
    pub error: OpenAiError,
}

/// One error, in OpenAI's shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpenAiError {
    /// What went wrong, for a person.
    pub message: String,
    /// OpenAI's class: `invalid_request_error`, `authentication_error`,
    /// `permission_error`, `rate_limit_error`, `server_error`,
    /// `insufficient_quota`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The request field at fault, if one is.
    pub param: Option<String>,
    /// A stable code (`model_not_found`, `previous_response_not_found`,
    /// `session_required`, ... or Talon's code).
    pub code: Option<&'static str>,
    /// Talon's own code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub talon_code: Option<ErrorCode>,
    /// Whether the same request may succeed later (Talon's judgement).
    pub retryable: bool,
    /// Talon's structured details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Box<crate::gateway::ErrorDetails>>,
    /// The HTTP status it is sent with.
    #[serde(skip)]
    pub status: u16,
    /// Milliseconds to wait before retrying (`retry-after-ms`).
    #[serde(skip)]
    pub retry_after_ms: Option<u64>,
}

impl OpenAiError {
    /// An `invalid_request_error` (400) about `param`.
    pub fn invalid(message: impl Into<String>, param: Option<&str>, code: &'static str) -> Self {
        Self {
            message: message.into(),
            kind: "invalid_request_error",
            param: param.map(str::to_owned),
            code: Some(code),
            talon_code: Some(ErrorCode::InvalidRequest),
            retryable: false,
            details: None,
            status: 400,
            retry_after_ms: None,
        }
    }

    /// A 404 `invalid_request_error` with `code`.
    pub fn not_found(message: impl Into<String>, param: Option<&str>, code: &'static str) -> Self {
        Self {
            status: 404,
            talon_code: Some(ErrorCode::NotFound),
            ..Self::invalid(message, param, code)
        }
    }

    /// Whether a client may retry the request as it is: only a retryable
    /// error that happened before a run existed (`run_exists`).
    pub fn should_retry(&self, run_exists: bool) -> bool {
        self.retryable && !run_exists
    }

    /// The envelope.
    pub fn body(&self) -> OpenAiErrorBody {
        OpenAiErrorBody {
            error: self.clone(),
        }
    }
}

impl From<ApiError> for OpenAiError {
    fn from(error: ApiError) -> Self {
        let (status, kind, code) = match error.code {
            ErrorCode::InvalidRequest => (400, "invalid_request_error", "invalid_request"),
            ErrorCode::Unauthenticated => (401, "authentication_error", "invalid_api_key"),
            ErrorCode::Forbidden => (403, "permission_error", "insufficient_scope"),
            ErrorCode::NotFound => (404, "invalid_request_error", "not_found"),
            ErrorCode::MethodNotAllowed => (405, "invalid_request_error", "method_not_allowed"),
            ErrorCode::Conflict => (409, "invalid_request_error", "conflict"),
            ErrorCode::CursorExpired => (400, "invalid_request_error", "stream_cursor_expired"),
            ErrorCode::RateLimited => (429, "rate_limit_error", "rate_limit_exceeded"),
            ErrorCode::Unsupported => (501, "invalid_request_error", "unsupported"),
            ErrorCode::Unavailable => (503, "server_error", "service_unavailable"),
            ErrorCode::Timeout => (504, "server_error", "timeout"),
            ErrorCode::QuotaExceeded => (507, "insufficient_quota", "insufficient_quota"),
            ErrorCode::Internal | ErrorCode::Unknown => (500, "server_error", "internal_error"),
        };
        let param = error.details.as_ref().and_then(|d| d.field.clone());
        Self {
            message: error.message,
            kind,
            param,
            code: Some(code),
            talon_code: Some(error.code),
            retryable: error.retryable,
            details: error.details,
            status,
            retry_after_ms: error.retry_after_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn talon_errors_map_to_openai_classes() {
        let forbidden: OpenAiError = ApiError::new(ErrorCode::Forbidden, "needs agent.run").into();
        assert_eq!(
            serde_json::to_value(forbidden.body()).unwrap(),
            serde_json::json!({"error": {
                "message": "needs agent.run", "type": "permission_error", "param": null,
                "code": "insufficient_scope", "talon_code": "forbidden", "retryable": false}})
        );
        assert_eq!(forbidden.status, 403);
        let expired: OpenAiError = ApiError::new(ErrorCode::CursorExpired, "gone").into();
        assert_eq!(
            (expired.status, expired.code),
            (400, Some("stream_cursor_expired"))
        );
        let busy: OpenAiError = ApiError::new(ErrorCode::Unavailable, "busy").into();
        assert!(busy.should_retry(false));
        assert!(!busy.should_retry(true));
        let missing = OpenAiError::not_found("no such model", Some("model"), "model_not_found");
        assert_eq!(
            (missing.status, missing.param.as_deref()),
            (404, Some("model"))
        );
    }
}
