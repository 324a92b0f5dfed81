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
    /// Read schedules.
    #[serde(rename = "schedule.read")]
    ScheduleRead,
    /// Create, change, pause, run or delete schedules.
    #[serde(rename = "schedule.write")]
    ScheduleWrite,
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
    /// Read the gateway's Prometheus metrics (`GET /metrics`).
    #[serde(rename = "metrics.read")]
    MetricsRead,
    /// Administrative operations; implies every other scope.
    #[serde(rename = "admin")]
    Admin,
    /// A scope this client does not know (sent by a newer gateway):
    /// `"unknown"`, a decoder's catch-all that no token is granted.
    #[serde(rename = "unknown", other)]
    Unknown,
}

impl Scope {
    /// Every scope a gateway grants, in the seed's order.
    pub const ALL: [Scope; 14] = [
        Self::AgentRead,
        Self::AgentRun,
        Self::SessionRead,
        Self::SessionWrite,
        Self::TaskRead,
        Self::TaskWrite,
        Self::ScheduleRead,
        Self::ScheduleWrite,
        Self::ApprovalRespond,
        Self::ToolsInvoke,
        Self::ArtifactsRead,
        Self::EnvironmentWrite,
        Self::MetricsRead,
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
            Self::ScheduleRead => "schedule.read",
            Self::ScheduleWrite => "schedule.write",
            Self::ApprovalRespond => "approval.respond",
            Self::ToolsInvoke => "tools.invoke",
            Self::ArtifactsRead => "artifacts.read",
            Self::EnvironmentWrite => "environment.write",
            Self::MetricsRead => "metrics.read",
            Self::Admin => "admin",
            Self::Unknown => "unknown",
        }
    }

    /// What the scope is for, in a few words (the methods it opens are
    /// [`Scope::methods`], read from the method table).
    pub fn describe(self) -> &'static str {
        match self {
            Self::AgentRead => "see agents, models and tools",
            Self::AgentRun => "start and cancel runs",
            Self::SessionRead => "read sessions, runs, approvals, questions and events",
            Self::SessionWrite => "create, change and delete sessions, and send to them",
            Self::TaskRead => "read background tasks",
            Self::TaskWrite => "cancel background tasks or change how their results are posted",
            Self::ScheduleRead => "read schedules",
            Self::ScheduleWrite => {
                "create, change, pause, run and delete schedules (each firing runs an agent)"
            }
            Self::ApprovalRespond => "answer approvals and questions",
            Self::ToolsInvoke => "call exposed tools directly",
            Self::ArtifactsRead => "list and download artifacts",
            Self::EnvironmentWrite => "create and delete managed environments",
            Self::MetricsRead => "read the Prometheus metrics (GET /metrics)",
            Self::Admin => "every method; only admin opens these",
            Self::Unknown => "a scope this client does not know",
        }
    }

    /// The methods of the table that need this scope, in table order
    /// (`admin` opens every method, and needs none of its own).
    pub fn methods(self) -> Vec<super::Method> {
        super::Method::ALL
            .iter()
            .copied()
            .filter(|method| method.spec().scope == self)
            .collect()
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

/// A named set of scopes, for people: `talon token create --scope app`,
/// `tokens.create {preset: "app"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScopePreset {
    /// What an app's backend needs: run agents, follow their events and
    /// results, answer approvals and questions, read artifacts.
    App,
    /// Read-only: agents, sessions, runs, events, tasks, schedules,
    /// artifacts.
    Viewer,
    /// What a person watching needs: the viewer's scopes and the
    /// Prometheus metrics; it acts on nothing (a dashboard's read-only
    /// sign-in).
    Observer,
    /// Everything.
    Admin,
}

