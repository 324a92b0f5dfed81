//! `tools.list`: the ToolSpace of an agent, normalised, with the policy
//! and the surfaces that apply, and nothing of a server's internals.

use serde_json::{Value, json};

use super::ws::Transport;
use super::{Options, TestGateway};

fn fixture_js() -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../talon-mcp/tests/fixtures/fixture_server.mjs")
        .display()
        .to_string()
}

async fn list(g: &TestGateway, params: Value) -> Result<Vec<Value>, Value> {
    Transport::Http
        .call(g, "tools.list", params)
        .await
        .map(|r| r["tools"].as_array().unwrap().clone())
}

#[tokio::test]
async fn the_default_agents_tools_with_their_policy_and_reach() {
    let g = TestGateway::start().await;
    let tools = list(&g, json!({})).await.unwrap();
    // Each tool whole: its id, source and owner, arguments, approval
    // policy, reach and effect (`write` asks, `exec` is host-capable and
    // asks, `read` is read-only and allowed, `ask_user` is the runtime's).
    insta::assert_json_snapshot!("default_agent", tools);
}

#[tokio::test]
async fn code_mode_hides_the_catalog_and_rules_decide_approval() {
    let g = TestGateway::start_opts(Options {
        config: json!({
            "tools": {
                "codeMode": {"enabled": true},
                "deny": ["grep"],
                "approvals": {"rules": [
                    {"tool": "exec", "action": "deny"},
                    {"source": "mcp", "action": "ask"}
                ]}
            },
            "mcp": {"servers": {"synth": {"command": "node", "args": [fixture_js(), "catalog", "3"]}}}
        }),
        ..Options::default()
    })
    .await;
    let tools = list(&g, json!({"agentId": "main"})).await.unwrap();
    // No `grep` (tools.deny applies); every tool reached from Code Mode
    // only and hidden; `exec` denied; the server's three tools owned by
    // `synth`, asking.
    insta::assert_json_snapshot!("code_mode", tools);
    // Nothing of how the server is reached.
    let shown = serde_json::to_string(&tools).unwrap();
    assert!(!shown.contains("fixture_server"), "{shown}");
    assert!(!shown.contains("\"node\""), "{shown}");
}

#[tokio::test]
async fn unknown_agents_and_sessions_are_not_found() {
    let g = TestGateway::start().await;
    let error = list(&g, json!({"agentId": "nobody"})).await.unwrap_err();
    insta::assert_json_snapshot!("unknown_agent", error);
    let error = list(&g, json!({"sessionKey": "nowhere"}))
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("unknown_session", error);
    // A session's agent is the one listed.
    Transport::Http
        .call(&g, "sessions.resolve", json!({"key": "mine"}))
        .await
        .unwrap();
    let tools = list(&g, json!({"sessionKey": "mine"})).await.unwrap();
    pretty_assertions::assert_eq!(tools, list(&g, json!({})).await.unwrap());
}
