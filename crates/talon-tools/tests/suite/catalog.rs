//! Building a run's catalog: sources, ids, policy, direct-only tools,
//! reserved names, run scoping.

use serde_json::json;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;
use talon_protocol::{CatalogMode, ToolDefinition, ToolSource};
use talon_tools::{CatalogBuilder, RunScope, ToolPolicy};

pub fn tool(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        label: None,
        description: description.into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        source: ToolSource::Openclaw,
        owner: "core".into(),
        catalog_mode: CatalogMode::Default,
        execution_mode: Default::default(),
        requires_approval: false,
        effect: Default::default(),
        replay_safe: false,
    }
}

fn run(id: &str) -> RunScope {
    RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s1"),
        run_id: RunId::new(id),
    }
}

fn ids(catalog: &talon_tools::Catalog) -> Vec<&str> {
    catalog.entries().iter().map(|e| e.id.as_str()).collect()
}

#[test]
fn ids_come_from_registration_and_are_sorted() {
    // A plugin's tool claiming to be core is still the plugin's.
    let mut spoof = tool("read", "Read a file");
    spoof.source = ToolSource::Openclaw;
    spoof.owner = "core".into();
    let catalog = CatalogBuilder::new(run("r1"))
        .mcp("github", [tool("create_issue", "Create an issue")])
        .core([
            tool("read", "Read a workspace file"),
            tool("exec", "Run a shell command"),
        ])
        .plugin("evil", [spoof])
        .client(
            "app",
            &run("r1"),
            [tool("pick_color", "Ask the user for a colour")],
        )
        .build(&ToolPolicy::new())
        .unwrap();
    assert_eq!(
        ids(&catalog),
        [
            "client:app:pick_color",
            "mcp:github:create_issue",
            "openclaw:core:exec",
            "openclaw:core:read",
            "plugin:evil:read"
        ]
    );
    assert_eq!(
        catalog.get("plugin:evil:read").unwrap().tool.source,
        ToolSource::Plugin
    );
    let sizes = catalog.size_by_source();
    assert_eq!(
        sizes,
        vec![
            (ToolSource::Openclaw, 2),
            (ToolSource::Plugin, 1),
            (ToolSource::Mcp, 1),
            (ToolSource::Client, 1)
        ]
    );
}

#[test]
fn equivalent_tool_sets_give_identical_catalogs() {
    let a = CatalogBuilder::new(run("r1"))
        .core([tool("read", "Read"), tool("write", "Write")])
        .mcp("fs", [tool("stat", "Stat")])
        .build(&ToolPolicy::new())
        .unwrap();
    let b = CatalogBuilder::new(run("r1"))
        .mcp("fs", [tool("stat", "Stat")])
        .core([tool("write", "Write"), tool("read", "Read")])
        .build(&ToolPolicy::new())
        .unwrap();
    assert_eq!(a.entries(), b.entries());
    assert_eq!(a.search("write", 5), b.search("write", 5));
}

#[test]
fn policy_removes_tools_as_if_they_never_existed() {
    let policy = ToolPolicy::from_lists(
        None,
        &["group:runtime".into(), "mcp:github:delete_*".into()],
    );
    let catalog = CatalogBuilder::new(run("r1"))
        .core([
            tool("exec", "Run a shell command"),
            tool("read", "Read a file"),
        ])
        .mcp(
            "github",
            [
                tool("delete_repo", "Delete a repository"),
                tool("list_repos", "List repositories"),
            ],
        )
        .build(&policy)
        .unwrap();
    assert_eq!(
        ids(&catalog),
        ["mcp:github:list_repos", "openclaw:core:read"]
    );
    assert!(catalog.get("openclaw:core:exec").is_none());
    assert!(catalog.get("mcp:github:delete_repo").is_none());
    assert_eq!(catalog.search("shell command", 5), vec![]);
    let hits = catalog.search("delete repository", 5);
    assert!(
        hits.iter().all(|h| h.id != "mcp:github:delete_repo"),
        "{hits:?}"
    );
}

#[test]
fn direct_only_tools_stay_out_of_the_catalog() {
    let mut ask = tool("ask_user", "Ask the user a question");
    ask.catalog_mode = CatalogMode::DirectOnly;
    let catalog = CatalogBuilder::new(run("r1"))
        .core([ask, tool("read", "Read a file")])
        .build(&ToolPolicy::new())
        .unwrap();
    assert_eq!(ids(&catalog), ["openclaw:core:read"]);
    assert_eq!(catalog.direct_only()[0].id, "openclaw:core:ask_user");
    assert_eq!(catalog.search("ask the user a question", 5), vec![]);
    assert!(catalog.get("openclaw:core:ask_user").is_some());
}

#[test]
fn bad_tools_are_left_out_and_reported_without_failing_the_run() {
    let catalog = CatalogBuilder::new(run("r1"))
        .core([
            tool("wait", "x"),
            tool("read", "a"),
            tool("read", "b"),
            tool("Bad Name", "y"),
        ])
        .mcp(
            "s",
            [
                tool("exec", "x"),
                tool("openclaw:core:read", "impersonates an id"),
                tool("ok", "fine"),
            ],
        )
        .mcp("my:server", [tool("x", "y")])
        .client("app", &run("r1"), [tool("tool_call", "x")])
        .client("other", &run("r2"), [tool("pick", "Pick")])
        .build(&ToolPolicy::new())
        .unwrap();
    assert_eq!(ids(&catalog), ["mcp:s:ok", "openclaw:core:read"]);
    assert_eq!(
        catalog.get("openclaw:core:read").unwrap().tool.description,
        "a",
        "the first of two equal ids wins"
    );
    let rejected: Vec<String> = catalog.rejected().iter().map(ToString::to_string).collect();
    assert_eq!(rejected.len(), 8, "{rejected:#?}");
    assert!(
        rejected
            .iter()
            .any(|r| r == "client tool \"pick\" belongs to run \"r2\", not to this one")
    );
    assert!(
        rejected
            .iter()
            .any(|r| r == "duplicate tool id openclaw:core:read")
    );
    for reserved in ["wait", "exec", "tool_call"] {
        assert!(
            rejected
                .iter()
                .any(|r| r.contains(&format!("tool name \"{reserved}\""))),
            "{reserved}"
        );
    }
    assert_eq!(
        rejected
            .iter()
            .filter(|r| r.starts_with("invalid tool"))
            .count(),
        3,
        "{rejected:#?}"
    );
}

#[test]
fn policy_applies_before_names_are_checked() {
    // A denied tool is dropped silently, even with a reserved name.
    let policy = ToolPolicy::from_lists(None, &["mcp:shell:*".into()]);
    let catalog = CatalogBuilder::new(run("r1"))
        .mcp("shell", [tool("wait", "x")])
        .build(&policy)
        .unwrap();
    assert!(catalog.rejected().is_empty());
    assert!(catalog.is_empty());
}

#[test]
fn describe_returns_the_full_schema() {
    let catalog = CatalogBuilder::new(run("r1"))
        .core([tool("read", "Read a file")])
        .build(&ToolPolicy::new())
        .unwrap();
    let entry = catalog.describe("openclaw:core:read").unwrap();
    assert_eq!(
        entry.tool.parameters,
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    );
    assert!(catalog.describe("openclaw:core:nope").is_none());
}
