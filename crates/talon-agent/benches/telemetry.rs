//! What the payload check and the run's telemetry add to the agent loop
//! (issue 46: "the payload check and telemetry add ≤ 50 µs per model
//! call"), piece by piece, for realistic surfaces.
//!
//! Per model call, `AgentRun::ask` now:
//! - asks the surface to check the request's tools (`check_offered`;
//!   Code Mode compares them with `exec`, `wait` and its direct-only
//!   tools, the other surfaces' check is the default no-op);
//! - counts the call and takes the tools' bytes its reply reports (`Sent`,
//!   behind the run's mutex; the provider counts them as it builds the
//!   body);
//! - prices the reply (`ModelCost::usd`) and emits `assistant.message`
//!   with its usage (`RunEvents::emit_raw`: the typed data to JSON, the
//!   envelope), and, where the provider kept it, the native reply
//!   (`RawReply::to_json`: each kept stream payload parsed and redacted).
//!
//! Per run, once: `Sent::measure` (counts the tools and the prompt), and at
//! the end `surface.telemetry()` (the catalog by source,
//! the calls the runner made, the surface's counters), `Sent::complete`,
//! and the end event carrying the telemetry.
//!
//! `Sent` and `event_usage` are private to the crate: this file repeats
//! their bodies (the counts; the usage's fields).
//! The event sink serializes each event to JSON bytes, as the gateway's
//! store does before it writes (the SQLite insert itself is not in the
//! figures). Each row is the median (p10–p90) of 31 samples of many
//! iterations each, single-threaded, after a warm-up.
//!
//! Surfaces: a catalog of the core tools plus N plugin tools
//! (`talon_testing::synthetic::distractor_tools`, three parameters each)
//! with 10 calls already made through the run's runner; Code Mode and
//! Tool Search over 1,000, direct over 100 and 1,000. Code Mode's
//! direct-only tools: `read`, `list`, `ask_user`.
//!
//! `cargo bench -p talon-agent --bench telemetry`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary"
)]

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_agent::{EventSink, RunEvents};
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, MemoryStore, NamespaceRegistry, RunSetup,
    StoreLimits,
};
use talon_protocol::event_data::{AssistantMessageData, RunEndedData};
use talon_protocol::gateway::Usage as EventUsage;
use talon_protocol::{Event, EventData, ModelTool};
use talon_provider::{ChatRequest, Message, ModelCost, RawReply, ToolCallRequest, Usage};
use talon_tools::{
    BoxFuture, CatalogBuilder, CatalogEntry, DirectSurface, NoUpdates, RunContext, RunScope,
    ToolCall, ToolExecutor, ToolPolicy, ToolRunner, ToolSurface,
};
use talon_toolsearch::{CodeSandbox, ToolSearch, ToolSearchConfig, build_surface};

const SAMPLES: usize = 31;
/// Each sample runs about this long.
const SAMPLE_TIME: Duration = Duration::from_millis(4);

/// Median, p10 and p90 of a closure's time per call, in µs.
#[derive(Clone, Copy)]
struct Stat {
    p50: f64,
    p10: f64,
    p90: f64,
}

fn time(mut f: impl FnMut()) -> Stat {
    // Warm up, and find how many calls fill a sample.
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < SAMPLE_TIME * 4 {
        f();
        n += 1;
    }
    let per_sample = (n / 4).max(1);
    let mut samples: Vec<f64> = (0..SAMPLES)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..per_sample {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / per_sample as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    Stat {
        p50: samples[SAMPLES / 2],
        p10: samples[SAMPLES / 10],
        p90: samples[SAMPLES * 9 / 10],
    }
}

fn row(label: &str, s: Stat) {
    println!("| {label} | {:.3} µs | {:.3}–{:.3} |", s.p50, s.p10, s.p90);
}

fn scope(run: &str) -> RunScope {
    RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s"),
        run_id: RunId::new(run),
    }
}

