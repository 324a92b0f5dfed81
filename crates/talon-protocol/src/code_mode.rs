//! Code Mode's result union and error codes, named exactly as in the Code
//! Mode seed (`CodeModeErrorCode`, `completed | waiting | failed`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The stable error codes of Code Mode, spelled as the seed spells them.
///
/// Clients decode unknown future codes as [`CodeModeErrorCode::Unknown`]
/// instead of failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CodeModeErrorCode {
    /// The QuickJS-WASI runtime could not be loaded; the run fails closed.
    RuntimeUnavailable,
    /// A configuration value is invalid.
    InvalidConfig,
    /// The input is not what `exec` expects (bad shape, syntax error, value
    /// that cannot cross the bridge).
    InvalidInput,
    /// The requested cell language is not enabled.
    UnsupportedLanguage,
    /// TypeScript could not be turned into JavaScript.
    TypescriptTransformFailed,
    /// The cell tried to import or require a module.
    ModuleAccessDenied,
    /// The wall-clock limit passed.
    Timeout,
    /// The guest heap limit was reached.
    MemoryLimitExceeded,
    /// The output limit was reached.
    OutputLimitExceeded,
    /// A snapshot would exceed its size limit.
    SnapshotLimitExceeded,
    /// The suspended cell's snapshot expired.
    SnapshotExpired,
    /// A snapshot could not be restored.
    SnapshotRestoreFailed,
    /// More nested tool calls are pending than allowed.
    TooManyPendingToolCalls,
    /// A nested tool call failed.
    NestedToolFailed,
    /// The run or session was aborted.
    Aborted,
    /// An invariant of the runtime broke.
    InternalError,
    /// A code this client does not know yet.
    #[serde(other)]
    Unknown,
}

impl CodeModeErrorCode {
    /// The wire spelling, e.g. `"memory_limit_exceeded"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RuntimeUnavailable => "runtime_unavailable",
            Self::InvalidConfig => "invalid_config",
            Self::InvalidInput => "invalid_input",
            Self::UnsupportedLanguage => "unsupported_language",
            Self::TypescriptTransformFailed => "typescript_transform_failed",
            Self::ModuleAccessDenied => "module_access_denied",
            Self::Timeout => "timeout",
            Self::MemoryLimitExceeded => "memory_limit_exceeded",
            Self::OutputLimitExceeded => "output_limit_exceeded",
            Self::SnapshotLimitExceeded => "snapshot_limit_exceeded",
            Self::SnapshotExpired => "snapshot_expired",
            Self::SnapshotRestoreFailed => "snapshot_restore_failed",
            Self::TooManyPendingToolCalls => "too_many_pending_tool_calls",
            Self::NestedToolFailed => "nested_tool_failed",
            Self::Aborted => "aborted",
            Self::InternalError => "internal_error",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for CodeModeErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which stream a piece of cell output was written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputStream {
    /// `console.log`, `console.info`, `console.debug`.
    Stdout,
    /// `console.warn`, `console.error`.
    Stderr,
    /// A stream this client does not know yet.
    #[serde(other)]
    Unknown,
}

/// One piece of output a cell printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CodeModeOutput {
    /// The stream it was written to.
    pub stream: OutputStream,
    /// The text, as the guest formatted it.
    pub text: String,
}

/// The outcome of running one cell with `talon exec`: the `completed` and
/// `failed` arms of Code Mode's result union (`waiting` arrives with `wait`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CellResult {
    /// The cell's promise fulfilled with a JSON-compatible value.
    Completed {
        /// The returned value (`null` for `undefined`).
        value: serde_json::Value,
        /// What the cell printed, if anything.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        output: Vec<CodeModeOutput>,
    },
    /// The cell failed.
    Failed {
        /// A human-readable message (for a guest exception: `Name: message`).
        error: String,
        /// The stable code, absent for an uncaught exception of the cell's own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<CodeModeErrorCode>,
        /// The guest stack trace of an uncaught exception.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stack: Option<String>,
        /// What the cell printed before it failed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        output: Vec<CodeModeOutput>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_round_trip_with_seed_spelling() {
        let all = [
            "runtime_unavailable",
            "invalid_config",
            "invalid_input",
            "unsupported_language",
            "typescript_transform_failed",
            "module_access_denied",
            "timeout",
            "memory_limit_exceeded",
            "output_limit_exceeded",
            "snapshot_limit_exceeded",
            "snapshot_expired",
            "snapshot_restore_failed",
            "too_many_pending_tool_calls",
            "nested_tool_failed",
            "aborted",
            "internal_error",
        ];
        for name in all {
            let code: CodeModeErrorCode =
                serde_json::from_value(serde_json::Value::String(name.into())).unwrap();
            assert_eq!(code.as_str(), name);
            assert_eq!(serde_json::to_value(code).unwrap(), serde_json::json!(name));
        }
        let future: CodeModeErrorCode = serde_json::from_str("\"from_the_future\"").unwrap();
        assert_eq!(future, CodeModeErrorCode::Unknown);
    }

    #[test]
    fn cell_result_is_tagged_by_status() {
        let failed = CellResult::Failed {
            error: "the cell exceeded its time limit of 100 ms".into(),
            code: Some(CodeModeErrorCode::Timeout),
            stack: None,
            output: vec![],
        };
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            serde_json::json!({
                "status": "failed",
                "error": "the cell exceeded its time limit of 100 ms",
                "code": "timeout"
            })
        );
        let done = CellResult::Completed {
            value: serde_json::json!(3),
            output: vec![],
        };
        assert_eq!(
            serde_json::to_value(&done).unwrap(),
            serde_json::json!({"status": "completed", "value": 3})
        );
    }
}
