//! Background tasks: the ledger's record of detached work ([`Task`]), its
//! kinds, statuses and notification policies (OpenClaw's words), and how
//! its result reaches the session that asked for it ([`DeliveryStatus`]).
//!
//! A task is a record, not a scheduler: the work it tracks (a sub-agent's
//! child run, a background shell process) runs on its own; the task follows it from `queued` through
//! `running` to one terminal status, and every change appends
//! `task.updated` (carrying `taskId`) to the event log.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounded::{AgentId, Cursor, RunId, ScheduleId, SessionId, SessionKey, Subject, TaskId};
use super::error::ApiError;

/// What a task tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskKind {
    /// A child run of an agent, in a session of its own, started by a
    /// model's `sessions_spawn`.
    Subagent,
    /// One firing of a schedule: a run of its agent (OpenClaw's `cron`
    /// runtime; `scheduleId` names the schedule).
    Cron,
    /// A shell command a model's `exec` left running in the background
    /// (`background` or `yieldMs`), followed with the `process` tool.
    Process,
    /// A kind this client does not know.
    #[serde(other)]
    Unknown,
}

impl TaskKind {
    /// Every kind a server gives (not `Unknown`, a newer server's).
    pub const ALL: &'static [Self] = &[Self::Subagent, Self::Cron, Self::Process];

    /// The kind's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Subagent => "subagent",
            Self::Cron => "cron",
            Self::Process => "process",
            Self::Unknown => "unknown",
        }
    }
}

/// Where a task is: `queued → running →` one of the terminal statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// Created; its work has not started.
    Queued,
    /// Its work is under way.
    Running,
    /// Its work finished successfully.
    Succeeded,
    /// Its work ended with an error.
    Failed,
    /// Its work exceeded its time limit.
    TimedOut,
    /// Cancelled (`tasks.cancel`, or its parent's cancel).
    Cancelled,
    /// Its work is gone without an ending (the node that held it died);
    /// `error` says why.
    Lost,
    /// A status this client does not know.
    #[serde(other)]
    Unknown,
}

impl TaskStatus {
    /// Every status a server gives (not `Unknown`, a newer server's).
    pub const ALL: &'static [Self] = &[
        Self::Queued,
        Self::Running,
        Self::Succeeded,
        Self::Failed,
        Self::TimedOut,
        Self::Cancelled,
        Self::Lost,
    ];

    /// Whether the task has ended (no status follows).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Failed | Self::TimedOut | Self::Cancelled | Self::Lost
        )
    }

    /// The status's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::Cancelled => "cancelled",
            Self::Lost => "lost",
            Self::Unknown => "unknown",
        }
    }
}

/// How a task's result reaches the session that started it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NotifyPolicy {
    /// One message when it ends (the default).
    #[default]
    DoneOnly,
    /// A message when it starts, on each progress report, and when it ends.
    StateChanges,
    /// No message: the ledger records it, and nothing more.
    Silent,
    /// A policy this client does not know.
    #[serde(other)]
    Unknown,
}

impl NotifyPolicy {
    /// Every policy a server gives (not `Unknown`, a newer server's).
    pub const ALL: &'static [Self] = &[Self::DoneOnly, Self::StateChanges, Self::Silent];
}

/// Whether the messages a task's policy asks for reached its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DeliveryStatus {
    /// A message is due and not yet posted (one that failed to post is
    /// tried again by the next sweep).
    Pending,
    /// Every message due was posted.
    Delivered,
    /// The session to tell was deleted before the message was posted
    /// (`deliveryError` says so); the result stays in the task.
    ParentMissing,
    /// Nothing is due (`silent`).
    NotApplicable,
    /// A status this client does not know.
    #[serde(other)]
    Unknown,
}

