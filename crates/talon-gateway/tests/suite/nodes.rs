//! Two gateway nodes on one PostgreSQL database: a run created on one is
//! waited on, streamed and cancelled through the other; each run is
//! executed by exactly one node; the runs of a node whose lease lapsed are
//! ended by another.

use std::sync::Arc;
use std::time::Duration;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey};

use serde_json::{Value, json};
use talon_gateway::{GatewayConfig, Running};
use talon_mock_model::{MockModel, Replay, Script, Turn};
use talon_protocol::gateway::{Run, RunStatus};
use talon_store::StoreConfig;
use talon_testing::postgres::TestPostgres;
use talon_testing::redact::{Redactor, redacted, transcript};
use talon_testing::wait;

use super::artifacts::sized;
use super::{config_in, host};

/// `events` with their ids left out: the store numbers the events of all
/// runs in one sequence, and the recoveries below run concurrently.
fn unnumbered(mut events: Value) -> Value {
    let list = match events.as_array_mut() {
        Some(list) => list,
        None => std::slice::from_mut(&mut events),
    };
    for event in list {
        event["id"] = json!("<event id>");
    }
    events
}

struct Node {
    running: Running,
    _dir: tempfile::TempDir,
}

async fn node(url: &str, name: &str, mock: &MockModel) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        store: StoreConfig::at(url, dir.path()),
        node: Some(name.into()),
        ..GatewayConfig::local(dir.path(), 0, host(config_in(dir.path(), json!({})), mock))
    };
    Node {
        running: talon_gateway::start(config).await.unwrap(),
        _dir: dir,
    }
}