fn ctx(run: &str) -> RunContext {
    RunContext {
        scope: scope(run),
        session_key: "k".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

/// Answers every call at once.
struct Answer;

impl ToolExecutor for Answer {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        _: &'a CatalogEntry,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, talon_tools::ToolError>> {
        Box::pin(async { Ok(json!({"ok": true})) })
    }
}

/// The gateway's store serializes every event before it writes it; this
/// sink does that, and keeps the bytes' length.
#[derive(Default)]
struct Serializing(Mutex<usize>);

impl EventSink for Serializing {
    fn emit(&self, event: Event) {
        let bytes = serde_json::to_vec(&event).unwrap();
        *self.0.lock().unwrap() = bytes.len();
        black_box(bytes);
    }
}

/// A run's runner over the core tools and `plugins` plugin tools, with
/// `direct_only` names; 10 calls of cataloged tools already made.
async fn runner(plugins: usize, direct_only: &[&str]) -> Arc<ToolRunner> {
    let direct: Vec<String> = direct_only.iter().map(|s| (*s).to_owned()).collect();
    let catalog = CatalogBuilder::new(scope("r"))
        .direct_only(&direct)
        .core(talon_core_tools::definitions())
        .declared(talon_testing::synthetic::distractor_tools(
            plugins,
            0x5eed_7a10,
        ))
        .build(&ToolPolicy::new())
        .unwrap();
    let runner = Arc::new(ToolRunner::new(Arc::new(catalog), Arc::new(Answer)));
    let ids: Vec<String> = runner
        .catalog()
        .entries()
        .iter()
        .rev()
        .take(10)
        .map(|e| e.id.clone())
        .collect();
    for (n, id) in ids.into_iter().enumerate() {
        let outcome = runner
            .call(
                &ctx("r"),
                ToolCall {
                    call_id: format!("call_{n}"),
                    id,
                    args: json!({"note": "x"}),
                    caller: talon_tools::Caller::Direct,
                },
            )
            .await;
        assert_eq!(outcome.status(), "ok");
    }
    assert_eq!(runner.records().len(), 10);
    runner
}

/// A streamed OpenAI reply as the provider keeps it: `chunks` text
/// deltas of a few tokens, then the finish and the usage (the provider
/// keeps at most 16 KiB).
fn raw_reply(chunks: usize) -> RawReply {
    let mut raw = RawReply::default();
    for p in raw_payloads(chunks) {
        raw.push(&p);
    }
    raw
}

/// The stream payloads [`raw_reply`] is made of.
fn raw_payloads(chunks: usize) -> Vec<String> {
    let mut payloads: Vec<String> = (0..chunks)
        .map(|n| {
            json!({"id": "chatcmpl-B9MHDbslfCsjWKy2bnDhsmdB6l7bJ", "object": "chat.completion.chunk",
                "created": 1_741_569_952, "model": "gpt-4.1-2025-04-14", "system_fingerprint": "fp_3d1f2c8a91",
                "choices": [{"index": 0, "delta": {"content": format!(" word{n}")}, "logprobs": null, "finish_reason": null}]})
            .to_string()
        })
        .collect();
    payloads.push(
        json!({"id": "chatcmpl-B9MHDbslfCsjWKy2bnDhsmdB6l7bJ", "object": "chat.completion.chunk",
            "created": 1_741_569_952, "model": "gpt-4.1-2025-04-14", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1822, "completion_tokens": 120, "total_tokens": 1942}})
        .to_string(),
    );
    payloads
}

