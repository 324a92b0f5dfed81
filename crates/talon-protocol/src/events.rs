//! The App SDK's event contract (`OpenClawEvent`, version 1): a versioned
//! envelope with a replay cursor (`id`), a timestamp, the event type and
//! the run, session and agent it belongs to. The agent loop emits these
//! through an event sink; the gateway will persist them in order and serve
//! them with `events({after})`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gateway::bounded::{AgentId, EventId, RunId, SessionId, SessionKey, TaskId};

/// Event types, spelled as the seed spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum EventType {
    /// The run was accepted.
    #[serde(rename = "run.created")]
    RunCreated,
    /// The run waits for a session lane, runtime or environment.
    #[serde(rename = "run.queued")]
    RunQueued,
    /// The runtime started the run.
    #[serde(rename = "run.started")]
    RunStarted,
    /// The run finished successfully.
    #[serde(rename = "run.completed")]
    RunCompleted,
    /// The run ended with an error.
    #[serde(rename = "run.failed")]
    RunFailed,
    /// The run was cancelled.
    #[serde(rename = "run.cancelled")]
    RunCancelled,
    /// The run exceeded its own time limit.
    #[serde(rename = "run.timed_out")]
    RunTimedOut,
    /// A delta of assistant text.
    #[serde(rename = "assistant.delta")]
    AssistantDelta,
    /// A whole assistant message.
    #[serde(rename = "assistant.message")]
    AssistantMessage,
    /// A reasoning delta, where policy allows showing it.
    #[serde(rename = "thinking.delta")]
    ThinkingDelta,
    /// A tool call started.
    #[serde(rename = "tool.call.started")]
    ToolCallStarted,
    /// A tool call streamed progress or partial output.
    #[serde(rename = "tool.call.delta")]
    ToolCallDelta,
    /// A tool call returned.
    #[serde(rename = "tool.call.completed")]
    ToolCallCompleted,
    /// A tool call failed.
    #[serde(rename = "tool.call.failed")]
    ToolCallFailed,
    /// A run or tool needs approval.
    #[serde(rename = "approval.requested")]
    ApprovalRequested,
    /// An approval was granted, denied, expired or cancelled.
    #[serde(rename = "approval.resolved")]
    ApprovalResolved,
    /// The runtime asks the user or host app for input.
    #[serde(rename = "question.requested")]
    QuestionRequested,
    /// The host app answered.
    #[serde(rename = "question.answered")]
    QuestionAnswered,
    /// A new artifact is available.
    #[serde(rename = "artifact.created")]
    ArtifactCreated,
    /// An artifact changed.
    #[serde(rename = "artifact.updated")]
    ArtifactUpdated,
    /// A session was created.
    #[serde(rename = "session.created")]
    SessionCreated,
    /// Session metadata changed.
    #[serde(rename = "session.updated")]
    SessionUpdated,
    /// The session was compacted.
    #[serde(rename = "session.compacted")]
    SessionCompacted,
    /// A background task changed state.
    #[serde(rename = "task.updated")]
    TaskUpdated,
    /// The runtime observed or changed a branch.
    #[serde(rename = "git.branch")]
    GitBranch,
    /// The runtime produced or changed a diff.
    #[serde(rename = "git.diff")]
    GitDiff,
    /// The runtime opened, updated or linked a pull request.
    #[serde(rename = "git.pr")]
    GitPr,
    /// A type this client does not know yet.
    #[serde(other)]
    Unknown,
}

impl EventType {
    /// Whether this type ends a run (nothing of the run follows it).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::RunCompleted | Self::RunFailed | Self::RunCancelled | Self::RunTimedOut
        )
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RunCreated => "run.created",
            Self::RunQueued => "run.queued",
            Self::RunStarted => "run.started",
            Self::RunCompleted => "run.completed",
            Self::RunFailed => "run.failed",
            Self::RunCancelled => "run.cancelled",
            Self::RunTimedOut => "run.timed_out",
            Self::AssistantDelta => "assistant.delta",
            Self::AssistantMessage => "assistant.message",
            Self::ThinkingDelta => "thinking.delta",
            Self::ToolCallStarted => "tool.call.started",
            Self::ToolCallDelta => "tool.call.delta",
            Self::ToolCallCompleted => "tool.call.completed",
            Self::ToolCallFailed => "tool.call.failed",
            Self::ApprovalRequested => "approval.requested",
            Self::ApprovalResolved => "approval.resolved",
            Self::QuestionRequested => "question.requested",
            Self::QuestionAnswered => "question.answered",
            Self::ArtifactCreated => "artifact.created",
            Self::ArtifactUpdated => "artifact.updated",
            Self::SessionCreated => "session.created",
            Self::SessionUpdated => "session.updated",
            Self::SessionCompacted => "session.compacted",
            Self::TaskUpdated => "task.updated",
            Self::GitBranch => "git.branch",
            Self::GitDiff => "git.diff",
            Self::GitPr => "git.pr",
            Self::Unknown => "unknown",
        }
    }
}

/// The versioned event envelope (`OpenClawEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Always 1 for this contract.
    pub version: u32,
    /// The replay cursor: `events({after: id})` resumes after it. Ordered
    /// within a run (and, once persisted, within a gateway).
    pub id: EventId,
    /// When it happened (epoch milliseconds).
    pub ts: u64,
    /// What happened.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// The session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The session key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<SessionKey>,
    /// The session's subject (see `Session.subject`): set by the server's
    /// log as it reads the event, never stored with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<crate::gateway::bounded::Subject>,
    /// The background task, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// The agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The gateway's request id (`x-request-id` on its answer, never a
    /// client's) of the call that caused it: for what a run does
    /// on its own, the call that created the run; for an event a later
    /// call caused (cancelling a queued run), that call. Absent on what a
    /// gateway does by itself (recovering a stopped node's runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The type's payload.
    pub data: serde_json::Value,
    /// The runtime-native payload, when a diagnostic scope asks for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_use_the_seed_spelling_and_unknown_types_decode() {
        for kind in [
            EventType::RunStarted,
            EventType::ToolCallCompleted,
            EventType::RunTimedOut,
        ] {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, serde_json::json!(kind.as_str()));
        }
        let event: Event = serde_json::from_value(serde_json::json!({
            "version": 1, "id": "r1:000001", "ts": 1, "type": "future.kind", "data": {}
        }))
        .unwrap();
        assert_eq!(event.kind, EventType::Unknown);
    }
}
