//! Background tasks through the gateway: a model's `sessions_spawn` starts
//! a sub-agent whose task follows its child run to the end, posts its
//! result to the parent's session, and is read, followed and bounded
//! through `tasks.*` (cancelling: `task_cancel`).
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

pub(super) const ANSWER: &str = "The answer is 42.";

/// Spawns with `spawn`'s arguments, waits for its sub-agents, then says
/// [`ANSWER`].
pub(super) fn spawning(spawn: Value) -> Script {
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

pub(super) async fn gateway(script: Script, subagents: Value) -> TestGateway {
    let g = TestGateway::start_opts(Options {
        script,
        config: json!({"agents": {"defaults": {"subagents": subagents}}}),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    g
}

pub(super) async fn call(g: &TestGateway, method: &str, params: Value) -> Value {
    Transport::Http.call(g, method, params).await.unwrap()
}

pub(super) async fn refused(g: &TestGateway, method: &str, params: Value) -> Value {
    Transport::Http.call(g, method, params).await.unwrap_err()
}

/// The text of the one system notice in session `session_id` (there must
/// be exactly one).
pub(super) async fn the_notice(g: &TestGateway, session_id: &Value) -> Value {
    let messages = call(g, "sessions.messages", json!({"sessionId": session_id})).await;
    let notices: Vec<&Value> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .collect();
    assert_eq!(notices.len(), 1, "{messages}");
    notices[0]["text"].clone()
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
    assert_eq!(
        the_notice(&g, &result["sessionId"]).await,
        json!(format!(
            "Background task done: finder (task {}).\n\n{ANSWER}",
            task["id"].as_str().unwrap()
        ))
    );
    // Its events: each change of the task, and its run's (the last, its
    // delivery, is appended just after the message is posted).
    let events = wait::until_async("the task's events to settle", wait::DEADLINE, async || {
        let events = call(&g, "tasks.events", json!({"taskId": task["id"]})).await;
        (events["done"] == true).then_some(events)
    })
    .await;
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

/// Every tool message the model was sent, across its requests.
pub(super) fn tool_messages(g: &TestGateway) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for request in g.mock.requests() {
        for m in request["messages"].as_array().into_iter().flatten() {
            if m["role"] == "tool" {
                let text = m["content"].as_str().unwrap_or_default().to_owned();
                if !seen.contains(&text) {
                    seen.push(text);
                }
            }
        }
    }
    seen
}

#[tokio::test]
async fn a_run_spawns_no_more_children_than_its_bound_and_the_model_is_told_which() {
    let spawn = |label: &str| json!({"task": "look", "label": label});
    let mut script = spawning(spawn("first"));
    script.turns[0]
        .tool_calls
        .push(talon_mock_model::ScriptedCall {
            name: "sessions_spawn".into(),
            arguments: spawn("second"),
        });
    let g = gateway(script, json!({"maxChildrenPerAgent": 1})).await;
    let (parent, result) = run(&g, "fan out").await;
    assert_eq!(result["status"], "completed", "{result}");
    let listed = call(&g, "tasks.list", json!({"runId": parent})).await;
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1, "{listed}");
    let told = tool_messages(&g);
    assert!(
        told.iter().any(|t| t.contains(
            "1 unfinished sub-agents, the most it may have (agents.*.subagents.maxChildrenPerAgent)"
        )),
        "{told:#?}"
    );
    // A child at the depth bound is offered no spawning at all.
    assert!(
        told.iter().any(|t| t.contains("sessions_spawn")),
        "{told:#?}"
    );
}

/// Like [`spawning`], but the last turn (every run's) takes `slow`, and
/// the parent waits for its children at most 1 s.
pub(super) fn slow_spawning(slow: std::time::Duration) -> Script {
    let mut script = spawning(json!({"task": "take your time", "label": "slow"}));
    script.turns[1] = tool_turn("subagents", json!({"action": "wait", "timeoutSeconds": 1}));
    script.turns[2].delay = slow;
    script
}

/// The one task of `parent`, once it is `running`.
pub(super) async fn running_task(g: &TestGateway, parent: &Value) -> Value {
    wait::until_async("the sub-agent to run", wait::DEADLINE, async || {
        let listed = call(g, "tasks.list", json!({"runId": parent})).await;
        listed["tasks"]
            .get(0)
            .filter(|t| t["status"] == "running")
            .cloned()
    })
    .await
}

pub(super) async fn ended_task(g: &TestGateway, id: &Value) -> Value {
    wait::until_async("the task to end and settle", wait::DEADLINE, async || {
        let task = call(g, "tasks.get", json!({"taskId": id})).await;
        (task["deliveryStatus"] != "pending").then_some(task)
    })
    .await
}

#[tokio::test]
async fn a_silent_task_posts_nothing_and_state_changes_posts_its_start_too() {
    for (policy, notices, delivery) in [
        ("silent", 0, "not_applicable"),
        ("state_changes", 2, "delivered"),
    ] {
        // One run at a time: the child waits for its parent to end, so
        // its policy changes while it is queued.
        let g = TestGateway::start_opts(Options {
            script: slow_spawning(std::time::Duration::ZERO),
            config: json!({"agents": {"defaults": {"subagents": {}}}}),
            runs: talon_gateway::RunLimits {
                max_concurrent: 1,
                ..talon_gateway::RunLimits::default()
            },
            ..Options::default()
        })
        .await;
        std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
        let created = call(&g, "runs.create", json!({"input": "start"})).await;
        let task = wait::until_async("the task", wait::DEADLINE, async || {
            let listed = call(&g, "tasks.list", json!({"runId": created["runId"]})).await;
            listed["tasks"].get(0).cloned()
        })
        .await;
        let changed = call(
            &g,
            "tasks.notify",
            json!({"taskId": task["id"], "notifyPolicy": policy}),
        )
        .await;
        assert_eq!(
            (&changed["notifyPolicy"], &changed["status"]),
            (&json!(policy), &json!("queued"))
        );
        let ended = wait::until_async("the task to end", wait::DEADLINE, async || {
            let task = call(&g, "tasks.get", json!({"taskId": task["id"]})).await;
            (task["status"] == "succeeded" && task["deliveryStatus"] != "pending").then_some(task)
        })
        .await;
        assert_eq!(ended["deliveryStatus"], delivery, "{policy}");
        let messages = call(
            &g,
            "sessions.messages",
            json!({"sessionId": created["sessionId"]}),
        )
        .await;
        let posted: Vec<&str> = messages["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "system")
            .map(|m| m["text"].as_str().unwrap().split(':').next().unwrap())
            .collect();
        let expected: &[&str] = if notices == 0 {
            &[]
        } else {
            &["Background task started", "Background task done"]
        };
        assert_eq!(posted, expected, "{policy}: {messages}");
        // The notices follow the parent's own turn in its session.
        let roles: Vec<&str> = messages["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles.first(), Some(&"user"), "{roles:?}");
    }
}

#[tokio::test]
async fn a_task_whose_run_survives_a_restart_stays_live_and_ends_with_it() {
    let g = gateway(slow_spawning(std::time::Duration::from_secs(2)), json!({})).await;
    let created = call(&g, "runs.create", json!({"input": "start"})).await;
    let task = running_task(&g, &created["runId"]).await;
    let g = g
        .restarted(json!({"agents": {"defaults": {"subagents": {}}}}))
        .await;
    let ended = ended_task(&g, &task["id"]).await;
    assert_eq!(
        (&ended["status"], &ended["result"], &ended["deliveryStatus"]),
        (&json!("succeeded"), &json!(ANSWER), &json!("delivered")),
        "{ended}"
    );
}

/// A script whose first turn makes every call of `spawns` at once, then
/// waits for the children and says [`ANSWER`].
fn spawning_all(spawns: Vec<Value>) -> Script {
    let mut script = spawning(json!({}));
    script.turns[0].tool_calls = spawns
        .into_iter()
        .map(|arguments| talon_mock_model::ScriptedCall {
            name: "sessions_spawn".into(),
            arguments,
        })
        .collect();
    script
}

#[tokio::test]
async fn spawns_outside_the_agents_allowed_or_known_or_the_stores_bound_are_refused() {
    let g = TestGateway::start_opts(Options {
        script: spawning_all(vec![
            json!({"task": "a", "agentId": "helper"}),
            json!({"task": "b", "agentId": "nobody"}),
            json!({"task": "c", "agentId": "main"}),
            json!({"task": "", "label": "empty"}),
            json!({"task": "e", "agentId": "helper"}),
        ]),
        config: json!({"agents": {
            "defaults": {"subagents": {"allowAgents": ["helper", "nobody"], "maxConcurrent": 1}},
            "list": [{"id": "main"}, {"id": "helper"}],
        }}),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let (parent, result) = run(&g, "fan out").await;
    assert_eq!(result["status"], "completed", "{result}");
    let told = tool_messages(&g);
    let said = |needle: &str| told.iter().any(|t| t.contains(needle));
    assert!(said("\"status\":\"accepted\""), "{told:#?}");
    assert!(said("sessions_spawn: no agent \\\"nobody\\\""), "{told:#?}");
    assert!(
        said(
            "agent \\\"main\\\" is not in this agent's subagents.allowAgents (it may spawn \\\"helper\\\", \\\"nobody\\\")"
        ),
        "{told:#?}"
    );
    assert!(
        said("sessions_spawn: task must be 1 to 65536 bytes"),
        "{told:#?}"
    );
    assert!(said("(agents.*.subagents.maxConcurrent)"), "{told:#?}");
    let listed = call(&g, "tasks.list", json!({"runId": parent})).await;
    let tasks = listed["tasks"].as_array().unwrap();
    assert_eq!(
        tasks.iter().map(|t| &t["agentId"]).collect::<Vec<_>>(),
        [&json!("helper")],
        "{listed}"
    );
    // A token bound to another subject does not see the task.
    let (status, minted) = g
        .call(
            &g.admin,
            "tokens.create",
            json!({"name": "bob", "scopes": ["task.read"], "subject": "bob", "expiresInMs": 60_000}),
        )
        .await;
    assert_eq!(status, 200, "{minted}");
    let bob = minted["token"].as_str().unwrap();
    let (status, seen) = g
        .call(bob, "tasks.get", json!({"taskId": tasks[0]["id"]}))
        .await;
    assert_eq!(
        (status, &seen["error"]["code"]),
        (404, &json!("not_found")),
        "{seen}"
    );
    let (_, none) = g.call(bob, "tasks.list", json!({})).await;
    assert_eq!(none["tasks"], json!([]));
    let (status, _) = g
        .call(bob, "tasks.cancel", json!({"taskId": tasks[0]["id"]}))
        .await;
    assert_eq!(status, 403, "task.read does not cancel");
}

#[tokio::test]
async fn sub_agents_nest_to_the_depth_allowed_and_no_deeper() {
    let g = gateway(
        spawning(json!({"task": "go deeper", "label": "deeper"})),
        json!({"maxSpawnDepth": 2}),
    )
    .await;
    let (_, result) = run(&g, "recurse").await;
    assert_eq!(result["status"], "completed", "{result}");
    let all = wait::until_async("both tasks to end", wait::DEADLINE, async || {
        let listed = call(&g, "tasks.list", json!({})).await;
        let tasks = listed["tasks"].as_array().unwrap().clone();
        (tasks.len() == 2 && tasks.iter().all(|t| t["status"] == "succeeded")).then_some(tasks)
    })
    .await;
    let mut depths: Vec<u64> = all.iter().map(|t| t["depth"].as_u64().unwrap()).collect();
    depths.sort_unstable();
    assert_eq!(depths, [1, 2]);
    // The grandchild's task was started by the child's run.
    let child = all.iter().find(|t| t["depth"] == 1).unwrap();
    let grandchild = all.iter().find(|t| t["depth"] == 2).unwrap();
    assert_eq!(grandchild["runId"], child["childRunId"]);
}

#[tokio::test]
async fn a_child_past_its_time_limit_is_a_timed_out_task() {
    let g = gateway(
        slow_spawning(std::time::Duration::from_secs(3)),
        json!({"runTimeoutSeconds": 1}),
    )
    .await;
    let created = call(&g, "runs.create", json!({"input": "start"})).await;
    let task = running_task(&g, &created["runId"]).await;
    let ended = ended_task(&g, &task["id"]).await;
    assert_eq!(
        (&ended["status"], &ended["error"]["code"]),
        (&json!("timed_out"), &json!("timeout")),
        "{ended}"
    );
}

#[tokio::test]
async fn a_result_whose_session_was_deleted_stays_in_the_task_and_says_so() {
    let g = gateway(
        slow_spawning(std::time::Duration::from_secs(2)),
        json!({"onParentCancel": "keep"}),
    )
    .await;
    let created = call(&g, "runs.create", json!({"input": "start"})).await;
    let task = running_task(&g, &created["runId"]).await;
    call(&g, "runs.cancel", json!({"runId": created["runId"]})).await;
    call(
        &g,
        "sessions.delete",
        json!({"sessionId": created["sessionId"]}),
    )
    .await;
    let ended = ended_task(&g, &task["id"]).await;
    assert_eq!(
        (
            &ended["status"],
            &ended["result"],
            &ended["deliveryStatus"],
            &ended["deliveryError"]
        ),
        (
            &json!("succeeded"),
            &json!(ANSWER),
            &json!("parent_missing"),
            &json!("the session that started it was deleted")
        ),
        "{ended}"
    );
}

#[tokio::test]
async fn a_task_whose_run_never_came_is_lost_after_a_minute_saying_why() {
    let g = gateway(spawning(json!({"task": "x"})), json!({})).await;
    // What a spawn that died between its two writes leaves: a task with
    // no run.
    let created = call(
        &g,
        "sessions.create",
        json!({"agentId": "main", "key": "parent"}),
    )
    .await;
    let now = g.running.store.now_ms();
    let orphan = talon_protocol::gateway::Task {
        status: talon_protocol::gateway::TaskStatus::Queued,
        notify_policy: talon_protocol::gateway::NotifyPolicy::DoneOnly,
        label: Some("orphan".into()),
        session_id: Some(talon_protocol::gateway::bounded::SessionId::new(
            created["id"].as_str().unwrap(),
        )),
        delivery_status: talon_protocol::gateway::DeliveryStatus::Pending,
        ..talon_protocol::gateway::Task::queued(
            talon_protocol::gateway::bounded::TaskId::new("task_orphan"),
            talon_protocol::gateway::TaskKind::Subagent,
            now,
        )
    };
    g.running
        .store
        .create_task(&orphan, talon_store::TaskOwner::default())
        .await
        .unwrap();
    // A minute on, the follower gives up on it.
    g.time.advance(std::time::Duration::from_secs(61));
    let lost = ended_task(&g, &json!("task_orphan")).await;
    assert_eq!(
        (
            &lost["status"],
            &lost["error"]["code"],
            &lost["error"]["message"],
            &lost["deliveryStatus"]
        ),
        (
            &json!("lost"),
            &json!("unavailable"),
            &json!("the task's work is gone: its run was never created"),
            &json!("delivered")
        ),
        "{lost}"
    );
    let messages = call(&g, "sessions.messages", json!({"sessionId": created["id"]})).await;
    assert_eq!(
        messages["messages"][0]["text"],
        "Background task lost: orphan (task task_orphan): the task's work is gone: its run was never created"
    );
}
