//! `tools.approvals`: which calls run, which are refused, and which wait
//! for a person: one policy, read once, for the gateway's durable
//! approvals, `talon agent`'s terminal prompt and `tools.list`'s
//! `approval` field. Either one word for every call that needs approval
//! (`"ask"`, the default; `"allow"`; `"deny"`), or an object:
//!
//! ```json
//! {"mode": "ask", "timeoutMs": 3600000,
//!  "rules": [{"tool": "exec", "action": "ask"},
//!            {"source": "mcp", "risk": "low", "action": "allow"},
//!            {"tool": "mcp:github:*", "action": "deny"},
//!            {"tool": "group:fs", "action": "ask"}]}
//! ```
//!
//! The first rule whose every field matches a call decides it; a call no
//! rule matches is decided by `mode` when its tool requires approval
//! (core tools that write or run commands) and runs otherwise. A rule's
//! `tool` is a pattern of `tools.allow`/`tools.deny`'s syntax
//! ([`Pattern`]): a name, or a catalog id when it has a `:`, compared
//! without case, with `*` for any run of characters and `?` for one, or
//! `group:<name>`. `source` is the tool's source (`core`, `mcp`, `plugin`,
//! `app`); `risk` matches the call's risk level or any higher one
//! (`medium` matches `medium`, `high` and `critical`). `toolKind` tells a
//! Code Mode cell (`code_mode_exec`: the outer `exec` the model calls with
//! JavaScript or TypeScript) from a tool call (`tool`, the default): a
//! `code_mode_exec` rule decides cells only (their `exec` hook asks it,
//! with [`cell_entry`] as the tool), and no other rule does; a cell no
//! rule decides runs (it is sandboxed, and each of its calls is judged
//! on its own).
//!
//! [`PolicyGate`] is the [`Approver`] that applies it and hands the calls
//! it must ask about to the approver that asks (a person on a terminal,
//! the gateway's durable requests).

use std::sync::Arc;
use std::time::Duration;

use talon_config::model::{self as config, ApprovalsSetting, RuleKind, RuleRisk};
use talon_protocol::ToolEffect;
use talon_protocol::gateway::{ApprovalPolicy, RiskLevel};

use crate::catalog::CatalogEntry;
use crate::policy::{Pattern, PolicySubject, ToolPolicy};
use crate::runner::{ApprovalDecision, Approver, BoxFuture, RunContext, ToolCall};

/// What becomes of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalAction {
    /// It runs.
    Allow,
    /// It is refused; the model reads why.
    Deny,
    /// It waits for a decision.
    Ask,
}

impl From<ApprovalAction> for ApprovalPolicy {
    fn from(action: ApprovalAction) -> Self {
        match action {
            ApprovalAction::Allow => Self::Allow,
            ApprovalAction::Deny => Self::Deny,
            ApprovalAction::Ask => Self::Ask,
        }
    }
}

/// The config's word as the policy's.
fn action(word: config::ApprovalAction) -> ApprovalAction {
    match word {
        config::ApprovalAction::Ask => ApprovalAction::Ask,
        config::ApprovalAction::Allow => ApprovalAction::Allow,
        config::ApprovalAction::Deny => ApprovalAction::Deny,
    }
}

/// What a rule decides: tool calls, or Code Mode cells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolKind {
    /// A call of a catalog tool.
    #[default]
    Tool,
    /// A Code Mode cell (the outer `exec`).
    CodeModeExec,
}

/// One rule of the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    tool: Option<Pattern>,
    tool_kind: ToolKind,
    source: Option<String>,
    risk: Option<RiskLevel>,
    action: ApprovalAction,
}

/// The approval policy of a run.
#[derive(Debug, Clone)]
pub struct Approvals {
    /// For calls of tools that require approval and match no rule.
    mode: ApprovalAction,
    /// How long a request waits for a decision before it expires.
    pub timeout: Duration,
    rules: Vec<Rule>,
    /// The named groups a rule's `group:<name>` means.
    groups: ToolPolicy,
}

impl PartialEq for Approvals {
    fn eq(&self, other: &Self) -> bool {
        (self.mode, self.timeout, &self.rules) == (other.mode, other.timeout, &other.rules)
    }
}

/// How long an approval waits when the policy does not say.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

impl Default for Approvals {
    fn default() -> Self {
        Self {
            mode: ApprovalAction::Ask,
            timeout: DEFAULT_APPROVAL_TIMEOUT,
            rules: Vec::new(),
            groups: ToolPolicy::new(),
        }
    }
}

