//! `runs.list`: runs newest first, filtered by status, agent, session,
//! creation time and a text in their summary, a page at a time; its
//! params' own checks and its text rule, which the gateway, its store and
//! the fake gateway all apply.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounded::{AgentId, Cursor, SessionId, Text};
use super::error::ApiError;
use super::resources::{Run, RunStatus};

/// `runs.list`: newest first; every filter given must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunsListParams {
    /// Only runs in one of these states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Vec<RunStatus>>,
    /// Only this agent's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Only this session's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// Only runs created at or after this time (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_after: Option<u64>,
    /// Only runs created before this time (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_before: Option<u64>,
    /// Only runs whose `summary` contains this text, ignoring the case of
    /// ASCII letters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Text<{ super::caps::MAX_RUN_TEXT_CHARS }>>,
    /// At most this many (the gateway's default and cap apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
}

/// What the `text` filter compares: a summary or a text with its ASCII
/// letters in lower case (the same on every store: SQLite's `lower` folds
/// only ASCII).
pub fn folded(text: &str) -> String {
    text.to_ascii_lowercase()
}

/// `runs.list`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunsListResult {
    /// Newest first.
    pub runs: Vec<Run>,
    /// The next page's cursor (absent on the last page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
}

impl RunsListParams {
    /// `invalid_request` naming the field for a status this side does not
    /// know or a time range that holds nothing.
    pub fn check(&self) -> Result<(), ApiError> {
        if self
            .status
            .iter()
            .flatten()
            .any(|s| *s == RunStatus::Unknown)
        {
            return Err(crate::gateway::refuse::unknown_run_status());
        }
        if let (Some(after), Some(before)) = (self.created_after, self.created_before)
            && after >= before
        {
            return Err(crate::gateway::refuse::empty_time_window(after, before));
        }
        Ok(())
    }

    /// Whether `run` passes every filter (the fake gateway's; the gateway
    /// asks its store the same).
    pub fn admits(&self, run: &Run) -> bool {
        self.status.as_ref().is_none_or(|s| s.contains(&run.status))
            && self.agent_id.as_ref().is_none_or(|a| *a == run.agent_id)
            && self
                .session_id
                .as_ref()
                .is_none_or(|s| run.session_id.as_ref() == Some(s))
            && self.created_after.is_none_or(|t| run.created_at >= t)
            && self.created_before.is_none_or(|t| run.created_at < t)
            && self.text.as_ref().is_none_or(|text| {
                run.summary
                    .as_deref()
                    .is_some_and(|s| folded(s).contains(&folded(text)))
            })
    }

    /// The error for a cursor that names no run.
    pub fn unknown_cursor(cursor: &str) -> ApiError {
        crate::gateway::refuse::cursor_not_a_run(cursor)
    }
}
