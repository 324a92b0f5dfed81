//! The structured handlers: search, describe, call, exact-name dispatch,
//! and telemetry.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;
use talon_protocol::{CalledTool, ToolSource, ToolTelemetry};
use talon_tools::ToolSurface;
use talon_toolsearch::{Mode, ToolSearchConfig};

use super::{Echo, catalog, ctx, tool_search};

#[tokio::test]
async fn search_describe_call_go_through_the_runner() {
    let echo = Arc::new(Echo::default());
    let ts = tool_search(
        catalog(),
        ToolSearchConfig {
            mode: Mode::Tools,
            ..Default::default()
        },
        echo.clone(),
    );
    let hits = ts
        .handle(
            &ctx(),
            "c1",
            "tool_search",
            json!({"query": "create an issue", "limit": 2}),
        )
        .await;
    // The issue tool alone.
    pretty_assertions::assert_eq!(
        hits,
        json!([{"id": "plugin:issues:create_issue", "name": "create_issue", "source": "plugin", "sourceName": "issues", "description": "Create an issue in the tracker."}])
    );
    let described = ts
        .handle(
            &ctx(),
            "c2",
            "tool_describe",
            json!({"id": "plugin:issues:create_issue"}),
        )
        .await;
    // Its parameters: a string path.
    insta::assert_json_snapshot!("described", described);
    let called = ts
        .handle(
            &ctx(),
            "c3",
            "tool_call",
            json!({"id": "plugin:issues:create_issue", "args": {"title": "x"}}),
        )
        .await;
    assert_eq!(
        called,
        json!({"ran": "plugin:issues:create_issue", "args": {"title": "x"}})
    );
    // Denied and unknown ids answer alike, and nothing runs.
    let denied = ts
        .handle(
            &ctx(),
            "c4",
            "tool_call",
            json!({"id": "openclaw:core:exec", "args": {}}),
        )
        .await;
    assert_eq!(
        denied,
        json!({"error": "unknown tool id \"openclaw:core:exec\"", "status": "not_found"})
    );
    let hidden = ts
        .handle(
            &ctx(),
            "c5",
            "tool_search",
            json!({"query": "run a shell command"}),
        )
        .await;
    assert_eq!(hidden, json!([]));
    let missing = ts
        .handle(
            &ctx(),
            "c6",
            "tool_describe",
            json!({"id": "openclaw:core:exec"}),
        )
        .await;
    assert_eq!(missing, denied);
    assert_eq!(echo.calls.load(Ordering::Relaxed), 1);

    // The surface's part of the run's telemetry (the agent loop adds the
    // bytes it sent).
    let telemetry = ToolSurface::telemetry(&*ts);
    assert_eq!(
        telemetry,
        ToolTelemetry {
            surface: "tools".into(),
            catalog_size: 4,
            catalog_by_source: [
                ("client".to_owned(), 1),
                ("mcp".to_owned(), 1),
                ("openclaw".to_owned(), 1),
                ("plugin".to_owned(), 1),
            ]
            .into(),
            searches: 2,
            describes: 2,
            bridge_calls: 2,
            called: vec![
                CalledTool {
                    id: "plugin:issues:create_issue".into(),
                    source: Some(ToolSource::Plugin),
                    status: "ok".into(),
                    nested: true,
                },
                CalledTool {
                    id: "openclaw:core:exec".into(),
                    source: None,
                    status: "not_found".into(),
                    nested: true,
                },
            ],
            ..ToolTelemetry::default()
        }
    );
}

#[tokio::test]
async fn directory_mode_runs_exact_hidden_names() {
    let echo = Arc::new(Echo::default());
    let ts = tool_search(
        catalog(),
        ToolSearchConfig {
            mode: Mode::Directory,
            ..Default::default()
        },
        echo.clone(),
    );
    let out = ts
        .handle(&ctx(), "c1", "list_pulls", json!({"repo": "talon"}))
        .await;
    assert_eq!(
        out,
        json!({"ran": "mcp:github:list_pulls", "args": {"repo": "talon"}})
    );
    let out = ts.handle(&ctx(), "c2", "exec", json!({})).await;
    let bad = ts
        .handle(&ctx(), "c3", "tool_search", json!({"q": 1}))
        .await;
    pretty_assertions::assert_eq!(
        (out, bad),
        (
            json!({"error": "unknown tool \"exec\"", "status": "not_found"}),
            json!({"error": "tool_search needs a string query", "status": "invalid_input"})
        )
    );
}
