//! Schedules through the gateway: each firing a `cron` task whose run
//! completes; pause, resume, run now and delete; catch-up after a node was
//! down (run once or skip, never every missed tick); refusals; and, on two
//! nodes over one PostgreSQL database, every slot fired exactly once.

use std::time::Duration;

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};
use talon_testing::wait;

use super::{Options, TestGateway};

const DONE: &str = "Nightly report written.";

fn script() -> Script {
    Script {
        turns: vec![Turn {
            text: Some(DONE.into()),
            ..Turn::default()
        }],
        replay: Replay::PerRun,
        ..Script::default()
    }
}

async fn gateway() -> TestGateway {
    TestGateway::start_opts(Options {
        script: script(),
        ..Options::default()
    })
    .await
}

async fn ok(g: &TestGateway, method: &str, params: Value) -> Value {
    let (status, body) = g.call(&g.admin, method, params).await;
    assert_eq!(status, 200, "{method}: {body}");
    body
}

/// The error a refused call answers, with its HTTP status.
async fn refused(g: &TestGateway, token: &str, method: &str, params: Value) -> (u16, Value) {
    let (status, body) = g.call(token, method, params).await;
    assert_ne!(status, 200, "{method} was not refused: {body}");
    (status, body["error"].clone())
}

fn every(ms: u64, name: &str) -> Value {
    json!({
        "name": name,
        "schedule": {"kind": "every", "everyMs": ms},
        "payload": {"kind": "agentTurn", "message": "write the report"},
    })
}

