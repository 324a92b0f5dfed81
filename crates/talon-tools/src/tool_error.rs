//! The error every executor returns: a stable code, a message for the
//! model, and whether trying again could help. It crosses every crate from
//! the executor to the surface unchanged; each surface maps it to its own
//! codes in one place.

use serde_json::{Value, json};
pub use talon_protocol::ToolErrorCode;

/// A failed tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// The stable code.
    pub code: ToolErrorCode,
    /// What went wrong, for the model (it never carries a secret).
    pub message: String,
    /// Whether the same call may succeed if tried again unchanged.
    pub retryable: bool,
}

impl ToolError {
    /// An error with `code` and `message`; retryable as the code says.
    pub fn new(code: ToolErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retryable: code.retryable(),
        }
    }

    /// A failure the tool reported itself (`failed`).
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ToolErrorCode::Failed, message)
    }

    /// The run was cancelled while the tool ran (`aborted`).
    pub fn aborted(message: impl Into<String>) -> Self {
        Self::new(ToolErrorCode::Aborted, message)
    }

    /// The same error with `retryable` set.
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// The error as the JSON a model or a guest sees: `{"error": <the
    /// error as text>, "status": "failed", "code": "<code>"}`, plus
    /// `"retryable": true` when it is.
    pub fn to_json(&self) -> Value {
        let mut value = json!({"error": self.to_string(), "status": "failed", "code": self.code});
        if self.retryable {
            value["retryable"] = Value::Bool(true);
        }
        value
    }
}

/// `<code>: <message>`, or the bare message for `failed` (a tool's own
/// failure needs no code in front).
impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.code {
            ToolErrorCode::Failed => f.write_str(&self.message),
            code => write!(f, "{code}: {}", self.message),
        }
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_code_and_retry() {
        let error = ToolError::new(ToolErrorCode::Timeout, "no answer in 5 ms");
        assert_eq!(
            error.to_json(),
            json!({"error": "timeout: no answer in 5 ms", "status": "failed", "code": "timeout", "retryable": true})
        );
        let error = ToolError::failed("the API said no");
        assert_eq!(
            error.to_json(),
            json!({"error": "the API said no", "status": "failed", "code": "failed"})
        );
        let error = ToolError::new(ToolErrorCode::OutsideWorkspace, "../x leaves the workspace");
        assert_eq!(
            error.to_json(),
            json!({"error": "outside_workspace: ../x leaves the workspace", "status": "failed", "code": "outside_workspace"})
        );
    }
}
