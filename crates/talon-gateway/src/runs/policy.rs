//! `tools.approvals`: which calls run, which are refused, and which wait
//! for a person. Either one word for every call that needs approval
//! (`"ask"`, the default; `"allow"`; `"deny"`), or an object:
//!
//! ```json
//! {"mode": "ask", "timeoutMs": 3600000,
//!  "rules": [{"tool": "exec", "action": "ask"},
//!            {"source": "mcp", "risk": "low", "action": "allow"},
//!            {"tool": "mcp:github:*", "action": "deny"}]}
//! ```
//!
//! The first rule whose every field matches a call decides it; a call no
//! rule matches is decided by `mode` when its tool requires approval
//! (core tools that write or run commands) and runs otherwise. A rule may
//! name a tool by its name or its catalog id, with `*` matching any run of
//! characters; `source` is the tool's source (`core`, `mcp`, `plugin`,
//! `app`); `risk` matches the call's risk level or any higher one
//! (`medium` matches `medium`, `high` and `critical`).

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use talon_protocol::ToolEffect;
use talon_protocol::gateway::RiskLevel;
use talon_tools::CatalogEntry;

/// What becomes of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    /// It runs.
    Allow,
    /// It is refused; the model reads why.
    Deny,
    /// It waits for a decision (`approvals.respond`).
    Ask,
}

/// One rule of the policy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    /// A tool name or catalog id, `*` for any run of characters.
    #[serde(default)]
    tool: Option<String>,
    /// The tool's source (`core`, `mcp`, `plugin`, ...).
    #[serde(default)]
    source: Option<String>,
    /// The lowest risk level it matches.
    #[serde(default)]
    risk: Option<RiskLevel>,
    action: Action,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Object {
    #[serde(default)]
    mode: Option<Action>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    rules: Vec<Rule>,
}

/// The approval policy of the gateway's runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Policy {
    /// For calls of tools that require approval and match no rule.
    mode: Action,
    /// How long a request waits for a decision before it expires.
    pub timeout: Duration,
    rules: Vec<Rule>,
}

/// How long an approval waits when the policy does not say.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

impl Default for Policy {
    fn default() -> Self {
        Self {
            mode: Action::Ask,
            timeout: DEFAULT_TIMEOUT,
            rules: Vec::new(),
        }
    }
}

impl Policy {
    /// Reads `tools.approvals` (absent: ask, with the default expiry).
    pub(crate) fn from_config(value: Option<&Value>) -> Result<Self, String> {
        let Some(value) = value else {
            return Ok(Self::default());
        };
        if let Value::String(word) = value {
            let mode = serde_json::from_value(Value::String(word.clone())).map_err(|_| {
                format!("tools.approvals: {word:?} is not one of \"ask\", \"allow\", \"deny\"")
            })?;
            return Ok(Self {
                mode,
                ..Self::default()
            });
        }
        let object: Object = serde_json::from_value(value.clone())
            .map_err(|error| format!("tools.approvals: {error}"))?;
        let timeout = match object.timeout_ms {
            Some(0) => return Err("tools.approvals.timeoutMs: must be above 0".into()),
            Some(ms) => Duration::from_millis(ms),
            None => DEFAULT_TIMEOUT,
        };
        Ok(Self {
            mode: object.mode.unwrap_or(Action::Ask),
            timeout,
            rules: object.rules,
        })
    }

    /// What becomes of a call of `entry`.
    pub(crate) fn action(&self, entry: &CatalogEntry) -> Action {
        let risk = risk(entry);
        let source = source_name(entry);
        let matched = self.rules.iter().find(|rule| {
            rule.tool
                .as_deref()
                .is_none_or(|p| glob(p, &entry.tool.name) || glob(p, &entry.id))
                && rule.source.as_deref().is_none_or(|s| s == source)
                && rule.risk.is_none_or(|r| risk >= r)
        });
        match matched {
            Some(rule) => rule.action,
            None if entry.tool.requires_approval => self.mode,
            None => Action::Allow,
        }
    }
}

/// How risky a call of `entry` is, by what the tool does.
pub(crate) fn risk(entry: &CatalogEntry) -> RiskLevel {
    match entry.tool.effect {
        ToolEffect::ReadOnly => RiskLevel::Low,
        ToolEffect::Writes => RiskLevel::Medium,
        _ => RiskLevel::High,
    }
}

