//! The crate's error type. Messages name the server and, for a stdio
//! server that failed, carry the tail of its stderr; they never carry a
//! configured secret.

/// MCP failures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    #[error("MCP server {server:?} failed to start: {message}{}", tail(stderr))]
    Start {
        /// The server.
        server: String,
        /// Why.
        message: String,
        /// The end of its stderr.
        stderr: String,
    },
    /// The connection broke (the process exited, the HTTP session ended).
    #[error(
        "MCP server {server:?} closed the connection: {message}{}",
        tail(stderr)
    )]
    Closed {
        /// The server.
        server: String,
        /// What happened.
        message: String,
        /// The end of its stderr.
        stderr: String,
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
    #[error("MCP server {server:?}: {method}: {message}")]
    Protocol {
        /// The server.
        server: String,
        /// The request.
        method: String,
        /// What it said or what was wrong.
        message: String,
    },
    /// No such server (unknown, disabled, or failed to start for this run).
    #[error("no MCP server {0:?} in this run")]
    Unknown(String),
    /// The run was aborted while the request was in flight (it was
    /// cancelled).
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

fn tail(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; stderr: {}", stderr.trim_end())
    }
}

impl McpError {
    pub(crate) fn config(field: &str, message: impl Into<String>) -> Self {
        Self::Config {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

/// `Result` of this crate.
pub type Result<T> = std::result::Result<T, McpError>;
