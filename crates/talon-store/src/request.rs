//! What a run executes, as the store keeps it beside the run: typed, so a
//! record that does not decode is reported as corrupt (naming the run and
//! the field), never as missing.

use serde::{Deserialize, Serialize};
use talon_protocol::gateway::bounded::{EnvironmentId, TaskId, ToolRef};
use talon_protocol::gateway::{ClientTool, RunInput};

/// What a run executes: written by the node that accepts it, read by the
/// node that claims it (the same one, another, or a restarted one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    /// The user's input.
    pub input: RunInput,
    /// The run's own time limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The app's tools for this run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ClientTool>,
    /// The managed environment it works in: one live run at a time there,
    /// as in a session (claims keep to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<EnvironmentId>,
    /// A direct call the run makes instead of asking the model
    /// (`tools.invoke`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invoke: Option<Invocation>,
    /// The W3C `traceparent` of the request that created it (its span,
    /// when traces are exported): the run's spans join that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The `x-request-id` of the call that created it: the run's events
    /// carry it (`requestId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The background task it is the work of (a sub-agent's run): its
    /// events carry it (`taskId`), as its `RunResult` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
}

impl RunRequest {
    /// A request of `input` alone.
    pub fn of_input(input: RunInput) -> Self {
        Self {
            input,
            timeout_ms: None,
            tools: Vec::new(),
            environment_id: None,
            invoke: None,
            traceparent: None,
            request_id: None,
            task_id: None,
        }
    }
}

/// Why a claimed run's request cannot be read: the run then fails with
/// this as its error instead of being claimed again and again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnreadableRequest {
    /// The run has none (a row written by hand, or by a version that kept
    /// none).
    #[error("the run's request is missing from the store")]
    Missing,
    /// The stored request does not decode (why, naming the field).
    #[error("the run's stored request does not decode: {0}")]
    Corrupt(String),
}

/// One tool call an app asked for (`tools.invoke`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    /// The tool's catalog id or name.
    pub tool: ToolRef,
    /// Its arguments.
    pub arguments: serde_json::Value,
}
