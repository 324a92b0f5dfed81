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

fn by_name<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {tools:#?}"))
}

#[tokio::test]
async fn the_default_agents_tools_with_their_policy_and_reach() {
    let g = TestGateway::start().await;
    let tools = list(&g, json!({})).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "openclaw:core:edit",
            "openclaw:core:exec",
            "openclaw:core:grep",
            "openclaw:core:list",
            "openclaw:core:read",
            "openclaw:core:write",
            "openclaw:runtime:ask_user"
        ]
    );
    let mut write = by_name(&tools, "write").clone();
    assert!(write["description"].is_string());
    assert_eq!(write["parameters"]["required"], json!(["path", "content"]));
    for long in ["description", "parameters"] {
        write.as_object_mut().unwrap().remove(long);
    }
    assert_eq!(
        write,
        json!({
            "id": "openclaw:core:write",
            "name": "write",
            "source": "core",
            "owner": "core",
            "arguments": [
                {"name": "content", "type": "string", "required": true, "description": "The whole new content"},
                {"name": "path", "type": "string", "required": true, "description": "A path relative to the workspace"}
            ],
            "approval": "ask",
            "requiresApproval": true,
            "reach": ["direct"],
            "hidden": false,
            "readOnly": false,
            "writable": true,
            "hostCapable": false,
            "effect": "writes"
        })
    );
    let exec = by_name(&tools, "exec");
    assert_eq!(
        (&exec["hostCapable"], &exec["approval"]),
        (&json!(true), &json!("ask"))
    );
    let read = by_name(&tools, "read");
    assert_eq!(
        (
            &read["readOnly"],
            &read["approval"],
            &read["requiresApproval"]
        ),
        (&json!(true), &json!("allow"), &json!(false))
    );
    let ask = by_name(&tools, "ask_user");
    assert_eq!(
        (&ask["source"], &ask["owner"], &ask["approval"]),
        (&json!("runtime"), &json!("runtime"), &json!("allow"))
    );
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
    assert!(
        tools.iter().all(|t| t["name"] != "grep"),
        "tools.deny applies"
    );
    for tool in &tools {
        assert_eq!(tool["reach"], json!(["code_mode"]), "{tool}");
        assert_eq!(tool["hidden"], true, "{tool}");
    }
    assert_eq!(by_name(&tools, "exec")["approval"], "deny");
    let mcp: Vec<&Value> = tools.iter().filter(|t| t["source"] == "mcp").collect();
    assert_eq!(mcp.len(), 3, "{tools:#?}");
    for tool in &mcp {
        assert_eq!(
            (&tool["owner"], &tool["approval"], &tool["requiresApproval"]),
            (&json!("synth"), &json!("ask"), &json!(true))
        );
    }
    // Nothing of how the server is reached.
    let shown = serde_json::to_string(&tools).unwrap();
    assert!(!shown.contains("fixture_server"), "{shown}");
    assert!(!shown.contains("\"node\""), "{shown}");
}

#[tokio::test]
async fn unknown_agents_and_sessions_are_not_found() {
    let g = TestGateway::start().await;
    let error = list(&g, json!({"agentId": "nobody"})).await.unwrap_err();
    assert_eq!(error["code"], "not_found", "{error}");
    let error = list(&g, json!({"sessionKey": "nowhere"}))
        .await
        .unwrap_err();
    assert_eq!(error["code"], "not_found", "{error}");
    // A session's agent is the one listed.
    Transport::Http
        .call(&g, "sessions.resolve", json!({"key": "mine"}))
        .await
        .unwrap();
    let tools = list(&g, json!({"sessionKey": "mine"})).await.unwrap();
    assert_eq!(tools.len(), 7);
}
