//! Code Mode end to end, over a 200-tool catalog: a trivial cell, a cell
//! making 100 parallel nested calls to an in-memory tool, a cell that
//! searches and calls, and a suspend/resume cycle (`exec` → `waiting` →
//! `wait` → `completed`) with the memory and the file store. Prints p50,
//! p95 and mean per case; results in `docs/benchmarks.md`.
//!
//! `cargo bench -p talon-codemode --bench codemode`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, CodeModeRun, MemoryStore, NamespaceRegistry,
    RunSetup, SnapshotStore, StoreLimits,
};
use talon_protocol::{CodeModeResult, ToolDefinition, ToolSource};
use talon_testing::synthetic::distractor_tools;
use talon_tools::{
    BoxFuture, CatalogBuilder, CatalogEntry, NoUpdates, RunContext, RunScope, ToolCall,
    ToolExecutor, ToolPolicy, ToolRunner,
};

struct InMemory;

impl ToolExecutor for InMemory {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, talon_tools::ToolError>> {
        let value = json!({"tool": entry.tool.name, "input": call.args});
        Box::pin(async move { Ok(value) })
    }
}

fn echo() -> ToolDefinition {
    ToolDefinition {
        name: "echo".into(),
        label: None,
        description: "Echo the input back.".into(),
        parameters: json!({"type": "object", "properties": {"i": {"type": "number"}}}),
        source: ToolSource::Openclaw,
        owner: "core".into(),
        catalog_mode: Default::default(),
        execution_mode: Default::default(),
        requires_approval: false,
        effect: Default::default(),
        replay_safe: false,
    }
}

fn run(code_mode: &CodeMode) -> CodeModeRun {
    let scope = RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s"),
        run_id: RunId::new("r"),
    };
    let mut tools = distractor_tools(199, 7);
    tools.push(echo());
    let catalog = CatalogBuilder::new(scope.clone())
        .core(tools)
        .build(&ToolPolicy::new())
        .unwrap();
    assert_eq!(catalog.len(), 200);
    let runner = Arc::new(ToolRunner::new(Arc::new(catalog), Arc::new(InMemory)));
    let ctx = RunContext {
        scope,
        session_key: "k".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    };
    code_mode.start_run(RunSetup {
        config: CodeModeConfig::default(),
        runner,
        ctx,
        mcp: None,
        plugin_config: Value::Null,
        exec_hooks: Vec::new(),
        resume: Vec::new(),
    })
}

fn code_mode(store: Arc<dyn SnapshotStore>) -> CodeMode {
    CodeMode::new(CodeModeOptions {
        sandbox: Default::default(),
        store,
        namespaces: Arc::new(NamespaceRegistry::new()),
    })
    .unwrap()
}

struct Stats {
    p50: Duration,
    p95: Duration,
    mean: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let n = samples.len();
    Stats {
        p50: samples[n / 2],
        p95: samples[(n * 95 / 100).min(n - 1)],
        mean: samples.iter().sum::<Duration>() / n as u32,
    }
}

fn report(name: &str, s: &Stats, anchor: &str) {
    println!(
        "{name:<48} p50 {:>8.3} ms  p95 {:>8.3} ms  mean {:>8.3} ms   ({anchor})",
        s.p50.as_secs_f64() * 1e3,
        s.p95.as_secs_f64() * 1e3,
        s.mean.as_secs_f64() * 1e3
    );
}

async fn measure<F, Fut>(iterations: usize, mut f: F) -> Stats
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..iterations / 10 + 5 {
        f().await;
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        f().await;
        samples.push(started.elapsed());
    }
    stats(samples)
}

fn completed(result: &CodeModeResult) {
    assert!(
        matches!(result, CodeModeResult::Completed { .. }),
        "{result:?}"
    );
}

async fn cycle(run: &CodeModeRun) {
    let waiting = run
        .exec(
            "c",
            json!({"code": "await yield_control('bench'); return 1;"}),
        )
        .await;
    let CodeModeResult::Waiting { cell_id, .. } = waiting else {
        panic!("{waiting:?}")
    };
    completed(&run.wait("w", json!({"runId": cell_id})).await);
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let memory = code_mode(Arc::new(MemoryStore::new(StoreLimits::default())));
        let run_memory = run(&memory);
        println!("Code Mode over a 200-tool catalog (in-memory tools)");
        let s = measure(2000, || async {
            completed(&run_memory.exec("c", json!({"code": "return 1 + 1;"})).await);
        })
        .await;
        report("trivial cell, exec end to end", &s, "target <= 1 ms median");
        let s = measure(500, || async {
            completed(
                &run_memory
                    .exec(
                        "c",
                        json!({"code": "const r = await Promise.all(Array.from({length: 100}, (_, i) => tools.echo({i}))); return r.length;"}),
                    )
                    .await,
            );
        })
        .await;
        report("100 parallel nested calls", &s, "target <= 5 ms");
        let s = measure(1000, || async {
            completed(
                &run_memory
                    .exec(
                        "c",
                        json!({"code": "const hits = await tools.search('echo the input'); return await tools.call(hits[0].id, {i: 1});"}),
                    )
                    .await,
            );
        })
        .await;
        report("tools.search then tools.call", &s, "no anchor");
        let s = measure(1000, || async {
            completed(
                &run_memory
                    .exec("c", json!({"code": "return ALL_TOOLS.length;"}))
                    .await,
            );
        })
        .await;
        report("read ALL_TOOLS (200 entries)", &s, "no anchor");
        let s = measure(1000, || cycle(&run_memory)).await;
        report("suspend/resume cycle, memory store", &s, "target <= 2 ms");
        let dir = tempfile::tempdir().unwrap();
        let file = code_mode(Arc::new(talon_codemode::open_file_store(dir.path(), StoreLimits::default()).unwrap()));
        let run_file = run(&file);
        let s = measure(500, || cycle(&run_file)).await;
        report("suspend/resume cycle, file store (fsync)", &s, "target <= 2 ms");
    });
}
