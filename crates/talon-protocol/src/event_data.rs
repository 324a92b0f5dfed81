//! The typed `data` of every event type ([`EventData`]): what the agent
//! loop emits and what a client may rely on. The envelope ([`Event`])
//! keeps `data` as JSON so that a client decodes event types it does not
//! know; [`Event::typed`] gives the typed payload of the known ones, and
//! the committed gateway schema ties each `type` to its `data` schema.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gateway::bounded::{ApprovalId, ArtifactId, MessageId, QuestionId, SessionId};
use crate::gateway::{ApprovalDecision, ApprovalStatus, Usage};
use crate::{Event, EventType, ToolSource};

pub use crate::event_types::EventData;

impl EventData {
    /// The type and the `data` JSON, as the envelope carries them.
    pub fn into_parts(self) -> (EventType, serde_json::Value) {
        let kind = self.kind();
        let value = serde_json::to_value(&self).unwrap_or_default();
        let data = value.get("data").cloned().unwrap_or_default();
        (kind, data)
    }
}

impl Event {
    /// The typed payload; `None` for a type this build does not know, or
    /// `data` that does not match its type's schema.
    pub fn typed(&self) -> Option<EventData> {
        if self.kind == EventType::Unknown {
            return None;
        }
        serde_json::from_value(serde_json::json!({"type": self.kind, "data": self.data})).ok()
    }
}

/// `run.created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunCreatedData {
    /// The user's input.
    pub input: String,
}

/// `run.queued`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunQueuedData {
    /// What it waits for: `session` (another run holds the session's
    /// lane), `runtime` (a node to execute it; also a run put back in the
    /// queue to resume after the gateway executing it stopped) or
    /// `environment`.
    pub reason: String,
}

/// `run.started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunStartedData {
    /// The model, `provider/model`.
    pub model: String,
    /// The tool surface: `direct`, `code_mode` or `tool_search`.
    pub surface: String,
    /// The tools the model sees.
    pub tools: Vec<String>,
    /// Set when the run resumed after the gateway executing it stopped:
    /// the turns it had completed (its conversation goes on from there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_after_turn: Option<u32>,
}

/// `run.completed`, `run.failed`, `run.cancelled`, `run.timed_out`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEndedData {
    /// The final assistant text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Why it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Model turns taken.
    pub turns: u32,
    /// Tool calls the model made.
    pub tool_calls: u32,
    /// Tokens and cost.
    pub usage: Usage,
    /// Wall time.
    pub duration_ms: u64,
    /// Client tool calls the model made in its last turn, left for the
    /// app to answer (with `tool` input messages on its next run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_tool_calls: Vec<crate::gateway::MessageToolCall>,
    /// The run's tool telemetry (absent for a run that failed before its
    /// agent started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::ToolTelemetry>,
}

/// `assistant.delta` and `thinking.delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextDelta {
    /// The new text.
    pub text: String,
}

/// `assistant.message`: one per model call (its text absent when the
/// model only called tools).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessageData {
    /// The message's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// How many tool calls it asks for.
    pub tool_calls: u32,
    /// The provider's finish reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// This model call's tokens and cost (`costUsd` by the model's prices;
    /// absent without them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// `tool.call.started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallStartedData {
    /// The call's id.
    pub call_id: String,
    /// For a nested call (made by a cell or a bridge), the model's call it
    /// belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The tool: its catalog id for nested calls, the model-visible name
    /// otherwise.
    pub name: String,
    /// Where the tool comes from (nested calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ToolSource>,
    /// The arguments (model calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    /// Whether the call may be made again if its run is resumed after its
    /// node died: a tool marked `replaySafe` (read-only), a client tool, or
    /// a model tool whose only effects are the nested calls it makes
    /// (`exec`, `wait`, `tool_call`, ...), each of which has its own event.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay_safe: bool,
}

