//! Cancelling background tasks through the gateway: `tasks.cancel` ends a
//! task and the run it tracks, a cancelled parent run takes its children
//! along unless its agent keeps them, and a task cancelled while its
//! spawn is under way leaves no run going.

use serde_json::json;
use talon_testing::wait;

use super::tasks::{call, ended_task, gateway, refused, running_task, slow_spawning, spawning};
use super::tool_turn;

#[tokio::test]
async fn a_cancelled_task_cancels_its_run_and_says_so_in_the_parents_session() {
    let g = gateway(slow_spawning(std::time::Duration::from_secs(3)), json!({})).await;
    let created = call(&g, "runs.create", json!({"input": "start"})).await;
    let task = running_task(&g, &created["runId"]).await;
    let cancelled = call(
        &g,
        "tasks.cancel",
        json!({"taskId": task["id"], "reason": "not needed"}),
    )
    .await;
    assert_eq!(
        (&cancelled["status"], &cancelled["progressSummary"]),
        (&json!("cancelled"), &json!("cancelled: not needed")),
        "{cancelled}"
    );
    let child = call(&g, "runs.get", json!({"runId": task["childRunId"]})).await;
    let child = wait::until_async("the child run to end", wait::DEADLINE, async || {
        let run = call(&g, "runs.get", json!({"runId": child["id"]})).await;
        (run["status"] == "cancelled").then_some(run)
    })
    .await;
    assert_eq!(child["status"], "cancelled");
    let ended = ended_task(&g, &task["id"]).await;
    assert_eq!(
        (&ended["status"], &ended["deliveryStatus"]),
        (&json!("cancelled"), &json!("delivered"))
    );
    let messages = call(
        &g,
        "sessions.messages",
        json!({"sessionId": created["sessionId"]}),
    )
    .await;
    assert!(
        messages["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "system"
                && m["text"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("Background task cancelled: slow")),
        "{messages}"
    );
    let again = refused(&g, "tasks.cancel", json!({"taskId": task["id"]})).await;
    assert_eq!(
        again["message"],
        json!(format!(
            "task \"{}\" has ended (cancelled)",
            task["id"].as_str().unwrap()
        ))
    );
}

#[tokio::test]
async fn cancelling_the_parent_run_cancels_its_children_unless_the_agent_keeps_them() {
    for (policy, expected) in [("cancel", "cancelled"), ("keep", "succeeded")] {
        let g = gateway(
            slow_spawning(std::time::Duration::from_secs(2)),
            json!({"onParentCancel": policy}),
        )
        .await;
        let created = call(&g, "runs.create", json!({"input": "start"})).await;
        let task = running_task(&g, &created["runId"]).await;
        call(&g, "runs.cancel", json!({"runId": created["runId"]})).await;
        let ended = ended_task(&g, &task["id"]).await;
        assert_eq!(ended["status"], expected, "{policy}: {ended}");
    }
}

/// Cancel during spawn: each task is cancelled the moment it is listed,
/// while its parent is still spawning the others (some before their run
/// is linked). Every task ends cancelled, and so does every child run: a
/// task cancelled before its run was linked has that run cancelled, never
/// left going with nobody following it.
#[tokio::test]
async fn tasks_cancelled_while_their_spawn_is_under_way_leave_no_run_going() {
    let spawn = |i: usize| talon_mock_model::ScriptedCall {
        name: "sessions_spawn".into(),
        arguments: json!({"task": format!("part {i}"), "label": format!("part {i}")}),
    };
    let mut script = spawning(json!({}));
    script.turns[0].tool_calls = (0..5).map(spawn).collect();
    script.turns[1] = tool_turn("subagents", json!({"action": "wait", "timeoutSeconds": 1}));
    script.turns[2].delay = std::time::Duration::from_secs(4);
    let g = gateway(script, json!({"maxChildrenPerAgent": 5})).await;
    let created = call(&g, "runs.create", json!({"input": "fan out"})).await;
    let cancelled = std::sync::Mutex::new(std::collections::BTreeSet::new());
    wait::until_async("every task to be cancelled", wait::DEADLINE, async || {
        let listed = call(&g, "tasks.list", json!({"runId": created["runId"]})).await;
        let new: Vec<String> = listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .filter(|id| cancelled.lock().unwrap().insert(id.clone()))
            .collect();
        for id in new {
            let (status, body) = g
                .call(
                    &g.admin,
                    "tasks.cancel",
                    json!({"taskId": id, "reason": "changed my mind"}),
                )
                .await;
            assert!(
                status == 200 || body["error"]["code"] == "conflict",
                "{body}"
            );
        }
        (cancelled.lock().unwrap().len() == 5).then_some(())
    })
    .await;
    // Each task's session holds its one child run, linked or not.
    let runs = wait::until_async("every child run to end", wait::DEADLINE, async || {
        let listed = call(&g, "tasks.list", json!({"runId": created["runId"]})).await;
        let mut runs = Vec::new();
        for task in listed["tasks"].as_array().unwrap() {
            assert_eq!(task["status"], "cancelled", "{task}");
            let page = call(
                &g,
                "runs.list",
                json!({"sessionId": task["childSessionId"]}),
            )
            .await;
            runs.extend(page["runs"].as_array().unwrap().iter().cloned());
        }
        (runs.len() == 5 && runs.iter().all(|r| r["endedAt"].is_u64())).then_some(runs)
    })
    .await;
    for run in &runs {
        assert_eq!(run["status"], "cancelled", "{run}");
    }
}
