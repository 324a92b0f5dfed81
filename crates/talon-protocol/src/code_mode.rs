//! Code Mode's result union and error codes, named exactly as in the Code
//! Mode seed (`CodeModeErrorCode`, `completed | waiting | failed`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::gateway::bounded::CellId;

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

/// Which stream a piece of console output was written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputStream {
    /// `console.log`, `console.info`, `console.debug`.
    Stdout,
    /// `console.warn`, `console.error`.
    Stderr,
    /// Code Mode's `text(value)`: one item per call, never merged.
    Text,
    /// Code Mode's `json(value)`: `text` holds the value as JSON.
    Json,
    /// A stream this client does not know yet.
    #[serde(other)]
    Unknown,
}

/// One piece of output a VM printed, as the sandbox collects it
/// (`tool_search_code` returns these as its `console`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConsoleOutput {
    /// The stream it was written to.
    pub stream: OutputStream,
    /// The text, as the guest formatted it.
    pub text: String,
}

/// One item of a Code Mode cell's output, exactly the seed's
/// `CodeModeOutput`: console lines and `text()` calls are `text` items,
/// `json()` calls are `json` items, in the order the guest made them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CodeModeOutput {
    /// Human-readable text.
    Text {
        /// The text.
        text: String,
    },
    /// A structured value.
    Json {
        /// The value, after JSON-compatible serialization.
        value: serde_json::Value,
    },
    /// An item kind this client does not know yet.
    #[serde(other)]
    Unknown,
}

/// Why a cell is waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CodeModeWaitReason {
    /// Nested tool calls were still running when the step's time budget
    /// ended.
    PendingTools,
    /// The guest called `yield_control()`.
    Yield,
    /// A reason this client does not know yet.
    #[serde(other)]
    Unknown,
}

/// A nested call a waiting cell still needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeModePendingToolCall {
    /// The nested call's id (`<exec call id>/<n>`), as in the trajectory.
    pub call_id: String,
    /// The catalog id of the tool (or `mcp:<server>:...` for MCP calls,
    /// `namespace:<id>` for namespace calls before they resolve).
    pub tool_id: String,
}

/// Counts of limit failures in a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeModeLimitFailures {
    /// Steps that hit `timeoutMs` while guest code was running.
    pub timeout: u64,
    /// Steps that hit `memoryLimitBytes`.
    pub memory: u64,
    /// Snapshots over `maxSnapshotBytes` (or over the live-cell cap).
    pub snapshot: u64,
    /// Steps that hit `maxOutputBytes`.
    pub output: u64,
}

/// One snapshot lifecycle event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeModeSnapshotEvent {
    /// `created`, `restored`, `deleted`, `expired` or `rejected`.
    pub event: String,
    /// The cell's `runId`.
    // A cell id in Rust; `runId` is Code Mode's (OpenClaw's) wire name.
    #[serde(rename = "runId")]
    pub cell_id: CellId,
    /// Snapshot size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// What Code Mode reports with every result: the seed's telemetry list,
/// cumulative for the run. It holds names, ids and counts, never tool
/// input or secrets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeModeTelemetry {
    /// Tool names sent to the model (`exec`, `wait`, direct-only tools).
    pub visible_tools: Vec<String>,
    /// Size of the hidden catalog.
    pub catalog_size: u64,
    /// Hidden catalog size by source (`openclaw`, `plugin`, `mcp`,
    /// `client`).
    pub catalog_by_source: std::collections::BTreeMap<String, u64>,
    /// `exec` calls in the run.
    pub exec_count: u64,
    /// `wait` calls in the run.
    pub wait_count: u64,
    /// `tools.search` calls.
    pub search_count: u64,
    /// `tools.describe` (and `$api`) calls.
    pub describe_count: u64,
    /// Nested tool calls started (catalog, MCP and namespace calls).
    pub nested_call_count: u64,
    /// Catalog ids of the nested calls, in the order they started.
    pub nested_tool_ids: Vec<String>,
    /// Limit failures.
    pub limit_failures: CodeModeLimitFailures,
    /// Snapshot lifecycle events of this step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshot_events: Vec<CodeModeSnapshotEvent>,
    /// Wall time of this step (`exec` or `wait`), in milliseconds.
    pub duration_ms: u64,
}

