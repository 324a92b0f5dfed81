//! The gateway's run benchmarks (issue 14), in-process against the scripted
//! mock model on 127.0.0.1, over real HTTP and SSE:
//!
//! 1. `runs.create` to the first SSE event of the run (`run.started`)
//!    seen on a pre-opened `/v1/events` stream; no model time is inside it;
//! 2. runs with a two-turn Code Mode script (an `exec` cell, then the
//!    answer), 50 in flight at once, 1,000 in all: runs per second, p50/p99
//!    latency (the mock answers at once, so model time is its own
//!    handling), and resident memory after 100 and after 1,000 runs;
//!    again with a 200-tool MCP server (`codemode-mcp`: the cell reads
//!    `ALL_TOOLS` and calls one of its tools);
//! 3. SSE fan-out: 1,000 subscribers on one run, the delay from each
//!    event's `ts` to its arrival at every subscriber;
//! 4. two nodes on one PostgreSQL (started by the harness): a run created
//!    on one, seen started and waited on through the other.
//!
//! `cargo bench -p talon-gateway --bench runs` (`-- quick` for a smoke run;
//! name `create`, `codemode`, `codemode-mcp`, `fanout` or `nodes` to run
//! only those parts;
//! `TALON_BENCH_DEBUG=1` adds the fan-out delays per event of the run;
//! `TALON_BENCH_CLIENT=reqwest` makes the fan-out's subscribers reqwest
//! clients instead of lean HTTP/1.1 readers; `TALON_BENCH_HOLD=1` makes
//! them keep their connections until every subscriber has the run's end,
//! so that no closing connection's cost, theirs or the gateway's, falls
//! inside another's delivery); `TALON_BENCH_TOKEN=bound` makes the
//! clients use a token bound to a subject (the `app` preset's scopes)
//! instead of the admin token, so that every look-up, list and stream
//! goes through the ownership checks.
//! Clients, mock and gateway share the machine's cores, so every figure
//! includes the clients' own cost.
//!
//! Parts 2 and 3 are in `runs/`; the gateway, the SSE reader and the
//! figures are the benches' `support/` module.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    missing_docs,
    reason = "a benchmark binary fails loudly and prints its table"
)]

#[path = "runs/codemode.rs"]
mod codemode;
#[path = "runs/fanout.rs"]
mod fanout;
#[path = "support/mod.rs"]
mod support;

use std::time::Instant;

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};
use talon_protocol::gateway::bounded::Subject;

use support::gateway::{Gateway, pooled_client, text_per_run};
use support::measure::{percentile, sorted};
use support::sse::Envelope;

/// The envelope fields the benchmarks read (see [`support::sse`]).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Seen {
    ts: u64,
    #[serde(rename = "type")]
    kind: String,
    run_id: Option<String>,
}

impl Envelope for Seen {}

/// A node of a shared PostgreSQL store: its URL and the node's name.
struct Shared {
    url: String,
    node: String,
}

/// A gateway on SQLite of its own.
async fn start(script: Script, config: Value) -> Gateway {
    start_on(script, config, None).await
}

/// A gateway, on SQLite or on a `shared` store, whose streams and runs
/// at once are raised for the fan-out and the load; its token the admin
/// one or, with `TALON_BENCH_TOKEN=bound`, one bound to a subject.
async fn start_on(script: Script, config: Value, shared: Option<Shared>) -> Gateway {
    let mut bench = Gateway::start(script, config, pooled_client(), |config, dir| {
        config.limits.max_streams = 4_096;
        // One token (or subject) holds every fan-out subscriber.
        config.limits.max_streams_per_token = 4_096;
        config.limits.max_streams_per_subject = 4_096;
        config.runs.max_concurrent = 64;
        if let Some(Shared { url, node }) = shared {
            config.store = talon_store::StoreConfig::at(url, dir);
            config.node = Some(node);
        }
    })
    .await;
    if std::env::var("TALON_BENCH_TOKEN").as_deref() == Ok("bound") {
        let binding = talon_protocol::gateway::Binding {
            subject: Some(Subject::new("bench-user")),
            agents: None,
        };
        let scopes = talon_protocol::gateway::ScopePreset::App.scopes().to_vec();
        let now = bench.running.store.now_ms();
        bench.token = talon_gateway::tokens::create_bound(
            &bench.running.store,
            (Some("bench".into()), &binding),
            scopes,
            None,
            now,
        )
        .await
        .unwrap()
        .secret;
    }
    bench
}

