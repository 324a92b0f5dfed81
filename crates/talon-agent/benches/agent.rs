//! The agent against a 200-tool MCP catalog and the mock model: request
//! payload per surface, the step gap (end of the model's tool-call reply
//! to the start of the next request), a one-shot `talon agent` process,
//! and memory over 100 turns. Results in `docs/benchmarks.md`.
//!
//! Needs `scripts/setup.sh` (Node) and, for the one-shot case,
//! `cargo build --release -p talon-cli`.
//! `cargo bench -p talon-agent --bench agent`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_agent::{AgentRun, NoEvents, RunEvents, RunOptions, RunStatus};
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, MemoryStore, NamespaceRegistry, RunSetup,
    StoreLimits,
};
use talon_core_tools::CoreTools;
use talon_mcp::{McpManager, servers_from_json};
use talon_mock_model::{MockModel, Script};
use talon_provider::ProviderConfig;
use talon_provider::config::OPENAI_COMPLETIONS;
use talon_provider::openai::OpenAiCompatible;
use talon_tools::{
    CatalogBuilder, DirectSurface, NoUpdates, RunContext, RunScope, ToolPolicy, ToolRunner,
    ToolSurface,
};
use talon_toolsearch::{CodeSandbox, ToolSearch, ToolSearchConfig, build_surface};

fn fixture_js() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../talon-mcp/tests/fixtures/fixture_server.mjs")
        .display()
        .to_string()
}