async fn call(
    client: &reqwest::Client,
    node: &Node,
    token: &str,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let response = client
        .post(format!("http://{}/v1/{method}", node.running.addr))
        .bearer_auth(token)
        .json(&params)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// `runs.wait` on `node` for a run's end (20 s at most).
async fn wait_run(client: &reqwest::Client, node: &Node, token: &str, run_id: &str) -> Value {
    let (_, result) = call(
        client,
        node,
        token,
        "runs.wait",
        json!({"runId": run_id, "timeoutMs": 20_000}),
    )
    .await;
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_share_one_database() {
    let pg = TestPostgres::shared().unwrap();
    let url = pg.fresh_database().unwrap();
    let slow = |text: &str, ms: u64| Turn {
        text: Some(text.into()),
        delay: Duration::from_millis(ms),
        ..Turn::default()
    };
    let mock = Arc::new(
        MockModel::start(Script {
            turns: vec![slow("from a node", 1_500)],
            replay: Replay::PerRun,
            ..Script::default()
        })
        .await
        .unwrap(),
    );
    let a = node(&url, "node-a", &mock).await;
    let b = node(&url, "node-b", &mock).await;
    // One admin token, minted by the first node, good on both.
    let admin = a.running.admin_token.clone().unwrap();
    assert_eq!(b.running.admin_token, None);
    let client = reqwest::Client::new();
    // Created on A, waited on through B.
    let (status, run) = call(&client, &a, &admin, "runs.create", json!({"input": "hi"})).await;
    assert_eq!(status, 200, "{run}");
    let (_, result) = call(
        &client,
        &b,
        &admin,
        "runs.wait",
        json!({"runId": run["id"], "timeoutMs": 20_000}),
    )
    .await;
    insta::assert_json_snapshot!("waited_through_b", sized(redacted(&result)));
    // Streamed through B to its terminal event.
    let body = tokio::time::timeout(
        Duration::from_secs(20),
        client
            .get(format!(
                "http://{}/v1/runs/{}/events",
                b.running.addr,
                run["id"].as_str().unwrap()
            ))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap()
            .text(),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(body.contains("event: run.completed"), "{body}");
    // Many runs at once on both nodes: each executed exactly once.
    let before = mock.requests().len();
    let mut ids = Vec::new();
    for n in 0..12 {
        let target = if n % 2 == 0 { &a } else { &b };
        let (_, run) = call(
            &client,
            target,
            &admin,
            "runs.create",
            json!({"input": format!("n{n}"), "sessionKey": format!("s{n}")}),
        )
        .await;
        ids.push(run["id"].as_str().unwrap().to_owned());
    }
    let mut results = Vec::new();
    for id in &ids {
        let (_, result) = call(
            &client,
            &a,
            &admin,
            "runs.wait",
            json!({"runId": id, "timeoutMs": 30_000}),
        )
        .await;
        results.push(result);
        let (_, page) = call(&client, &b, &admin, "runs.events", json!({"runId": id})).await;
        let started = page["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "run.started")
            .count();
        assert_eq!(started, 1, "{page}");
    }
    // One redaction across the runs: each result names its own run.
    insta::assert_json_snapshot!("many", sized(redacted(&Value::from(results))));
    assert_eq!(mock.requests().len() - before, ids.len());
    let mut nodes = std::collections::BTreeSet::new();
    for id in &ids {
        nodes.insert(sqlx_owner(&a, id).await);
    }
    assert!(
        nodes.iter().all(|n| n == "node-a" || n == "node-b"),
        "{nodes:?}"
    );
    // Cancelled through the node that does not execute it.
    let (_, long) = call(
        &client,
        &a,
        &admin,
        "runs.create",
        json!({"input": "long", "sessionKey": "long", "timeoutMs": 60_000}),
    )
    .await;
    let long_id = long["id"].as_str().unwrap().to_owned();
    wait::until_async("the long run to be running", wait::DEADLINE, async || {
        let (_, run) = call(&client, &a, &admin, "runs.get", json!({"runId": long_id})).await;
        if run["status"] == "running" {
            Ok(())
        } else {
            Err(run["status"].clone())
        }
    })
    .await;
    let row = sqlx_owner(&a, &long_id).await;
    let other = if row == "node-a" { &b } else { &a };
    let (status, cancelled) = call(
        &client,
        other,
        &admin,
        "runs.cancel",
        json!({"runId": long_id}),
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    let (_, result) = call(
        &client,
        &a,
        &admin,
        "runs.wait",
        json!({"runId": long_id, "timeoutMs": 20_000}),
    )
    .await;
    insta::assert_json_snapshot!("cancelled_through_other", sized(redacted(&result)));
    // Nodes that died: their runs' leases lapse and a live node takes them
    // back. One had no tool call in flight: it is resumed (from its input,
    // as it had not completed a turn) by exactly one live node. The other
    // had a call in flight: it is ended.
    let store = &a.running.store;
    let ghost = |id: &str| Run {
        summary: None,
        model: None,
        subject: None,
        id: RunId::new(id),
        agent_id: AgentId::new("main"),
        session_id: Some(SessionId::new(format!("sess_{id}"))),
        session_key: Some(SessionKey::new(id)),
        status: RunStatus::Queued,
        created_at: 1,
        started_at: None,
        ended_at: None,
        usage: None,
        error: None,
    };
    // Created running on the dead node, with no lease yet, so that no
    // live node claims or recovers one before the test has set it up.
    for id in [
        "run_ghost",
        "run_ghost_calling",
        "run_ghost_reading",
        "run_ghost_cancelled",
    ] {
        let running = Run {
            status: RunStatus::Running,
            started_at: Some(2),
            ..ghost(id)
        };
        store
            .create_run(
                &running,
                None,
                "",
                "node-dead",
                Some(&talon_store::RunRequest::of_input(
                    talon_protocol::gateway::RunInput::Text("x".into()),
                )),
            )
            .await
            .unwrap();
    }
    let in_flight = talon_protocol::Event {
        subject: None,
        version: 1,
        id: Default::default(),
        ts: 1,
        kind: talon_protocol::EventType::ToolCallStarted,
        run_id: Some(RunId::new("run_ghost_calling")),
        session_id: Some(SessionId::new("sess_run_ghost_calling")),
        session_key: Some(SessionKey::new("run_ghost_calling")),
        task_id: None,
        agent_id: Some(AgentId::new("main")),
        request_id: None,
        data: json!({"callId": "c1", "name": "write"}),
        raw: None,
    };
    // A read-only call in flight may be made again: that run is resumed.
    let reading = talon_protocol::Event {
        run_id: Some(RunId::new("run_ghost_reading")),
        session_id: Some(SessionId::new("sess_run_ghost_reading")),
        session_key: Some(SessionKey::new("run_ghost_reading")),
        data: json!({"callId": "c1", "name": "read", "replaySafe": true}),
        ..in_flight.clone()
    };
    store.append(vec![in_flight, reading]).await.unwrap();
    // Cancelled while its node was dying: ended, never resumed.
    assert!(
        store
            .request_cancel(
                &RunId::new("run_ghost_cancelled"),
                talon_store::CancelMode::Cancel
            )
            .await
            .unwrap()
    );
    // The dead node's last lease renewal, already over.
    let now = store.now_ms();
    assert_eq!(store.renew_leases("node-dead", now + 1).await.unwrap(), 4);
    let result = wait_run(&client, &b, &admin, "run_ghost").await;
    insta::assert_json_snapshot!("ghost", sized(redacted(&result)));
    let (_, page) = call(
        &client,
        &a,
        &admin,
        "runs.events",
        json!({"runId": "run_ghost"}),
    )
    .await;
    // Resumed from its input: its `run.started` says after which turn.
    insta::assert_json_snapshot!(
        "ghost_events",
        unnumbered(transcript(page["events"].as_array().unwrap()))
    );
    let result = wait_run(&client, &b, &admin, "run_ghost_calling").await;
    // Which live node took it back is a race.
    let either = Redactor::new()
        .with("node-a", "<node>")
        .with("node-b", "<node>")
        .value(&result);
    insta::assert_json_snapshot!("ghost_calling", either);
    let (_, page) = call(
        &client,
        &a,
        &admin,
        "runs.events",
        json!({"runId": "run_ghost_calling"}),
    )
    .await;
    insta::assert_json_snapshot!(
        "ghost_calling_last_event",
        unnumbered(redacted(page["events"].as_array().unwrap().last().unwrap()))
    );
    let result = wait_run(&client, &a, &admin, "run_ghost_reading").await;
    insta::assert_json_snapshot!("ghost_reading", sized(redacted(&result)));
    let result = wait_run(&client, &a, &admin, "run_ghost_cancelled").await;
    insta::assert_json_snapshot!("ghost_cancelled", sized(redacted(&result)));
    a.running.shutdown().await;
    b.running.shutdown().await;
}

/// The node a run is executed by.
async fn sqlx_owner(node: &Node, run_id: &str) -> String {
    node.running
        .store
        .run_node(run_id)
        .await
        .unwrap()
        .unwrap_or_default()
}

/// Two nodes fire one schedule every second: each slot is claimed by one
/// node, each firing has one run, and when one node stops the other goes
/// on firing without a gap or a repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_fire_each_slot_of_a_schedule_exactly_once() {
    let pg = TestPostgres::shared().unwrap();
    let url = pg.fresh_database().unwrap();
    let mock = MockModel::start(Script {
        turns: vec![Turn {
            text: Some("fired".into()),
            ..Turn::default()
        }],
        replay: Replay::PerRun,
        ..Script::default()
    })
    .await
    .unwrap();
    let a = node(&url, "node-a", &mock).await;
    let b = node(&url, "node-b", &mock).await;
    let admin = a.running.admin_token.clone().unwrap();
    let client = reqwest::Client::new();
    let (status, made) = call(
        &client,
        &a,
        &admin,
        "schedules.create",
        json!({
            "name": "every second",
            "schedule": {"kind": "every", "everyMs": 1_000},
            "payload": {"kind": "agentTurn", "message": "tick"},
        }),
    )
    .await;
    assert_eq!(status, 200, "{made}");
    let firings = async |node: &Node, at_least: u64| {
        wait::until_async("the schedule to fire", wait::DEADLINE, async || {
            let (_, now) = call(
                &client,
                node,
                &admin,
                "schedules.get",
                json!({"scheduleId": made["id"]}),
            )
            .await;
            (now["state"]["firings"].as_u64().unwrap_or(0) >= at_least).then_some(())
        })
        .await;
    };
    firings(&b, 3).await;
    a.running.shutdown().await;
    firings(&b, 6).await;
    let (_, paused) = call(
        &client,
        &b,
        &admin,
        "schedules.update",
        json!({"scheduleId": made["id"], "enabled": false}),
    )
    .await;
    // A firing node A claimed but did not start is started by B's orphan
    // sweep (3 s later): wait until every firing has its run.
    let listed = talon_testing::wait::until_async(
        "every firing to have its run",
        Duration::from_secs(30),
        async || {
            let (_, listed) = call(
                &client,
                &b,
                &admin,
                "tasks.list",
                json!({"kind": "cron", "limit": 100}),
            )
            .await;
            listed["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["childRunId"].is_string())
                .then_some(listed)
        },
    )
    .await;
    let tasks = listed["tasks"].as_array().unwrap();
    assert_eq!(
        tasks.len() as u64,
        paused["state"]["firings"].as_u64().unwrap(),
        "{listed}"
    );
    // Every firing has its own run, and no two share a slot (a second apart).
    let mut runs: Vec<&str> = tasks
        .iter()
        .map(|t| t["childRunId"].as_str().unwrap())
        .collect();
    runs.sort_unstable();
    runs.dedup();
    assert_eq!(runs.len(), tasks.len(), "{listed}");
    // A clock firing's id names its slot: no slot fired twice.
    let mut slots: Vec<&str> = tasks
        .iter()
        .map(|t| t["id"].as_str().unwrap().rsplit('_').next().unwrap())
        .collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), tasks.len(), "{listed}");
    let (_, page) = call(&client, &b, &admin, "runs.list", json!({"limit": 100})).await;
    assert_eq!(
        page["runs"].as_array().unwrap().len(),
        tasks.len(),
        "one run per firing: {page}"
    );
}