async fn create_to_started(iterations: usize) {
    let script = Script {
        turns: vec![Turn {
            text: Some("ok".into()),
            ..Turn::default()
        }],
        replay: Replay::PerRun,
        ..Script::default()
    };
    let bench = start(script, json!({})).await;
    let mut stream = bench.events::<Seen>("/v1/events?types=run.started").await;
    let mut samples = Vec::new();
    for n in 0..iterations + 20 {
        let sent = Instant::now();
        let run = bench
            .call(
                "runs.create",
                json!({"input": "go", "sessionKey": format!("s{n}")}),
            )
            .await;
        loop {
            let event = stream.next().await.unwrap();
            if event.run_id.as_deref() == run["id"].as_str() {
                break;
            }
        }
        let ms = sent.elapsed().as_secs_f64() * 1e3;
        bench
            .call(
                "runs.wait",
                json!({"runId": run["id"], "timeoutMs": 10_000}),
            )
            .await;
        if n >= 20 {
            samples.push(ms);
        }
    }
    let s = sorted(samples);
    println!(
        "| runs.create → run.started on SSE | p50 {:.2} ms | p95 {:.2} ms | p99 {:.2} ms | n = {} |",
        percentile(&s, 50.0),
        percentile(&s, 95.0),
        percentile(&s, 99.0),
        s.len()
    );
    bench.running.shutdown().await;
}

/// Two nodes on one PostgreSQL: a run created on node A, seen through
/// node B (its `run.started` on B's SSE stream, then `runs.wait` on B
/// answering its end). Either node may claim it; events and ends another
/// node commits reach B by notification (LISTEN/NOTIFY), the polls being
/// the fallback.
async fn nodes(iterations: usize) {
    let pg = talon_testing::postgres::TestPostgres::shared().unwrap();
    let url = pg.fresh_database().unwrap();
    let script = || text_per_run("ok");
    let a = start_on(
        script(),
        json!({}),
        Some(Shared {
            url: url.clone(),
            node: "node-a".into(),
        }),
    )
    .await;
    let mut b = start_on(
        script(),
        json!({}),
        Some(Shared {
            url,
            node: "node-b".into(),
        }),
    )
    .await;
    b.token = a.token.clone();
    let mut stream = b.events::<Seen>("/v1/events?types=run.started").await;
    let (mut started, mut ended) = (Vec::new(), Vec::new());
    for n in 0..iterations + 10 {
        let sent = Instant::now();
        let run = a
            .call(
                "runs.create",
                json!({"input": "go", "sessionKey": format!("s{n}")}),
            )
            .await;
        loop {
            let event = stream.next().await.unwrap();
            if event.run_id.as_deref() == run["id"].as_str() {
                break;
            }
        }
        let seen = sent.elapsed().as_secs_f64() * 1e3;
        b.wait_completed(&run["id"], 10_000).await;
        if n >= 10 {
            started.push(seen);
            ended.push(sent.elapsed().as_secs_f64() * 1e3);
        }
    }
    let (s, e) = (sorted(started), sorted(ended));
    println!(
        "| two nodes on PostgreSQL: `runs.create` on A → `run.started` on B's SSE | p50 {:.2} ms | p95 {:.2} ms | max {:.2} ms | n = {} |",
        percentile(&s, 50.0),
        percentile(&s, 95.0),
        s.last().copied().unwrap_or(f64::NAN),
        s.len()
    );
    println!(
        "| two nodes on PostgreSQL: `runs.create` on A → `runs.wait` on B answers `completed` | p50 {:.2} ms | p95 {:.2} ms | max {:.2} ms | n = {} |",
        percentile(&e, 50.0),
        percentile(&e, 95.0),
        e.last().copied().unwrap_or(f64::NAN),
        e.len()
    );
    a.running.shutdown().await;
    b.running.shutdown().await;
}

fn main() {
    support::init_tracing();
    let args = support::Args::parse(&["create", "codemode", "codemode-mcp", "fanout", "nodes"]);
    let quick = args.quick;
    support::runtime().block_on(async {
        println!("| measure | | | | |\n|---|---|---|---|---|");
        if args.wants("create") {
            create_to_started(if quick { 20 } else { 300 }).await;
        }
        if args.wants("codemode") {
            let in_flight = std::env::var("TALON_BENCH_IN_FLIGHT")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(50);
            codemode::concurrent_code_mode(if quick { 100 } else { 1_000 }, in_flight, false).await;
        }
        if args.wants("codemode-mcp") {
            // `TALON_BENCH_RUNS`: more runs, to see where memory levels off.
            let total = std::env::var("TALON_BENCH_RUNS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(if quick { 100 } else { 1_000 });
            codemode::concurrent_code_mode(total, 50, true).await;
        }
        if args.wants("fanout") {
            fanout::fan_out(if quick { 50 } else { 1_000 }).await;
        }
        if args.wants("nodes") {
            nodes(if quick { 20 } else { 200 }).await;
        }
    });
}
