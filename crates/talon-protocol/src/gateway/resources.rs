//! The gateway's resources as the App SDK seed names them: agents,
//! sessions and their messages, runs and `RunResult`, artifacts, approvals,
//! questions, models, the ToolSpace, environments and tasks.
//!
//! Times follow the API-wide convention
//! ([`crate::schema::TIME_CONVENTION`]): an instant is an integer count of
//! milliseconds since the Unix epoch (UTC) in a field named `…At`, a
//! duration an integer count of milliseconds in a field named `…Ms`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ApiError;
use super::bounded::{
    AgentId, ArtifactId, MessageId, RunId, SessionId, SessionKey, Subject, TaskId,
};

/// Free-form metadata an app attaches to a resource.
pub type Metadata = BTreeMap<String, serde_json::Value>;

/// Session metadata within its caps (`invalid_request` naming them):
/// every server checks a session's metadata, as created or as merged by
/// `sessions.update`, by this.
pub fn check_metadata(metadata: Metadata) -> Result<Metadata, ApiError> {
    let bytes = serde_json::to_string(&metadata).map_or(usize::MAX, |t| t.len());
    if metadata.len() > super::caps::METADATA_KEYS || bytes > super::caps::METADATA_BYTES {
        return Err(super::refuse::metadata_too_large(
            metadata.len() as u64,
            bytes as u64,
            super::caps::METADATA_KEYS as u64,
            super::caps::METADATA_BYTES as u64,
        ));
    }
    if let Some(key) = metadata
        .keys()
        .find(|k| k.chars().count() > super::caps::METADATA_KEY_CHARS)
    {
        let shown: String = key.chars().take(32).collect();
        return Err(super::refuse::metadata_key_too_long(
            &shown,
            super::caps::METADATA_KEY_CHARS as u64,
        ));
    }
    Ok(metadata)
}

/// Where an agent is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentSource {
    /// The config file's `agents.list`.
    Config,
    /// Created through `agents.create`.
    Api,
    /// A source this client does not know.
    #[serde(other)]
    Unknown,
}

/// An agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    /// The agent's id (`main` by default).
    pub id: AgentId,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the agent is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The model, as `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where it is defined; config agents cannot be updated through the API.
    pub source: AgentSource,
    /// When it was created (epoch milliseconds; API agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// When it last changed (epoch milliseconds; API agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<u64>,
}

/// A conversation with an agent, addressed by id or by key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The session's id.
    pub id: SessionId,
    /// The app's key for it (unique per subject), e.g. `agent:main:user-42`.
    pub key: SessionKey,
    /// The agent it talks to.
    pub agent_id: AgentId,
    /// The subject of the token that made it (absent: made by an unbound
    /// token). Only tokens of this subject (and unbound or admin ones)
    /// see it, its runs and what they made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// The session it was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<SessionId>,
    /// The parent's last message the fork kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_at_message_id: Option<MessageId>,
    /// The app's metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: Metadata,
    /// When it was created (epoch milliseconds).
    pub created_at: u64,
    /// When it last changed (epoch milliseconds).
    pub updated_at: u64,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MessageRole {
    /// The user or app.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
    /// System instructions.
    System,
    /// A compaction record: `text` summarises the messages it replaced.
    Compaction,
    /// A role this client does not know.
    #[serde(other)]
    Unknown,
}

/// A tool call the assistant asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageToolCall {
    /// The call's id, matched by the tool message's `toolCallId`.
    pub id: String,
    /// The tool's name as the model saw it.
    pub name: String,
    /// The arguments.
    pub arguments: serde_json::Value,
}

/// One message of a session (the seed's `SDKMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The message's id (ordered within its session).
    pub id: MessageId,
    /// Its session.
    pub session_id: SessionId,
    /// The run that produced it (absent for user input stored before one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// Who wrote it.
    pub role: MessageRole,
    /// Its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls the assistant asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MessageToolCall>,
    /// For a tool message, the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// When it was stored (epoch milliseconds).
    pub created_at: u64,
}

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// Accepted, waiting for its session lane, runtime or environment.
    Queued,
    /// Running.
    Running,
    /// Waiting for an approval or an answer.
    Waiting,
    /// Finished successfully.
    Completed,
    /// Ended with an error.
    Failed,
    /// Cancelled.
    Cancelled,
    /// Exceeded its own time limit.
    TimedOut,
    /// A status this client does not know.
    #[serde(other)]
    Unknown,
}

