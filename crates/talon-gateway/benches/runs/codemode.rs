//! Parts `codemode` and `codemode-mcp`: many two-turn Code Mode runs at
//! once, their latency and throughput, and the gateway's memory as they
//! go.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use talon_testing::stats::rss_mib;

use super::fanout::print_kinds;
use super::start;
use crate::support::gateway::{Gateway, SETTLE, call_then_text};
use crate::support::measure::{percentile, sorted};

/// The fixture MCP server (`node fixture_server.mjs catalog 200`: 200
/// synthetic tools).
fn fixture_js() -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../talon-mcp/tests/fixtures/fixture_server.mjs")
        .display()
        .to_string()
}

pub async fn concurrent_code_mode(total: usize, in_flight: usize, mcp_catalog: bool) {
    // With the catalog, the cell reads it (`ALL_TOOLS`) and calls one of
    // its tools.
    let code = if mcp_catalog {
        "const n = ALL_TOOLS.length; const r = await MCP.synth.synth000CreateIssue({workspace_id: 'w1'}); text(String(n)); return n;"
    } else {
        "const xs = [1, 2, 3].map((x) => x * 2); text(String(xs)); return xs.length;"
    };
    let script = call_then_text("exec", json!({"code": code}), "There are three.");
    let mut config = json!({"tools": {"codeMode": {"enabled": true}}});
    if mcp_catalog {
        config["mcp"] = json!({"servers": {"synth": {"command": "node", "args": [fixture_js(), "catalog", "200"]}}});
    }
    let bench = Arc::new(start(script, config).await);
    // Warm the sandbox's images and the caches once.
    let warm = bench.call("runs.create", json!({"input": "warm"})).await;
    bench.wait_completed(&warm["id"], 60_000).await;
    // Two phases: the first 100 runs, then the rest. RSS is sampled under
    // load every 100 runs, and settled (the gateway idle for longer than
    // its heap trimmer waits) after each phase: the settled figures are
    // the flatness measure, the loaded ones show the working set.
    let started = Instant::now();
    let latencies = Arc::new(std::sync::Mutex::new(Vec::new()));
    let first = total.min(100);
    load(&bench, 0..first, in_flight, &latencies).await;
    let rss_100 = settled_rss().await;
    load(&bench, first..total, in_flight, &latencies).await;
    let elapsed = started.elapsed().as_secs_f64();
    let rss_loaded = rss_mib();
    let rss_end = settled_rss().await;
    let s = sorted(latencies.lock().unwrap().clone());
    println!(
        "| {total} two-turn Code Mode runs, {in_flight} in flight{} | {:.1} runs/s | p50 {:.1} ms | p99 {:.1} ms | settled RSS after 100: {:.1} MiB, after {total}: {:.1} MiB ({:+.1} %); {:.1} MiB as the last run ends |",
        if mcp_catalog {
            ", a 200-tool MCP catalog"
        } else {
            ""
        },
        total as f64 / (elapsed - SETTLE.as_secs_f64()),
        percentile(&s, 50.0),
        percentile(&s, 99.0),
        rss_100,
        rss_end,
        (rss_end / rss_100 - 1.0) * 100.0,
        rss_loaded,
    );
    print_kinds();
    match Arc::try_unwrap(bench) {
        Ok(bench) => bench.running.shutdown().await,
        Err(_) => panic!("the bench is still shared"),
    }
}

/// RSS once the gateway has been idle for [`SETTLE`].
async fn settled_rss() -> f64 {
    tokio::time::sleep(SETTLE).await;
    rss_mib()
}

/// Runs `runs` (numbered, each on its own session) with `in_flight` at
/// once, adding each one's create-to-result latency to `latencies`.
async fn load(
    bench: &Arc<Gateway>,
    runs: std::ops::Range<usize>,
    in_flight: usize,
    latencies: &Arc<std::sync::Mutex<Vec<f64>>>,
) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(runs.start));
    let mut workers = Vec::new();
    for _ in 0..in_flight {
        let bench = bench.clone();
        let next = next.clone();
        let latencies = latencies.clone();
        let end = runs.end;
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n >= end {
                    return;
                }
                let t = Instant::now();
                let run = bench
                    .call(
                        "runs.create",
                        json!({"input": "count", "sessionKey": format!("c{n}")}),
                    )
                    .await;
                bench.wait_completed(&run["id"], 120_000).await;
                let mut l = latencies.lock().unwrap();
                l.push(t.elapsed().as_secs_f64() * 1e3);
                if l.len().is_multiple_of(100) {
                    eprintln!("{} runs, RSS {:.1} MiB", l.len(), rss_mib());
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
}
