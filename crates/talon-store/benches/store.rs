//! Store speed (SQLite): durable event appends in batches (what an agent
//! streaming `assistant.delta` produces), replaying 100,000 events from a
//! cursor, and opening an existing database (migrations checked).
//! Results in `docs/benchmarks.md`.
//!
//! `cargo bench -p talon-store --bench store`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary"
)]

use std::time::{Duration, Instant};

use serde_json::json;
use talon_protocol::{Event, EventType};
use talon_store::{EventFilter, StoreConfig};

fn delta(n: u64) -> Event {
    Event {
        version: 1,
        id: String::new(),
        ts: n,
        kind: EventType::AssistantDelta,
        run_id: Some(format!("run_{}", n / 1000)),
        session_id: Some("sess_1".into()),
        session_key: Some("agent:main:bench".into()),
        task_id: None,
        agent_id: Some("main".into()),
        data: json!({"text": " token"}),
        raw: None,
    }
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig::embedded(dir.path());
    let store = talon_store::open(&config).await.unwrap();
    const TOTAL: u64 = 100_000;
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
            "append, batches of {batch:>3}: {:>8.0} events/s; commit p50 {:?}, p99 {:?}, max {:?} ({events} events)",
            events as f64 / elapsed.as_secs_f64(),
            pct(&commits, 50),
            pct(&commits, 99),
            commits.last().unwrap()
        );
    }
    let last = store.last_event_id().await.unwrap();
    let from = last - TOTAL;
    let mut replays = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut cursor = Some(from);
        let mut count = 0;
        loop {
            let page = store
                .after(cursor, &EventFilter::default(), 10_000)
                .await
                .unwrap();
            let Some(end) = page.last() else { break };
            cursor = Some(end.id.parse().unwrap());
            count += page.len();
        }
        assert_eq!(count as u64, TOTAL);
        replays.push(t.elapsed());
    }
    replays.sort();
    println!(
        "replay of {TOTAL} events from a cursor: median {:?} (min {:?})",
        replays[2], replays[0]
    );
    store.close().await;
    let mut opens = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        let s = talon_store::open(&config).await.unwrap();
        opens.push(t.elapsed());
        s.close().await;
    }
    opens.sort();
    println!(
        "open of an existing database (migrations checked): median {:?}, p90 {:?}",
        opens[10], opens[18]
    );
}
