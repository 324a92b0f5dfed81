//! Provider failures, each saying what to do about it. API keys never
//! appear in them. A failure that came from another error (the HTTP
//! client's, the JSON decoder's) keeps it as its `source`; the HTTP
//! client's is kept without the request's URL.

use std::sync::Arc;

use talon_protocol::gateway::{ApiError, ErrorCode, ErrorDetails};

/// The error under a [`ProviderError`]. Shared, so that a `ProviderError`
/// stays `Clone`.
pub type ErrorSource = Arc<dyn std::error::Error + Send + Sync>;

/// A failed model request. Two are equal when they are the same kind and
/// read the same (a source has no equality of its own).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// 401/403: the key is missing or wrong.
    #[error(
        "provider {provider:?} rejected the API key ({status}): {message}; check models.providers.{provider}.apiKey"
    )]
    Auth {
        /// The provider id.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// 404 for the model: it does not exist there.
    #[error("provider {provider:?} does not know model {model:?}: {message}")]
    UnknownModel {
        /// The provider id.
        provider: String,
        /// The model id.
        model: String,
        /// The provider's message.
        message: String,
    },
    /// 429 or 5xx, still failing after the retries.
    #[error("provider {provider:?} failed with {status} after {attempts} attempts: {message}")]
    Unavailable {
        /// The provider id.
        provider: String,
        /// The last status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// The provider's message.
        message: String,
    },
    /// Another HTTP error (a bad request, usually).
    #[error("provider {provider:?} answered {status}: {message}")]
    Status {
        /// The provider id.
        provider: String,
        /// The status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The request took longer than the timeout.
    #[error("provider {provider:?} did not answer within {timeout_ms} ms")]
    Timeout {
        /// The provider id.
        provider: String,
        /// The budget.
        timeout_ms: u64,
    },
    /// A streamed reply went silent for longer than the idle timeout.
    #[error("provider {provider:?} sent nothing for {idle_ms} ms in the middle of a reply")]
    Stalled {
        /// The provider id.
        provider: String,
        /// The idle timeout.
        idle_ms: u64,
    },
    /// The run's cancellation token was cancelled; the request was
    /// dropped (its connection closed).
    #[error("the model request was cancelled")]
    Cancelled,
    /// The connection failed: the provider is down or unreachable.
    #[error(
        "provider {provider:?} at {base_url} cannot be reached: {message} (is it running? check models.providers.{provider}.baseUrl)"
    )]
    Transport {
        /// The provider id.
        provider: String,
        /// Its base URL, without credentials or query.
        base_url: String,
        /// What failed (the HTTP client's innermost cause, without the
        /// request's URL).
        message: String,
        /// The HTTP client's error (without the URL), if there was one.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The reply could not be understood.
    #[error("provider {provider:?} sent a malformed reply: {message}")]
    Malformed {
        /// The provider id.
        provider: String,
        /// What was wrong.
        message: String,
        /// The decoder's error, if one found it.
        #[source]
        source: Option<ErrorSource>,
    },
    /// A bad `models.providers` value.
    #[error("invalid_config: {field}: {message}")]
    Config {
        /// The field.
        field: String,
        /// What was expected.
        message: String,
    },
}

impl PartialEq for ProviderError {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

impl Eq for ProviderError {}

impl ProviderError {
    /// The gateway's error for a run this ended: a provider that is down
    /// is `unavailable` (retryable) and names its base URL; a model it
    /// does not know is `not_found`; a request it refuses is
    /// `invalid_request`; a rejected key is `unavailable`, not retryable
    /// (an operator must fix the config). `details` names the provider
    /// (and the model, the status) for programs.
    pub fn api_error(&self) -> ApiError {
        let message = self.to_string();
        let (code, retryable, details) = match self {
            Self::Auth {
                provider, status, ..
            } => (
                ErrorCode::Unavailable,
                false,
                ErrorDetails {
                    reason: Some("provider_auth".to_owned()),
                    provider: Some(provider.to_string()),
                    status: Some(u64::from(*status)),
                    ..ErrorDetails::default()
                },
            ),
            Self::UnknownModel {
                provider, model, ..
            } => (
                ErrorCode::NotFound,
                false,
                ErrorDetails {
                    reason: Some("unknown_model".to_owned()),
                    provider: Some(provider.to_string()),
                    model: Some(model.to_string()),
                    ..ErrorDetails::default()
                },
            ),
            Self::Unavailable {
                provider, status, ..
            } => (
                ErrorCode::Unavailable,
                true,
                ErrorDetails {
                    reason: Some("provider_unavailable".to_owned()),
                    provider: Some(provider.to_string()),
                    status: Some(u64::from(*status)),
                    ..ErrorDetails::default()
                },
            ),
            Self::Status {
                provider, status, ..
            } => (
                ErrorCode::InvalidRequest,
                false,
                ErrorDetails {
                    reason: Some("provider_refused".to_owned()),
                    provider: Some(provider.to_string()),
                    status: Some(u64::from(*status)),
                    ..ErrorDetails::default()
                },
            ),
            Self::Timeout {
                provider,
                timeout_ms,
            } => (
                ErrorCode::Timeout,
                true,
                ErrorDetails {
                    reason: Some("provider_timeout".to_owned()),
                    provider: Some(provider.to_string()),
                    timeout_ms: Some(*timeout_ms),
                    ..ErrorDetails::default()
                },
            ),
            Self::Stalled { provider, idle_ms } => (
                ErrorCode::Timeout,
                true,
                ErrorDetails {
                    reason: Some("provider_stalled".to_owned()),
                    provider: Some(provider.to_string()),
                    idle_ms: Some(*idle_ms),
                    ..ErrorDetails::default()
                },
            ),
            Self::Cancelled => (
                ErrorCode::Unavailable,
                false,
                ErrorDetails {
                    reason: Some("cancelled".to_owned()),
                    ..ErrorDetails::default()
                },
            ),
            Self::Transport {
                provider, base_url, ..
            } => (
                ErrorCode::Unavailable,
                true,
                ErrorDetails {
                    reason: Some("provider_unreachable".to_owned()),
                    provider: Some(provider.to_string()),
                    base_url: Some(base_url.to_string()),
                    ..ErrorDetails::default()
                },
            ),
            Self::Malformed { provider, .. } => (
                ErrorCode::Unavailable,
                true,
                ErrorDetails {
                    reason: Some("provider_malformed".to_owned()),
                    provider: Some(provider.to_string()),
                    ..ErrorDetails::default()
                },
            ),
            Self::Config { field, .. } => (
                ErrorCode::InvalidRequest,
                false,
                ErrorDetails {
                    reason: Some("config".to_owned()),
                    field: Some(field.to_string()),
                    ..ErrorDetails::default()
                },
            ),
        };
        let mut error = ApiError::new(code, message).with_details(details);
        error.retryable = retryable;
        error
    }
}

/// `Result` of this crate.
pub type Result<T> = std::result::Result<T, ProviderError>;