/// `tool.call.delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallDeltaData {
    /// The call's id.
    pub call_id: String,
    /// The model's call it belongs to, for a nested call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The executor's update (capped at 16 KiB): a command's output is
    /// `{stream: "stdout" | "stderr", text, omittedBytes?}` (the newest
    /// output, and the bytes of that stream left out before it), and
    /// `{stream, omittedBytes}` at the end for those left out after the last
    /// delta; a Code Mode cell's console output is
    /// `{stream: "console", text}`; an MCP server's progress is
    /// `{progress, total?, message?}`.
    pub update: serde_json::Value,
}

/// `tool.call.completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallCompletedData {
    /// The call's id.
    pub call_id: String,
    /// The model's call it belongs to, for a nested call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The tool.
    pub name: String,
    /// How long it took.
    pub duration_ms: u64,
    /// Its result (capped at 16 KiB).
    pub result: serde_json::Value,
}

/// `tool.call.failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallFailedData {
    /// The call's id.
    pub call_id: String,
    /// The model's call it belongs to, for a nested call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The tool.
    pub name: String,
    /// How long it took, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The call's outcome: `failed`, `denied`, `aborted`, `invalid_input`,
    /// ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The error as the model saw it.
    pub error: serde_json::Value,
}

/// `approval.resolved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalResolvedData {
    /// The approval.
    pub approval_id: ApprovalId,
    /// How it ended: `approved`, `denied`, `expired` or `cancelled`.
    pub status: ApprovalStatus,
    /// The decision taken, if one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<ApprovalDecision>,
    /// The responder's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether a remembered decision answered it (nobody was asked).
    #[serde(default)]
    pub reused: bool,
}

/// `question.answered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAnsweredData {
    /// The question.
    pub question_id: QuestionId,
    /// The answer.
    pub answer: serde_json::Value,
}

/// `session.compacted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCompactedData {
    /// The session.
    pub session_id: SessionId,
    /// How many messages the summary replaced.
    pub replaced_messages: u32,
    /// The compaction record's message id.
    pub summary_message_id: MessageId,
}

/// `git.branch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitBranchData {
    /// The branch.
    pub branch: String,
    /// Its commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// `observed`, `created` or `switched`.
    pub action: String,
}

/// `git.diff`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitDiffData {
    /// Files changed.
    pub files: Vec<String>,
    /// Lines added.
    pub additions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// The `diff` artifact holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<ArtifactId>,
}

/// `git.pr`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitPrData {
    /// The pull request's URL.
    pub url: String,
    /// Its number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `opened`, `updated` or `linked`.
    pub action: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::bounded::EventId;

    #[test]
    fn every_known_type_has_typed_data_and_round_trips() {
        let data = EventData::ToolCallStarted(ToolCallStartedData {
            replay_safe: false,
            call_id: "c1".into(),
            parent_id: None,
            name: "read".into(),
            source: None,
            arguments: Some(serde_json::json!({"path": "a"})),
        });
        let (kind, json) = data.clone().into_parts();
        assert_eq!(kind, EventType::ToolCallStarted);
        assert_eq!(
            json,
            serde_json::json!({"callId": "c1", "name": "read", "arguments": {"path": "a"}})
        );
        let event = Event {
            subject: None,
            version: 1,
            id: EventId::new("1"),
            ts: 0,
            kind,
            run_id: None,
            session_id: None,
            session_key: None,
            task_id: None,
            agent_id: None,
            request_id: None,
            data: json,
            raw: None,
        };
        assert_eq!(event.typed(), Some(data));
        // Every event type but `unknown` is a variant of EventData.
        let schema = serde_json::to_value(schemars::schema_for!(EventData)).unwrap();
        let text = schema.to_string();
        let types: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(types.len(), 27);
        for t in types {
            assert!(text.contains(&format!("\"{t}\"")), "{t} has no data schema");
            let kind: EventType = serde_json::from_value(serde_json::json!(t)).unwrap();
            assert_ne!(kind, EventType::Unknown, "{t}");
        }
        // Data that does not match its type is not typed.
        let mut bad = event.clone();
        bad.data = serde_json::json!({"callId": 5});
        assert_eq!(bad.typed(), None);
    }
}