/// The schedule's ended firings, once there are at least `n`.
async fn ended_firings(g: &TestGateway, schedule: &Value, n: usize) -> Vec<Value> {
    wait::until_async(
        "the schedule's firings to end",
        wait::DEADLINE,
        async || {
            let listed = ok(g, "tasks.list", json!({"kind": "cron", "limit": 100})).await;
            let mine: Vec<Value> = listed["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["scheduleId"] == schedule["id"] && t["endedAt"].is_u64())
                .cloned()
                .collect();
            (mine.len() >= n).then_some(mine)
        },
    )
    .await
}

#[tokio::test]
async fn each_firing_is_a_cron_task_whose_run_completes_in_a_session_of_its_own() {
    let g = gateway().await;
    let made = ok(&g, "schedules.create", every(1_000, "report")).await;
    assert_eq!(
        (
            &made["agentId"],
            &made["enabled"],
            &made["catchUp"],
            &made["deleteAfterRun"],
            &made["state"]["firings"],
            made["schedule"]["anchorMs"].is_u64(),
            made["state"]["nextRunAt"].is_u64(),
        ),
        (
            &json!("main"),
            &json!(true),
            &json!("run_once"),
            &json!(false),
            &json!(0),
            true,
            true
        )
    );
    let firings = ended_firings(&g, &made, 2).await;
    for task in &firings {
        let key = task["childSessionKey"].as_str().unwrap();
        assert_eq!(
            (
                &task["kind"],
                &task["status"],
                &task["notifyPolicy"],
                &task["deliveryStatus"],
                &task["label"],
                &task["description"],
                &task["result"],
                key.starts_with(&format!("cron:{}:task_", made["id"].as_str().unwrap())),
            ),
            (
                &json!("cron"),
                &json!("succeeded"),
                &json!("silent"),
                &json!("not_applicable"),
                &json!("report"),
                &json!("write the report"),
                &json!(DONE),
                true
            ),
            "{task}"
        );
        let result = ok(
            &g,
            "runs.wait",
            json!({"runId": task["childRunId"], "timeoutMs": 1_000}),
        )
        .await;
        assert_eq!(
            (&result["status"], &result["taskId"]),
            (&json!("completed"), &task["id"]),
            "{result}"
        );
    }
    assert_ne!(firings[0]["childSessionKey"], firings[1]["childSessionKey"]);
    let now = ok(&g, "schedules.get", json!({"scheduleId": made["id"]})).await;
    assert!(now["state"]["firings"].as_u64().unwrap() >= 2, "{now}");
    assert!(now["state"]["lastTaskId"].is_string(), "{now}");
}

#[tokio::test]
async fn paused_schedules_do_not_fire_run_now_fires_anyway_and_delete_keeps_the_tasks() {
    let g = gateway().await;
    let made = ok(&g, "schedules.create", every(3_600_000, "hourly")).await;
    let paused = ok(
        &g,
        "schedules.update",
        json!({"scheduleId": made["id"], "enabled": false, "name": "hourly, paused"}),
    )
    .await;
    assert_eq!(
        (
            &paused["enabled"],
            &paused["name"],
            &paused["state"].get("nextRunAt")
        ),
        (&json!(false), &json!("hourly, paused"), &None)
    );
    let fired = ok(
        &g,
        "schedules.run",
        json!({"scheduleId": made["id"], "idempotencyKey": "k1"}),
    )
    .await;
    assert_eq!(
        (&fired["kind"], &fired["scheduleId"]),
        (&json!("cron"), &made["id"])
    );
    let again = ok(
        &g,
        "schedules.run",
        json!({"scheduleId": made["id"], "idempotencyKey": "k1"}),
    )
    .await;
    assert_eq!(
        again["id"], fired["id"],
        "a retried run answers the first firing"
    );
    let firings = ended_firings(&g, &made, 1).await;
    assert_eq!(firings.len(), 1);
    assert_eq!(firings[0]["status"], "succeeded");
    // Resumed: from now, the next slot an hour on.
    let before = g.running.store.now_ms();
    let resumed = ok(
        &g,
        "schedules.update",
        json!({"scheduleId": made["id"], "enabled": true}),
    )
    .await;
    let next = resumed["state"]["nextRunAt"].as_u64().unwrap();
    assert!(
        next >= before && next <= before + 3_600_000 + 1_000,
        "{resumed}"
    );
    let deleted = ok(&g, "schedules.delete", json!({"scheduleId": made["id"]})).await;
    assert_eq!(deleted["id"], made["id"]);
    let (status, error) = refused(
        &g,
        &g.admin,
        "schedules.get",
        json!({"scheduleId": made["id"]}),
    )
    .await;
    assert_eq!((status, &error["code"]), (404, &json!("not_found")));
    let task = ok(&g, "tasks.get", json!({"taskId": fired["id"]})).await;
    assert_eq!(task["status"], "succeeded");
}

#[tokio::test]
async fn an_at_schedule_fires_once_and_deletes_itself() {
    let g = gateway().await;
    let at = g.running.store.now_ms() + 500;
    let when = chrono::DateTime::from_timestamp_millis(at as i64)
        .unwrap()
        .to_rfc3339();
    let made = ok(
        &g,
        "schedules.create",
        json!({
            "name": "once",
            "schedule": {"kind": "at", "at": when},
            "payload": {"kind": "agentTurn", "message": "remind me"},
        }),
    )
    .await;
    assert_eq!(
        (&made["deleteAfterRun"], &made["state"]["nextRunAt"]),
        (&json!(true), &json!(at))
    );
    let firings = ended_firings(&g, &made, 1).await;
    assert_eq!(firings[0]["status"], "succeeded");
    wait::until_async("the spent schedule to go", wait::DEADLINE, async || {
        let (status, _) = g
            .call(&g.admin, "schedules.get", json!({"scheduleId": made["id"]}))
            .await;
        (status == 404).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_node_that_was_down_catches_up_once_or_skips_never_every_missed_tick() {
    let g = gateway().await;
    let nightly = |name: &str, catch_up: &str| {
        json!({
            "name": name,
            "schedule": {"kind": "cron", "expr": "0 3 * * *", "tz": "Europe/Berlin"},
            "payload": {"kind": "agentTurn", "message": "nightly"},
            "catchUp": catch_up,
        })
    };
    let once = ok(&g, "schedules.create", nightly("once", "run_once")).await;
    let skip = ok(&g, "schedules.create", nightly("skip", "skip")).await;
    // The slot is 03:00 in Berlin.
    let next = once["state"]["nextRunAt"].as_u64().unwrap();
    let local = chrono::DateTime::from_timestamp_millis(next as i64)
        .unwrap()
        .with_timezone(&chrono_tz::Europe::Berlin);
    assert_eq!(local.format("%H:%M:%S").to_string(), "03:00:00");
    // Down for three days: three nightly slots pass.
    let g = {
        let time = g.time.clone();
        let stopped = g;
        time.advance(Duration::from_secs(3 * 24 * 3_600 + 600));
        stopped.restarted(json!({})).await
    };
    let firings = ended_firings(&g, &once, 1).await;
    assert_eq!(firings.len(), 1, "one catch-up run, not three: {firings:?}");
    let (once, skip) = wait::until_async("the skip to be counted", wait::DEADLINE, async || {
        let once = ok(&g, "schedules.get", json!({"scheduleId": once["id"]})).await;
        let skip = ok(&g, "schedules.get", json!({"scheduleId": skip["id"]})).await;
        (skip["state"]["skipped"] == 1).then_some((once, skip))
    })
    .await;
    let now = g.running.store.now_ms();
    assert_eq!(
        (
            &once["state"]["firings"],
            &once["state"]["skipped"],
            &skip["state"]["firings"]
        ),
        (&json!(1), &json!(0), &json!(0))
    );
    for schedule in [&once, &skip] {
        let next = schedule["state"]["nextRunAt"].as_u64().unwrap();
        assert!(next > now && next <= now + 24 * 3_600_000, "{schedule}");
    }
    let listed = ok(&g, "tasks.list", json!({"kind": "cron"})).await;
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1, "{listed}");
}

#[tokio::test]
async fn bad_schedules_are_refused_saying_what_is_wrong() {
    let g = gateway().await;
    let payload = json!({"kind": "agentTurn", "message": "x"});
    let cases = [
        (
            json!({"kind": "cron", "expr": "61 * * * *"}),
            "schedule: expr \"61 * * * *\" is not a cron expression",
        ),
        (
            json!({"kind": "cron", "expr": "0 3 * * *", "tz": "Mars/Olympus"}),
            "schedule: tz \"Mars/Olympus\" is not an IANA time zone (such as Europe/Berlin)",
        ),
        (
            json!({"kind": "every", "everyMs": 10}),
            "schedule: everyMs must be from 1000 (a second) to 31622400000 (a year), not 10",
        ),
        (
            json!({"kind": "at", "at": "soon"}),
            "schedule: at \"soon\" is not a time: give RFC 3339, such as 2026-12-24T18:00:00+01:00",
        ),
    ];
    for (schedule, message) in cases {
        let (status, error) = refused(
            &g,
            &g.admin,
            "schedules.create",
            json!({"name": "bad", "schedule": schedule, "payload": payload}),
        )
        .await;
        assert_eq!(
            (status, &error["code"], &error["details"]["field"]),
            (400, &json!("invalid_request"), &json!("schedule")),
            "{error}"
        );
        assert!(
            error["message"].as_str().unwrap().starts_with(message),
            "{error}"
        );
    }
    let (_, error) = refused(
        &g,
        &g.admin,
        "schedules.create",
        json!({"name": "x", "schedule": {"kind": "every", "everyMs": 1000}, "payload": payload, "deleteAfterRun": true}),
    )
    .await;
    assert_eq!(error["details"]["field"], "deleteAfterRun", "{error}");
    let (status, error) = refused(
        &g,
        &g.admin,
        "schedules.create",
        json!({"name": "x", "agentId": "ghost", "schedule": {"kind": "every", "everyMs": 1000}, "payload": payload}),
    )
    .await;
    assert_eq!(
        (status, &error["code"]),
        (404, &json!("not_found")),
        "{error}"
    );
    let (status, error) = refused(
        &g,
        &g.admin,
        "schedules.create",
        json!({"name": "x", "schedule": {"kind": "every", "everyMs": 1000}, "payload": {"kind": "systemEvent", "text": "hi"}}),
    )
    .await;
    assert_eq!(
        (status, &error["code"]),
        (400, &json!("invalid_request")),
        "{error}"
    );
}

#[tokio::test]
async fn making_a_schedule_needs_agent_run_and_a_bound_token_sees_only_its_subjects() {
    let g = gateway().await;
    let mint = |name: &'static str, scopes: Value, subject: &'static str| {
        let g = &g;
        async move {
            let (status, minted) = g
                .call(
                    &g.admin,
                    "tokens.create",
                    json!({"name": name, "scopes": scopes, "subject": subject, "expiresInMs": 600_000}),
                )
                .await;
            assert_eq!(status, 200, "{minted}");
            minted["token"].as_str().unwrap().to_owned()
        }
    };
    let planner = mint("planner", json!(["schedule.write", "schedule.read"]), "ann").await;
    let (status, error) = refused(&g, &planner, "schedules.create", every(60_000, "x")).await;
    assert_eq!(
        (status, &error["code"]),
        (403, &json!("forbidden")),
        "{error}"
    );
    let ann = mint(
        "ann",
        json!(["schedule.write", "schedule.read", "agent.run", "task.read"]),
        "ann",
    )
    .await;
    let bob = mint("bob", json!(["schedule.read", "task.read"]), "bob").await;
    let (status, made) = g
        .call(&ann, "schedules.create", every(60_000, "ann's"))
        .await;
    assert_eq!(status, 200, "{made}");
    assert_eq!(made["subject"], "ann");
    let (_, listed) = g.call(&bob, "schedules.list", json!({})).await;
    assert_eq!(listed["schedules"], json!([]));
    let (status, _) = g
        .call(&bob, "schedules.get", json!({"scheduleId": made["id"]}))
        .await;
    assert_eq!(status, 404);
    let (_, listed) = g.call(&planner, "schedules.list", json!({})).await;
    assert_eq!(listed["schedules"][0]["id"], made["id"]);
}

#[tokio::test]
async fn a_schedule_whose_last_firing_is_live_skips_its_slot_and_run_now_is_a_conflict() {
    let g = TestGateway::start_opts(Options {
        script: Script {
            turns: vec![Turn {
                text: Some("slow".into()),
                delay: Duration::from_secs(20),
                ..Turn::default()
            }],
            replay: Replay::PerRun,
            ..Script::default()
        },
        ..Options::default()
    })
    .await;
    let made = ok(&g, "schedules.create", every(1_000, "every second")).await;
    let skipped = wait::until_async("a slot to be skipped", wait::DEADLINE, async || {
        let now = ok(&g, "schedules.get", json!({"scheduleId": made["id"]})).await;
        (now["state"]["skipped"].as_u64().unwrap() >= 1).then_some(now)
    })
    .await;
    let live = skipped["state"]["lastTaskId"].as_str().unwrap().to_owned();
    let (status, error) = refused(
        &g,
        &g.admin,
        "schedules.run",
        json!({"scheduleId": made["id"]}),
    )
    .await;
    assert_eq!(
        (status, &error["code"]),
        (409, &json!("conflict")),
        "{error}"
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "is still running its last firing (task \"{live}\")"
        )),
        "{error}"
    );
    ok(&g, "schedules.delete", json!({"scheduleId": made["id"]})).await;
}
