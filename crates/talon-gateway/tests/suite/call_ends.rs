//! Every call a run's log starts, it ends: a nested call a Code Mode cell
//! stops waiting for ends `cancelled` in the same run, before the run's
//! terminal event (nothing of a run follows that).

use serde_json::{Value, json};

use super::{Options, TestGateway, call_then_say};

/// A run's `tool.call.*` events but its deltas, each as
/// `[type, callId, parentId, status]`.
pub(super) fn calls(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| {
            e["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("tool.call."))
        })
        .filter(|e| e["type"] != "tool.call.delta")
        .map(|e| {
            json!([
                e["type"],
                e["data"]["callId"],
                e["data"]["parentId"],
                e["data"]["status"]
            ])
        })
        .collect()
}

#[tokio::test]
async fn a_nested_call_its_cell_stops_waiting_for_ends_cancelled_before_the_run_does() {
    // The cell starts a slow command, waits for a quick one, and returns
    // without awaiting the slow one.
    let code = "const slow = tools.exec({command: 'sleep 5'}); \
                await tools.exec({command: 'true'}); return 'early';";
    let g = TestGateway::start_opts(Options {
        script: call_then_say("exec", json!({"code": code}), "ok"),
        config: json!({"tools": {"approvals": "allow", "codeMode": {"enabled": true}}}),
        ..Options::default()
    })
    .await;
    let started = std::time::Instant::now();
    let (result, events) = g.completed_run("go").await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        calls(&events),
        vec![
            json!(["tool.call.started", "call_1", null, null]),
            json!(["tool.call.started", "call_1/1", "call_1", null]),
            json!(["tool.call.started", "call_1/2", "call_1", null]),
            json!(["tool.call.completed", "call_1/2", "call_1", null]),
            json!(["tool.call.failed", "call_1/1", "call_1", "cancelled"]),
            json!(["tool.call.completed", "call_1", null, null]),
        ]
    );
    assert!(events.last().unwrap()["type"] == "run.completed");
    // The command was stopped, not waited for.
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
}