fn ctx(run: &str) -> RunContext {
    RunContext {
        scope: RunScope {
            agent_id: AgentId::new("main"),
            session_id: SessionId::new("s"),
            run_id: RunId::new(run),
        },
        session_key: "k".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

struct Env {
    manager: McpManager,
    code_mode: CodeMode,
    sandbox: CodeSandbox,
    core: CoreTools,
    _dir: tempfile::TempDir,
}

async fn runner(env: &Env, run: &str) -> Arc<ToolRunner> {
    let servers = env.manager.for_run().await;
    assert!(servers.failed.is_empty(), "{:?}", servers.failed);
    let catalog = servers
        .register(CatalogBuilder::new(ctx(run).scope))
        .build(&ToolPolicy::new())
        .unwrap();
    let _ = &env.core;
    Arc::new(ToolRunner::new(
        Arc::new(catalog),
        Arc::new(env.manager.executor()),
    ))
}

fn surface(env: &Env, kind: &str, runner: &Arc<ToolRunner>, run: &str) -> Arc<dyn ToolSurface> {
    match kind {
        "direct" => Arc::new(DirectSurface::new(runner.clone())),
        "code_mode" => {
            let config =
                CodeModeConfig::resolve(Some(&serde_json::from_value(json!(true)).unwrap()), None)
                    .unwrap();
            Arc::new(env.code_mode.start_run(RunSetup {
                config,
                runner: runner.clone(),
                ctx: ctx(run),
                mcp: Some(Arc::new(env.manager.clone())),
                plugin_config: Value::Null,
                exec_hooks: Vec::new(),
                resume: Vec::new(),
            }))
        }
        mode => {
            let config = ToolSearchConfig::from_setting(Some(
                &serde_json::from_value(json!({"mode": mode})).unwrap(),
            ))
            .unwrap();
            let surface = build_surface(runner.catalog(), Some(&config)).unwrap();
            Arc::new(
                ToolSearch::new(config, surface, runner.clone(), Some(env.sandbox.clone()))
                    .unwrap(),
            )
        }
    }
}

async fn mock(turns: Value) -> (MockModel, OpenAiCompatible) {
    let mock = MockModel::start(Script::from_json(&json!({"turns": turns})).unwrap())
        .await
        .unwrap();
    let config = ProviderConfig::new("mock", OPENAI_COMPLETIONS, &mock.base_url());
    (mock, OpenAiCompatible::new(config).unwrap())
}

async fn turn(env: &Env, kind: &str, turns: Value, run: &str) -> (MockModel, RunStatus) {
    let (mock, client) = mock(turns).await;
    let runner = runner(env, run).await;
    let surface = surface(env, kind, &runner, run);
    let agent = AgentRun {
        provider: &client,
        surface,
        ctx: ctx(run),
        events: Arc::new(RunEvents::new(Arc::new(NoEvents), &ctx(run))),
        options: RunOptions {
            model: "mock-model".into(),
            ..RunOptions::default()
        },
    };
    let status = agent
        .run(Vec::new(), "Create an issue in workspace w1.")
        .await
        .status;
    (mock, status)
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn rss_kib() -> u64 {
    talon_testing::stats::status_kib("VmRSS")
}

/// Step gaps of `n` two-turn runs: tool call, then text.
async fn step_gap(env: &Env, kind: &str, call: Value, n: usize) -> Duration {
    let mut gaps = Vec::new();
    for i in 0..n + 3 {
        let (mock, status) = turn(
            env,
            kind,
            json!([{"toolCalls": [call.clone()]}, {"text": "done"}]),
            &format!("g{i}"),
        )
        .await;
        assert_eq!(status, RunStatus::Completed);
        let timings = mock.timings();
        let gap = timings[1].0.duration_since(timings[0].1.unwrap());
        if i >= 3 {
            gaps.push(gap);
        }
    }
    p50(gaps)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let env = Env {
            manager: McpManager::from_env(
                servers_from_json(&json!({"synth": {"command": "node", "args": [fixture_js(), "catalog", "200"]}}))
                    .unwrap(),
            ),
            code_mode: CodeMode::new(CodeModeOptions {
                sandbox: Default::default(),
                store: Arc::new(MemoryStore::new(StoreLimits::default())),
                namespaces: Arc::new(NamespaceRegistry::new()),
            })
            .unwrap(),
            sandbox: CodeSandbox::new(Default::default()).unwrap(),
            core: CoreTools::new(dir.path()).unwrap(),
            _dir: dir,
        };
        println!("200-tool MCP catalog (fixture `catalog 200`, stdio), mock model");
        println!("surface      tool definitions   whole first request");
        for kind in ["direct", "code_mode", "code", "tools", "directory"] {
            let (mock, status) = turn(&env, kind, json!([{"text": "ok"}]), "p").await;
            assert_eq!(status, RunStatus::Completed);
            let request = &mock.requests()[0];
            let tools = request["tools"].to_string().len();
            let whole = request.to_string().len();
            println!("{kind:<12} {:>10} B {:>15} B", tools, whole);
        }

        let server_time = {
            let mut samples = Vec::new();
            for _ in 0..200 {
                let started = Instant::now();
                env.manager
                    .call_tool(None, "synth", "synth_000_create_issue", json!({"workspace_id": "w1"}))
                    .await
                    .unwrap();
                samples.push(started.elapsed());
            }
            p50(samples)
        };
        println!("MCP call on its own (manager -> fixture server -> back): p50 {:.3} ms", ms(server_time));
        let trivial = step_gap(&env, "code_mode", json!({"name": "exec", "arguments": {"code": "return 1;"}}), 30).await;
        println!("step gap, trivial cell:                        p50 {:.3} ms", ms(trivial));
        let search_call = step_gap(&env, "code_mode", json!({"name": "exec", "arguments": {"code":
            "const files = await API.list('mcp'); const api = await MCP.synth.$api('synth_000_create_issue'); return await MCP.synth.synth000CreateIssue({workspace_id: 'w1'});"}}), 30).await;
        println!("step gap, cell with API + $api + MCP call:      p50 {:.3} ms", ms(search_call));
        for (label, code) in [
            ("cell with one MCP call", "return await MCP.synth.synth000CreateIssue({workspace_id: 'w1'});"),
            ("cell with API.list('mcp')", "return (await API.list('mcp')).length;"),
            ("cell with $api(tool)", "return (await MCP.synth.$api('synth_000_create_issue')).length;"),
        ] {
            let gap = step_gap(&env, "code_mode", json!({"name": "exec", "arguments": {"code": code}}), 30).await;
            println!("step gap, {label:<36} p50 {:.3} ms", ms(gap));
        }
        let direct = step_gap(&env, "direct", json!({"name": "synth_000_create_issue", "arguments": {"workspace_id": "w1"}}), 30).await;
        println!("step gap, direct MCP call:                     p50 {:.3} ms", ms(direct));

        // Memory over 100 turns (one shared MCP manager and Code Mode runtime).
        let mut marks = Vec::new();
        for i in 1..=100 {
            let (_mock, status) = turn(&env, "code_mode", json!([{"toolCalls": [{"name": "exec", "arguments": {"code":
                "return (await MCP.synth.synth001ListIssue({workspace_id: 'w1'})).structuredContent;"}}]}, {"text": "done"}]), &format!("m{i}")).await;
            assert_eq!(status, RunStatus::Completed);
            if [1, 10, 50, 100].contains(&i) {
                marks.push((i, rss_kib()));
            }
        }
        println!("resident memory after turn: {}", marks.iter().map(|(i, k)| format!("{i}: {:.1} MiB", *k as f64 / 1024.0)).collect::<Vec<_>>().join(", "));
        env.manager.shutdown().await;

        // One-shot `talon agent`, process start to exit.
        let talon = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/talon");
        if !talon.exists() {
            println!("one-shot talon agent: skipped (cargo build --release -p talon-cli --features mock-model first)");
            return;
        }
        let home = tempfile::tempdir().unwrap();
        let script = home.path().join("script.json");
        std::fs::write(&script, json!({"turns": [
            {"toolCalls": [{"name": "exec", "arguments": {"code": "return await MCP.synth.synth000CreateIssue({workspace_id: 'w1'});"}}]},
            {"text": "Created."}]}).to_string()).unwrap();
        let config = home.path().join("talon.json5");
        std::fs::write(&config, json!({"tools": {"codeMode": {"enabled": true}},
            "mcp": {"servers": {"synth": {"command": "node", "args": [fixture_js(), "catalog", "200"]}}}}).to_string()).unwrap();
        let mut samples = Vec::new();
        for _ in 0..7 {
            let started = Instant::now();
            let out = std::process::Command::new(&talon)
                .args(["agent", "--config", config.to_str().unwrap(), "--mock-script", script.to_str().unwrap(),
                       "--workspace", home.path().join("ws").to_str().unwrap(), "-m", "Create an issue"])
                .env("HOME", home.path())
                .env("TALON_STATE_DIR", home.path().join("state"))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            samples.push(started.elapsed());
        }
        println!("one-shot talon agent (Code Mode, 1 MCP server to start, 2 mock turns): p50 {:.1} ms", ms(p50(samples)));
    });
}
