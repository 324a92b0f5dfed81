//! A shell command that prints 10 MB, through a whole gateway run (issue
//! 46: "streams as deltas without raising the run's p50 by more than 5 %
//! or the gateway's RSS by more than 8 MB").
//!
//! In-process, as the `runs` bench: the gateway (`talon_gateway::start`),
//! the mock model (a real HTTP server on 127.0.0.1) and one client. The
//! mock scripts, per run, one `exec` tool call of
//! `yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 10000000` (the core
//! tool, in its bubblewrap sandbox, `tools.approvals: allow`), then text.
//! The client watches `/v1/events` (every event, the deltas included:
//! an app following the run) opened before the first run, and times
//! `runs.create` → the run's terminal event, one run at a time.
//!
//! Memory is this process's (the gateway's, the mock's and the client's):
//! `VmRSS` when the gateway has started and no run has been made
//! ("idle"), `VmRSS` sampled every 10 ms during the measured runs (its
//! peak), `VmHWM` at the end, and `VmRSS` once idle again after them.
//!
//! `cargo bench -p talon-gateway --bench shell` (`-- quick` for a smoke
//! run). `TALON_BENCH_RUNS` (default 40 measured runs, after 5 warm-up
//! runs), `TALON_BENCH_SHELL_BYTES` (10,000,000; 0 runs `echo hi`, the
//! run's fixed cost), `TALON_BENCH_WATCH=ends` to watch only the runs'
//! terminal events (no delta crosses the wire to the client).
//! Prints one table row and, with `TALON_BENCH_TSV=1`, one line of
//! tab-separated figures for a script that pairs two builds.

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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use talon_testing::stats::status_kib;

use support::env;
use support::gateway::{Gateway, SETTLE, call_then_text};
use support::measure::{percentile, sorted};
use support::sse::{Envelope, Events};

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// A gateway whose every run gets the same two turns: `exec` of
/// `command`, then text.
async fn start(command: &str) -> Gateway {
    let script = call_then_text("exec", json!({"command": command}), "It printed a lot.");
    let doc = json!({"tools": {"approvals": "allow"}});
    Gateway::start(script, doc, reqwest::Client::new(), |_, _| {}).await
}

/// The envelope fields the bench reads.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Seen {
    #[serde(rename = "type")]
    kind: String,
    run_id: Option<String>,
}

impl Envelope for Seen {}

/// Reads up to `run`'s terminal event; its type, and how many
/// `tool.call.delta` events of the run came before it.
async fn until_end(events: &mut Events<Seen>, run: &str) -> (String, usize) {
    let mut deltas = 0;
    loop {
        let event = events.next().await.expect("the stream ended");
        if event.run_id.as_deref() != Some(run) {
            continue;
        }
        match event.kind.as_str() {
            "tool.call.delta" => deltas += 1,
            "run.completed" | "run.failed" | "run.cancelled" | "run.timed_out" => {
                return (event.kind, deltas);
            }
            _ => {}
        }
    }
}

/// Samples `VmRSS` every 10 ms until stopped; the peak in KiB.
fn sample_peak(stop: Arc<AtomicBool>, peak: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            peak.fetch_max(status_kib("VmRSS"), Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(10));
        }
    })
}

async fn shell(bytes: u64, warmup: usize, runs: usize, watch_all: bool) {
    let command = if bytes == 0 {
        "echo hi".to_owned()
    } else {
        format!("yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c {bytes}")
    };
    let bench = start(&command).await;
    let mut events = bench
        .events::<Seen>(if watch_all {
            "/v1/events"
        } else {
            "/v1/events?types=run.completed,run.failed,run.cancelled,run.timed_out"
        })
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle_kib = status_kib("VmRSS");
    let mut samples = Vec::new();
    let mut deltas_seen = 0;
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let mut sampler = None;
    let mut warm_kib = 0;
    for n in 0..warmup + runs {
        if n == warmup {
            warm_kib = status_kib("VmRSS");
            sampler = Some(sample_peak(stop.clone(), peak.clone()));
        }
        let sent = Instant::now();
        let run = bench
            .call(
                "runs.create",
                json!({"input": "print a lot", "sessionKey": format!("s{n}")}),
            )
            .await;
        let id = run["id"].as_str().unwrap().to_owned();
        let (end, deltas) = until_end(&mut events, &id).await;
        let ms = sent.elapsed().as_secs_f64() * 1e3;
        assert_eq!(end, "run.completed", "run {n} of `{command}`");
        if n >= warmup {
            samples.push(ms);
            deltas_seen = deltas_seen.max(deltas);
        }
    }
    stop.store(true, Ordering::Relaxed);
    sampler.unwrap().join().unwrap();
    let peak_kib = peak.load(Ordering::Relaxed);
    let hwm_kib = status_kib("VmHWM");
    tokio::time::sleep(SETTLE).await;
    let after_kib = status_kib("VmRSS");
    let s = sorted(samples.clone());
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    println!(
        "| `{}`, {runs} runs{} | p50 {:.1} ms | p90 {:.1} ms | mean {:.1} ms | RSS idle {:.1} MiB, after warm-up {:.1}, peak during {:.1} (+{:.1} over idle), VmHWM {:.1}, settled after {:.1} | deltas per run (seen) {} |",
        command.replace('|', "\\|"),
        if watch_all { "" } else { ", ends watched only" },
        percentile(&s, 50.0),
        percentile(&s, 90.0),
        mean,
        mib(idle_kib),
        mib(warm_kib),
        mib(peak_kib),
        mib(peak_kib.saturating_sub(idle_kib)),
        mib(hwm_kib),
        mib(after_kib),
        if watch_all {
            deltas_seen.to_string()
        } else {
            "-".into()
        },
    );
    if std::env::var_os("TALON_BENCH_TSV").is_some() {
        // p50 p90 mean idle warm peak hwm after (ms, KiB), then samples.
        println!(
            "TSV\t{:.3}\t{:.3}\t{:.3}\t{idle_kib}\t{warm_kib}\t{peak_kib}\t{hwm_kib}\t{after_kib}\t{deltas_seen}\t{}",
            percentile(&s, 50.0),
            percentile(&s, 90.0),
            mean,
            samples
                .iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(",")
        );
    }
    bench.running.shutdown().await;
}

fn main() {
    support::init_tracing();
    let quick = support::Args::parse(&[]).quick;
    let runs = env("TALON_BENCH_RUNS", if quick { 5 } else { 40 }) as usize;
    let bytes = env("TALON_BENCH_SHELL_BYTES", 10_000_000);
    let watch_all = std::env::var("TALON_BENCH_WATCH").as_deref() != Ok("ends");
    support::runtime().block_on(async {
        println!("| measure | | | | | |\n|---|---|---|---|---|---|");
        shell(bytes, if quick { 1 } else { 5 }, runs, watch_all).await;
    });
}
