//! Parts `spawn` and `concurrent`: a sub-agent's start, and 100 at once.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_mock_model::{MockModel, Replay, Script, ScriptedCall, Turn};

use super::harness::{self, Model, Node, Seen, list_all};
use crate::support::gateway::{SETTLE, call};
use crate::support::measure::{loadavg, now_ms_f, percentile, sorted};

fn spawn_call(n: usize) -> ScriptedCall {
    ScriptedCall {
        name: "sessions_spawn".into(),
        arguments: json!({"task": format!("part {n}"), "label": format!("part-{n}")}),
    }
}

/// Every run replays it: the parent spawns `children` in its first turn
/// and answers `delay` later; a child (depth 1, offered no spawning tool)
/// gets unknown-tool errors for the first turn and answers `delay` later.
fn spawning(children: usize, delay: Duration) -> Script {
    Script {
        turns: vec![
            Turn {
                tool_calls: (0..children).map(spawn_call).collect(),
                ..Turn::default()
            },
            Turn {
                text: Some("done".into()),
                delay,
                ..Turn::default()
            },
        ],
        replay: Replay::PerRun,
        forget_requests: true,
        ..Script::default()
    }
}

/// spawn → child `run.started`: on a pre-opened `/v1/events` stream, from
/// the arrival of the task's first `task.updated` (queued) to the arrival
/// of its child run's `run.started` (which carries `taskId`).
pub async fn spawn_to_started(iterations: usize) {
    let bench = harness::start(
        spawning(1, Duration::ZERO),
        json!({"agents": {"defaults": {"subagents": {}}}}),
        None,
    )
    .await;
    let mut stream = bench
        .events::<Seen>("/v1/events?types=task.updated,run.started")
        .await;
    let mut samples = Vec::new();
    let warm = 20;
    for n in 0..iterations + warm {
        let parent = bench
            .call(
                "runs.create",
                json!({"input": "go", "sessionKey": format!("p{n}")}),
            )
            .await;
        let (mut queued, mut task) = (None::<Instant>, None::<String>);
        let child = loop {
            let event = tokio::time::timeout(Duration::from_secs(30), stream.next())
                .await
                .expect("the task's updates and its child's start within 30 s")
                .unwrap();
            match event.kind.as_str() {
                "task.updated" if task.is_none() && event.data["runId"] == parent["runId"] => {
                    assert_eq!(event.data["status"], "queued", "{}", event.data);
                    queued = Some(event.arrived);
                    task = event.task_id.clone();
                }
                "run.started" if task.is_some() && event.task_id == task => {
                    let ms = (event.arrived - queued.unwrap()).as_secs_f64() * 1e3;
                    if n >= warm {
                        samples.push(ms);
                    }
                    break event.run_id.unwrap();
                }
                _ => {}
            }
        };
        for run in [parent["runId"].clone(), json!(child)] {
            bench.wait_completed(&run, 30_000).await;
        }
    }
    let s = sorted(samples);
    println!(
        "| spawn → child `run.started` (first `task.updated` to the child's `run.started` on one SSE stream) | p50 {:.2} ms | p95 {:.2} ms | p99 {:.2} ms | max {:.2} ms | n = {} | load {} |",
        percentile(&s, 50.0),
        percentile(&s, 95.0),
        percentile(&s, 99.0),
        s.last().copied().unwrap_or(f64::NAN),
        s.len(),
        loadavg()
    );
    bench.running.shutdown().await;
}

/// A gateway process and a client of it.
struct Target {
    node: Node,
    client: reqwest::Client,
}

impl Target {
    async fn call(&self, method: &str, params: Value) -> Value {
        call(
            &self.client,
            &self.node.addr,
            &self.node.token,
            method,
            params,
        )
        .await
    }

    async fn list(&self, params: Value) -> Vec<Value> {
        list_all(
            &self.client,
            &self.node.addr,
            &self.node.token,
            "tasks.list",
            params,
            "tasks",
        )
        .await
    }
}

/// Starts `parents` parent runs of `per_parent` children each at once and
/// waits for every child task to end; the largest count of running
/// sub-agent tasks seen, the gateway's largest RSS and the tasks.
async fn round(target: &Target, parents: usize, per_parent: usize) -> (usize, f64, Vec<Value>) {
    let mut made = Vec::new();
    for n in 0..parents {
        made.push(
            target
                .call(
                    "runs.create",
                    json!({"input": "fan out", "sessionKey": format!("fan{n}-{}", now_ms_f())}),
                )
                .await,
        );
    }
    let (mut peak, mut peak_rss) = (0, target.node.rss_mib());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let running = target
            .list(json!({"kind": "subagent", "status": ["running"]}))
            .await;
        peak = peak.max(running.len());
        peak_rss = peak_rss.max(target.node.rss_mib());
        let mut tasks = Vec::new();
        for parent in &made {
            tasks.extend(target.list(json!({"runId": parent["runId"]})).await);
        }
        if tasks.len() == parents * per_parent && tasks.iter().all(|t| t["endedAt"].is_u64()) {
            return (peak, peak_rss, tasks);
        }
        assert!(Instant::now() < deadline, "the sub-agents did not end");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// 100 sub-agents live at once (5 parent runs spawning 20 each in one
/// turn, every child answering 5 s after its first turn) on a `talon
/// gateway` process whose model is a mock in this process: the gateway
/// process's RSS at idle after a warm-up round, its peak during, and
/// settled after.
pub async fn concurrent(parents: usize) {
    let per_parent = 20;
    let mock = MockModel::start(spawning(per_parent, Duration::from_secs(5)))
        .await
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let config = json!({
        "agents": {"defaults": {"subagents": {
            "maxConcurrent": 200, "maxChildrenPerAgent": per_parent
        }}},
        "gateway": {
            "limits": {"callsPerSecond": 1e6, "burst": 1_000_000},
            "runs": {"maxConcurrent": 256},
        },
    });
    let base_url = mock.base_url();
    let node = Node::start(
        root.path(),
        config,
        Model::At(&base_url),
        &[("TALON_LOG", "warn")],
    )
    .await;
    let target = Target {
        node,
        client: reqwest::Client::new(),
    };
    // Warm-up: one parent's 20, then idle.
    let (_, _, warm) = round(&target, 1, per_parent).await;
    assert!(warm.iter().all(|t| t["status"] == "succeeded"), "{warm:?}");
    tokio::time::sleep(SETTLE).await;
    let idle = target.node.rss_mib();
    let load_before = loadavg();
    let started = Instant::now();
    let (peak, peak_rss, tasks) = round(&target, parents, per_parent).await;
    let took = started.elapsed().as_secs_f64();
    let ended_rss = target.node.rss_mib();
    tokio::time::sleep(SETTLE).await;
    let after = target.node.rss_mib();
    let succeeded = tasks.iter().filter(|t| t["status"] == "succeeded").count();
    println!(
        "| {} concurrent sub-agents ({parents} parents × {per_parent}, each child live ≥ 5 s) | peak running {peak} | {succeeded} of {} succeeded in {took:.1} s | gateway process RSS idle {idle:.1} MiB, peak {peak_rss:.1} MiB (**{:+.1} MiB**), at the end {ended_rss:.1}, settled {after:.1} MiB ({:+.1}) | load {load_before} → {} |",
        parents * per_parent,
        tasks.len(),
        peak_rss - idle,
        after - idle,
        loadavg()
    );
}