/// A background task: the ledger's record of one piece of detached work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id.
    pub id: TaskId,
    /// What it tracks.
    pub kind: TaskKind,
    /// Where it is.
    pub status: TaskStatus,
    /// How its result reaches the session that started it.
    pub notify_policy: NotifyPolicy,
    /// A short label for people (a sub-agent's `label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// What it was asked to do (a sub-agent's `task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent doing the work (a sub-agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The session that started it (its result is posted there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// That session's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<SessionKey>,
    /// The run that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// The subject of the token whose run started it (see
    /// `Session.subject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// The run it tracks (a sub-agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_run_id: Option<RunId>,
    /// That run's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_session_id: Option<SessionId>,
    /// That session's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_session_key: Option<SessionKey>,
    /// The schedule it is a firing of (a `cron` task's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<ScheduleId>,
    /// How deep it is: 1 for a task a top-level run started, one more for
    /// each sub-agent above it.
    pub depth: u32,
    /// A background process's command line (secrets redacted, at most
    /// 1 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// A background process's exit code, once it exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The latest progress report (a background process's output tail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_summary: Option<String>,
    /// What it produced (a sub-agent's final text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why it failed, timed out, was cancelled or was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    /// What became of the messages its policy asks for.
    pub delivery_status: DeliveryStatus,
    /// When the last of them was posted (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<u64>,
    /// Why one could not be posted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_error: Option<String>,
    /// When it was created (epoch milliseconds).
    pub created_at: u64,
    /// When its work started (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    /// When it ended (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// When it last changed (epoch milliseconds).
    pub updated_at: u64,
}

impl Task {
    /// A new task of `kind`, `queued` at `now`, with nothing else known:
    /// each creator sets what it knows over it
    /// (`Task { label, ..Task::queued(id, kind, now) }`). Depth 1 (a top-level
    /// run's), `done_only`, delivery `pending`.
    pub fn queued(id: TaskId, kind: TaskKind, now: u64) -> Self {
        Self {
            id,
            kind,
            status: TaskStatus::Queued,
            notify_policy: NotifyPolicy::DoneOnly,
            label: None,
            description: None,
            agent_id: None,
            session_id: None,
            session_key: None,
            run_id: None,
            subject: None,
            child_run_id: None,
            child_session_id: None,
            child_session_key: None,
            schedule_id: None,
            depth: 1,
            command: None,
            exit_code: None,
            progress_summary: None,
            result: None,
            error: None,
            delivery_status: DeliveryStatus::Pending,
            delivered_at: None,
            delivery_error: None,
            created_at: now,
            started_at: None,
            ended_at: None,
            updated_at: now,
        }
    }
}

/// `tasks.list`: newest first; every filter given must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TasksListParams {
    /// Only tasks in one of these states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Vec<TaskStatus>>,
    /// Only tasks of this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<TaskKind>,
    /// Only tasks a run in this session started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// Only tasks this run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// At most this many (the gateway's default and cap apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
}

/// `tasks.list`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TasksListResult {
    /// Newest first.
    pub tasks: Vec<Task>,
    /// The next page's cursor (absent on the last page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
}

impl TasksListParams {
    /// `invalid_request` naming the field for a status or kind this side
    /// does not know.
    pub fn check(&self) -> Result<(), ApiError> {
        if self
            .status
            .iter()
            .flatten()
            .any(|s| *s == TaskStatus::Unknown)
        {
            return Err(crate::gateway::refuse::unknown_task_status());
        }
        if self.kind == Some(TaskKind::Unknown) {
            return Err(crate::gateway::refuse::unknown_task_kind());
        }
        Ok(())
    }

    /// Whether `task` passes every filter (the fakes'; the gateway asks
    /// its store the same).
    pub fn admits(&self, task: &Task) -> bool {
        self.status
            .as_ref()
            .is_none_or(|s| s.contains(&task.status))
            && self.kind.is_none_or(|k| k == task.kind)
            && self
                .session_id
                .as_ref()
                .is_none_or(|s| task.session_id.as_ref() == Some(s))
            && self
                .run_id
                .as_ref()
                .is_none_or(|r| task.run_id.as_ref() == Some(r))
    }
}
