//! The policy's reading and decisions.

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

/// `tools.approvals` as a config load reads it; a value the config's
/// declaration refuses, as the error a load gives.
fn read(value: Option<&serde_json::Value>) -> Result<Approvals, String> {
    let text = match value {
        Some(v) => json!({"tools": {"approvals": v}}).to_string(),
        None => "{}".to_owned(),
    };
    let config = talon_config::Config::parse(&text, None).map_err(|e| e.to_string())?;
    let document = config.document().map_err(|e| e.to_string())?;
    Ok(Approvals::from_config(document.tools.approvals.as_ref()))
}

fn core(name: &str, effect: ToolEffect, requires: bool) -> CatalogEntry {
    entry(
        &format!("openclaw:core:{name}"),
        ToolSource::Openclaw,
        effect,
        requires,
    )
}

#[test]
fn the_first_matching_rule_decides_else_the_mode_for_tools_that_require_it() {
    let policy = read(Some(&json!({
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
    let entries = [
        core("exec", ToolEffect::Host, true),
        core("write", ToolEffect::Writes, true),
        core("edit", ToolEffect::Writes, true),
        core("read", ToolEffect::ReadOnly, false),
        entry("mcp:gh:create", ToolSource::Mcp, ToolEffect::Writes, false),
        entry("mcp:gh:list", ToolSource::Mcp, ToolEffect::ReadOnly, false),
    ];
    let got: Vec<ApprovalAction> = entries.iter().map(|e| policy.action(e)).collect();
    use ApprovalAction::{Allow, Ask, Deny};
    assert_eq!(got, [Ask, Allow, Deny, Allow, Ask, Allow]);
}

#[test]
fn rule_patterns_are_the_allow_and_deny_lists_syntax() {
    let policy = read(Some(&json!({
        "mode": "allow",
        "rules": [
            {"tool": "group:fs", "action": "ask"},
            {"tool": "MCP:GitHub:*", "action": "deny"},
            {"tool": "web_?etch", "action": "deny"},
            {"tool": "group:mcp", "action": "ask"},
        ]
    })))
    .unwrap();
    let cases = [
        (core("write", ToolEffect::Writes, true), ApprovalAction::Ask),
        (
            core("read", ToolEffect::ReadOnly, false),
            ApprovalAction::Ask,
        ),
        (
            core("web_fetch", ToolEffect::ReadOnly, false),
            ApprovalAction::Deny,
        ),
        (core("exec", ToolEffect::Host, true), ApprovalAction::Allow),
        (
            entry(
                "mcp:github:create_issue",
                ToolSource::Mcp,
                ToolEffect::Writes,
                false,
            ),
            ApprovalAction::Deny,
        ),
        (
            entry(
                "mcp:docs:search",
                ToolSource::Mcp,
                ToolEffect::ReadOnly,
                false,
            ),
            ApprovalAction::Ask,
        ),
        (
            entry(
                "plugin:fs:read",
                ToolSource::Plugin,
                ToolEffect::ReadOnly,
                false,
            ),
            ApprovalAction::Allow,
        ),
    ];
    let got: Vec<(String, ApprovalAction)> = cases
        .iter()
        .map(|(e, _)| (e.id.clone(), policy.action(e)))
        .collect();
    let want: Vec<(String, ApprovalAction)> =
        cases.iter().map(|(e, a)| (e.id.clone(), *a)).collect();
    assert_eq!(got, want);
}

#[test]
fn words_and_bad_values() {
    assert_eq!(read(None).unwrap(), Approvals::default());
    let allow = read(Some(&json!("allow"))).unwrap();
    assert_eq!(
        allow.action(&core("exec", ToolEffect::Host, true)),
        ApprovalAction::Allow
    );
    let errors: Vec<String> = [
        json!("sometimes"),
        json!({"rules": [{"tool": "x", "action": "maybe"}]}),
        json!({"rulez": []}),
        json!({"timeoutMs": 0}),
        json!(42),
    ]
    .iter()
    .map(|v| read(Some(v)).unwrap_err())
    .collect();
    assert_eq!(
        errors,
        [
            "config key tools.approvals: `sometimes` is not one of `ask`, `allow`, `deny`",
            "config key tools.approvals.rules[0].action: `maybe` is not one of `ask`, `allow`, `deny`",
            "config key tools.approvals.rulez: unknown key: this section refuses keys it does not know; did you mean `rules`?",
            "config key tools.approvals.timeoutMs: 0 is out of range: expected a whole number of at least 1",
            "config key tools.approvals: expected a string or an object, found a number (42)",
        ]
    );
}