impl RunStatus {
    /// Every status a server gives (not `Unknown`, a newer server's).
    pub const ALL: &'static [Self] = &[
        Self::Queued,
        Self::Running,
        Self::Waiting,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
        Self::TimedOut,
    ];

    /// Whether the run has ended.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Cancelled | Self::TimedOut
        )
    }
}

/// Token counts and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Prompt tokens read from the provider's prompt cache (part of
    /// `inputTokens`), when it reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Prompt tokens written to the provider's prompt cache (part of
    /// `inputTokens`), when it reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Cost in US dollars, when the provider's prices are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What `runs.create` and `sessions.send` answer: the run accepted (or,
/// for a repeated idempotency key, the first one), with its id also as
/// `runId`, the name results and events give it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunAccepted {
    /// The run's id (the same as `id`).
    pub run_id: RunId,
    /// The run.
    #[serde(flatten)]
    pub run: Run,
}

impl From<Run> for RunAccepted {
    fn from(run: Run) -> Self {
        Self {
            run_id: run.id.clone(),
            run,
        }
    }
}

/// A run of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// The run's id.
    pub id: RunId,
    /// The agent.
    pub agent_id: AgentId,
    /// The session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The session's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<SessionKey>,
    /// Its session's subject (see [`Session::subject`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// Where it is.
    pub status: RunStatus,
    /// Its input in one line: the first line of the user's message (of
    /// the last user message, for messages), at most
    /// [`RunInput::SUMMARY_CHARS`](super::RunInput::SUMMARY_CHARS)
    /// characters (`…` marks a cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The model it runs on, `provider/model`, once it has started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// When it was accepted (epoch milliseconds).
    pub created_at: u64,
    /// When it started running (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    /// When it ended (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// Tokens and cost so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
}

/// `RunResult.status`: `accepted` means the wait's deadline passed before
/// the run ended (not terminal); `timed_out` only that the run exceeded its
/// own time limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunResultStatus {
    /// Still running when the wait's deadline passed.
    Accepted,
    /// Finished successfully.
    Completed,
    /// Ended with an error.
    Failed,
    /// Cancelled.
    Cancelled,
    /// Exceeded its own time limit.
    TimedOut,
    /// A status this client does not know.
    #[serde(other)]
    Unknown,
}

/// `RunResult.output`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunOutput {
    /// The final assistant text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The run's messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Message>>,
}

/// What `runs.wait` returns: the seed's stable result envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The run.
    pub run_id: RunId,
    /// How it ended, or `accepted` if it has not.
    pub status: RunResultStatus,
    /// The session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The session's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<SessionKey>,
    /// The background task, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// When it started (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    /// When it ended (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// Its output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<RunOutput>,
    /// Tokens and cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The artifacts it produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<ArtifactSummary>>,
    /// Why it failed (the seed's `SDKError`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
}

/// What an artifact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ArtifactType {
    /// A file written or edited.
    File,
    /// A patch bundle.
    Patch,
    /// A VCS diff.
    Diff,
    /// A log (e.g. shell output beyond its cap).
    Log,
    /// Media output.
    Media,
    /// A screenshot.
    Screenshot,
    /// A run's trajectory: its events and nested calls.
    Trajectory,
    /// A pull request link.
    PullRequest,
    /// A managed environment's workspace snapshot.
    Workspace,
    /// A type this client does not know.
    #[serde(other)]
    Unknown,
}

/// The seed's `ArtifactSummary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactSummary {
    /// The artifact's id.
    pub id: ArtifactId,
    /// The run that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// Its session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// What it is.
    #[serde(rename = "type")]
    pub kind: ArtifactType,
    /// A title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// When it was created (epoch milliseconds).
    pub created_at: u64,
    /// When it will be purged (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}
