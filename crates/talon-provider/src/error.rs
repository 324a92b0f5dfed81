//! Provider failures, each saying what to do about it. API keys never
//! appear in them.

/// A failed model request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    /// The run's cancellation token was cancelled; the request was
    /// dropped (its connection closed).
    #[error("the model request was cancelled")]
    Cancelled,
    /// The connection failed.
    #[error("provider {provider:?}: {message}")]
    Transport {
        /// The provider id.
        provider: String,
        /// What failed.
        message: String,
    },
    /// The reply could not be understood.
    #[error("provider {provider:?} sent a malformed reply: {message}")]
    Malformed {
        /// The provider id.
        provider: String,
        /// What was wrong.
        message: String,
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

/// `Result` of this crate.
pub type Result<T> = std::result::Result<T, ProviderError>;
