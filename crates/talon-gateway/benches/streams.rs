//! What unread streams cost (issue 45): one read-only token opens many
//! `/v1/events?after=0` streams over a log of large events and never reads
//! them, while another token creates runs and follows them.
//!
//! Reported: the gateway's resident memory idle, while the streams are
//! held (its peak), and after they close; and the other token's
//! `runs.create` → `run.started` latency (p50/p99) with and without the
//! flood. In-process, so the memory includes the bench's own sockets (a
//! few KiB each); the kernel's socket buffers are not in it.
//!
//! `cargo bench -p talon-gateway --bench streams` (`-- quick` for a smoke
//! run). `TALON_BENCH_STREAMS` (default 1,000), `TALON_BENCH_EVENTS`
//! (2,000) and `TALON_BENCH_EVENT_BYTES` (50,000) change the flood;
//! `TALON_BENCH_HOLD_MS` (8,000) how long it is held.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    missing_docs,
    reason = "a benchmark binary fails loudly and prints its table"
)]

#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey};

use serde_json::{Value, json};
use talon_gateway::tokens;
use talon_mock_model::{Replay, Script};
use talon_protocol::gateway::Scope;
use talon_protocol::{Event, EventType};
use talon_testing::stats;
use talon_testing::unread::unread_stream;

use talon_testing::stats::rss_mib;

use support::env;
use support::gateway::Gateway;
use support::measure::percentile;

/// What the kernel's TCP sockets hold, machine-wide (`/proc/net/sockstat`,
/// in pages): the gateway's send buffers and the bench's receive buffers.
fn tcp_mib() -> f64 {
    std::fs::read_to_string("/proc/net/sockstat")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("TCP: "))
                .and_then(|l| l.split_whitespace().skip_while(|w| *w != "mem").nth(1))
                .and_then(|n| n.parse::<f64>().ok())
        })
        .map_or(0.0, |pages| pages * 4096.0 / 1048576.0)
}

/// Anonymous resident memory (the heap and stacks, not mapped files).
fn anon_mib() -> f64 {
    stats::status_kib("RssAnon") as f64 / 1024.0
}

/// The gateway: every run gets its answer (the script replays per run),
/// and the mock keeps no requests (what it would record is not the
/// gateway's memory); room for `streams` streams, of one token too.
async fn start(streams: usize) -> Gateway {
    let script = Script {
        replay: Replay::PerRun,
        forget_requests: true,
        ..Script::texts(&["ok"])
    };
    Gateway::start(script, json!({}), reqwest::Client::new(), |config, _| {
        config.limits.max_streams = streams + 64;
        // Raised, so that the byte budget is what is measured.
        config.limits.max_streams_per_token = streams + 1;
    })
    .await
}

/// `n` events of `size` bytes of text each, on one run.
async fn fill(b: &Gateway, n: u64, size: usize) {
    let text = "x".repeat(size);
    let mut events = Vec::new();
    for i in 0..n {
        events.push(Event {
            subject: None,
            version: 1,
            id: Default::default(),
            ts: 1_000 + i,
            kind: EventType::AssistantDelta,
            run_id: Some(RunId::new("run_flood")),
            session_id: Some(SessionId::new("s1")),
            session_key: Some(SessionKey::new("key-flood")),
            task_id: None,
            agent_id: Some(AgentId::new("main")),
            request_id: None,
            data: json!({"text": text, "i": i}),
            raw: None,
        });
        if events.len() == 50 {
            b.running
                .store
                .append(std::mem::take(&mut events))
                .await
                .unwrap();
        }
    }
    if !events.is_empty() {
        b.running.store.append(events).await.unwrap();
    }
}

