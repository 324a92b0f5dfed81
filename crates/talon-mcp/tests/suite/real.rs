//! The real npm servers over stdio and streamable HTTP: list, call,
//! structured results, errors, resources, prompts, the child's
//! environment, and a tool list change.

use serde_json::{Value, json};
use talon_mcp::McpManager;
use talon_protocol::ToolSource;
use talon_testing::redact::Redactor;
use talon_testing::wait;

use super::*;

async fn check_everything(manager: &McpManager) {
    let info = manager.connect("everything").await.unwrap();
    assert_eq!(info.protocol_version, "2025-11-25");
    assert!(info.features.resources && info.features.prompts);
    let run = manager.for_run().await;
    assert!(run.failed.is_empty(), "{:?}", run.failed);
    let (server, tools) = &run.tools[0];
    assert_eq!(server, "everything");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-structured-content",
        "get-tiny-image",
        "get-env",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(
        (echo.source, echo.owner.as_str()),
        (ToolSource::Mcp, "everything")
    );
    // A string message.
    insta::assert_json_snapshot!("echo_parameters", echo.parameters);
    // Names that are not identifiers make catalog ids all the same.
    let catalog = run
        .register(talon_tools::CatalogBuilder::new(Default::default()))
        .build(&talon_tools::ToolPolicy::new())
        .unwrap();
    assert!(
        catalog
            .get_cataloged("mcp:everything:get-tiny-image")
            .is_some()
    );
    assert!(catalog.rejected().is_empty(), "{:?}", catalog.rejected());

    let echoed = manager
        .call_tool(None, "everything", "echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(
        echoed,
        json!({"content": [{"type": "text", "text": "Echo: hi"}]})
    );
    let structured = manager
        .call_tool(
            None,
            "everything",
            "get-structured-content",
            json!({"location": "Chicago"}),
        )
        .await
        .unwrap();
    // structuredContent {"conditions": "Light rain / drizzle", "humidity":
    // 82, "temperature": 36}.
    insta::assert_json_snapshot!("structured", structured);
    // A tool error keeps MCP's shape: isError, not a transport failure.
    let bad = manager
        .call_tool(None, "everything", "get-sum", json!({"a": "not a number"}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("bad_arguments", bad);
    let unknown = manager
        .call_tool(None, "everything", "no-such-tool", json!({}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("unknown_tool", unknown);

    let ctx = ctx();
    let resource = talon_tools::McpServers::read_resource(
        manager,
        &ctx,
        "everything",
        "demo://resource/static/document/architecture.md",
    )
    .await
    .unwrap();
    // The document's uri and its (non-empty) text.
    insta::assert_json_snapshot!("resource", resource);
    let prompt = talon_tools::McpServers::get_prompt(
        manager,
        &ctx,
        "everything",
        "args-prompt",
        &json!({"city": "Paris", "state": "TX"}),
    )
    .await
    .unwrap();
    // "What's weather in Paris, TX?"
    insta::assert_json_snapshot!("prompt", prompt);
    let features = talon_tools::McpServers::features(manager, "everything").unwrap();
    assert!(features.resources && features.prompts);
}

pub fn ctx() -> talon_tools::RunContext {
    talon_tools::RunContext {
        scope: Default::default(),
        session_key: "k".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: std::sync::Arc::new(talon_tools::NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let manager = manager(stdio_everything());
    check_everything(&manager).await;
    manager.shutdown().await;
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let server = http_everything().await;
    let manager =
        manager(json!({"everything": {"url": server.url, "headers": {"X-Talon-Test": "1"}}}));
    check_everything(&manager).await;
    manager.shutdown().await;
}

#[tokio::test]
async fn server_filesystem_reads_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello from a file").unwrap();
    let root = dir.path().canonicalize().unwrap().display().to_string();
    let manager =
        manager(json!({"fs": {"command": "node", "args": [filesystem_js(), root.clone()]}}));
    let run = manager.for_run().await;
    let names: Vec<String> = run.tools[0].1.iter().map(|t| t.name.clone()).collect();
    assert!(names.contains(&"read_text_file".to_owned()), "{names:?}");
    let text = manager
        .call_tool(
            None,
            "fs",
            "read_text_file",
            json!({"path": format!("{root}/notes.txt")}),
        )
        .await
        .unwrap();
    let outside = manager
        .call_tool(None, "fs", "read_text_file", json!({"path": "/etc/passwd"}))
        .await
        .unwrap();
    // The file's text, then an error (isError) for a path outside the root.
    insta::assert_json_snapshot!(
        "read_inside_and_outside",
        Redactor::new()
            .with(root.clone(), "<root>")
            .value(&json!([text, outside]))
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn the_child_gets_only_the_configured_environment() {
    let manager = talon_mcp::McpManager::new(
        talon_mcp::servers_from_json(&json!({"everything": {
            "command": "node", "args": [everything_js(), "stdio"],
            "env": {"LD_PRELOAD": "/nonexistent/evil.so", "NODE_OPTIONS": "--require /nonexistent/evil.js",
                    "API_TOKEN": "${TALON_TEST_TOKEN}", "MODE": "test"}}}))
        .unwrap(),
        env_with(&[("TALON_TEST_TOKEN", "tok-123456"), ("GATEWAY_ONLY", "must not leak")]),
    );
    let result = manager
        .call_tool(None, "everything", "get-env", json!({}))
        .await
        .unwrap();
    let env: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    // The basics `env_with` inherits (PATH, HOME) and the configured
    // variables, the token resolved: no LD_PRELOAD, NODE_OPTIONS or
    // GATEWAY_ONLY.
    let mut expected: serde_json::Map<String, Value> = ["PATH", "HOME"]
        .iter()
        .filter_map(|k| Some(((*k).to_owned(), json!(std::env::var(k).ok()?))))
        .collect();
    expected.insert("API_TOKEN".into(), json!("tok-123456"));
    expected.insert("MODE".into(), json!("test"));
    pretty_assertions::assert_eq!(env, Value::Object(expected));
    manager.shutdown().await;
}

#[tokio::test]
async fn a_tool_list_change_refreshes_the_tools_of_later_runs() {
    let manager = manager(json!({"fx": fixture("ok", json!({}))}));
    let before = manager.for_run().await;
    let names = |run: &talon_mcp::RunServers| -> Vec<String> {
        run.tools[0].1.iter().map(|t| t.name.clone()).collect()
    };
    assert!(!names(&before).contains(&"extra".to_owned()));
    manager
        .call_tool(None, "fx", "add_tool", json!({}))
        .await
        .unwrap();
    let after = wait::until_async("the new tool to be listed", wait::DEADLINE, async || {
        let after = manager.for_run().await;
        if names(&after).contains(&"extra".to_owned()) {
            Ok(after)
        } else {
            Err(names(&after))
        }
    })
    .await;
    // Names that are not identifiers are still cataloged and callable by id.
    assert!(names(&after).contains(&"dotted.name-x".to_owned()));
    manager.shutdown().await;
}
