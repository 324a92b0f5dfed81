//! Background processes across restarts and nodes: a process dies with
//! its node and its task becomes `lost`, never stays `running` (the
//! node's own restart, a lease that passed); a node kills its process
//! whose task or session ended on another node.

use std::time::Duration;

use serde_json::{Value, json};
use talon_testing::wait;

use super::processes::{all_gone, background, call, gateway, marker, run, settled, tasks_of};

#[tokio::test]
async fn a_process_whose_gateway_restarted_is_lost_never_running() {
    let m = marker();
    let g = gateway(vec![background(&format!("sleep {m}"))], json!({})).await;
    let result = run(&g).await;
    let task = tasks_of(&g, &result["runId"]).await[0].clone();
    assert_eq!(task["status"], "running");
    let g = g
        .restarted(json!({"tools": {"approvals": "allow", "exec": {}}}))
        .await;
    // The process died with its node.
    all_gone(&format!("sleep {m}")).await;
    // Past the lease, whichever way the old node went, the task is lost.
    g.time.advance(Duration::from_secs(16));
    let ended = settled(&g, &task["id"]).await;
    assert_eq!(ended["status"], "lost", "{ended}");
    let why = ended["error"]["message"].as_str().unwrap();
    assert!(
        why.starts_with("the task's work is gone: its gateway"),
        "{ended}"
    );
}

/// A running process task in `session`, as a node that ran it leaves it.
fn process_task(id: &str, session: &Value, now: u64) -> talon_protocol::gateway::Task {
    talon_protocol::gateway::Task {
        status: talon_protocol::gateway::TaskStatus::Running,
        notify_policy: talon_protocol::gateway::NotifyPolicy::DoneOnly,
        label: Some("exec make".into()),
        session_id: Some(talon_protocol::gateway::bounded::SessionId::new(
            session["id"].as_str().unwrap(),
        )),
        command: Some("make".into()),
        delivery_status: talon_protocol::gateway::DeliveryStatus::Pending,
        started_at: Some(now),
        ..talon_protocol::gateway::Task::queued(
            talon_protocol::gateway::bounded::TaskId::new(id),
            talon_protocol::gateway::TaskKind::Process,
            now,
        )
    }
}

#[tokio::test]
async fn a_process_task_of_a_node_whose_lease_passed_is_lost_saying_why() {
    let g = gateway(Vec::new(), json!({})).await;
    let session = call(
        &g,
        "sessions.create",
        json!({"agentId": "main", "key": "k"}),
    )
    .await;
    // What another node leaves when it dies mid-process: a running task
    // it held, its lease about to pass.
    let now = g.running.store.now_ms();
    let orphan = process_task("task_far", &session, now);
    let store = &g.running.store;
    store
        .create_task(&orphan, talon_store::TaskOwner::default())
        .await
        .unwrap();
    store
        .hold_task(&orphan.id, "node_far", now + 10_000)
        .await
        .unwrap();
    // Within its lease it stays running.
    let task = call(&g, "tasks.get", json!({"taskId": "task_far"})).await;
    assert_eq!(task["status"], "running");
    g.time.advance(Duration::from_secs(11));
    let lost = settled(&g, &json!("task_far")).await;
    assert_eq!(
        (
            &lost["status"],
            &lost["error"]["message"],
            &lost["deliveryStatus"]
        ),
        (
            &json!("lost"),
            &json!(
                "the task's work is gone: its gateway stopped answering (a background process dies with its node)"
            ),
            &json!("delivered")
        ),
        "{lost}"
    );
}

#[tokio::test]
async fn a_node_that_restarts_marks_the_process_tasks_it_held_lost_at_once() {
    let g = gateway(Vec::new(), json!({})).await;
    let session = call(
        &g,
        "sessions.create",
        json!({"agentId": "main", "key": "k"}),
    )
    .await;
    let now = g.running.store.now_ms();
    let mine = process_task("task_mine", &session, now);
    g.running
        .store
        .create_task(&mine, talon_store::TaskOwner::default())
        .await
        .unwrap();
    // Held by node_fixed, its lease far off: only its own restart tells.
    g.running
        .store
        .hold_task(&mine.id, "node_fixed", now + 3_600_000)
        .await
        .unwrap();
    let mut config = g.same_state();
    config.node = Some("node_fixed".into());
    g.running.shutdown().await;
    let again = talon_gateway::start(config).await.unwrap();
    let lost = wait::until_async("the task to be lost", wait::DEADLINE, async || {
        let task = again
            .store
            .task(&mine.id, &talon_store::Owner::default())
            .await
            .unwrap()
            .unwrap();
        (task.status == talon_protocol::gateway::TaskStatus::Lost).then_some(task)
    })
    .await;
    assert_eq!(
        lost.error.map(|e| e.message),
        Some(
            "the task's work is gone: its gateway restarted or stopped answering \
             (a background process dies with its node)"
                .to_owned()
        )
    );
    again.shutdown().await;
}

#[tokio::test]
async fn a_process_whose_task_or_session_ended_on_another_node_is_killed_by_its_own() {
    let (m1, m2) = (marker(), marker());
    let g = gateway(
        vec![
            background(&format!("sleep {m1}")),
            background(&format!("sleep {m2}")),
        ],
        json!({}),
    )
    .await;
    let first = run(&g).await;
    let task = tasks_of(&g, &first["runId"])
        .await
        .into_iter()
        .find(|t| t["command"] == json!(format!("sleep {m1}")))
        .unwrap();
    // Another node's `tasks.cancel` ends the task in the store only.
    let store = &g.running.store;
    let read = store
        .task(
            &talon_protocol::gateway::bounded::TaskId::new(task["id"].as_str().unwrap()),
            &talon_store::Owner::default(),
        )
        .await
        .unwrap()
        .unwrap();
    let cancelled = talon_protocol::gateway::Task {
        status: talon_protocol::gateway::TaskStatus::Cancelled,
        updated_at: read.updated_at + 1,
        ..read.clone()
    };
    assert!(
        store
            .update_task(&cancelled, read.updated_at)
            .await
            .unwrap()
    );
    all_gone(&format!("sleep {m1}")).await;
    // Another node's `sessions.delete` removes the session in the store
    // only: this node's next sweep kills what the session still ran.
    store
        .delete_session(first["sessionId"].as_str().unwrap())
        .await
        .unwrap();
    all_gone(&format!("sleep {m2}")).await;
}
