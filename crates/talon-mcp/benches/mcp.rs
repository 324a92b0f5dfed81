//! Talon's MCP path against raw `rmcp`, on the same server-everything
//! process kind: per-call latency of `echo` over stdio and streamable
//! HTTP (raw rmcp client; `McpManager::call_tool`; the catalog's single
//! execution path, `ToolRunner::call` with the MCP executor), and cold
//! connect time per transport. Results in `docs/benchmarks.md`.
//!
//! Needs the test servers: `scripts/setup.sh --test-servers`.
//! `cargo bench -p talon-mcp --bench mcp`
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

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use talon_mcp::{McpManager, servers_from_json};
use talon_tools::{
    Caller, CatalogBuilder, NoUpdates, RunContext, RunScope, ToolCall, ToolPolicy, ToolRunner,
};

fn everything_js() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../../tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(path.exists(), "run scripts/setup.sh --test-servers");
    path.display().to_string()
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn echo_params() -> CallToolRequestParams {
    CallToolRequestParams::new("echo").with_arguments(
        json!({"message": "hi"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

/// The three paths over one transport, interleaved call by call so that
/// drift in the server (Node's JIT, GC) hits all three alike.
async fn compare(
    label: &str,
    servers: Value,
    raw: rmcp::service::RunningService<rmcp::RoleClient, ()>,
) {
    const WARMUP: usize = 1000;
    const N: usize = 3000;
    let manager = McpManager::from_env(servers_from_json(&servers).unwrap());
    let run = manager.for_run().await;
    assert!(run.failed.is_empty(), "{:?}", run.failed);
    let scope = RunScope::default();
    let catalog = run
        .register(CatalogBuilder::new(scope.clone()))
        .build(&ToolPolicy::new())
        .unwrap();
    let runner = ToolRunner::new(Arc::new(catalog), Arc::new(manager.executor()));
    let ctx = RunContext {
        scope,
        session_key: "k".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    };
    let call = || ToolCall {
        call_id: "c".into(),
        id: "mcp:everything:echo".into(),
        args: json!({"message": "hi"}),
        caller: Caller::Direct,
    };
    let mut samples = [Vec::new(), Vec::new(), Vec::new()];
    for i in 0..WARMUP + N {
        let started = Instant::now();
        raw.call_tool(echo_params()).await.unwrap();
        let raw_time = started.elapsed();
        let started = Instant::now();
        manager
            .call_tool(None, "everything", "echo", json!({"message": "hi"}))
            .await
            .unwrap();
        let manager_time = started.elapsed();
        let started = Instant::now();
        assert_eq!(runner.call(&ctx, call()).await.status(), "ok");
        let runner_time = started.elapsed();
        if i >= WARMUP {
            samples[0].push(raw_time);
            samples[1].push(manager_time);
            samples[2].push(runner_time);
        }
    }
    let [raw_p50, manager_p50, runner_p50] = samples.map(p50);
    let overhead = |talon: Duration| (ms(talon) / ms(raw_p50) - 1.0) * 100.0;
    println!(
        "{label:<6} raw rmcp {:.3} ms | McpManager::call_tool {:.3} ms ({:+.1} %) | ToolRunner::call {:.3} ms ({:+.1} %)",
        ms(raw_p50),
        ms(manager_p50),
        overhead(manager_p50),
        ms(runner_p50),
        overhead(runner_p50),
    );
    manager.shutdown().await;
    let _ = raw.cancel().await;
}

async fn http_server() -> (String, tokio::process::Child) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new("node")
        .args([everything_js(), "streamableHttp".into()])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..400 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (format!("http://127.0.0.1:{port}/mcp"), child)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let stdio = json!({"everything": {"command": "node", "args": [everything_js(), "stdio"]}});
        // Cold connect: spawn + initialize (stdio), initialize (HTTP).
        let mut cold = Vec::new();
        for _ in 0..10 {
            let manager = McpManager::from_env(servers_from_json(&stdio).unwrap());
            let started = Instant::now();
            manager.connect("everything").await.unwrap();
            cold.push(started.elapsed());
            manager.shutdown().await;
        }
        println!(
            "cold connect, stdio (spawn node + initialize): p50 {:.1} ms",
            ms(p50(cold))
        );
        let (url, _server) = http_server().await;
        let http = json!({"everything": {"url": url}});
        let mut cold = Vec::new();
        for _ in 0..10 {
            let manager = McpManager::from_env(servers_from_json(&http).unwrap());
            let started = Instant::now();
            manager.connect("everything").await.unwrap();
            cold.push(started.elapsed());
            manager.shutdown().await;
        }
        println!(
            "cold connect, streamable HTTP (initialize): p50 {:.1} ms",
            ms(p50(cold))
        );

        let mut cmd = tokio::process::Command::new("node");
        cmd.args([everything_js(), "stdio".into()]);
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let raw = ().serve(transport).await.unwrap();
        compare("stdio", stdio, raw).await;
        let raw = ()
            .serve(StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()),
            ))
            .await
            .unwrap();
        compare("http", http, raw).await;
    });
}
