//! The SDK's one error type: the gateway's protocol error as sent
//! ([`ApiError`], with its stable code, `retryable` and `retryAfterMs`),
//! or a failure before an answer arrived (transport), or an answer that did
//! not decode.

use std::time::Duration;

use talon_protocol::gateway::{ApiError, ErrorCode};

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The gateway answered with the protocol's error shape.
    #[error("{0}")]
    Api(ApiError),
    /// The request or stream did not reach the gateway, or the connection
    /// broke before the answer was whole. Worth retrying.
    #[error("{0}")]
    Transport(String),
    /// The gateway's answer did not decode as the protocol says.
    #[error("decoding {what}: {message}")]
    Decode {
        /// What was being decoded.
        what: String,
        /// Why it failed.
        message: String,
    },
    /// An argument the SDK cannot use (a URL, a token with line breaks).
    #[error("invalid argument: {0}")]
    Invalid(String),
}

/// The SDK's result.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The protocol's error code, for an error the gateway sent.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Api(e) => Some(e.code),
            _ => None,
        }
    }

    /// The gateway's error, if it sent one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Self::Api(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the same request may succeed later: the gateway's
    /// `retryable`, or any transport failure.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Api(e) => e.retryable,
            Self::Transport(_) => true,
            Self::Decode { .. } | Self::Invalid(_) => false,
        }
    }

    /// How long the gateway asked the client to wait before retrying.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Api(e) => e.retry_after_ms.map(Duration::from_millis),
            _ => None,
        }
    }

    pub(crate) fn decode(what: impl Into<String>, error: impl std::fmt::Display) -> Self {
        Self::Decode {
            what: what.into(),
            message: error.to_string(),
        }
    }

    /// A failure of an HTTP request to the gateway at `base`, said so that
    /// a person knows what to do: could not connect (is it running
    /// there?), no answer in time, or a connection that broke.
    pub(crate) fn http(base: &url::Url, error: &reqwest::Error) -> Self {
        let mut cause: &dyn std::error::Error = error;
        while let Some(next) = cause.source() {
            cause = next;
        }
        let origin = base.as_str().trim_end_matches('/');
        let message = if error.is_connect() {
            format!(
                "could not connect to the gateway at {origin}: {cause} (is the gateway running \
                 there? `talon gateway` starts one)"
            )
        } else if error.is_timeout() {
            format!(
                "the gateway at {origin} did not answer in time (is it running there, and \
                 reachable?)"
            )
        } else {
            format!("the connection to the gateway at {origin} broke: {cause}")
        };
        Self::Transport(message)
    }
}

impl From<ApiError> for Error {
    fn from(error: ApiError) -> Self {
        Self::Api(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryability_follows_the_gateway_and_transport_failures_retry() {
        let limited = Error::Api(
            ApiError::new(ErrorCode::RateLimited, "slow down").with_retry_after_ms(1500),
        );
        assert_eq!(
            (limited.code(), limited.retryable(), limited.retry_after()),
            (
                Some(ErrorCode::RateLimited),
                true,
                Some(Duration::from_millis(1500))
            )
        );
        let missing = Error::Api(ApiError::new(ErrorCode::NotFound, "no run"));
        assert_eq!((missing.retryable(), missing.retry_after()), (false, None));
        assert!(Error::Transport("reset".into()).retryable());
        assert!(!Error::decode("RunResult", "missing field").retryable());
    }
}
