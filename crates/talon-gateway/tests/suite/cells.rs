//! Suspended Code Mode cells end with their run: a run whose cell is
//! waiting deletes it when it completes, fails, is cancelled or times out,
//! and a later `wait` for it answers "unknown runId"; a cell whose run
//! still runs is purged by the timer once its TTL has passed.

use std::time::Duration;
use talon_protocol::gateway::bounded::RunId;

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, ScriptedCall, Turn};
use talon_testing::wait;

use super::{Options, TestGateway};

/// The model's first turn: a cell that suspends at once.
fn suspending_exec() -> Turn {
    Turn {
        tool_calls: vec![ScriptedCall {
            name: "exec".into(),
            arguments: json!({"code": "await yield_control('later'); return 1;"}),
        }],
        ..Turn::default()
    }
}

/// A gateway whose first run suspends a cell, then takes `then` (a reply
/// after a delay, or an error); the run after it calls `wait` for that
/// cell (its id from the session's last tool result) and answers. Cells
/// live `ttl` seconds.
async fn gateway(then: Turn, ttl: u64) -> TestGateway {
    let wait_for_it = Turn {
        tool_calls: vec![ScriptedCall {
            name: "wait".into(),
            arguments: json!({"runId": "$lastTool:/runId"}),
        }],
        ..Turn::default()
    };
    TestGateway::start_opts(Options {
        script: Script {
            turns: vec![suspending_exec(), then, wait_for_it, reply("gone", 0)],
            replay: Replay::Sequential,
            ..Script::default()
        },
        config: json!({"tools": {"codeMode": {"enabled": true, "snapshotTtlSeconds": ttl}}}),
        ..Options::default()
    })
    .await
}

fn reply(text: &str, delay_ms: u64) -> Turn {
    Turn {
        text: Some(text.into()),
        delay: Duration::from_millis(delay_ms),
        ..Turn::default()
    }
}

/// Starts a run and waits until its cell is stored and its `exec` result
/// committed: the run's id and the cell's (from that result).
async fn run_with_a_cell(g: &TestGateway, params: Value) -> (String, String) {
    let (status, run) = g.call(&g.admin, "runs.create", params).await;
    assert_eq!(status, 200, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    let cell = std::sync::Mutex::new(None);
    wait::until_async("the run's waiting cell", wait::DEADLINE, async || {
        let (_, page) = g
            .call(&g.admin, "runs.events", json!({"runId": run_id}))
            .await;
        let waiting = page["events"].as_array().and_then(|events| {
            events
                .iter()
                .find(|e| e["type"] == "tool.call.completed")
                .and_then(|e| e["data"]["result"]["runId"].as_str().map(str::to_owned))
        });
        let stored = g
            .running
            .store
            .run_cells(&RunId::new(run_id.as_str()))
            .await
            .unwrap()
            == 1;
        let found = waiting.is_some() && stored;
        *cell.lock().unwrap() = waiting;
        found
    })
    .await;
    let cell = cell.into_inner().unwrap().unwrap();
    (run_id, cell)
}

/// The run's end: its status, once `runs.wait` says it ended.
async fn ended(g: &TestGateway, run_id: &str) -> String {
    let (status, result) = g
        .call(
            &g.admin,
            "runs.wait",
            json!({"runId": run_id, "timeoutMs": 20_000}),
        )
        .await;
    assert_eq!(status, 200, "{result}");
    result["status"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_cells_are_deleted_however_it_ends() {
    // Completed, failed (the model refuses its second request), cancelled
    // and timed out.
    // The second reply comes after 3 s, so that the cell is seen stored
    // before the run ends.
    let error = Turn {
        status: Some(400),
        error_type: Some("invalid_request_error".into()),
        delay: Duration::from_secs(3),
        ..Turn::default()
    };
    let cases = [
        ("completed", reply("done", 3_000), json!({"input": "go"})),
        ("failed", error, json!({"input": "go"})),
        ("cancelled", reply("late", 10_000), json!({"input": "go"})),
        (
            "timed_out",
            reply("late", 10_000),
            json!({"input": "go", "timeoutMs": 5_000}),
        ),
    ];
    for (end, then, params) in cases {
        let g = gateway(then, 900).await;
        let (run_id, cell) = run_with_a_cell(&g, params).await;
        if end == "cancelled" {
            let (status, body) = g
                .call(&g.admin, "runs.cancel", json!({"runId": run_id}))
                .await;
            assert_eq!(status, 200, "{body}");
        }
        assert_eq!(ended(&g, &run_id).await, end);
        assert_eq!(
            g.running
                .store
                .run_cells(&RunId::new(run_id.as_str()))
                .await
                .unwrap(),
            0,
            "{end}"
        );
        // The next run of the session asks for it: unknown.
        let run = g
            .running
            .store
            .run(&talon_protocol::gateway::bounded::RunId::new(&run_id))
            .await
            .unwrap()
            .unwrap();
        let (status, later) = g
            .call(
                &g.admin,
                "runs.create",
                json!({"sessionId": run.session_id, "input": "wait for it"}),
            )
            .await;
        assert_eq!(status, 200, "{later}");
        let later = later["id"].as_str().unwrap().to_owned();
        assert_eq!(ended(&g, &later).await, "completed");
        let (_, page) = g
            .call(&g.admin, "runs.events", json!({"runId": later}))
            .await;
        let events = page["events"].as_array().unwrap();
        let of = |kind: &str| {
            events
                .iter()
                .find(|e| e["type"] == kind)
                .map(|e| e["data"].clone())
                .unwrap_or_else(|| panic!("no {kind} in {page}"))
        };
        let (asked, answer) = (of("tool.call.started"), of("tool.call.failed"));
        assert_eq!(
            (
                &asked["name"],
                &asked["arguments"]["runId"],
                &answer["error"]["code"]
            ),
            (&json!("wait"), &json!(cell), &json!("invalid_input")),
            "{end}"
        );
        assert!(
            answer["error"]["error"]
                .as_str()
                .unwrap()
                .starts_with("unknown runId"),
            "{answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_cell_is_purged_while_its_run_still_runs() {
    // Cells live a second; the run's next reply comes after five.
    let g = gateway(reply("late", 5_000), 1).await;
    let (run_id, _) = run_with_a_cell(&g, json!({"input": "go"})).await;
    let store = g.running.store.clone();
    wait::until_async(
        "the expired cell to be purged",
        wait::DEADLINE,
        async || store.run_cells(&RunId::new(run_id.as_str())).await.unwrap() == 0,
    )
    .await;
    let run = g
        .running
        .store
        .run(&talon_protocol::gateway::bounded::RunId::new(&run_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, talon_protocol::gateway::RunStatus::Running);
    assert_eq!(ended(&g, &run_id).await, "completed");
}
