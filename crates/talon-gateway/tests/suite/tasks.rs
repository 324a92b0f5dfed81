//! Background tasks through the gateway: a model's `sessions_spawn` starts
//! a sub-agent whose task follows its child run to the end, posts its
//! result to the parent's session, and is read, followed, cancelled and
//! bounded through `tasks.*`.
//!
//! Every run replays the script from its first turn (the mock's `perRun`),
//! so the child run takes the same turns: at depth 1 with the default
//! `maxSpawnDepth` of 1 it is offered neither tool, and each of its calls
//! is an unknown tool's error before it says the script's last line.

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};
use talon_testing::wait;

use super::ws::Transport;
use super::{Options, TestGateway, tool_turn};

const ANSWER: &str = "The answer is 42.";

/// Spawns with `spawn`'s arguments, waits for its sub-agents, then says
/// [`ANSWER`].
fn spawning(spawn: Value) -> Script {
    Script {
        turns: vec![
            tool_turn("sessions_spawn", spawn),
            tool_turn("subagents", json!({"action": "wait", "timeoutSeconds": 30})),
            Turn {
                text: Some(ANSWER.into()),
                ..Turn::default()
            },
        ],
        replay: Replay::PerRun,
        ..Script::default()
    }
}

async fn gateway(script: Script, subagents: Value) -> TestGateway {
    let g = TestGateway::start_opts(Options {
        script,
        config: json!({"agents": {"defaults": {"subagents": subagents}}}),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    g
}

async fn call(g: &TestGateway, method: &str, params: Value) -> Value {
    Transport::Http.call(g, method, params).await.unwrap()
}

async fn refused(g: &TestGateway, method: &str, params: Value) -> Value {
    Transport::Http.call(g, method, params).await.unwrap_err()
}

/// Runs `input` to its end: the run's id and its result.
async fn run(g: &TestGateway, input: &str) -> (Value, Value) {
    let created = call(g, "runs.create", json!({"input": input})).await;
    let result = call(
        g,
        "runs.wait",
        json!({"runId": created["runId"], "timeoutMs": 30_000}),
    )
    .await;
    (created["runId"].clone(), result)
}

#[tokio::test]
async fn a_spawned_sub_agent_is_a_task_that_follows_its_run_and_posts_its_result() {
    let g = gateway(
        spawning(json!({"task": "find the answer", "label": "finder"})),
        json!({}),
    )
    .await;
    let (parent, result) = run(&g, "plan it").await;
    assert_eq!(result["status"], "completed", "{result}");
    let listed = call(&g, "tasks.list", json!({"runId": parent})).await;
    let tasks = listed["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{listed}");
    let task = wait::until_async(
        "the task's result to be posted",
        wait::DEADLINE,
        async || {
            let task = call(&g, "tasks.get", json!({"taskId": tasks[0]["id"]})).await;
            (task["deliveryStatus"] == "delivered").then_some(task)
        },
    )
    .await;
    let child = task["childRunId"].clone();
    assert_eq!(
        (
            &task["kind"],
            &task["status"],
            &task["label"],
            &task["description"],
            &task["agentId"],
            &task["runId"],
            &task["sessionId"],
            &task["depth"],
            &task["result"],
            &task["notifyPolicy"],
        ),
        (
            &json!("subagent"),
            &json!("succeeded"),
            &json!("finder"),
            &json!("find the answer"),
            &json!("main"),
            &parent,
            &result["sessionId"],
            &json!(1),
            &json!(ANSWER),
            &json!("done_only"),
        ),
        "{task}"
    );
    // The child's result names its task, and its run is in a session of
    // its own.
    let child_result = call(&g, "runs.wait", json!({"runId": child, "timeoutMs": 1000})).await;
    assert_eq!(child_result["taskId"], task["id"]);
    assert_ne!(child_result["sessionId"], result["sessionId"]);
    assert_eq!(task["childSessionId"], child_result["sessionId"]);
    // The parent's wait saw the child's answer.
    let told = super::told(&g);
    assert!(
        told.contains(ANSWER) && told.contains("completed"),
        "{told}"
    );
    // The result was posted to the parent's session, once.
    let messages = call(
        &g,
        "sessions.messages",
        json!({"sessionId": result["sessionId"]}),
    )
    .await;
    let notices: Vec<&Value> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .collect();
    assert_eq!(notices.len(), 1, "{messages}");
    assert_eq!(
        notices[0]["text"],
        json!(format!(
            "Background task done: finder (task {}).\n\n{ANSWER}",
            task["id"].as_str().unwrap()
        ))
    );
    // Its events: each change of the task, and its run's.
    let events = call(&g, "tasks.events", json!({"taskId": task["id"]})).await;
    assert_eq!(events["done"], true, "{events}");
    let events = events["events"].as_array().unwrap();
    let changes: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "task.updated")
        .map(|e| {
            (
                e["data"]["status"].as_str().unwrap(),
                e["data"]["deliveryStatus"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("queued", "pending"),
            ("queued", "pending"),
            ("running", "pending"),
            ("succeeded", "pending"),
            ("succeeded", "delivered"),
        ]
    );
    assert!(
        events.iter().all(|e| e["taskId"] == task["id"]),
        "every event names the task"
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "run.completed" && e["runId"] == child)
    );
    // An ended task is not changed any more.
    let ended = refused(&g, "tasks.cancel", json!({"taskId": task["id"]})).await;
    assert_eq!(ended["code"], "conflict", "{ended}");
    let ended = refused(
        &g,
        "tasks.notify",
        json!({"taskId": task["id"], "notifyPolicy": "silent"}),
    )
    .await;
    assert_eq!(ended["code"], "conflict", "{ended}");
}
