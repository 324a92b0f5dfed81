//! Token scopes, spelled as the seed spells them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a token may do. A method names the one scope it requires; `admin`
/// satisfies every scope.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[non_exhaustive]
pub enum Scope {
    /// List and inspect agents.
    #[serde(rename = "agent.read")]
    AgentRead,
    /// Start runs.
    #[serde(rename = "agent.run")]
    AgentRun,
    /// Read session metadata and messages.
    #[serde(rename = "session.read")]
    SessionRead,
    /// Create, send to, fork, compact and abort sessions.
    #[serde(rename = "session.write")]
    SessionWrite,
    /// Read background task state.
    #[serde(rename = "task.read")]
    TaskRead,
    /// Cancel tasks or change their notification policy.
    #[serde(rename = "task.write")]
    TaskWrite,
    /// Approve or deny requests (and answer questions).
    #[serde(rename = "approval.respond")]
    ApprovalRespond,
    /// Call exposed tools directly.
    #[serde(rename = "tools.invoke")]
    ToolsInvoke,
    /// List and download artifacts.
    #[serde(rename = "artifacts.read")]
    ArtifactsRead,
    /// Create or delete managed environments.
    #[serde(rename = "environment.write")]
    EnvironmentWrite,
    /// Administrative operations; implies every other scope.
    #[serde(rename = "admin")]
    Admin,
    /// A scope this client does not know (sent by a newer gateway).
    #[serde(other)]
    Unknown,
}

impl Scope {
    /// Every scope a gateway grants, in the seed's order.
    pub const ALL: [Scope; 11] = [
        Self::AgentRead,
        Self::AgentRun,
        Self::SessionRead,
        Self::SessionWrite,
        Self::TaskRead,
        Self::TaskWrite,
        Self::ApprovalRespond,
        Self::ToolsInvoke,
        Self::ArtifactsRead,
        Self::EnvironmentWrite,
        Self::Admin,
    ];

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AgentRead => "agent.read",
            Self::AgentRun => "agent.run",
            Self::SessionRead => "session.read",
            Self::SessionWrite => "session.write",
            Self::TaskRead => "task.read",
            Self::TaskWrite => "task.write",
            Self::ApprovalRespond => "approval.respond",
            Self::ToolsInvoke => "tools.invoke",
            Self::ArtifactsRead => "artifacts.read",
            Self::EnvironmentWrite => "environment.write",
            Self::Admin => "admin",
            Self::Unknown => "unknown",
        }
    }

    /// The scope spelled `s`, if a gateway grants it.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|scope| scope.as_str() == s)
    }

    /// Whether a token holding `granted` may use a method requiring
    /// `self`.
    pub fn satisfied_by(self, granted: &[Scope]) -> bool {
        self != Self::Unknown && granted.iter().any(|&g| g == self || g == Self::Admin)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_round_trip_and_admin_implies_all() {
        for scope in Scope::ALL {
            assert_eq!(serde_json::to_value(scope).unwrap(), scope.as_str());
            assert_eq!(Scope::parse(scope.as_str()), Some(scope));
            assert!(scope.satisfied_by(&[Scope::Admin]));
            assert!(scope.satisfied_by(&[scope]));
        }
        assert!(!Scope::AgentRun.satisfied_by(&[Scope::AgentRead, Scope::SessionRead]));
        assert!(!Scope::Unknown.satisfied_by(&[Scope::Admin]));
        assert_eq!(Scope::parse("root"), None);
        let unknown: Scope = serde_json::from_value(serde_json::json!("billing.read")).unwrap();
        assert_eq!(unknown, Scope::Unknown);
    }
}
