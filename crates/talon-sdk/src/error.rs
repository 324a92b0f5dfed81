//! The SDK's one error type: the gateway's protocol error as sent
//! ([`ApiError`], with its stable code, `retryable` and `retryAfterMs`),
//! or a failure before an answer arrived (transport), or an answer that did
//! not decode. A failure that came from another error (the HTTP client's,
//! the WebSocket's, the JSON decoder's, a URL parser's) keeps it as its
//! `source`.

use std::time::Duration;

use talon_protocol::gateway::{ApiError, ErrorCode};

/// The error under an [`Error`].
pub type ErrorSource = Box<dyn std::error::Error + Send + Sync>;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The gateway answered with the protocol's error shape.
    #[error("{0}")]
    Api(ApiError),
    /// The request or stream did not reach the gateway, or the connection
    /// broke before the answer was whole. Worth retrying.
    #[error("{message}")]
    Transport {
        /// What happened, for a person (with what to check).
        message: String,
        /// The HTTP client's or the WebSocket's error, if there was one.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The gateway's answer did not decode as the protocol says.
    #[error("decoding {what}: {}", said(message, source))]
    Decode {
        /// What was being decoded.
        what: String,
        /// Why it failed (empty when the source says it all).
        message: String,
        /// The decoder's error, if one refused it.
        #[source]
        source: Option<ErrorSource>,
    },
    /// An argument the SDK cannot use (a URL, a token with line breaks).
    #[error("invalid argument: {}", said(message, source))]
    Invalid {
        /// What is wrong with it.
        message: String,
        /// The parser's (or writer's) error, if one refused it.
        #[source]
        source: Option<ErrorSource>,
    },
}

/// `message`, then the source's text after `: ` (either may be absent).
fn said(message: &str, source: &Option<ErrorSource>) -> String {
    match source {
        None => message.to_owned(),
        Some(source) if message.is_empty() => source.to_string(),
        Some(source) => format!("{message}: {source}"),
    }
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
            Self::Transport { .. } => true,
            Self::Decode { .. } | Self::Invalid { .. } => false,
        }
    }

    /// How long the gateway asked the client to wait before retrying.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Api(e) => e.retry_after_ms.map(Duration::from_millis),
            _ => None,
        }
    }

    /// `what` did not decode: the decoder's `error` says why.
    pub(crate) fn decode(
        what: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Decode {
            what: what.into(),
            message: String::new(),
            source: Some(Box::new(error)),
        }
    }

    /// `what` is not what the protocol says: `message` says why.
    pub(crate) fn malformed(what: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Decode {
            what: what.into(),
            message: message.into(),
            source: None,
        }
    }

    /// A transport failure with no error under it.
    pub(crate) fn transport(message: impl Into<String>) -> Self {
        Self::Transport {
            message: message.into(),
            source: None,
        }
    }

    /// An argument the SDK cannot use, as `message` says.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid {
            message: message.into(),
            source: None,
        }
    }

    /// An argument the SDK cannot use: `what` was refused by `error`.
    pub(crate) fn invalid_because(
        what: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Invalid {
            message: what.into(),
            source: Some(Box::new(error)),
        }
    }

    /// A failure of an HTTP request to the gateway at `base`, said so that
    /// a person knows what to do: could not connect (is it running
    /// there?), no answer in time, or a connection that broke. The HTTP
    /// client's error is the source.
    pub(crate) fn http(base: &url::Url, error: reqwest::Error) -> Self {
        let mut cause: &dyn std::error::Error = &error;
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
        Self::Transport {
            message,
            source: Some(Box::new(error)),
        }
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
        assert!(Error::transport("reset").retryable());
        assert!(!Error::malformed("RunResult", "missing field").retryable());
        let undecodable = serde_json::from_str::<u32>("x").unwrap_err();
        let decode = Error::decode("RunResult", undecodable);
        assert!(!decode.retryable());
        assert!(
            decode
                .to_string()
                .starts_with("decoding RunResult: expected value")
        );
        assert!(std::error::Error::source(&decode).is_some());
    }
}
