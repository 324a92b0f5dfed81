//! The crate's error type. Messages name the server and, for a stdio
//! server that failed, carry the tail of its stderr; they never carry a
//! configured secret. What a tool call, a resource read or a prompt gets
//! is a [`ToolError`], mapped from [`McpError`] in one place (its `From`).
//! A failure that came from another error (the process could not be
//! spawned, the SDK's service error, a response that does not decode)
//! keeps it as its `source`.

use std::sync::Arc;

use talon_tools::{ToolError, ToolErrorCode};

/// The error under an [`McpError`]: the spawn's, the MCP SDK's, the JSON
/// decoder's. Shared, so that an `McpError` stays `Clone`.
pub type ErrorSource = Arc<dyn std::error::Error + Send + Sync>;

/// MCP failures. Two are equal when they are the same kind and read the
/// same (their sources have no equality of their own).
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    /// A bad `mcp.servers` value, naming the field.
    #[error("invalid_config: {field}: {message}")]
    Config {
        /// The full path of the field.
        field: String,
        /// What was expected.
        message: String,
    },
    /// The server could not be started or did not complete `initialize`.
    #[error(
        "MCP server {server:?} failed to start: {}{}",
        said(message, source),
        tail(stderr)
    )]
    Start {
        /// The server.
        server: String,
        /// Why.
        message: String,
        /// The end of its stderr.
        stderr: String,
        /// The error it came from (the spawn's, `initialize`'s), if any.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The connection broke (the process exited, the HTTP session ended).
    #[error(
        "MCP server {server:?} closed the connection: {}{}",
        said(message, source),
        tail(stderr)
    )]
    Closed {
        /// The server.
        server: String,
        /// What happened.
        message: String,
        /// The end of its stderr.
        stderr: String,
        /// The error the request failed with.
        #[source]
        source: Option<ErrorSource>,
    },
    /// A request took longer than `requestTimeoutMs`.
    #[error("MCP server {server:?} did not answer {method} within {timeout_ms} ms")]
    Timeout {
        /// The server.
        server: String,
        /// The request.
        method: String,
        /// The budget.
        timeout_ms: u64,
    },
    /// The server answered with an error or a malformed response.
    #[error("MCP server {server:?}: {method}: {}", said(message, source))]
    Protocol {
        /// The server.
        server: String,
        /// The request.
        method: String,
        /// What was wrong (empty when the source says it all).
        message: String,
        /// The error it answered with, or the decoder's.
        #[source]
        source: Option<ErrorSource>,
    },
    /// No such server (unknown, disabled, or failed to start for this run).
    #[error("no MCP server {0:?} in this run")]
    Unknown(String),
    /// The run's cancellation token was cancelled while the request was in
    /// flight (it was cancelled at the server) or the server was starting.
    #[error("the run was aborted; the request to MCP server {0:?} was cancelled")]
    Aborted(String),
    /// The server does not offer this (no resources or prompts capability).
    #[error("MCP server {server:?} does not offer {what}")]
    Unsupported {
        /// The server.
        server: String,
        /// The capability.
        what: String,
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

fn tail(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; stderr: {}", stderr.trim_end())
    }
}

impl PartialEq for McpError {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

impl Eq for McpError {}

impl McpError {
    pub(crate) fn config(field: &str, message: impl Into<String>) -> Self {
        Self::Config {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

/// The one mapping of MCP failures to tool errors. The message is the
/// error's text (server, method, stderr tail; never a secret).
///
/// | `McpError`    | code               | retryable |
/// |---------------|--------------------|-----------|
/// | `Timeout`     | `timeout`          | yes       |
/// | `Start`       | `unavailable`      | yes       |
/// | `Closed`      | `unavailable`      | yes       |
/// | `Unknown`     | `unavailable`      | yes       |
/// | `Protocol`    | `protocol_error`   | no        |
/// | `Aborted`     | `aborted`          | no        |
/// | `Unsupported` | `unsupported`      | no        |
/// | `Config`      | `internal`         | no        |
///
/// A `Config` error reaches a call only when a server starts (a
/// referenced variable is unset, a header is not valid): the model's
/// arguments are fine and trying again does not help, the gateway's
/// configuration is broken.
impl From<McpError> for ToolError {
    fn from(error: McpError) -> Self {
        let code = match &error {
            McpError::Timeout { .. } => ToolErrorCode::Timeout,
            McpError::Start { .. } | McpError::Closed { .. } | McpError::Unknown(_) => {
                ToolErrorCode::Unavailable
            }
            McpError::Protocol { .. } => ToolErrorCode::ProtocolError,
            McpError::Aborted(_) => ToolErrorCode::Aborted,
            McpError::Unsupported { .. } => ToolErrorCode::Unsupported,
            McpError::Config { .. } => ToolErrorCode::Internal,
        };
        // Retryable as the code says: `timeout` and `unavailable`.
        ToolError::new(code, error.to_string())
    }
}

/// `Result` of this crate.
pub type Result<T> = std::result::Result<T, McpError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_maps_to_one_code() {
        let server = || "fx".to_owned();
        let cases = [
            (
                McpError::Timeout {
                    server: server(),
                    method: "tools/call".into(),
                    timeout_ms: 300,
                },
                ToolErrorCode::Timeout,
                true,
            ),
            (
                McpError::Start {
                    server: server(),
                    message: "cannot run".into(),
                    stderr: "boom".into(),
                    source: Some(Arc::new(std::io::Error::other("no such file"))),
                },
                ToolErrorCode::Unavailable,
                true,
            ),
            (
                McpError::Closed {
                    server: server(),
                    message: "gone".into(),
                    stderr: String::new(),
                    source: None,
                },
                ToolErrorCode::Unavailable,
                true,
            ),
            (
                McpError::Unknown(server()),
                ToolErrorCode::Unavailable,
                true,
            ),
            (
                McpError::Protocol {
                    server: server(),
                    method: "tools/call".into(),
                    message: "bad".into(),
                    source: None,
                },
                ToolErrorCode::ProtocolError,
                false,
            ),
            (McpError::Aborted(server()), ToolErrorCode::Aborted, false),
            (
                McpError::Unsupported {
                    server: server(),
                    what: "prompts".into(),
                },
                ToolErrorCode::Unsupported,
                false,
            ),
            (
                McpError::config(
                    "mcp.servers.fx.env.TOKEN",
                    "environment variable TOKEN is not set",
                ),
                ToolErrorCode::Internal,
                false,
            ),
        ];
        for (error, code, retryable) in cases {
            let text = error.to_string();
            let mapped = ToolError::from(error);
            assert_eq!(
                (mapped.code, mapped.retryable, mapped.message.as_str()),
                (code, retryable, text.as_str())
            );
        }
    }
}
