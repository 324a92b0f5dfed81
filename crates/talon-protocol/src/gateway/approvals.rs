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

/// The dashboard's page for one approval (axum's path syntax): what a
/// person opens, on a phone too, to answer it.
pub const APPROVAL_PAGE: &str = "/approve/{id}";

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
    /// For `tool` approvals, the tool's name as the model calls it and
    /// `tools.list` shows it (`write`, `exec`, an MCP tool's own name): what
    /// an app's policy reads (`toolName === "exec"`). Names are not unique
    /// (two MCP servers may each have a `write`): `toolId` says which tool
    /// it is. Approvals stored before `toolId` existed have the catalog id
    /// here instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For `tool` approvals, the tool's catalog id
    /// (`<source>:<owner>:<tool-name>`, e.g. `openclaw:core:write`), which
    /// identifies it exactly: remembered decisions (`approve_session`,
    /// `approve_always`) cover calls of this id, never of another tool with
    /// the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
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

impl Approval {
    /// Where a person answers it on the gateway: the dashboard's page for
    /// it ([`APPROVAL_PAGE`]), which carries no credential (it signs in
    /// with the dashboard's cookie).
    pub fn page(&self) -> String {
        APPROVAL_PAGE.replace("{id}", self.id.as_str())
    }

    /// The catalog id of the tool this approval is for, which identifies
    /// it exactly: [`Approval::tool_id`], else, for an approval stored
    /// before that field existed, its `tool_name` when that is a catalog
    /// id (it then always was one). A bare name is never taken for an id:
    /// tool names cannot contain `:` and catalog ids always do, so an
    /// approval that only names its tool identifies none.
    pub fn tool_key(&self) -> Option<&str> {
        match &self.tool_id {
            Some(id) => Some(id),
            None => self.tool_name.as_deref().filter(|name| name.contains(':')),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(tool_name: Option<&str>, tool_id: Option<&str>) -> Approval {
        Approval {
            id: ApprovalId::new("ap1"),
            run_id: RunId::new("r1"),
            session_id: None,
            kind: ApprovalKind::Tool,
            summary: "write {}".into(),
            tool_name: tool_name.map(str::to_owned),
            tool_id: tool_id.map(str::to_owned),
            tool_call_id: None,
            arguments: None,
            environment_action: None,
            risk: RiskLevel::Medium,
            decisions: vec![ApprovalDecision::ApproveOnce],
            expires_at: None,
            reusable: true,
            status: ApprovalStatus::Pending,
            decision: None,
            reason: None,
            created_at: 1,
            resolved_at: None,
        }
    }

    #[test]
    fn the_tool_key_is_the_id_else_a_legacy_catalog_id_never_a_bare_name() {
        let keys = [
            approval(Some("write"), Some("openclaw:core:write")),
            // Stored before `toolId`: the name field held the catalog id.
            approval(Some("openclaw:core:write"), None),
            // A bare name alone identifies no tool.
            approval(Some("write"), None),
            approval(None, None),
        ]
        .map(|a| a.tool_key().map(str::to_owned));
        assert_eq!(
            keys,
            [
                Some("openclaw:core:write".to_owned()),
                Some("openclaw:core:write".to_owned()),
                None,
                None,
            ]
        );
    }

    #[test]
    fn a_legacy_approval_decodes_without_a_tool_id_and_a_new_one_carries_both() {
        let legacy: Approval = serde_json::from_value(serde_json::json!({
            "id": "ap1", "runId": "r1", "kind": "tool", "summary": "write {}",
            "toolName": "openclaw:core:write", "risk": "medium",
            "decisions": ["approve_once"], "reusable": true, "status": "pending",
            "createdAt": 1,
        }))
        .unwrap();
        assert_eq!(legacy, approval(Some("openclaw:core:write"), None));
        let current =
            serde_json::to_value(approval(Some("write"), Some("openclaw:core:write"))).unwrap();
        assert_eq!(
            (&current["toolName"], &current["toolId"]),
            (
                &serde_json::json!("write"),
                &serde_json::json!("openclaw:core:write")
            )
        );
    }
}
