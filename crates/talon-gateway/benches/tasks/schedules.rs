//! Part `fire`: how late a schedule fires, on SQLite and on PostgreSQL.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::harness::{self, Seen};
use crate::support::gateway::text_per_run;
use crate::support::measure::{loadavg, now_ms_f, percentile, sorted};

/// A clock firing's slot: its task id is `task_<scheduleId>_<slotMs>`.
pub fn slot_of(task_id: &str) -> Option<u64> {
    task_id.rsplit('_').next()?.parse().ok()
}

fn rfc3339(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// `schedules.create`'s params of the `n`th `every` 1 s schedule.
pub fn every_second(n: usize) -> Value {
    json!({
        "name": format!("every {n}"),
        "schedule": {"kind": "every", "everyMs": 1_000},
        "payload": {"kind": "agentTurn", "message": "tick"},
    })
}

/// `at` schedules `spacing` ms apart from 2 s on, and `every` schedules
/// of one second, for the `at`s' span; lateness of each firing is the
/// arrival of its first `task.updated` on a pre-opened `/v1/events`
/// stream less its slot (and, beside, its task's `createdAt` less it).
pub async fn lateness(store: &str, ats: usize, everys: usize, spacing: u64) {
    let url = match store {
        "PostgreSQL" => {
            let pg = talon_testing::postgres::TestPostgres::shared().unwrap();
            Some(pg.fresh_database().unwrap())
        }
        _ => None,
    };
    let config = json!({"cron": {"maxConcurrentRuns": 64}});
    let bench = harness::start(text_per_run("fired"), config, url).await;
    let mut stream = bench.events::<Seen>("/v1/events?types=task.updated").await;
    // The first `task.updated` of each cron task: when it arrived, and
    // its `createdAt`.
    let first = Arc::new(Mutex::new(BTreeMap::<String, (f64, u64)>::new()));
    let seen = first.clone();
    let reader = tokio::spawn(async move {
        while let Some(event) = stream.next().await {
            if event.data["kind"] != "cron" {
                continue;
            }
            let id = event.task_id.unwrap();
            let created = event.data["createdAt"].as_u64().unwrap();
            seen.lock()
                .unwrap()
                .entry(id)
                .or_insert((event.arrived_ms, created));
        }
    });
    let start = now_ms_f() as u64 + 2_000;
    let mut at_ids = Vec::new();
    for n in 0..ats as u64 {
        let made = bench
            .call(
                "schedules.create",
                json!({
                    "name": format!("at {n}"),
                    "schedule": {"kind": "at", "at": rfc3339(start + n * spacing)},
                    "payload": {"kind": "agentTurn", "message": "tick"},
                }),
            )
            .await;
        at_ids.push(made["id"].as_str().unwrap().to_owned());
    }
    let mut every_ids = Vec::new();
    for n in 0..everys {
        let made = bench.call("schedules.create", every_second(n)).await;
        every_ids.push(made["id"].as_str().unwrap().to_owned());
    }
    let end = start + ats as u64 * spacing + 1_500;
    tokio::time::sleep(Duration::from_millis(end.saturating_sub(now_ms_f() as u64))).await;
    for id in &every_ids {
        bench
            .call(
                "schedules.update",
                json!({"scheduleId": id, "enabled": false}),
            )
            .await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    reader.abort();
    let first = first.lock().unwrap().clone();
    let report = |what: &str, ids: &[String]| {
        let (mut arrived, mut created) = (Vec::new(), Vec::new());
        for (task, (at, created_at)) in &first {
            if !ids.iter().any(|id| task.contains(id.as_str())) {
                continue;
            }
            let slot = slot_of(task).unwrap();
            arrived.push(at - slot as f64);
            created.push(created_at.saturating_sub(slot) as f64);
        }
        let (a, c) = (sorted(arrived), sorted(created));
        println!(
            "| {store}: {what} | {} firings | `task.updated` arrival − slot: p50 {:.1} ms, max {:.1} ms | `createdAt` − slot: p50 {:.0} ms, max {:.0} ms | load {} |",
            a.len(),
            percentile(&a, 50.0),
            a.last().copied().unwrap_or(f64::NAN),
            percentile(&c, 50.0),
            c.last().copied().unwrap_or(f64::NAN),
            loadavg()
        );
        a.len()
    };
    let fired = report(&format!("{ats} `at` schedules {spacing} ms apart"), &at_ids);
    assert_eq!(fired, ats, "every `at` schedule fired once");
    report(&format!("{everys} `every` 1 s schedules"), &every_ids);
    bench.running.shutdown().await;
}
