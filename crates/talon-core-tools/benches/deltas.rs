//! What streaming a command's output as `tool.call.delta` costs: one
//! `exec` of a command that prints 10 MB (`yes` lines through `head -c`),
//! through `CoreTools` as the runner calls it, with the run's update sink
//! dropping the deltas (`NoUpdates`: the path before deltas, but for the
//! chunking itself) and with a sink that does what the gateway's does
//! for each (build the `tool.call.delta` event, cap it, serialize it as
//! the store would write it, and keep it), interleaved call by call, the
//! order swapped every round. Unsandboxed (`Mode::Off`, host network), so
//! the figure is the deltas', not bubblewrap's. It reports each side's
//! median and p90, the median of the per-round ratios, the deltas and
//! bytes the sink kept, and the process's RSS high-water mark (VmHWM)
//! and resident size after all rounds. Results in `docs/benchmarks.md`.
//!
//! `cargo bench -p talon-core-tools --bench deltas [-- --runs N] [--bytes N]`.
//! One JSON object on stdout.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::panic,
    reason = "a benchmark binary fails loudly and prints its figures"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_core_tools::{CoreTools, Jail, Network, ShellOptions};
use talon_jail::{Mode, Policy};
use talon_testing::stats::{median, round3, summary};
use talon_tools::{
    Caller, CatalogBuilder, NoUpdates, RunContext, ToolCall, ToolExecutor, ToolPolicy, UpdateSink,
};

/// Keeps every delta as the event the gateway would append.
#[derive(Default)]
struct Keeping {
    events: Mutex<Vec<String>>,
}

impl UpdateSink for Keeping {
    fn update(&self, call_id: &str, update: Value) {
        let event = talon_protocol::EventData::ToolCallDelta(
            talon_protocol::event_data::ToolCallDeltaData {
                call_id: call_id.to_owned(),
                parent_id: None,
                update: talon_tools::runner::cap(update, 16 << 10),
            },
        );
        let text = serde_json::to_string(&event).unwrap();
        self.events.lock().unwrap().push(text);
    }
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn ctx(updates: Arc<dyn UpdateSink>) -> RunContext {
    RunContext {
        scope: Default::default(),
        session_key: String::new(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates,
        clock: talon_protocol::clock::Clock::system(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let runs = arg("--runs", 21);
    let bytes = arg("--bytes", 10_000_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let core = CoreTools::new(dir.path())
        .unwrap()
        .with_shell(ShellOptions {
            jail: Jail::new(Policy {
                mode: Mode::Off,
                network: Network::Host,
                ..Policy::default()
            }),
            ..ShellOptions::default()
        });
    let catalog = CatalogBuilder::new(Default::default())
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    let entry = catalog.get("openclaw:core:exec").unwrap().clone();
    let command = format!("yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c {bytes}");
    let call = ToolCall {
        call_id: "c".into(),
        id: entry.id.clone(),
        args: json!({"command": command, "timeoutMs": 60_000}),
        caller: Caller::Direct,
    };
    let kept = Arc::new(Keeping::default());
    let dropping = ctx(Arc::new(NoUpdates));
    let keeping = ctx(kept.clone());
    let once = |ctx: &RunContext| {
        let started = Instant::now();
        let result = runtime.block_on(core.execute(ctx, &entry, &call)).unwrap();
        assert_eq!(result["exitCode"], 0, "{result}");
        started.elapsed()
    };
    // Warm up both.
    once(&dropping);
    once(&keeping);
    let rss_before = status_kib("VmRSS:");
    let (mut off, mut on, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut deltas = 0;
    let mut delta_bytes = 0;
    for round in 0..runs {
        let (a, b) = if round % 2 == 0 {
            let a = once(&dropping);
            kept.events.lock().unwrap().clear();
            (a, once(&keeping))
        } else {
            kept.events.lock().unwrap().clear();
            let b = once(&keeping);
            (once(&dropping), b)
        };
        {
            let events = kept.events.lock().unwrap();
            deltas = events.len();
            delta_bytes = events.iter().map(String::len).sum::<usize>();
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        off.push(ms(a));
        on.push(ms(b));
        ratios.push(ms(b) / ms(a));
        eprintln!(
            "round {round}: without {:.1} ms, with {:.1} ms",
            ms(a),
            ms(b)
        );
    }
    println!(
        "{}",
        json!({
            "bench": "deltas",
            "bytes": bytes,
            "runs": runs,
            "without_deltas_ms": summary(&off),
            "with_deltas_ms": summary(&on),
            "median_ratio": round3(median(&ratios)),
            "deltas_per_call": deltas,
            "delta_event_bytes": delta_bytes,
            "rss_kib_before_rounds": rss_before,
            "rss_kib_after_rounds": status_kib("VmRSS:"),
            "vm_hwm_kib": status_kib("VmHWM:"),
        })
    );
}
