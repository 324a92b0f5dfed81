//! Part `nodes`: two `talon gateway` processes on one PostgreSQL database
//! fire `every` schedules; one is SIGKILLed mid-way; every firing must
//! have been run exactly once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::harness::{Model, Node, list_all};
use super::schedules::{every_second, slot_of};
use crate::support::gateway::call;
use crate::support::measure::{loadavg, now_ms_f, percentile, sorted};

async fn start_node(root: &Path, name: &str, url: &str) -> Node {
    let config = json!({"cron": {"maxConcurrentRuns": 256}});
    Node::start(
        &root.join(name),
        config,
        Model::Script(r#"{"replay": "perRun", "record": false, "turns": [{"text": "fired"}]}"#),
        &[
            ("TALON_DATABASE_URL", url),
            ("TALON_LOG", "warn,talon_gateway::schedules=info"),
        ],
    )
    .await
}

async fn fired(client: &reqwest::Client, node: &Node, token: &str) -> (u64, u64) {
    let all = list_all(
        client,
        &node.addr,
        token,
        "schedules.list",
        json!({}),
        "schedules",
    )
    .await;
    all.iter().fold((0, 0), |(f, s), x| {
        (
            f + x["state"]["firings"].as_u64().unwrap_or(0),
            s + x["state"]["skipped"].as_u64().unwrap_or(0),
        )
    })
}

pub async fn nodes(schedules: usize, kill_at: u64, total: u64) {
    let pg = talon_testing::postgres::TestPostgres::shared().unwrap();
    let url = pg.fresh_database().unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut a = start_node(root.path(), "node-a", &url).await;
    let token = a.token.clone();
    let b = start_node(root.path(), "node-b", &url).await;
    let client = reqwest::Client::new();
    let load_start = loadavg();
    let mut made = Vec::new();
    for n in 0..schedules {
        let node = if n % 2 == 0 { &a } else { &b };
        let schedule = call(
            &client,
            &node.addr,
            &token,
            "schedules.create",
            every_second(n),
        )
        .await;
        made.push(schedule["id"].as_str().unwrap().to_owned());
    }
    let wait = |what: &'static str, at_least: u64| {
        let (client, b, token) = (&client, &b, &token);
        async move {
            let deadline = Instant::now() + Duration::from_secs(300);
            loop {
                let (f, s) = fired(client, b, token).await;
                if f >= at_least {
                    eprintln!("{what}: {f} firings, {s} skipped, load {}", loadavg());
                    return;
                }
                assert!(Instant::now() < deadline, "{what}: only {f} firings");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    wait("before the kill", kill_at).await;
    let killed_ms = now_ms_f() as u64;
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    let load_kill = loadavg();
    wait("on the survivor", total).await;
    for id in &made {
        call(
            &client,
            &b.addr,
            &token,
            "schedules.update",
            json!({"scheduleId": id, "enabled": false}),
        )
        .await;
    }
    let paused = Instant::now();
    // Every firing's task ends (a run the dead node held is taken back
    // once its lease lapsed).
    let tasks = loop {
        let tasks = list_all(
            &client,
            &b.addr,
            &token,
            "tasks.list",
            json!({"kind": "cron"}),
            "tasks",
        )
        .await;
        if tasks.iter().all(|t| t["endedAt"].is_u64()) {
            break tasks;
        }
        assert!(
            paused.elapsed() < Duration::from_secs(180),
            "{} tasks still live",
            tasks.iter().filter(|t| !t["endedAt"].is_u64()).count()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let settled = paused.elapsed().as_secs_f64();
    let listed = list_all(
        &client,
        &b.addr,
        &token,
        "schedules.list",
        json!({}),
        "schedules",
    )
    .await;
    let runs = list_all(&client, &b.addr, &token, "runs.list", json!({}), "runs").await;
    check(&tasks, &listed, &runs, killed_ms);
    let orphans = std::fs::read_to_string(b.dir.join("stderr"))
        .unwrap()
        .matches("starting a firing its node did not start")
        .count();
    let skipped: u64 = listed
        .iter()
        .map(|s| s["state"]["skipped"].as_u64().unwrap_or(0))
        .sum();
    // Lateness (`createdAt` − slot) of the slots due after the kill, and
    // the survivor's first firing after it.
    let after: Vec<&Value> = tasks
        .iter()
        .filter(|t| slot_of(t["id"].as_str().unwrap()).unwrap() >= killed_ms)
        .collect();
    let late = sorted(
        after
            .iter()
            .map(|t| {
                t["createdAt"].as_u64().unwrap() as f64
                    - slot_of(t["id"].as_str().unwrap()).unwrap() as f64
            })
            .collect(),
    );
    let first_after = tasks
        .iter()
        .filter_map(|t| t["createdAt"].as_u64().filter(|c| *c >= killed_ms))
        .min()
        .map_or(f64::NAN, |c| (c - killed_ms) as f64);
    let statuses: BTreeMap<String, usize> = tasks.iter().fold(BTreeMap::new(), |mut m, t| {
        *m.entry(t["status"].as_str().unwrap().to_owned())
            .or_default() += 1;
        m
    });
    println!(
        "| two `talon gateway` processes on PostgreSQL, {schedules} `every` 1 s schedules, node A SIGKILLed at {kill_at} firings | {} firings, {} runs, each slot once, one run each, none queued | task statuses {statuses:?} | {orphans} started by the orphan sweep | {skipped} slots skipped (last firing live) | survivor's first firing {first_after:.0} ms after the kill; slots due after it: `createdAt` − slot p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (n = {}) | all ended {settled:.1} s after the pause | load {load_start} / {load_kill} / {} |",
        tasks.len(),
        runs.len(),
        percentile(&late, 50.0),
        percentile(&late, 99.0),
        late.last().copied().unwrap_or(f64::NAN),
        late.len(),
        loadavg()
    );
    let mut b = b;
    b.child.start_kill().unwrap();
    b.child.wait().await.unwrap();
}

/// Every schedule's tasks number its `state.firings`, no slot fired
/// twice, every firing has exactly one run of its own, none is `queued`.
fn check(tasks: &[Value], schedules: &[Value], runs: &[Value], killed_ms: u64) {
    let mut per: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    for t in tasks {
        let slot = slot_of(t["id"].as_str().unwrap()).unwrap();
        assert!(
            per.entry(t["scheduleId"].as_str().unwrap())
                .or_default()
                .insert(slot),
            "a slot fired twice: {t}"
        );
        assert_ne!(t["status"], "queued", "{t}");
    }
    for s in schedules {
        let n = per.get(s["id"].as_str().unwrap()).map_or(0, BTreeSet::len);
        assert_eq!(n as u64, s["state"]["firings"].as_u64().unwrap(), "{s}");
    }
    let child_runs: BTreeSet<&str> = tasks
        .iter()
        .map(|t| t["childRunId"].as_str().expect("every firing has a run"))
        .collect();
    assert_eq!(child_runs.len(), tasks.len(), "one run per firing");
    let listed: BTreeSet<&str> = runs
        .iter()
        .map(|r| r["runId"].as_str().or(r["id"].as_str()).unwrap())
        .collect();
    assert_eq!(
        listed, child_runs,
        "runs.list holds exactly the firings' runs"
    );
    let before = tasks
        .iter()
        .filter(|t| t["createdAt"].as_u64().unwrap() < killed_ms)
        .count();
    eprintln!(
        "{before} firings before the kill, {} after",
        tasks.len() - before
    );
}
