//! The App SDK's event contract (`OpenClawEvent`, version 1): a versioned
//! envelope with a replay cursor (`id`), a timestamp, the event type and
//! the run, session and agent it belongs to. The agent loop emits these
//! through an event sink; the gateway will persist them in order and serve
//! them with `events({after})`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gateway::bounded::{AgentId, EventId, RunId, SessionId, SessionKey, TaskId};

use crate::event_types::EventData;
pub use crate::event_types::EventType;

impl EventType {
    /// Whether this type ends a run (nothing of the run follows it).
    pub fn is_terminal(self) -> bool {
        self.ended_status().is_some()
    }

    /// The status a run has after this event, if it ends the run: how
    /// every server and SDK folds a run's end into its status (the
    /// TypeScript side's `RUN_ENDS`, generated from this).
    pub fn ended_status(self) -> Option<crate::gateway::RunStatus> {
        use crate::gateway::RunStatus;
        match self {
            Self::RunCompleted => Some(RunStatus::Completed),
            Self::RunFailed => Some(RunStatus::Failed),
            Self::RunCancelled => Some(RunStatus::Cancelled),
            Self::RunTimedOut => Some(RunStatus::TimedOut),
            _ => None,
        }
    }
}

impl EventData {
    /// The event that ends a run with `status` (a status that is not an
    /// end is a cancellation), the inverse of [`EventType::ended_status`].
    pub fn run_ended(
        status: crate::gateway::RunStatus,
        ended: crate::event_data::RunEndedData,
    ) -> Self {
        use crate::gateway::RunStatus;
        match status {
            RunStatus::Completed => Self::RunCompleted(ended),
            RunStatus::Failed => Self::RunFailed(ended),
            RunStatus::TimedOut => Self::RunTimedOut(ended),
            _ => Self::RunCancelled(ended),
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
        assert_eq!(
            serde_json::to_value(EventType::Unknown).unwrap(),
            serde_json::json!(EventType::Unknown.as_str())
        );
    }
}