/// How many text chunks the long native reply has
/// (`TALON_BENCH_RAW_CHUNKS`, default 120: past the provider's 16 KiB).
fn chunks_setting() -> usize {
    std::env::var("TALON_BENCH_RAW_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120)
}

/// Repeats `telemetry::event_usage`.
fn event_usage(usage: &Usage, cost_usd: Option<f64>) -> EventUsage {
    EventUsage {
        input_tokens: Some(usage.input_tokens),
        output_tokens: Some(usage.output_tokens),
        total_tokens: Some(usage.input_tokens + usage.output_tokens),
        cache_read_tokens: Some(usage.cache_read_tokens).filter(|n| *n > 0),
        cache_write_tokens: Some(usage.cache_write_tokens).filter(|n| *n > 0),
        cost_usd,
    }
}

/// Repeats `telemetry::Sent`.
#[derive(Default, Clone, Copy)]
struct Sent {
    visible_tools: u64,
    tool_bytes: u64,
    prompt_bytes: u64,
    model_calls: u64,
}

impl Sent {
    fn measure(tools: &[ModelTool], system: &str) -> Self {
        Self {
            visible_tools: tools.len() as u64,
            tool_bytes: 0,
            prompt_bytes: system.len() as u64,
            model_calls: 0,
        }
    }

    fn complete(
        self,
        mut surface: talon_protocol::ToolTelemetry,
        pending: &[ToolCallRequest],
    ) -> talon_protocol::ToolTelemetry {
        surface.visible_tools = self.visible_tools;
        surface.tool_bytes = self.tool_bytes;
        surface.prompt_bytes = self.prompt_bytes;
        surface.model_calls = self.model_calls;
        surface.bytes_sent = (self.tool_bytes + self.prompt_bytes).saturating_mul(self.model_calls);
        assert!(pending.is_empty());
        surface
    }
}

struct Case {
    label: String,
    surface: Arc<dyn ToolSurface>,
}

/// The per-call and per-run figures of one surface; returns (per call
/// without the native reply, per call with it, per run) in µs.
fn bench_case(case: &Case, raw: &RawReply) -> (f64, f64, f64, f64) {
    let surface = &case.surface;
    let tools = surface.tools();
    let mut system = "You are a helpful assistant working in the user's repository.".to_owned();
    if let Some(prompt) = surface.prompt() {
        system.push_str("\n\n");
        system.push_str(&prompt);
    }
    let tool_bytes = serde_json::to_vec(&*tools).unwrap().len();
    println!(
        "\n**{}**: {} tools offered, {} B of tool schemas, system prompt {} B\n",
        case.label,
        tools.len(),
        tool_bytes,
        system.len()
    );
    println!("| piece | median | p10–p90 (µs) |\n|---|---|---|");

    // Per model call.
    let check = time(|| {
        black_box(surface.check_offered(black_box(&tools))).unwrap();
    });
    row("per call: `check_offered`", check);
    let sent = Mutex::new(Sent::default());
    let count = time(|| {
        let mut sent = sent.lock().unwrap();
        sent.model_calls += 1;
        sent.tool_bytes = black_box(tool_bytes as u64);
    });
    row(
        "per call: count it and its tools' bytes (`Sent`, behind its mutex)",
        count,
    );
    let cost = Some(ModelCost {
        input: 2_000_000,
        output: 8_000_000,
        cache_read: Some(500_000),
        cache_write: None,
    });
    let usage = Usage {
        input_tokens: 1_822,
        output_tokens: 120,
        cache_read_tokens: 1_024,
        cache_write_tokens: 0,
    };
    let sink = Arc::new(Serializing::default());
    let events = RunEvents::new(sink.clone(), &ctx("r"));
    let reply_text = "I read the three files and changed the handler so that it retries twice.";
    let message = |raw: Option<&RawReply>| {
        let priced = cost.and_then(|c| c.usd(black_box(&usage)));
        events.emit_raw(
            EventData::AssistantMessage(AssistantMessageData {
                text: Some(reply_text.to_owned()),
                tool_calls: 0,
                finish_reason: Some("stop".to_owned()),
                usage: Some(event_usage(&usage, priced)),
            }),
            raw.filter(|r| !r.is_empty()).map(RawReply::to_json),
        );
    };
    let emit = time(|| message(None));
    row(
        "per call: price it, emit `assistant.message` (serialized by the sink)",
        emit,
    );
    let plain_bytes = *sink.0.lock().unwrap();
    let emit_raw = time(|| message(Some(raw)));
    let raw_bytes = *sink.0.lock().unwrap();
    row(
        &format!(
            "per call: the same with the native reply ({} kept stream events, event {} B; without, {} B)",
            raw.to_json()["events"].as_array().map_or(0, Vec::len),
            raw_bytes,
            plain_bytes
        ),
        emit_raw,
    );
    // Its parts: the provider keeping each payload as it streams, and
    // `to_json` (each kept payload parsed and redacted).
    let payloads = raw_payloads(chunks_setting());
    let keep = time(|| {
        let mut kept = RawReply::default();
        for p in &payloads {
            kept.push(p);
        }
        black_box(kept);
    });
    row(
        &format!(
            "per call, of which: the provider keeps the payloads (`RawReply::push` × {})",
            payloads.len()
        ),
        keep,
    );
    let to_json = time(|| {
        black_box(raw.to_json());
    });
    row("per call, of which: `RawReply::to_json`", to_json);
    let short = raw_reply(6);
    let emit_short = time(|| message(Some(&short)));
    row(
        &format!(
            "per call: with a short native reply (a tool call's few chunks: {} stream events, event {} B)",
            short.to_json()["events"].as_array().map_or(0, Vec::len),
            *sink.0.lock().unwrap()
        ),
        emit_short,
    );
    let per_call = check.p50 + count.p50 + emit.p50;
    let per_call_raw = check.p50 + count.p50 + emit_raw.p50;

    // Per run.
    let measure = time(|| {
        black_box(Sent::measure(black_box(&tools), black_box(&system)));
    });
    row(
        "per run: `Sent::measure` (counts the tools and the prompt)",
        measure,
    );
    let telemetry = time(|| {
        black_box(surface.telemetry());
    });
    row("per run: `surface.telemetry()`", telemetry);
    let ended = RunEvents::new(sink.clone(), &ctx("r"));
    let sent_now = Sent {
        model_calls: 2,
        ..Sent::measure(&tools, &system)
    };
    let end = time(|| {
        let t = sent_now.complete(surface.telemetry(), &[]);
        ended.emit(EventData::RunCompleted(RunEndedData {
            text: Some(reply_text.to_owned()),
            error: None,
            turns: 2,
            tool_calls: 1,
            usage: event_usage(&usage, Some(0.01)),
            duration_ms: 1234,
            pending_tool_calls: Vec::new(),
            telemetry: Some(t.clone()),
        }));
    });
    let with_telemetry = *sink.0.lock().unwrap();
    let end_without = time(|| {
        ended.emit(EventData::RunCompleted(RunEndedData {
            text: Some(reply_text.to_owned()),
            error: None,
            turns: 2,
            tool_calls: 1,
            usage: event_usage(&usage, Some(0.01)),
            duration_ms: 1234,
            pending_tool_calls: Vec::new(),
            telemetry: None,
        }));
    });
    let without_telemetry = *sink.0.lock().unwrap();
    let end_added = Stat {
        p50: (end.p50 - end_without.p50 - telemetry.p50).max(0.0),
        p10: f64::NAN,
        p90: f64::NAN,
    };
    println!(
        "| per run: `Sent::complete` and the end event's telemetry (end event with it {:.3} µs, {} B; without {:.3} µs, {} B; less `telemetry()`) | {:.3} µs | |",
        end.p50, with_telemetry, end_without.p50, without_telemetry, end_added.p50
    );
    let per_run = measure.p50 + telemetry.p50 + end_added.p50;

    // What a model call costs already, for scale: the request body the
    // provider builds and serializes on every call (a short conversation).
    let request = ChatRequest {
        model: "gpt-4.1".into(),
        messages: vec![
            Message::System(system.clone()),
            Message::User("Make the handler retry twice on a timeout.".into()),
        ],
        tools: tools.clone(),
        max_tokens: Some(4096),
        stream: true,
        ..ChatRequest::default()
    };
    let body = time(|| {
        black_box(serde_json::to_vec(&request.to_openai()).unwrap());
    });
    row(
        "for scale: the request body the provider serializes per call (`to_openai`)",
        body,
    );
    println!(
        "| **added per call** (check + count + price and emit) | **{per_call:.2} µs** ({per_call_raw:.2} µs with the native reply) | |"
    );
    println!(
        "| **added per run** (measure + telemetry + end event's share) | **{per_run:.2} µs** | |"
    );
    println!(
        "| per call, the run's share spread over a 2-call run / a 10-call run | {:.2} / {:.2} µs | |",
        per_call + per_run / 2.0,
        per_call + per_run / 10.0
    );
    (per_call, per_call_raw, per_run, body.p50)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let raw_chunks = chunks_setting();
    let raw = raw_reply(raw_chunks);
    let code_mode = CodeMode::new(CodeModeOptions {
        sandbox: Default::default(),
        store: Arc::new(MemoryStore::new(StoreLimits::default())),
        namespaces: Arc::new(NamespaceRegistry::new()),
    })
    .unwrap();
    let sandbox = CodeSandbox::new(Default::default()).unwrap();
    let cases = runtime.block_on(async {
        let mut cases = Vec::new();
        let direct_only = ["read", "list", "ask_user"];
        let runner_cm = runner(1_000, &direct_only).await;
        let config =
            CodeModeConfig::resolve(Some(&serde_json::from_value(json!(true)).unwrap()), None)
                .unwrap();
        cases.push(Case {
            label: "Code Mode over 1,000 tools (exec, wait, 3 direct-only)".into(),
            surface: Arc::new(code_mode.start_run(RunSetup {
                config,
                runner: runner_cm,
                ctx: ctx("r"),
                mcp: None,
                plugin_config: Value::Null,
                exec_hooks: Vec::new(),
                resume: Vec::new(),
            })),
        });
        let runner_ts = runner(1_000, &[]).await;
        let config = ToolSearchConfig::default();
        let built = build_surface(runner_ts.catalog(), Some(&config)).unwrap();
        cases.push(Case {
            label: "Tool Search (code mode, the default) over 1,000 tools".into(),
            surface: Arc::new(
                ToolSearch::new(config, built, runner_ts, Some(sandbox.clone())).unwrap(),
            ),
        });
        for n in [100, 1_000] {
            let runner = runner(n, &[]).await;
            cases.push(Case {
                label: format!("direct, {n} plugin tools and the core tools"),
                surface: Arc::new(DirectSurface::new(runner)),
            });
        }
        cases
    });
    println!(
        "Payload check and telemetry, per model call and per run (native reply: {raw_chunks} streamed chunks)"
    );
    let mut summary = Vec::new();
    for case in &cases {
        summary.push((case.label.clone(), bench_case(case, &raw)));
    }
    println!(
        "\n| surface | added per call | with the native reply | added per run | request body per call, for scale |\n|---|---|---|---|---|"
    );
    for (label, (call, call_raw, run, body)) in summary {
        println!("| {label} | {call:.2} µs | {call_raw:.2} µs | {run:.2} µs | {body:.1} µs |");
    }
}