impl Approvals {
    /// `tools.approvals` as the config declares it
    /// ([`talon_config::model::ApprovalsSetting`], read and bounded once
    /// per config load); absent: ask, with the default expiry.
    pub fn from_config(setting: Option<&ApprovalsSetting>) -> Self {
        let raw = match setting {
            None => return Self::default(),
            Some(ApprovalsSetting::Mode(word)) => {
                return Self {
                    mode: action(*word),
                    ..Self::default()
                };
            }
            Some(ApprovalsSetting::Settings(raw)) => raw,
        };
        let rules = raw
            .rules
            .iter()
            .map(|rule| Rule {
                tool: rule.tool.as_deref().map(Pattern::parse),
                tool_kind: match rule.tool_kind {
                    None | Some(RuleKind::Tool) => ToolKind::Tool,
                    Some(RuleKind::CodeModeExec) => ToolKind::CodeModeExec,
                },
                source: rule.source.clone(),
                risk: rule.risk.map(|risk| match risk {
                    RuleRisk::Low => RiskLevel::Low,
                    RuleRisk::Medium => RiskLevel::Medium,
                    RuleRisk::High => RiskLevel::High,
                    RuleRisk::Critical => RiskLevel::Critical,
                }),
                action: action(rule.action),
            })
            .collect();
        Self {
            mode: raw.mode.map_or(ApprovalAction::Ask, action),
            timeout: raw
                .timeout_ms
                .map_or(DEFAULT_APPROVAL_TIMEOUT, Duration::from_millis),
            rules,
            ..Self::default()
        }
    }

    /// What becomes of a call of `entry` ([`cell_entry`]: of a Code Mode
    /// cell).
    pub fn action(&self, entry: &CatalogEntry) -> ApprovalAction {
        let kind = if is_cell(entry) {
            ToolKind::CodeModeExec
        } else {
            ToolKind::Tool
        };
        let risk = risk(entry);
        let source = source_name(entry);
        let subject = PolicySubject {
            name: &entry.tool.name,
            id: &entry.id,
            source: entry.tool.source,
        };
        let matched = self.rules.iter().find(|rule| {
            rule.tool_kind == kind
                && rule
                    .tool
                    .as_ref()
                    .is_none_or(|p| self.groups.matches(p, subject))
                && rule.source.as_deref().is_none_or(|s| s == source)
                && rule.risk.is_none_or(|r| risk >= r)
        });
        match matched {
            Some(rule) => rule.action,
            None if entry.tool.requires_approval => self.mode,
            None => ApprovalAction::Allow,
        }
    }
}

/// The catalog id a Code Mode cell is judged (and asked about) as.
pub const CELL_ID: &str = "openclaw:codemode:exec";

/// The entry a Code Mode cell is judged as: the outer `exec`, owner
/// `codemode`, never in a catalog.
pub fn cell_entry() -> CatalogEntry {
    CatalogEntry {
        id: CELL_ID.to_owned(),
        tool: talon_protocol::ToolDefinition {
            name: "exec".to_owned(),
            label: Some("Code Mode cell".to_owned()),
            description: "Runs a JavaScript or TypeScript cell in Code Mode's sandbox.".to_owned(),
            parameters: serde_json::json!({"type": "object"}),
            source: talon_protocol::ToolSource::Openclaw,
            owner: "codemode".to_owned(),
            catalog_mode: talon_protocol::CatalogMode::DirectOnly,
            execution_mode: Default::default(),
            requires_approval: false,
            effect: ToolEffect::Unknown,
            replay_safe: true,
        },
    }
}

fn is_cell(entry: &CatalogEntry) -> bool {
    entry.id == CELL_ID
}

/// How risky a call of `entry` is, by what the tool does.
pub fn risk(entry: &CatalogEntry) -> RiskLevel {
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

/// The [`Approver`] that applies [`Approvals`]: calls the policy allows
/// run without a question, calls it denies are refused with a reason that
/// names the policy, and the rest go to `ask`.
pub struct PolicyGate {
    policy: Arc<Approvals>,
    ask: Arc<dyn Approver>,
}

impl PolicyGate {
    /// `ask` decides the calls the policy sends to a person.
    pub fn new(policy: Arc<Approvals>, ask: Arc<dyn Approver>) -> Self {
        Self { policy, ask }
    }
}

/// Why the policy refused a call of `entry`.
pub fn denied_by_policy(entry: &CatalogEntry) -> String {
    format!(
        "{} is denied by the approval policy (tools.approvals)",
        entry.tool.name
    )
}

impl Approver for PolicyGate {
    fn needs(&self, entry: &CatalogEntry) -> bool {
        self.policy.action(entry) != ApprovalAction::Allow
    }

    fn decide<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, ApprovalDecision> {
        match self.policy.action(entry) {
            ApprovalAction::Allow => Box::pin(async { ApprovalDecision::Approved }),
            ApprovalAction::Deny => {
                let reason = denied_by_policy(entry);
                Box::pin(async move { ApprovalDecision::Denied(reason) })
            }
            ApprovalAction::Ask => self.ask.decide(ctx, entry, call),
        }
    }
}

#[cfg(test)]
mod tests;