impl ScopePreset {
    /// Every preset.
    pub const ALL: [ScopePreset; 4] = [Self::App, Self::Viewer, Self::Observer, Self::Admin];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::App => "app",
            Self::Viewer => "viewer",
            Self::Observer => "observer",
            Self::Admin => "admin",
        }
    }

    /// The scopes it grants.
    pub fn scopes(self) -> &'static [Scope] {
        match self {
            Self::App => &[
                Scope::AgentRead,
                Scope::AgentRun,
                Scope::SessionRead,
                Scope::SessionWrite,
                Scope::TaskRead,
                Scope::ScheduleRead,
                Scope::ApprovalRespond,
                Scope::ArtifactsRead,
            ],
            Self::Viewer => &[
                Scope::AgentRead,
                Scope::SessionRead,
                Scope::TaskRead,
                Scope::ScheduleRead,
                Scope::ArtifactsRead,
            ],
            Self::Observer => &[
                Scope::AgentRead,
                Scope::SessionRead,
                Scope::TaskRead,
                Scope::ScheduleRead,
                Scope::ArtifactsRead,
                Scope::MetricsRead,
            ],
            Self::Admin => &[Scope::Admin],
        }
    }

    /// The preset named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// Why words did not name scopes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeWordsError {
    /// A word that is neither a preset nor a scope; the text lists both.
    #[error(
        "unknown scope {word:?}: a preset ({}) or a scope ({})",
        ScopePreset::ALL.map(|p| p.as_str()).join(", "),
        Scope::ALL.map(|s| s.as_str()).join(", ")
    )]
    Unknown {
        /// The word.
        word: String,
    },
    /// No word at all (or only separators).
    #[error("give a preset (app, viewer, observer, admin) or a scope")]
    Empty,
}

/// Scopes from words, each a preset or a scope (`app`, `tools.invoke`),
/// sorted and without repeats; an unknown word names what is accepted.
pub fn expand_scopes<'a>(
    words: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Scope>, ScopeWordsError> {
    let mut scopes = Vec::new();
    for word in words {
        for part in word.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            if let Some(preset) = ScopePreset::parse(part) {
                scopes.extend_from_slice(preset.scopes());
            } else if let Some(scope) = Scope::parse(part) {
                scopes.push(scope);
            } else {
                return Err(ScopeWordsError::Unknown {
                    word: part.to_owned(),
                });
            }
        }
    }
    scopes.sort();
    scopes.dedup();
    if scopes.is_empty() {
        return Err(ScopeWordsError::Empty);
    }
    Ok(scopes)
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

    #[test]
    fn presets_expand_and_mix_with_scopes() {
        assert_eq!(
            expand_scopes(["app"]).unwrap(),
            [
                Scope::AgentRead,
                Scope::AgentRun,
                Scope::SessionRead,
                Scope::SessionWrite,
                Scope::TaskRead,
                Scope::ScheduleRead,
                Scope::ApprovalRespond,
                Scope::ArtifactsRead
            ]
        );
        assert_eq!(
            expand_scopes(["viewer,tools.invoke", "agent.read"]).unwrap(),
            [
                Scope::AgentRead,
                Scope::SessionRead,
                Scope::TaskRead,
                Scope::ScheduleRead,
                Scope::ToolsInvoke,
                Scope::ArtifactsRead
            ]
        );
        assert_eq!(expand_scopes(["admin"]).unwrap(), [Scope::Admin]);
        assert_eq!(
            expand_scopes(["observer"]).unwrap(),
            [
                Scope::AgentRead,
                Scope::SessionRead,
                Scope::TaskRead,
                Scope::ScheduleRead,
                Scope::ArtifactsRead,
                Scope::MetricsRead
            ]
        );
        assert_eq!(expand_scopes([" , "]).unwrap_err(), ScopeWordsError::Empty);
        assert_eq!(
            expand_scopes([" , "]).unwrap_err().to_string(),
            "give a preset (app, viewer, observer, admin) or a scope"
        );
        let unknown = expand_scopes(["root"]).unwrap_err();
        assert_eq!(
            unknown,
            ScopeWordsError::Unknown {
                word: "root".into()
            }
        );
        assert!(
            unknown
                .to_string()
                .starts_with("unknown scope \"root\": a preset (app, viewer, observer, admin)"),
            "{unknown}"
        );
        // An app token can follow and wait for the runs it starts.
        for needed in [
            Scope::AgentRun,
            Scope::SessionRead,
            Scope::ApprovalRespond,
            Scope::ArtifactsRead,
        ] {
            assert!(needed.satisfied_by(ScopePreset::App.scopes()));
        }
        assert!(!Scope::Admin.satisfied_by(ScopePreset::App.scopes()));
    }
}
