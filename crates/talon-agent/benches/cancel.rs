//! Cancellation latency (issue 11): for each kind of in-flight work of a
//! run, the time from `ctx.cancel.cancel()` to the moment the future that
//! awaits the work returns, and a check that nothing is left running
//! (the nested executor was dropped, the MCP server was told, the HTTP
//! connection closed, the process group is gone, the VM worker is idle).
//! Results in `docs/benchmarks.md`.
//!
//! The work runs as its own tokio task (two workers), the cancel comes from
//! the benchmark's main task, as a gateway's abort would; the return time
//! is taken inside the task right after the awaited future returns.
//!
//! Needs Node (the MCP fixture server).
//! `cargo bench -p talon-agent --bench cancel`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::panic,
    reason = "a benchmark binary"
)]

use std::future::Future;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_agent::{AgentRun, NoEvents, RunEvents, RunOptions, RunStatus};
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, CodeModeRun, MemoryStore, NamespaceRegistry,
    RunSetup, StoreLimits,
};
use talon_core_tools::{CoreTools, PolicyApprover};
use talon_mcp::{McpManager, servers_from_json};
use talon_mock_model::{MockModel, Script};
use talon_protocol::{
    CatalogMode, CodeModeErrorCode, CodeModeResult, ModelTool, ToolDefinition, ToolSource,
};
use talon_provider::config::OPENAI_COMPLETIONS;
use talon_provider::openai::OpenAiCompatible;
use talon_provider::{ChatRequest, Message, ModelProvider, ProviderConfig, ProviderError};
use talon_tools::{
    BoxFuture, CallOutcome, Caller, CancellationToken, CatalogBuilder, CatalogEntry, DirectSurface,
    NoUpdates, RunContext, RunScope, ToolCall, ToolExecutor, ToolPolicy, ToolRunner, ToolSurface,
};
use talon_toolsearch::{CodeSandbox, ToolSearch, ToolSearchConfig, build_surface};
use tokio::sync::Notify;

/// Measured repetitions per case (after [`WARMUP`] unmeasured ones).
const REPS: usize = 40;
const WARMUP: usize = 3;
/// The bound on the p95.
const TARGET: Duration = Duration::from_millis(10);
/// How long a check waits for something to be gone before failing.
const GONE_BOUND: Duration = Duration::from_secs(2);
/// The runtime's worker threads' name.
const WORKER: &str = "tokio-rt-worker";
/// The sandbox pools' worker threads' names.
const VM_WORKER: &str = "talon-vm";
/// Samples above this are listed with their workers' wait for a CPU.
const SLOW: Duration = Duration::from_millis(1);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn fixture_js() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../talon-mcp/tests/fixtures/fixture_server.mjs")
        .display()
        .to_string()
}

fn scope(run: &str) -> RunScope {
    RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s"),
        run_id: RunId::new(run),
    }
}