fn source_name(entry: &CatalogEntry) -> &'static str {
    use talon_protocol::ToolSource;
    match entry.tool.source {
        ToolSource::Openclaw => "core",
        ToolSource::Mcp => "mcp",
        ToolSource::Plugin => "plugin",
        ToolSource::Client => "app",
        _ => "unknown",
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of
/// characters (and nothing else is special).
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return text.is_empty();
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use talon_protocol::{ToolDefinition, ToolSource};

    fn entry(id: &str, source: ToolSource, effect: ToolEffect, requires: bool) -> CatalogEntry {
        let name = id.rsplit(':').next().unwrap_or(id).to_owned();
        CatalogEntry {
            id: id.into(),
            tool: ToolDefinition {
                name,
                label: None,
                description: String::new(),
                parameters: json!({"type": "object"}),
                source,
                owner: "o".into(),
                catalog_mode: Default::default(),
                execution_mode: Default::default(),
                requires_approval: requires,
                effect,
                replay_safe: false,
            },
        }
    }

    #[test]
    fn globs_match_runs_of_characters() {
        let cases = [
            ("exec", "exec", true),
            ("exec", "exec2", false),
            ("*", "", true),
            ("mcp:github:*", "mcp:github:create_issue", true),
            ("mcp:github:*", "mcp:gitlab:create_issue", false),
            ("*issue*", "create_issue_comment", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "acb", false),
            ("a*a", "a", false),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(glob(pattern, text), want, "{pattern} ~ {text}");
        }
    }

    #[test]
    fn the_first_matching_rule_decides_else_the_mode_for_tools_that_require_it() {
        let policy = Policy::from_config(Some(&json!({
            "mode": "deny",
            "timeoutMs": 5000,
            "rules": [
                {"tool": "exec", "action": "ask"},
                {"source": "mcp", "risk": "medium", "action": "ask"},
                {"tool": "openclaw:core:w*", "action": "allow"},
            ]
        })))
        .unwrap();
        assert_eq!(policy.timeout, Duration::from_millis(5000));
        let exec = entry(
            "openclaw:core:exec",
            ToolSource::Openclaw,
            ToolEffect::Host,
            true,
        );
        let write = entry(
            "openclaw:core:write",
            ToolSource::Openclaw,
            ToolEffect::Writes,
            true,
        );
        let edit = entry(
            "openclaw:core:edit",
            ToolSource::Openclaw,
            ToolEffect::Writes,
            true,
        );
        let read = entry(
            "openclaw:core:read",
            ToolSource::Openclaw,
            ToolEffect::ReadOnly,
            false,
        );
        let mcp_write = entry("mcp:gh:create", ToolSource::Mcp, ToolEffect::Writes, false);
        let mcp_read = entry("mcp:gh:list", ToolSource::Mcp, ToolEffect::ReadOnly, false);
        let got: Vec<Action> = [&exec, &write, &edit, &read, &mcp_write, &mcp_read]
            .iter()
            .map(|e| policy.action(e))
            .collect();
        assert_eq!(
            got,
            [
                Action::Ask,
                Action::Allow,
                Action::Deny,
                Action::Allow,
                Action::Ask,
                Action::Allow
            ]
        );
    }

    #[test]
    fn words_and_bad_values() {
        assert_eq!(Policy::from_config(None).unwrap(), Policy::default());
        let allow = Policy::from_config(Some(&json!("allow"))).unwrap();
        let exec = entry(
            "openclaw:core:exec",
            ToolSource::Openclaw,
            ToolEffect::Host,
            true,
        );
        assert_eq!(allow.action(&exec), Action::Allow);
        assert_eq!(
            Policy::from_config(Some(&json!("sometimes"))).unwrap_err(),
            "tools.approvals: \"sometimes\" is not one of \"ask\", \"allow\", \"deny\""
        );
        assert!(
            Policy::from_config(Some(&json!({"rules": [{"tool": "x", "action": "maybe"}]})))
                .unwrap_err()
                .starts_with("tools.approvals: unknown variant `maybe`")
        );
        assert!(
            Policy::from_config(Some(&json!({"rulez": []})))
                .unwrap_err()
                .starts_with("tools.approvals: unknown field `rulez`")
        );
        assert_eq!(
            Policy::from_config(Some(&json!({"timeoutMs": 0}))).unwrap_err(),
            "tools.approvals.timeoutMs: must be above 0"
        );
    }
}