/// `n` runs by the admin, each from `runs.create` to its `run.started`
/// on a stream opened before: the latencies, in ms, sorted.
async fn creates(b: &Gateway, n: usize) -> Vec<f64> {
    let mut took = Vec::with_capacity(n);
    let mut events = b
        .client
        .get(b.url("/v1/events?types=run.started"))
        .bearer_auth(&b.token)
        .send()
        .await
        .unwrap();
    let mut buffer = String::new();
    for _ in 0..n {
        let started = Instant::now();
        let run: Value = b
            .client
            .post(b.url("/v1/runs.create"))
            .bearer_auth(&b.token)
            .json(&json!({"input": "hi"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = run["id"].as_str().unwrap().to_owned();
        while !buffer.contains(&id) {
            let chunk = events.chunk().await.unwrap().unwrap();
            buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        took.push(started.elapsed().as_secs_f64() * 1e3);
        buffer.clear();
    }
    took.sort_by(f64::total_cmp);
    took
}

/// The SSE streams the gateway has open, from `/metrics`.
async fn sse_open(b: &Gateway) -> u64 {
    let text = b
        .client
        .get(b.url("/metrics"))
        .bearer_auth(&b.token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("talon_sse_connections "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Reads the whole log once, as the admin.
async fn warm(b: &Gateway, events: u64) {
    let mut stream = b
        .client
        .get(b.url("/v1/events?after=0"))
        .bearer_auth(&b.token)
        .send()
        .await
        .unwrap();
    let last = format!("id: {events}\n");
    let mut tail = String::new();
    while let Some(chunk) = stream.chunk().await.unwrap() {
        tail.push_str(&String::from_utf8_lossy(&chunk));
        if tail.contains(&last) {
            break;
        }
        let keep = tail.len().saturating_sub(64);
        tail = tail.split_off(tail.floor_char_boundary(keep));
    }
}

fn row(what: &str, took: &[f64]) {
    println!(
        "| {what} | p50 {:.2} ms | p99 {:.2} ms | n {} |",
        percentile(took, 50.0),
        percentile(took, 99.0),
        took.len()
    );
}

fn main() {
    let quick = support::Args::parse(&[]).quick;
    let streams = env("TALON_BENCH_STREAMS", if quick { 100 } else { 1_000 }) as usize;
    let events = env("TALON_BENCH_EVENTS", if quick { 200 } else { 2_000 });
    let size = env("TALON_BENCH_EVENT_BYTES", 50_000) as usize;
    let hold = Duration::from_millis(env(
        "TALON_BENCH_HOLD_MS",
        if quick { 2_000 } else { 8_000 },
    ));
    let samples = if quick { 20 } else { 200 };
    support::runtime().block_on(async {
        let b = start(streams).await;
        fill(&b, events, size).await;
        let viewer = tokens::create(
            &b.running.store,
            Some("viewer".into()),
            vec![Scope::SessionRead],
            None,
            b.running.store.now_ms(),
        )
        .await
        .unwrap()
        .secret;
        println!("| measure | | | |\n|---|---|---|---|");
        println!(
            "| flood | {streams} unread streams of one token | {events} events of {size} B | held {} ms |",
            hold.as_millis()
        );
        // Warm what every reader shares (the database's page caches, the
        // allocator's arenas) with one whole read of the log, so that idle
        // is a gateway that has served the log before.
        warm(&b, events).await;
        let quiet = creates(&b, samples).await;
        row("another token's create → started, no flood", &quiet);
        tokio::time::sleep(Duration::from_secs(3)).await;
        let idle = rss_mib();
        let idle_anon = anon_mib();
        let idle_tcp = tcp_mib();
        let addr = b.running.addr;
        let opened = Instant::now();
        let held = tokio::task::spawn_blocking(move || {
            (0..streams)
                .map(|_| unread_stream(addr, &viewer, "/v1/events?after=0").unwrap())
                .collect::<Vec<_>>()
        })
        .await
        .unwrap();
        let open_ms = opened.elapsed().as_secs_f64() * 1e3;
        let mut peak = rss_mib();
        let mut peak_anon = anon_mib();
        let mut peak_tcp = tcp_mib();
        let flooded = creates(&b, samples).await;
        let until = Instant::now() + hold;
        while Instant::now() < until {
            peak = peak.max(rss_mib());
            peak_anon = peak_anon.max(anon_mib());
            peak_tcp = peak_tcp.max(tcp_mib());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        row("another token's create → started, flooded", &flooded);
        println!(
            "| RSS | idle {idle:.1} MiB | peak while held {peak:.1} MiB (+{:.1}) | opened in {open_ms:.0} ms |",
            peak - idle
        );
        println!(
            "| of which anonymous | idle {idle_anon:.1} MiB | peak {peak_anon:.1} MiB (+{:.1}) | |",
            peak_anon - idle_anon
        );
        println!(
            "| kernel TCP buffers (both ends) | idle {idle_tcp:.1} MiB | peak {peak_tcp:.1} MiB (+{:.1}) | |",
            peak_tcp - idle_tcp
        );
        drop(held);
        // The gateway notices each closed socket when it next writes to
        // it; then what the stream held is freed and the heap trimmed.
        let closed = Instant::now();
        while sse_open(&b).await > 0 && closed.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let gone_ms = closed.elapsed().as_secs_f64() * 1e3;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let after = rss_mib();
        println!(
            "| after they closed | every stream ended in {gone_ms:.0} ms | RSS 5 s later {after:.1} MiB (+{:.1} over idle) | |",
            after - idle
        );
        b.running.shutdown().await;
    });
}
