//! The OpenAI-compatible surface's cost (issue 31), in-process against
//! the scripted mock model (answering at once) on 127.0.0.1, over real
//! HTTP, pairs interleaved so the machine's drift falls on both sides:
//!
//! 1. **overhead**: `POST /v1/chat/completions` (not streamed) against
//!    the same run through the method table, `runs.create` then
//!    `runs.wait`; the paired difference's p50 is the layer's overhead
//!    (target: ≤ 1 ms);
//! 2. **first chunk**: a streamed chat completion's first content chunk
//!    against the native path's first `assistant.delta` (`runs.create`,
//!    then `GET /v1/runs/{id}/events`), both from the request's start.
//!
//! `cargo bench -p talon-gateway --bench openai` (`-- quick`: 30 pairs).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs,
    reason = "a benchmark binary fails loudly and prints its table"
)]

#[path = "support/mod.rs"]
mod support;

use std::time::Instant;

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script};

use support::gateway::Gateway;
use support::measure::{percentile, sorted};

struct Bench {
    url: String,
    token: String,
    client: reqwest::Client,
    _gateway: Gateway,
}

impl Bench {
    async fn start() -> Self {
        let script = Script {
            replay: Replay::PerRun,
            forget_requests: true,
            ..Script::texts(&["The answer is 42, said in a few words."])
        };
        let gateway = Gateway::start(script, json!({}), reqwest::Client::new(), |_, _| {}).await;
        Self {
            url: format!("http://{}", gateway.running.addr),
            token: gateway.token.clone(),
            client: gateway.client.clone(),
            _gateway: gateway,
        }
    }

    async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        let response = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response
    }

    /// `runs.create` + `runs.wait`: milliseconds.
    async fn native(&self) -> f64 {
        let start = Instant::now();
        let run: Value = self
            .post("/v1/runs.create", json!({"input": "hi"}))
            .await
            .json()
            .await
            .unwrap();
        let done: Value = self
            .post("/v1/runs.wait", json!({"runId": run["runId"]}))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(done["status"], "completed", "{done}");
        start.elapsed().as_secs_f64() * 1e3
    }

    /// A whole chat completion: milliseconds.
    async fn chat(&self) -> f64 {
        let start = Instant::now();
        let body: Value = self
            .post(
                "/v1/chat/completions",
                json!({"model": "talon/main", "messages": [{"role": "user", "content": "hi"}]}),
            )
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        start.elapsed().as_secs_f64() * 1e3
    }

    /// Milliseconds until `needle` appears in a streamed body.
    async fn first(&self, mut response: reqwest::Response, start: Instant, needle: &str) -> f64 {
        let mut seen = String::new();
        while let Some(chunk) = response.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains(needle) {
                return start.elapsed().as_secs_f64() * 1e3;
            }
        }
        panic!("no {needle} in {seen}");
    }

    /// A streamed chat completion's first content chunk.
    async fn chat_first(&self) -> f64 {
        let start = Instant::now();
        let response = self
            .post(
                "/v1/chat/completions",
                json!({"model": "talon/main", "stream": true,
                "messages": [{"role": "user", "content": "hi"}]}),
            )
            .await;
        self.first(response, start, "\"content\":\"The").await
    }

    /// The native path's first `assistant.delta`.
    async fn native_first(&self) -> f64 {
        let start = Instant::now();
        let run: Value = self
            .post("/v1/runs.create", json!({"input": "hi"}))
            .await
            .json()
            .await
            .unwrap();
        let response = self
            .client
            .get(format!(
                "{}/v1/runs/{}/events",
                self.url,
                run["runId"].as_str().unwrap()
            ))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        self.first(response, start, "event: assistant.delta").await
    }
}

fn row(name: &str, values: &[f64]) {
    let s = sorted(values.to_vec());
    println!(
        "| {name} | {:.2} | {:.2} | {:.2} |",
        percentile(&s, 50.0),
        percentile(&s, 95.0),
        percentile(&s, 99.0)
    );
}

fn main() {
    let quick = support::Args::parse(&[]).quick;
    let pairs = if quick { 30 } else { 500 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let bench = Bench::start().await;
        for _ in 0..20 {
            bench.native().await;
            bench.chat().await;
            bench.native_first().await;
            bench.chat_first().await;
        }
        let (mut native, mut chat, mut diff) = (Vec::new(), Vec::new(), Vec::new());
        let (mut native_first, mut chat_first, mut first_diff) =
            (Vec::new(), Vec::new(), Vec::new());
        for i in 0..pairs {
            // Alternate which side goes first.
            let (n, c) = if i % 2 == 0 {
                let n = bench.native().await;
                (n, bench.chat().await)
            } else {
                let c = bench.chat().await;
                (bench.native().await, c)
            };
            native.push(n);
            chat.push(c);
            diff.push(c - n);
            let (n, c) = if i % 2 == 0 {
                let n = bench.native_first().await;
                (n, bench.chat_first().await)
            } else {
                let c = bench.chat_first().await;
                (bench.native_first().await, c)
            };
            native_first.push(n);
            chat_first.push(c);
            first_diff.push(c - n);
        }
        println!("{pairs} interleaved pairs (ms)\n");
        println!("| measure | p50 | p95 | p99 |\n|---|---|---|---|");
        row("runs.create + runs.wait", &native);
        row("POST /v1/chat/completions", &chat);
        row("chat − native (paired)", &diff);
        row("first assistant.delta, runs.create + SSE", &native_first);
        row("first content chunk, streamed chat", &chat_first);
        row("chat − native first chunk (paired)", &first_diff);
    });
}
