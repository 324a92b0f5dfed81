//! Code Mode cells through the approval policy, in production: every Code
//! Mode run registers an `exec` hook that sees `toolKind:
//! "code_mode_exec"` and asks `tools.approvals` about the cell, so a rule
//! tells a cell from the shell `exec` that shares its name. A `deny` rule
//! blocks the cell before it runs, an `ask` rule waits for a person, and a
//! rule for the tool `exec` decides the shell tool, never a cell.

use serde_json::{Value, json};

use super::ws::Transport;
use super::{Options, TestGateway, call_then_say, next_pending};

/// A Code Mode gateway whose runs make one cell, under `rules`.
async fn gateway(rules: Value) -> TestGateway {
    TestGateway::start_opts(Options {
        script: call_then_say("exec", json!({"code": "return 6 * 7;"}), "Done."),
        config: json!({"tools": {
            "codeMode": {"enabled": true},
            "approvals": {"mode": "ask", "rules": rules}
        }}),
        ..Options::default()
    })
    .await
}

/// The `exec` call's result, as the run's `tool.call.completed` has it.
fn cell_result(events: &[Value]) -> Value {
    events
        .iter()
        .find(|e| e["type"] == "tool.call.completed" && e["data"]["name"] == "exec")
        .map(|e| e["data"]["result"].clone())
        .unwrap_or_else(|| panic!("no exec result in {events:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_for_cells_blocks_the_cell_and_a_rule_for_the_exec_tool_does_not() {
    let g = gateway(json!([
        {"tool": "exec", "action": "allow"},
        {"toolKind": "code_mode_exec", "action": "deny"}
    ]))
    .await;
    let (_, events) = g.completed_run("compute").await;
    // The cell never ran: its `exec` failed with the policy's reason.
    let failed = events
        .iter()
        .find(|e| e["type"] == "tool.call.failed" && e["data"]["name"] == "exec")
        .unwrap_or_else(|| panic!("no failed exec in {events:?}"));
    assert_eq!(
        (
            &failed["data"]["error"]["status"],
            &failed["data"]["error"]["error"]
        ),
        (
            &json!("failed"),
            &json!("exec was blocked: exec is denied by the approval policy (tools.approvals)")
        )
    );
    assert!(!events.iter().any(|e| e["type"] == "approval.requested"));

    // A rule for the tool `exec` alone: the cell runs.
    let g = gateway(json!([{"tool": "exec", "action": "deny"}])).await;
    let (_, events) = g.completed_run("compute").await;
    assert_eq!(
        (
            &cell_result(&events)["status"],
            &cell_result(&events)["value"]
        ),
        (&json!("completed"), &json!(42))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_rule_for_cells_waits_for_a_person_then_runs_the_cell() {
    let g = gateway(json!([{"toolKind": "code_mode_exec", "action": "ask"}])).await;
    let (status, run) = g
        .call(&g.admin, "runs.create", json!({"input": "compute"}))
        .await;
    assert_eq!(status, 200, "{run}");
    let pending = next_pending(&g, &Transport::Http, "approvals", &run["id"]).await;
    assert_eq!(
        (
            &pending["toolName"],
            &pending["toolId"],
            &pending["arguments"],
            &pending["kind"]
        ),
        (
            &json!("exec"),
            &json!("openclaw:codemode:exec"),
            &json!({"code": "return 6 * 7;"}),
            &json!("tool")
        )
    );
    let (status, answered) = g
        .call(
            &g.admin,
            "approvals.respond",
            json!({"approvalId": pending["id"], "decision": "approve_once"}),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
    let (_, result) = g
        .call(
            &g.admin,
            "runs.wait",
            json!({"runId": run["id"], "timeoutMs": 20_000}),
        )
        .await;
    assert_eq!(result["status"], "completed", "{result}");
    let (_, page) = g
        .call(&g.admin, "runs.events", json!({"runId": run["id"]}))
        .await;
    let events = page["events"].as_array().unwrap();
    assert_eq!(
        (
            &cell_result(events)["status"],
            &cell_result(events)["value"]
        ),
        (&json!("completed"), &json!(42))
    );
}
