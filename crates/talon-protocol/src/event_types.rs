//! Every event type, declared once: its variant, what it means, its
//! payload and its wire name. [`EventType`] (the envelope's `type`) and
//! [`EventData`] (the typed `data`) are both generated from this one list,
//! so an event's name is spelled in one place.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event_data::{
    ApprovalResolvedData, AssistantMessageData, GitBranchData, GitDiffData, GitPrData,
    QuestionAnsweredData, RunCreatedData, RunEndedData, RunQueuedData, RunStartedData,
    SessionCompactedData, TextDelta, ToolCallCompletedData, ToolCallDeltaData, ToolCallFailedData,
    ToolCallStartedData,
};
use crate::gateway::{Approval, ArtifactSummary, Question, Session, Task};

/// Declares [`EventType`] and [`EventData`] from one list of
/// `Variant(Payload) => "wire.name"`.
macro_rules! event_types {
    ($( $(#[doc = $doc:literal])* $variant:ident($data:ty) => $name:literal, )*) => {
        /// Event types, spelled as the seed spells them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        #[non_exhaustive]
        pub enum EventType {
            $( $(#[doc = $doc])* #[serde(rename = $name)] $variant, )*
            /// A type this client does not know yet (`"unknown"`).
            #[serde(rename = "unknown", other)]
            Unknown,
        }

        impl EventType {
            /// Every type the protocol declares, in order (not `Unknown`).
            pub const ALL: &'static [Self] = &[$(Self::$variant),*];

            /// The wire spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                    Self::Unknown => "unknown",
                }
            }
        }

        /// A payload by event type (`{type, data}` on the wire).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "type", content = "data")]
        #[non_exhaustive]
        pub enum EventData {
            $( #[doc = concat!("`", $name, "`.")] #[serde(rename = $name)] $variant($data), )*
        }

        impl EventData {
            /// Its type.
            pub fn kind(&self) -> EventType {
                match self {
                    $(Self::$variant(_) => EventType::$variant,)*
                }
            }
        }
    };
}

event_types! {
    /// The run was accepted.
    RunCreated(RunCreatedData) => "run.created",
    /// The run waits for a session lane, runtime or environment.
    RunQueued(RunQueuedData) => "run.queued",
    /// The runtime started the run.
    RunStarted(RunStartedData) => "run.started",
    /// The run finished successfully.
    RunCompleted(RunEndedData) => "run.completed",
    /// The run ended with an error.
    RunFailed(RunEndedData) => "run.failed",
    /// The run was cancelled.
    RunCancelled(RunEndedData) => "run.cancelled",
    /// The run exceeded its own time limit.
    RunTimedOut(RunEndedData) => "run.timed_out",
    /// A delta of assistant text.
    AssistantDelta(TextDelta) => "assistant.delta",
    /// A whole assistant message.
    AssistantMessage(AssistantMessageData) => "assistant.message",
    /// A reasoning delta, where policy allows showing it.
    ThinkingDelta(TextDelta) => "thinking.delta",
    /// A tool call started.
    ToolCallStarted(ToolCallStartedData) => "tool.call.started",
    /// A tool call streamed progress or partial output.
    ToolCallDelta(ToolCallDeltaData) => "tool.call.delta",
    /// A tool call returned.
    ToolCallCompleted(ToolCallCompletedData) => "tool.call.completed",
    /// A tool call failed.
    ToolCallFailed(ToolCallFailedData) => "tool.call.failed",
    /// A run or tool needs approval.
    ApprovalRequested(Approval) => "approval.requested",
    /// An approval was granted, denied, expired or cancelled.
    ApprovalResolved(ApprovalResolvedData) => "approval.resolved",
    /// The runtime asks the user or host app for input.
    QuestionRequested(Question) => "question.requested",
    /// The host app answered.
    QuestionAnswered(QuestionAnsweredData) => "question.answered",
    /// A new artifact is available.
    ArtifactCreated(ArtifactSummary) => "artifact.created",
    /// An artifact changed.
    ArtifactUpdated(ArtifactSummary) => "artifact.updated",
    /// A session was created.
    SessionCreated(Session) => "session.created",
    /// Session metadata changed.
    SessionUpdated(Session) => "session.updated",
    /// The session was compacted.
    SessionCompacted(SessionCompactedData) => "session.compacted",
    /// A background task changed state.
    TaskUpdated(Task) => "task.updated",
    /// The runtime observed or changed a branch.
    GitBranch(GitBranchData) => "git.branch",
    /// The runtime produced or changed a diff.
    GitDiff(GitDiffData) => "git.diff",
    /// The runtime opened, updated or linked a pull request.
    GitPr(GitPrData) => "git.pr",
}
