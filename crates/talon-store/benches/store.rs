//! Store speed on SQLite and PostgreSQL (a real server the harness starts,
//! with `fsync` and `synchronous_commit` on): durable event appends, alone
//! and from many concurrent appenders (the group commit; an agent
//! streaming `assistant.delta` per token produces such bursts), replaying
//! 100,000 events from a cursor (typed, and as the JSON the transports
//! send), and opening an existing database (migrations checked).
//! Results in `docs/benchmarks.md`.
//!
//! Also: finding the remembered decision (`approve_session`,
//! `approve_always`) that covers a call among 10,000 resolved approvals,
//! by the `approval_rules` key against reading every approved approval.
//!
//! `cargo bench -p talon-store --bench store [-- sqlite|postgres] [remembered]`
//! (`remembered` runs only that part).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::{AgentId, ApprovalId, RunId, SessionId, SessionKey};

use serde_json::json;
use talon_protocol::{Event, EventType};
use talon_store::{EventFilter, Store, StoreConfig};
use talon_testing::postgres::{PgOptions, TestPostgres};

const TOTAL: u64 = 100_000;

fn delta(n: u64) -> Event {
    Event {
        subject: None,
        version: 1,
        id: Default::default(),
        ts: n,
        kind: EventType::AssistantDelta,
        run_id: Some(RunId::new(format!("run_{}", n / 1000))),
        session_id: Some(SessionId::new("sess_1")),
        session_key: Some(SessionKey::new("agent:main:bench")),
        task_id: None,
        agent_id: Some(AgentId::new("main")),
        request_id: None,
        data: json!({"text": " token"}),
        raw: None,
    }
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

async fn sequential(store: &Store) {
    for batch in [1u64, 16, 64, 256] {
        let events = if batch == 1 { 2_000 } else { TOTAL };
        let mut commits = Vec::new();
        let started = Instant::now();
        let mut n = 0;
        while n < events {
            let chunk: Vec<Event> = (n..n + batch).map(delta).collect();
            let t = Instant::now();
            store.append(chunk).await.unwrap();
            commits.push(t.elapsed());
            n += batch;
        }
        let elapsed = started.elapsed();
        commits.sort();
        println!(
            "  one appender, batches of {batch:>3}: {:>8.0} events/s; commit p50 {:?}, p99 {:?} ({events} events)",
            events as f64 / elapsed.as_secs_f64(),
            pct(&commits, 50),
            pct(&commits, 99),
        );
    }
}

/// `appenders` tasks append single events (one per token) as fast as they
/// can: the group-commit writer folds what arrives during a commit into
/// the next one. Latency is from the call to its durable return.
async fn concurrent(store: &Store, appenders: u64, per_appender: u64) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for a in 0..appenders {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(per_appender as usize);
            for n in 0..per_appender {
                let t = Instant::now();
                store.append(vec![delta(a * 1000 + n)]).await.unwrap();
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let elapsed = started.elapsed();
    all.sort();
    println!(
        "  {appenders:>3} appenders, one event per append: {:>8.0} events/s; durable after p50 {:?}, p99 {:?}, max {:?}",
        all.len() as f64 / elapsed.as_secs_f64(),
        pct(&all, 50),
        pct(&all, 99),
        all.last().unwrap()
    );
}

/// Agents streaming at a fixed total rate, open loop: every 10 ms each of
/// `agents` queues a burst of single-event appends (one per token) without
/// waiting for the previous ones to be durable; latency is from queueing an
/// event to its commit. The target: 20,000 events/s, each durable within
/// 10 ms.
async fn streaming(store: &Store, agents: u64, rate: u64, seconds: u64) {
    let per_tick = (rate / 100 / agents).max(1);
    let ticks = seconds * 100;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for a in 0..agents {
        let store = store.clone();
        // The agent queues; one waiter per agent takes its acks in order
        // (they complete in order).
        let (acks, mut inbox) =
            tokio::sync::mpsc::unbounded_channel::<(Instant, talon_store::Pending)>();
        let waiter = tokio::spawn(async move {
            let mut latencies = Vec::new();
            while let Some((queued, pending)) = inbox.recv().await {
                pending.durable().await.unwrap();
                latencies.push(queued.elapsed());
            }
            latencies
        });
        tasks.push(tokio::spawn(async move {
            let mut interval = tokio::time::interval(Duration::from_millis(10));
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            for tick in 0..ticks {
                interval.tick().await;
                for k in 0..per_tick {
                    let queued = Instant::now();
                    let pending = store
                        .submit(vec![delta(a * 1_000_000 + tick * 100 + k)])
                        .await
                        .unwrap();
                    acks.send((queued, pending)).unwrap();
                }
            }
            drop(acks);
            waiter.await.unwrap()
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let elapsed = started.elapsed();
    all.sort();
    let late = all
        .iter()
        .filter(|l| **l > Duration::from_millis(10))
        .count();
    println!(
        "  {agents:>3} agents streaming at {rate} events/s for {seconds} s: {:>8.0} events/s durable; queued to durable p50 {:?}, p99 {:?}, max {:?}; over 10 ms: {:.2} %",
        all.len() as f64 / elapsed.as_secs_f64(),
        pct(&all, 50),
        pct(&all, 99),
        all.last().unwrap(),
        100.0 * late as f64 / all.len() as f64
    );
}

async fn replay(store: &Store, json: bool) {
    let last = store.last_event_id().await.unwrap();
    let from = last - TOTAL;
    let mut replays = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut cursor = Some(from);
        let mut count = 0;
        loop {
            let end = if json {
                let page = store
                    .after_json(cursor, &EventFilter::default(), 10_000)
                    .await
                    .unwrap();
                count += page.len();
                page.last().map(|e| e.id)
            } else {
                let page = store
                    .after(cursor, &EventFilter::default(), 10_000)
                    .await
                    .unwrap();
                count += page.len();
                page.last().map(|e| e.id.as_str().parse().unwrap())
            };
            let Some(end) = end else { break };
            cursor = Some(end);
        }
        assert_eq!(count as u64, TOTAL);
        replays.push(t.elapsed());
    }
    replays.sort();
    println!(
        "  replay of {TOTAL} events from a cursor, {}: median {:?} (min {:?})",
        if json { "as envelope JSON" } else { "typed" },
        replays[2],
        replays[0]
    );
}

async fn opens(config: &StoreConfig) {
    let mut opens = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        let s = talon_store::open(config).await.unwrap();
        opens.push(t.elapsed());
        s.close().await;
    }
    opens.sort();
    println!(
        "  open of an existing database (migrations checked): median {:?}, p90 {:?}",
        opens[10], opens[18]
    );
}

async fn remembered(store: &Store) {
    use talon_protocol::gateway::{
        Approval, ApprovalDecision, ApprovalKind, ApprovalStatus, RiskLevel,
    };
    const APPROVALS: u64 = 10_000;
    let decisions = [
        ApprovalDecision::ApproveOnce,
        ApprovalDecision::ApproveSession,
        ApprovalDecision::Deny,
        ApprovalDecision::ApproveOnce,
    ];
    for n in 0..APPROVALS {
        let approval = Approval {
            id: ApprovalId::new(format!("appr_{n:06}")),
            run_id: RunId::new(format!("run_{}", n / 4)),
            session_id: Some(SessionId::new(format!("sess_{}", n % 1000))),
            kind: ApprovalKind::Tool,
            summary: "a call".into(),
            tool_name: Some(format!("tool_{}", n % 50)),
            tool_id: Some(format!("plugin:bench:tool_{}", n % 50)),
            tool_call_id: None,
            arguments: None,
            environment_action: None,
            risk: RiskLevel::Medium,
            decisions: decisions.to_vec(),
            expires_at: None,
            reusable: true,
            status: ApprovalStatus::Pending,
            decision: None,
            reason: None,
            created_at: n,
            resolved_at: None,
        };
        store.create_approval(&approval).await.unwrap();
        let decision = decisions[(n % 4) as usize];
        store
            .resolve_approval(approval.id.as_str(), |a| {
                a.status = if decision == ApprovalDecision::Deny {
                    ApprovalStatus::Denied
                } else {
                    ApprovalStatus::Approved
                };
                a.decision = Some(decision);
                a.resolved_at = Some(n + 1);
            })
            .await
            .unwrap();
    }
    let lookups = 200u64;
    let mut keyed = Vec::new();
    let mut scanned = Vec::new();
    for i in 0..lookups {
        let tool = format!("plugin:bench:tool_{}", i % 50);
        let session = SessionId::new(format!("sess_{}", (i * 7) % 1000));
        let started = Instant::now();
        let found = store
            .remembered_approval(&tool, Some(&session), None)
            .await
            .unwrap();
        keyed.push(started.elapsed());
        // The old way: every approved approval, filtered in memory.
        let started = Instant::now();
        let approved = store
            .approvals(&talon_store::PendingFilter {
                status: Some("approved".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        let old = approved.iter().rev().find(|a| {
            a.tool_key() == Some(tool.as_str())
                && match a.decision {
                    Some(ApprovalDecision::ApproveAlways) => true,
                    Some(ApprovalDecision::ApproveSession) => {
                        a.session_id.as_ref().map(SessionId::as_str) == Some(session.as_str())
                    }
                    _ => false,
                }
        });
        scanned.push(started.elapsed());
        assert_eq!(found.map(|a| a.id), old.map(|a| a.id.clone()));
    }
    let p50 = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1000.0
    };
    println!(
        "  remembered decision among {APPROVALS} resolved approvals: by key p50 {:.3} ms, \
         reading every approved one p50 {:.3} ms ({lookups} lookups, same answers)",
        p50(&mut keyed),
        p50(&mut scanned)
    );
}

async fn bench(name: &str, config: StoreConfig) {
    println!("{name}:");
    let store = talon_store::open(&config).await.unwrap();
    if std::env::args().any(|a| a == "remembered") {
        remembered(&store).await;
        store.close().await;
        return;
    }
    sequential(&store).await;
    for appenders in [8, 64] {
        concurrent(&store, appenders, 40_000 / appenders).await;
    }
    for (agents, rate) in [(8, 20_000), (32, 20_000), (8, 40_000)] {
        streaming(&store, agents, rate, 5).await;
    }
    replay(&store, false).await;
    replay(&store, true).await;
    remembered(&store).await;
    store.close().await;
    opens(&config).await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let only = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-') && a != "remembered");
    let wants = |name: &str| only.as_deref().is_none_or(|o| o == name);
    if wants("sqlite") {
        let dir = tempfile::tempdir().unwrap();
        bench(
            "sqlite (WAL, synchronous=FULL)",
            StoreConfig::embedded(dir.path()),
        )
        .await;
    }
    if wants("postgres") {
        let pg = Arc::new(
            TestPostgres::start(PgOptions {
                durable: true,
                ..PgOptions::default()
            })
            .expect("PostgreSQL (scripts/setup.sh installs it)"),
        );
        let url = pg.fresh_database().unwrap();
        let dir = tempfile::tempdir().unwrap();
        bench(
            "postgres (fsync, synchronous_commit on; loopback TCP)",
            StoreConfig::at(url, dir.path()),
        )
        .await;
    }
}