/// The result of `exec` and `wait`: the seed's `CodeModeResult`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CodeModeResult {
    /// The cell finished; its snapshot (if any) is deleted.
    Completed {
        /// The value the cell returned (`null` for `undefined`).
        value: serde_json::Value,
        /// What the cell printed, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        output: Vec<CodeModeOutput>,
        /// The run's telemetry.
        telemetry: CodeModeTelemetry,
    },
    /// The cell is suspended; `wait` with `runId` resumes it.
    Waiting {
        /// The id `wait` takes.
        // A cell id in Rust; `runId` is Code Mode's (OpenClaw's) wire name.
        #[serde(rename = "runId")]
        cell_id: CellId,
        /// Why it waits.
        reason: CodeModeWaitReason,
        /// The nested calls it still needs.
        #[serde(
            default,
            rename = "pendingToolCalls",
            skip_serializing_if = "Vec::is_empty"
        )]
        pending_tool_calls: Vec<CodeModePendingToolCall>,
        /// What the cell printed in this step.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        output: Vec<CodeModeOutput>,
        /// The run's telemetry.
        telemetry: CodeModeTelemetry,
    },
    /// The cell failed; its snapshot (if any) is deleted.
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
        /// The run's telemetry.
        telemetry: CodeModeTelemetry,
    },
}

impl CodeModeResult {
    /// `completed`, `waiting` or `failed`.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Completed { .. } => "completed",
            Self::Waiting { .. } => "waiting",
            Self::Failed { .. } => "failed",
        }
    }

    /// The telemetry of any arm.
    pub fn telemetry(&self) -> &CodeModeTelemetry {
        match self {
            Self::Completed { telemetry, .. }
            | Self::Waiting { telemetry, .. }
            | Self::Failed { telemetry, .. } => telemetry,
        }
    }

    /// The error code of a failure.
    pub fn code(&self) -> Option<CodeModeErrorCode> {
        match self {
            Self::Failed { code, .. } => *code,
            _ => None,
        }
    }
}

/// An error a host function reports to a cell's guest code, and how a
/// nested call that failed is remembered while its cell is suspended. It
/// reaches the guest as a plain `Error` with `message` and, if set,
/// `code`: never as a host object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCallError {
    /// The message the guest sees.
    pub message: String,
    /// A stable code the guest can branch on.
    pub code: Option<String>,
}

impl HostCallError {
    /// An error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: None,
        }
    }

    /// Adds a code.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }
}

impl std::fmt::Display for HostCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostCallError {}

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
    fn result_is_tagged_by_status_with_seed_field_names() {
        let waiting = CodeModeResult::Waiting {
            cell_id: CellId::new("cm_1"),
            reason: CodeModeWaitReason::PendingTools,
            pending_tool_calls: vec![CodeModePendingToolCall {
                call_id: "c1/1".into(),
                tool_id: "openclaw:core:slow".into(),
            }],
            output: vec![CodeModeOutput::Json {
                value: serde_json::json!({"a": 1}),
            }],
            telemetry: CodeModeTelemetry::default(),
        };
        let value = serde_json::to_value(&waiting).unwrap();
        assert_eq!(value["status"], "waiting");
        assert_eq!(value["runId"], "cm_1");
        assert_eq!(value["reason"], "pending_tools");
        assert_eq!(
            value["pendingToolCalls"],
            serde_json::json!([{"callId": "c1/1", "toolId": "openclaw:core:slow"}])
        );
        assert_eq!(
            value["output"],
            serde_json::json!([{"type": "json", "value": {"a": 1}}])
        );
        let back: CodeModeResult = serde_json::from_value(value).unwrap();
        assert_eq!(back, waiting);
        let failed = CodeModeResult::Failed {
            error: "the cell exceeded its time limit of 100 ms".into(),
            code: Some(CodeModeErrorCode::Timeout),
            stack: None,
            output: vec![],
            telemetry: CodeModeTelemetry::default(),
        };
        let value = serde_json::to_value(&failed).unwrap();
        assert_eq!(value["status"], "failed");
        assert_eq!(value["code"], "timeout");
        assert!(value.get("output").is_none());
        let unknown: CodeModeOutput =
            serde_json::from_str(r#"{"type": "image", "data": "x"}"#).unwrap();
        assert_eq!(unknown, CodeModeOutput::Unknown);
    }
}
