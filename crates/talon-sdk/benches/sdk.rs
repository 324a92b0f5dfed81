//! The SDK's benchmarks (issue 16), in-process against a real gateway
//! whose model is the scripted mock on 127.0.0.1:
//!
//! 1. `runs.create` + `runs.wait`, one pair at a time: raw HTTP (reqwest,
//!    JSON built by hand) against the SDK's generated client and against
//!    the high-level layer (`agent.run` + `run.wait`), interleaved in
//!    blocks so that drift falls on all three alike; and one read
//!    (`agents.list`) the same three ways, for the SDK's own cost without
//!    a run inside;
//! 2. `run.events()` resuming after a dropped connection: a proxy
//!    (`talon_testing::proxy::StreamCutter`) cuts the run's stream after
//!    three events; the figure is the time from the cut to the fourth
//!    event in the consumer's hands (detecting the cut, reconnecting with
//!    the cursor, the gateway's replay).
//!
//! `cargo bench -p talon-sdk --bench sdk` (`-- quick` for a smoke run).
//! Client, mock and gateway share the machine's cores.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs,
    reason = "a benchmark binary fails loudly and prints its table"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::{Value, json};
use talon_gateway::GatewayConfig;
use talon_mock_model::{MockModel, Replay, Script, Turn};
use talon_runtime::{Host, ModelRoute};
use talon_sdk::protocol::gateway::params::{RunsCreateParams, RunsWaitParams};
use talon_sdk::{Client, ClientConfig, Talon};
use talon_testing::proxy::StreamCutter;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn summary(name: &str, mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    let p50 = percentile(&ms, 50.0);
    println!(
        "| {name} | {} | {p50:.3} | {:.3} | {:.3} | {mean:.3} |",
        ms.len(),
        percentile(&ms, 90.0),
        percentile(&ms, 99.0)
    );
    p50
}

fn create_params() -> RunsCreateParams {
    RunsCreateParams {
        agent_id: None,
        input: "hello".into(),
        session_key: None,
        session_id: None,
        tools: vec![],
        multitask_strategy: None,
        timeout_ms: None,
        environment_id: None,
        idempotency_key: None,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run(quick));
}