/// A run context with a fresh token.
fn ctx(run: &str) -> RunContext {
    RunContext {
        scope: scope(run),
        session_key: "agent:main:s".into(),
        sender: None,
        channel: None,
        cancel: CancellationToken::new(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

/// Samples of one case; `after` are secondary latencies (cancel to the
/// moment the check saw the work gone).
struct Case {
    name: &'static str,
    samples: Vec<Duration>,
    after: Option<(&'static str, Vec<Duration>)>,
    /// Process CPU time in the 100 ms after the last repetition.
    idle_cpu: Duration,
    /// Measured samples over [`SLOW`], their workers' wait for a CPU and
    /// time on one.
    slow: Vec<(Duration, Duration, Duration)>,
}

impl Case {
    /// The case's result; ends the case (its slow samples, the CPU the
    /// process uses once it is over).
    async fn new(
        name: &'static str,
        samples: Vec<Duration>,
        after: Option<(&'static str, Vec<Duration>)>,
    ) -> Self {
        let idle_cpu = cpu_over("", Duration::from_millis(100)).await;
        let mut slow = std::mem::take(&mut *SLOW_SAMPLES.lock().unwrap());
        // Warm-up repetitions are not samples.
        slow.retain(|(latency, _, _)| samples.contains(latency));
        Self {
            name,
            samples,
            after,
            idle_cpu,
            slow,
        }
    }
}

/// Nearest-rank percentile of sorted samples.
fn pct(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn summary(samples: &[Duration]) -> (Duration, Duration, Duration, Duration) {
    let mut s = samples.to_vec();
    s.sort();
    (s[0], pct(&s, 50.0), pct(&s, 95.0), s[s.len() - 1])
}

fn report(case: &Case) {
    let (min, p50, p95, max) = summary(&case.samples);
    let verdict = if p95 <= TARGET { "met" } else { "OVER" };
    println!(
        "{:<58} n={:<3} min {:>7.3}  p50 {:>7.3}  p95 {:>7.3}  max {:>7.3} ms  [{verdict}]",
        case.name,
        case.samples.len(),
        ms(min),
        ms(p50),
        ms(p95),
        ms(max)
    );
    if let Some((label, after)) = &case.after {
        let (min, p50, p95, max) = summary(after);
        println!(
            "    {label:<54} min {:>7.3}  p50 {:>7.3}  p95 {:>7.3}  max {:>7.3} ms",
            ms(min),
            ms(p50),
            ms(p95),
            ms(max)
        );
    }
    println!(
        "    process CPU in the 100 ms after the last repetition: {:.3} ms",
        ms(case.idle_cpu)
    );
    if !case.slow.is_empty() {
        let list: Vec<String> = case
            .slow
            .iter()
            .map(|(latency, waited, ran)| {
                format!("{:.2} ({:.2}, {:.2})", ms(*latency), ms(*waited), ms(*ran))
            })
            .collect();
        println!(
            "    samples over {} ms (runtime and VM workers waiting for a CPU, runtime workers on one): {}",
            SLOW.as_millis(),
            list.join(", ")
        );
    }
}

/// Field `field` of `/proc/self/task/*/schedstat` (0: time on a CPU,
/// 1: time runnable but waiting for a CPU; ns) summed over this process's
/// threads whose name starts with `prefix` (all threads for "").
fn schedstat(prefix: &str, field: usize) -> Duration {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += stat
            .split_whitespace()
            .nth(field)
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Duration::from_nanos(total)
}

fn threads_cpu(prefix: &str) -> Duration {
    schedstat(prefix, 0)
}

/// How long the runtime's workers and the VM workers waited for a CPU
/// (the machine's other load), so far.
fn workers_waited() -> Duration {
    schedstat(WORKER, 1) + schedstat(VM_WORKER, 1)
}

/// Whether a thread named `prefix*` of this process is running or runnable.
fn thread_running(prefix: &str) -> bool {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .any(|task| {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            comm.starts_with(prefix)
                && stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .next()
                    == Some("R")
        })
}

/// CPU time the threads named `prefix*` (all for "") use over `window`.
async fn cpu_over(prefix: &str, window: Duration) -> Duration {
    let before = threads_cpu(prefix);
    tokio::time::sleep(window).await;
    threads_cpu(prefix).saturating_sub(before)
}

/// State and process group of `pid`, if it exists.
fn proc_stat(pid: i32) -> Option<(String, i32, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, tail) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = tail.split_whitespace().collect();
    Some((
        fields.first()?.to_string(),
        fields.get(2)?.parse().ok()?,
        comm,
    ))
}

/// Live (not zombie) members of process group `pgid`, with their names.
fn group_members(pgid: i32) -> Vec<(i32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let (state, group, comm) = proc_stat(pid)?;
            (group == pgid && state != "Z").then_some((pid, comm))
        })
        .collect()
}

/// Waits for the shell command of a run to have written its group id to
/// `file` and to be in `sleep`; the group id and its members.
async fn sleeping_group(file: &Path) -> (i32, Vec<i32>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "the command never started");
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pgid) = text.trim().parse()
        {
            let members = group_members(pgid);
            if members.iter().any(|(_, comm)| comm == "sleep") {
                return (pgid, members.into_iter().map(|(pid, _)| pid).collect());
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Waits until every pid of `members` is gone or a zombie (they run
/// nothing); when.
async fn members_gone(members: &[i32]) -> Instant {
    let deadline = Instant::now() + GONE_BOUND;
    loop {
        if members
            .iter()
            .all(|&pid| proc_stat(pid).is_none_or(|(state, _, _)| state == "Z"))
        {
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "processes {members:?} outlived the cancel"
        );
        // tokio's timer has 1 ms ticks; this thread (the benchmark's own,
        // not a runtime worker) may block.
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// Runs `work` as a task, waits for `ready` (the work is in flight),
/// cancels `token`; the work's output, when the cancel was made, and how
/// long after it the work returned.
async fn cancel_when<T: Send + 'static>(
    token: &CancellationToken,
    work: impl Future<Output = T> + Send + 'static,
    ready: impl Future<Output = ()>,
) -> (T, Instant, Duration) {
    let task = tokio::spawn(async move {
        let out = work.await;
        (out, Instant::now())
    });
    tokio::time::timeout(Duration::from_secs(20), ready)
        .await
        .expect("the work never got in flight");
    assert!(!task.is_finished(), "the work ended before the cancel");
    let (waited, ran) = (workers_waited(), threads_cpu(WORKER));
    let cancelled = Instant::now();
    token.cancel();
    let (out, returned) = task.await.unwrap();
    let latency = returned.saturating_duration_since(cancelled);
    if latency > SLOW {
        let waited = workers_waited().saturating_sub(waited);
        let ran = threads_cpu(WORKER).saturating_sub(ran);
        SLOW_SAMPLES.lock().unwrap().push((latency, waited, ran));
    }
    (out, cancelled, latency)
}

/// Samples over [`SLOW`] of the current case, with how long the runtime's
/// and the VM workers waited for a CPU and the runtime's workers ran
/// between the cancel and the return (read just after it; upper bounds).
static SLOW_SAMPLES: Mutex<Vec<(Duration, Duration, Duration)>> = Mutex::new(Vec::new());

fn tool(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        label: None,
        description: description.into(),
        parameters: json!({"type": "object", "properties": {}}),
        source: ToolSource::Openclaw,
        owner: "core".into(),
        catalog_mode: CatalogMode::Default,
        execution_mode: Default::default(),
        requires_approval: false,
        effect: Default::default(),
        replay_safe: false,
    }
}

/// `mark` answers at once and says so; `slow` sleeps 30 s, and says when
/// it started and when its future was dropped.
#[derive(Default)]
struct Slow {
    marked: Notify,
    started: Notify,
    running: AtomicUsize,
    dropped: Mutex<Option<Instant>>,
}

struct Running<'a>(&'a Slow);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
        *self.0.dropped.lock().unwrap() = Some(Instant::now());
    }
}

impl ToolExecutor for Slow {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, talon_tools::ToolError>> {
        let slow = entry.tool.name == "slow";
        Box::pin(async move {
            if slow {
                self.running.fetch_add(1, Ordering::SeqCst);
                let _running = Running(self);
                self.started.notify_one();
                tokio::time::sleep(Duration::from_secs(30)).await;
            } else {
                self.marked.notify_one();
            }
            Ok(json!("done"))
        })
    }
}

impl Slow {
    /// Waits until the slow call's future was dropped; when.
    async fn dropped(&self) -> Instant {
        let deadline = Instant::now() + GONE_BOUND;
        loop {
            if let Some(at) = *self.dropped.lock().unwrap() {
                assert_eq!(self.running.load(Ordering::SeqCst), 0);
                return at;
            }
            assert!(
                Instant::now() < deadline,
                "the nested call was never dropped"
            );
            tokio::time::sleep(Duration::from_micros(100)).await;
        }
    }
}

/// A runner over `mark` and `slow` for run `run`, and the tools.
fn slow_runner(run: &str) -> (Arc<ToolRunner>, Arc<Slow>) {
    let catalog = CatalogBuilder::new(scope(run))
        .core([
            tool("mark", "Say that the cell got here."),
            tool("slow", "Take 30 seconds."),
        ])
        .build(&ToolPolicy::new())
        .unwrap();
    let slow = Arc::new(Slow::default());
    (
        Arc::new(ToolRunner::new(Arc::new(catalog), slow.clone())),
        slow,
    )
}

fn code_mode_run(
    code_mode: &CodeMode,
    runner: Arc<ToolRunner>,
    ctx: &RunContext,
    mcp: Option<&McpManager>,
) -> Arc<CodeModeRun> {
    let config =
        CodeModeConfig::resolve(Some(&serde_json::from_value(json!(true)).unwrap()), None).unwrap();
    Arc::new(code_mode.start_run(RunSetup {
        config,
        runner,
        ctx: ctx.clone(),
        mcp: mcp.map(|m| Arc::new(m.clone()) as Arc<dyn talon_tools::McpServers>),
        plugin_config: Value::Null,
        exec_hooks: Vec::new(),
        resume: Vec::new(),
    }))
}

fn is_aborted(result: &CodeModeResult) -> bool {
    matches!(
        result,
        CodeModeResult::Failed {
            code: Some(CodeModeErrorCode::Aborted),
            ..
        }
    )
}

/// Case 1: a Code Mode cell spinning in `for(;;){}` on a VM worker.
async fn busy_cell(code_mode: &CodeMode) -> Case {
    let mut samples = Vec::new();
    for i in 0..WARMUP + REPS {
        let run_id = format!("busy{i}");
        let ctx = ctx(&run_id);
        let (runner, slow) = slow_runner(&run_id);
        let run = code_mode_run(code_mode, runner, &ctx, None);
        let work = {
            let run = run.clone();
            async move {
                run.exec("c1", json!({"code": "await tools.mark({}); for (;;) {}"}))
                    .await
            }
        };
        let (result, _, latency) = cancel_when(&ctx.cancel, work, async {
            slow.marked.notified().await;
            // The cell is back on a VM worker, spinning.
            while !thread_running(VM_WORKER) {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        })
        .await;
        assert!(is_aborted(&result), "{result:?}");
        // The worker is idle: no VM thread burns CPU any more.
        let cpu = cpu_over(VM_WORKER, Duration::from_millis(20)).await;
        assert!(
            cpu < Duration::from_millis(2),
            "a VM worker still runs: {cpu:?} in 20 ms"
        );
        if i >= WARMUP {
            samples.push(latency);
        }
    }
    Case::new(
        "1. Code Mode cell in `for(;;){}` (exec -> aborted)",
        samples,
        None,
    )
    .await
}

/// Case 2: a Code Mode cell awaiting a nested call to a 30 s tool.
async fn cell_awaiting_slow_tool(code_mode: &CodeMode) -> Case {
    let mut samples = Vec::new();
    let mut dropped_after = Vec::new();
    for i in 0..WARMUP + REPS {
        let run_id = format!("nested{i}");
        let ctx = ctx(&run_id);
        let (runner, slow) = slow_runner(&run_id);
        let run = code_mode_run(code_mode, runner, &ctx, None);
        let work = {
            let run = run.clone();
            async move {
                run.exec("c1", json!({"code": "return await tools.slow({});"}))
                    .await
            }
        };
        let (result, cancelled, latency) =
            cancel_when(&ctx.cancel, work, slow.started.notified()).await;
        assert!(is_aborted(&result), "{result:?}");
        let dropped = slow.dropped().await;
        if i >= WARMUP {
            samples.push(latency);
            dropped_after.push(dropped.saturating_duration_since(cancelled));
        }
    }
    Case::new(
        "2. Code Mode cell awaiting a nested 30 s tool call",
        samples,
        Some(("nested executor future dropped after", dropped_after)),
    )
    .await
}

/// Case 3: a `tool_search_code` body awaiting `openclaw.tools.call` of the
/// slow tool.
async fn tool_search_body(sandbox: &CodeSandbox) -> Case {
    let mut samples = Vec::new();
    let mut dropped_after = Vec::new();
    for i in 0..WARMUP + REPS {
        let run_id = format!("ts{i}");
        let ctx = ctx(&run_id);
        let (runner, slow) = slow_runner(&run_id);
        let config = ToolSearchConfig::default();
        let surface = build_surface(runner.catalog(), Some(&config)).unwrap();
        let search =
            Arc::new(ToolSearch::new(config, surface, runner, Some(sandbox.clone())).unwrap());
        let work = {
            let (search, ctx) = (search.clone(), ctx.clone());
            async move {
                search
                    .handle(
                        &ctx,
                        "c1",
                        "tool_search_code",
                        json!({"code": "return await openclaw.tools.call('openclaw:core:slow', {})"}),
                    )
                    .await
            }
        };
        let (out, cancelled, latency) =
            cancel_when(&ctx.cancel, work, slow.started.notified()).await;
        assert_eq!(out["code"], "aborted", "{out}");
        let dropped = slow.dropped().await;
        if i >= WARMUP {
            samples.push(latency);
            dropped_after.push(dropped.saturating_duration_since(cancelled));
        }
    }
    Case::new(
        "3. tool_search_code awaiting openclaw.tools.call (30 s tool)",
        samples,
        Some(("nested executor future dropped after", dropped_after)),
    )
    .await
}

/// The fixture server's log: `hang <id>` and `cancelled <id>` lines.
struct FixtureLog(PathBuf);

impl FixtureLog {
    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn hangs(&self) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter_map(|l| l.strip_prefix("hang ").map(str::to_owned))
            .collect()
    }

    /// Waits for hang call number `n` (from 1); its request id.
    async fn hang(&self, n: usize) -> String {
        loop {
            let hangs = self.hangs();
            if hangs.len() >= n {
                return hangs[n - 1].clone();
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    }

    /// Waits until the server heard `notifications/cancelled` for `id`;
    /// when (to the polling's 0.1 ms).
    async fn cancelled(&self, id: &str) -> Instant {
        let deadline = Instant::now() + GONE_BOUND;
        let line = format!("cancelled {id}");
        loop {
            if self.lines().contains(&line) {
                return Instant::now();
            }
            assert!(
                Instant::now() < deadline,
                "the server never heard of the cancel of {id}"
            );
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

/// A runner over the MCP manager's tools for run `run`.
async fn mcp_runner(manager: &McpManager, run: &str) -> Arc<ToolRunner> {
    let servers = manager.for_run().await;
    assert!(servers.failed.is_empty(), "{:?}", servers.failed);
    let catalog = servers
        .register(CatalogBuilder::new(scope(run)))
        .build(&ToolPolicy::new())
        .unwrap();
    Arc::new(ToolRunner::new(
        Arc::new(catalog),
        Arc::new(manager.executor()),
    ))
}

/// Case 4: an MCP `tools/call` the server never answers, through the runner.
async fn mcp_call(manager: &McpManager, log: &FixtureLog, hangs: &mut usize) -> Case {
    let runner = mcp_runner(manager, "mcp").await;
    let mut samples = Vec::new();
    let mut told_after = Vec::new();
    for i in 0..WARMUP + REPS {
        let ctx = ctx("mcp");
        let work = {
            let (runner, ctx) = (runner.clone(), ctx.clone());
            async move {
                runner
                    .call(
                        &ctx,
                        ToolCall {
                            call_id: "c1".into(),
                            id: "mcp:fx:hang".into(),
                            args: json!({}),
                            caller: Caller::Direct,
                        },
                    )
                    .await
            }
        };
        *hangs += 1;
        let n = *hangs;
        let (outcome, cancelled, latency) = cancel_when(&ctx.cancel, work, async {
            log.hang(n).await;
        })
        .await;
        assert_eq!(outcome, CallOutcome::Aborted);
        let told = log.cancelled(&log.hang(n).await).await;
        if i >= WARMUP {
            samples.push(latency);
            told_after.push(told.saturating_duration_since(cancelled));
        }
    }
    Case::new(
        "4. MCP tools/call `hang` (stdio) through ToolRunner",
        samples,
        Some(("server logged notifications/cancelled after", told_after)),
    )
    .await
}

fn chat_request() -> ChatRequest {
    ChatRequest {
        model: "mock-model".into(),
        messages: vec![Message::User("hi".into())],
        tools: Arc::new(vec![ModelTool {
            name: "exec".into(),
            description: "Run code.".into(),
            parameters: json!({"type": "object", "properties": {"code": {"type": "string"}}}),
        }]),
        max_tokens: Some(100),
        stream: true,
        ..ChatRequest::default()
    }
}

fn client(base_url: &str) -> Arc<OpenAiCompatible> {
    let mut config = ProviderConfig::new("p", OPENAI_COMPLETIONS, base_url);
    config.timeout = std::time::Duration::from_millis(120_000);
    Arc::new(OpenAiCompatible::new(config).unwrap())
}

/// Case 5a: a request whose answer never comes (the mock sleeps 60 s before
/// its headers).
async fn provider_waiting() -> Case {
    let turns: Vec<Value> = (0..WARMUP + REPS)
        .map(|_| json!({"delayMs": 60_000, "text": "late"}))
        .collect();
    let mock = MockModel::start(Script::from_json(&json!({"turns": turns})).unwrap())
        .await
        .unwrap();
    let client = client(&mock.base_url());
    let mut samples = Vec::new();
    for i in 0..WARMUP + REPS {
        let token = CancellationToken::new();
        let work = {
            let (client, token) = (client.clone(), token.clone());
            async move { client.complete(&chat_request(), &|_| {}, &token).await }
        };
        let (result, _, latency) = cancel_when(&token, work, async {
            while mock.requests().len() <= i {
                tokio::time::sleep(Duration::from_micros(500)).await;
            }
        })
        .await;
        assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
        if i >= WARMUP {
            samples.push(latency);
        }
    }
    Case::new(
        "5a. provider complete, waiting for the reply's headers",
        samples,
        None,
    )
    .await
}

/// A Chat Completions endpoint whose streams send one text delta and
/// never end; each connection's close is reported on the channel.
fn endless_server() -> (String, tokio::sync::mpsc::UnboundedReceiver<Instant>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (closed, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            let Ok(mut socket) = socket else { continue };
            let closed = closed.clone();
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buf = vec![0u8; 64 << 10];
                let body_start = loop {
                    let n = socket.read(&mut buf).unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if let Some(i) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&request[..body_start]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                while request.len() < body_start + length {
                    let n = socket.read(&mut buf).unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"},\"finish_reason\":null}]}\n\n";
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                    event.len()
                );
                socket.write_all(response.as_bytes()).unwrap();
                // Never another byte; wait for the client to go.
                while matches!(socket.read(&mut buf), Ok(n) if n > 0) {}
                let _ = closed.send(Instant::now());
            });
        }
    });
    (url, rx)
}

/// Case 5b: a stream that sent a delta and never ends.
async fn provider_stream() -> Case {
    let (url, mut closed) = endless_server();
    let client = client(&url);
    let mut samples = Vec::new();
    let mut closed_after = Vec::new();
    for i in 0..WARMUP + REPS {
        let token = CancellationToken::new();
        let first = Arc::new(Notify::new());
        let work = {
            let (client, token, first) = (client.clone(), token.clone(), first.clone());
            async move {
                let sink = move |_| first.notify_one();
                client.complete(&chat_request(), &sink, &token).await
            }
        };
        let (result, cancelled, latency) = cancel_when(&token, work, first.notified()).await;
        assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
        let closed_at = tokio::time::timeout(GONE_BOUND, closed.recv())
            .await
            .expect("the client kept the connection open")
            .unwrap();
        if i >= WARMUP {
            samples.push(latency);
            closed_after.push(closed_at.saturating_duration_since(cancelled));
        }
    }
    Case::new(
        "5b. provider complete, mid-stream (stream never ends)",
        samples,
        Some(("server saw the connection closed after", closed_after)),
    )
    .await
}

/// A runner over the core tools in `dir`, everything approved.
fn core_runner(dir: &Path, run: &str) -> Arc<ToolRunner> {
    let catalog = CatalogBuilder::new(scope(run))
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    Arc::new(
        ToolRunner::new(Arc::new(catalog), Arc::new(CoreTools::new(dir).unwrap()))
            .with_approver(Arc::new(PolicyApprover::AllowAll)),
    )
}

/// Case 6: the core shell `exec` of `sleep 30`, through the runner.
async fn shell_exec() -> Case {
    let dir = tempfile::tempdir().unwrap();
    let runner = core_runner(dir.path(), "sh");
    let mut samples = Vec::new();
    let mut gone_after = Vec::new();
    for i in 0..WARMUP + REPS {
        let ctx = ctx("sh");
        let file = dir.path().join(format!("pgid{i}"));
        let work = {
            let (runner, ctx) = (runner.clone(), ctx.clone());
            async move {
                runner
                    .call(
                        &ctx,
                        ToolCall {
                            call_id: "c1".into(),
                            id: "openclaw:core:exec".into(),
                            args: json!({"command": format!("echo $$ > pgid{i}; sleep 30")}),
                            caller: Caller::Direct,
                        },
                    )
                    .await
            }
        };
        let members = Mutex::new((0, Vec::new()));
        let (outcome, cancelled, latency) = cancel_when(&ctx.cancel, work, async {
            *members.lock().unwrap() = sleeping_group(&file).await;
        })
        .await;
        assert_eq!(outcome, CallOutcome::Aborted);
        let (pgid, members) = members.into_inner().unwrap();
        let gone = members_gone(&members).await;
        assert!(
            group_members(pgid).is_empty(),
            "group {pgid} outlived the cancel"
        );
        if i >= WARMUP {
            samples.push(latency);
            gone_after.push(gone.saturating_duration_since(cancelled));
        }
    }
    Case::new(
        "6. core-tools exec `sleep 30` through ToolRunner",
        samples,
        Some(("process group gone (no live member) after", gone_after)),
    )
    .await
}

/// One mock turn calling `name` with `arguments`, then a text turn.
async fn one_call_model(name: &str, arguments: Value) -> (MockModel, Arc<OpenAiCompatible>) {
    let mock = MockModel::start(
        Script::from_json(&json!({"turns": [
            {"toolCalls": [{"name": name, "arguments": arguments}]},
            {"text": "never asked"},
        ]}))
        .unwrap(),
    )
    .await
    .unwrap();
    let client = client(&mock.base_url());
    (mock, client)
}

/// `AgentRun::run` on `surface`.
async fn agent_run(
    client: Arc<OpenAiCompatible>,
    surface: Arc<dyn ToolSurface>,
    ctx: RunContext,
) -> talon_agent::RunResult {
    let run = AgentRun {
        provider: &*client,
        surface,
        events: Arc::new(RunEvents::new(Arc::new(NoEvents), &ctx)),
        ctx,
        options: RunOptions {
            model: "mock-model".into(),
            timeout: Duration::from_secs(120),
            ..RunOptions::default()
        },
    };
    run.run(Vec::new(), "go").await
}

/// Case 7a: a whole run whose model asked for `sleep 30` (direct surface).
async fn agent_shell() -> Case {
    let dir = tempfile::tempdir().unwrap();
    let mut samples = Vec::new();
    let mut gone_after = Vec::new();
    for i in 0..WARMUP + REPS {
        let run_id = format!("agent-sh{i}");
        let ctx = ctx(&run_id);
        let file = dir.path().join(format!("pgid{i}"));
        let (mock, client) = one_call_model(
            "exec",
            json!({"command": format!("echo $$ > pgid{i}; sleep 30")}),
        )
        .await;
        let surface: Arc<dyn ToolSurface> =
            Arc::new(DirectSurface::new(core_runner(dir.path(), &run_id)));
        // The provider and the surface outlive the run (as in the engine);
        // dropping them is not the run's cancellation.
        let _keep = (client.clone(), surface.clone());
        let members = Mutex::new((0, Vec::new()));
        let (result, cancelled, latency) = cancel_when(
            &ctx.cancel,
            agent_run(client, surface, ctx.clone()),
            async {
                *members.lock().unwrap() = sleeping_group(&file).await;
            },
        )
        .await;
        assert_eq!(result.status, RunStatus::Cancelled, "{:?}", result.error);
        assert_eq!(mock.requests().len(), 1);
        let (pgid, members) = members.into_inner().unwrap();
        let gone = members_gone(&members).await;
        assert!(
            group_members(pgid).is_empty(),
            "group {pgid} outlived the run"
        );
        if i >= WARMUP {
            samples.push(latency);
            gone_after.push(gone.saturating_duration_since(cancelled));
        }
    }
    Case::new(
        "7a. AgentRun::run, direct surface, shell `sleep 30` in flight",
        samples,
        Some(("process group gone (no live member) after", gone_after)),
    )
    .await
}

/// Case 7b: a whole run whose Code Mode cell awaits the MCP `hang` tool.
async fn agent_code_mode_mcp(
    code_mode: &CodeMode,
    manager: &McpManager,
    log: &FixtureLog,
    hangs: &mut usize,
) -> Case {
    let mut samples = Vec::new();
    let mut told_after = Vec::new();
    for i in 0..WARMUP + REPS {
        let run_id = format!("agent-cm{i}");
        let ctx = ctx(&run_id);
        let (mock, client) =
            one_call_model("exec", json!({"code": "return await MCP.fx.hang({});"})).await;
        let runner = mcp_runner(manager, &run_id).await;
        let surface = code_mode_run(code_mode, runner, &ctx, Some(manager));
        let _keep = (client.clone(), surface.clone());
        *hangs += 1;
        let n = *hangs;
        let (result, cancelled, latency) = cancel_when(
            &ctx.cancel,
            agent_run(client, surface, ctx.clone()),
            async {
                log.hang(n).await;
            },
        )
        .await;
        assert_eq!(result.status, RunStatus::Cancelled, "{:?}", result.error);
        assert_eq!(mock.requests().len(), 1);
        let told = log.cancelled(&log.hang(n).await).await;
        if i >= WARMUP {
            samples.push(latency);
            told_after.push(told.saturating_duration_since(cancelled));
        }
    }
    Case::new(
        "7b. AgentRun::run, Code Mode cell awaiting MCP `hang`",
        samples,
        Some(("server logged notifications/cancelled after", told_after)),
    )
    .await
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let log = FixtureLog(dir.path().join("fixture.log"));
        let manager = McpManager::from_env(
            servers_from_json(&json!({"fx": {"command": "node", "args": [fixture_js(), "ok"],
                "env": {"FIXTURE_LOG_FILE": log.0.display().to_string()}}}))
            .unwrap(),
        );
        manager.connect("fx").await.unwrap();
        let code_mode = CodeMode::new(CodeModeOptions {
            sandbox: Default::default(),
            store: Arc::new(MemoryStore::new(StoreLimits::default())),
            namespaces: Arc::new(NamespaceRegistry::new()),
        })
        .unwrap();
        let sandbox = CodeSandbox::new(Default::default()).unwrap();
        let mut hangs = 0;

        println!(
            "cancel -> awaiting future returns; {REPS} repetitions per case after {WARMUP} warm-up; target p95 <= {} ms",
            TARGET.as_millis()
        );
        let cases = [
            busy_cell(&code_mode).await,
            cell_awaiting_slow_tool(&code_mode).await,
            tool_search_body(&sandbox).await,
            mcp_call(&manager, &log, &mut hangs).await,
            provider_waiting().await,
            provider_stream().await,
            shell_exec().await,
            agent_shell().await,
            agent_code_mode_mcp(&code_mode, &manager, &log, &mut hangs).await,
        ];
        for case in &cases {
            report(case);
        }
        let mut drops = Vec::new();
        for _ in 0..20 {
            let c = client("http://127.0.0.1:9/v1");
            let started = Instant::now();
            drop(c);
            drops.push(started.elapsed());
        }
        let (min, p50, _, max) = summary(&drops);
        println!(
            "not part of any case (7a/7b keep the client alive): dropping an OpenAiCompatible \
             (its native-tls context) takes min {:.3} p50 {:.3} max {:.3} ms",
            ms(min),
            ms(p50),
            ms(max)
        );
        manager.shutdown().await;
        let over: Vec<_> = cases
            .iter()
            .filter(|c| summary(&c.samples).2 > TARGET)
            .map(|c| c.name)
            .collect();
        if over.is_empty() {
            println!("every case's p95 is within {} ms", TARGET.as_millis());
        } else {
            println!("over the target: {over:?}");
        }
    });
}
