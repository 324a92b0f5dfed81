//! Approvals (permission to act) and questions (a request for
//! information), the payloads the App SDK seed lists.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounded::{ApprovalId, QuestionId, RunId, SessionId};

/// What needs approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalKind {
    /// A tool call.
    Tool,
    /// An environment action.
    Environment,
    /// A kind this client does not know.
    #[serde(other)]
    Unknown,
}

/// How risky the requested action is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RiskLevel {
    /// Reads only.
    Low,
    /// Writes data.
    Medium,
    /// Runs commands on the host or reaches outside the workspace.
    High,
    /// Irreversible or security-relevant.
    Critical,
    /// A level this client does not know.
    #[serde(other)]
    Unknown,
}

/// An answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Allow this call.
    ApproveOnce,
    /// Allow matching calls for the rest of the session.
    ApproveSession,
    /// Allow matching calls from now on.
    ApproveAlways,
    /// Refuse.
    Deny,
    /// A decision this client does not know.
    #[serde(other)]
    Unknown,
}

impl ApprovalDecision {
    /// The decision's name on the wire (`approve_once`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApproveOnce => "approve_once",
            Self::ApproveSession => "approve_session",
            Self::ApproveAlways => "approve_always",
            Self::Deny => "deny",
            Self::Unknown => "unknown",
        }
    }
}

/// Where an approval is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalStatus {
    /// Waiting for a decision.
    Pending,
    /// Approved.
    Approved,
    /// Denied.
    Denied,
    /// Nobody decided before it expired.
    Expired,
    /// Its run ended first.
    Cancelled,
    /// A status this client does not know.
    #[serde(other)]
    Unknown,
}

/// An approval request and, once decided, its resolution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// The approval's id.
    pub id: ApprovalId,
    /// The run that asks.
    pub run_id: RunId,
    /// Its session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// What needs approval.
    pub kind: ApprovalKind,
    /// The requested action, for a person to read.
    pub summary: String,
    /// The tool (catalog id) for `tool` approvals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The call it gates (the model's call id, or a nested call's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The call's arguments, for the responder to review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    /// The environment action for `environment` approvals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_action: Option<String>,
    /// How risky it is.
    pub risk: RiskLevel,
    /// The decisions the responder may choose from.
    pub decisions: Vec<ApprovalDecision>,
    /// When it expires (epoch milliseconds); expiry resolves it as `expired`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Whether a decision can be remembered for later matching calls.
    pub reusable: bool,
    /// Where it is.
    pub status: ApprovalStatus,
    /// The decision taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<ApprovalDecision>,
    /// The responder's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it was requested (epoch milliseconds).
    pub created_at: u64,
    /// When it was resolved (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<u64>,
}

/// Where a question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QuestionStatus {
    /// Waiting for an answer.
    Pending,
    /// Answered.
    Answered,
    /// Nobody answered before it expired.
    Expired,
    /// Its run ended first.
    Cancelled,
    /// A status this client does not know.
    #[serde(other)]
    Unknown,
}

/// A question the runtime asks the user or host app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The question's id.
    pub id: QuestionId,
    /// The run that asks.
    pub run_id: RunId,
    /// Its session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The call that asks (the model's call id, or a nested call's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// What is asked.
    pub prompt: String,
    /// The answers to choose from, if it is a choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    /// JSON Schema an answer must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_schema: Option<serde_json::Value>,
    /// When it expires (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Where it is.
    pub status: QuestionStatus,
    /// The answer given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<serde_json::Value>,
    /// When it was asked (epoch milliseconds).
    pub created_at: u64,
    /// When it was answered (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_at: Option<u64>,
}