async fn run(quick: bool) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let script = Script {
        turns: vec![Turn {
            text: Some("Hello from the benchmark.".into()),
            ..Turn::default()
        }],
        replay: Replay::PerRun,
        forget_requests: true,
        ..Script::default()
    };
    let mock = MockModel::start(script).await.unwrap();
    let doc = json!({"agents": {"defaults": {"workspace": dir.path().join("workspace")}}});
    let config = talon_config::Config::parse(&doc.to_string(), None).unwrap();
    let host = Arc::new(
        Host::new(
            Arc::new(config),
            ModelRoute {
                base_url: Some(mock.base_url()),
            },
        )
        .unwrap(),
    );
    // The default rate (50 calls/s per token) would have the raw client
    // fail and the SDK wait out 429s: lift it, the cost measured is the
    // calls'.
    let running = talon_gateway::start(GatewayConfig {
        limits: talon_gateway::Limits {
            calls_per_second: 1e6,
            burst: 1_000_000,
            ..talon_gateway::Limits::default()
        },
        ..GatewayConfig::local(dir.path(), 0, host)
    })
    .await
    .unwrap();
    let token = running.admin_token.clone().unwrap();
    let url = format!("http://{}", running.addr);

    let raw = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap();
    let client = Client::new(ClientConfig::new(&url, &token)).unwrap();
    let talon = Talon::connect(&url, &token).await.unwrap();
    let agent = talon.agent("main");

    let raw_call = |method: &'static str, body: Value| {
        let raw = raw.clone();
        let url = url.clone();
        let token = token.clone();
        async move {
            let response = raw
                .post(format!("{url}/v1/{method}"))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success());
            response.json::<Value>().await.unwrap()
        }
    };

    let (blocks, per_block) = if quick { (3, 5) } else { (30, 10) };
    // Warm every path (connections, the model's first turn, SQLite pages).
    for _ in 0..20 {
        let run = agent.run("warm").await.unwrap();
        run.wait().await.unwrap();
    }

    let mut pair = [Vec::new(), Vec::new(), Vec::new()];
    let mut read = [Vec::new(), Vec::new(), Vec::new()];
    for block in 0..blocks {
        for offset in 0..3 {
            let mode = (block + offset) % 3;
            for _ in 0..per_block {
                let started = Instant::now();
                match mode {
                    0 => {
                        let accepted = raw_call("runs.create", json!({"input": "hello"})).await;
                        let run_id = accepted["runId"].as_str().unwrap().to_owned();
                        let result =
                            raw_call("runs.wait", json!({"runId": run_id, "timeoutMs": 30_000}))
                                .await;
                        assert_eq!(result["status"], "completed");
                    }
                    1 => {
                        let accepted = client.runs_create(create_params()).await.unwrap();
                        let result = client
                            .runs_wait(RunsWaitParams {
                                run_id: accepted.run_id,
                                timeout_ms: Some(30_000),
                            })
                            .await
                            .unwrap();
                        assert_eq!(
                            result.status,
                            talon_sdk::protocol::gateway::RunResultStatus::Completed
                        );
                    }
                    _ => {
                        let run = agent.run("hello").await.unwrap();
                        run.wait().await.unwrap();
                    }
                }
                pair[mode].push(started.elapsed().as_secs_f64() * 1000.0);
                let started = Instant::now();
                match mode {
                    0 => {
                        raw_call("agents.list", json!({})).await;
                    }
                    1 => {
                        client
                            .agents_list(talon_protocol::gateway::params::AgentsListParams {
                                limit: None,
                                cursor: None,
                            })
                            .await
                            .unwrap();
                    }
                    _ => {
                        talon.agents().await.unwrap();
                    }
                }
                read[mode].push(started.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    println!("\n## runs.create + runs.wait, one pair at a time (ms)\n");
    println!("| client | n | p50 | p90 | p99 | mean |");
    println!("|---|---|---|---|---|---|");
    let [raw_pair, low_pair, high_pair] = pair;
    let base = summary("raw HTTP (reqwest)", raw_pair);
    let low = summary("SDK, generated client", low_pair);
    let high = summary("SDK, agent.run + run.wait", high_pair);
    println!(
        "\noverhead at p50: generated {:+.3} ms ({:+.1} %), high level {:+.3} ms ({:+.1} %)",
        low - base,
        (low / base - 1.0) * 100.0,
        high - base,
        (high / base - 1.0) * 100.0
    );
    println!("\n## agents.list, one call at a time (ms)\n");
    println!("| client | n | p50 | p90 | p99 | mean |");
    println!("|---|---|---|---|---|---|");
    let [raw_read, low_read, high_read] = read;
    let base = summary("raw HTTP (reqwest)", raw_read);
    let low = summary("SDK, generated client", low_read);
    let high = summary("SDK, talon.agents()", high_read);
    println!(
        "\noverhead at p50: generated {:+.3} ms, high level {:+.3} ms",
        low - base,
        high - base
    );

    // Resume after a dropped connection.
    let proxy = StreamCutter::start(running.addr).await.unwrap();
    let through = Talon::connect(proxy.url(), &token).await.unwrap();
    let rounds = if quick { 10 } else { 200 };
    let mut resume = Vec::new();
    for _ in 0..rounds {
        let run = through.agent("main").run("hello").await.unwrap();
        run.wait().await.unwrap();
        let cuts = proxy.cut_count();
        proxy.cut_next_stream(3);
        let mut events = run.events();
        let mut seen = 0;
        while let Some(event) = events.next().await {
            event.unwrap();
            seen += 1;
            if seen == 4 {
                assert_eq!(proxy.cut_count(), cuts + 1, "the stream was cut");
                let cut = proxy.last_cut().unwrap();
                resume.push(cut.elapsed().as_secs_f64() * 1000.0);
            }
        }
        assert!(seen > 4);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    println!("\n## run.events(): a dropped connection to the first replayed event (ms)\n");
    println!("| path | n | p50 | p90 | p99 | mean |");
    println!("|---|---|---|---|---|---|");
    summary("cut after 3 events → 4th event", resume);
    running.shutdown().await;
}
