//! The in-process gateway the benchmarks drive (as `runs.rs` starts one),
//! its calls, and an SSE reader that notes each event's arrival.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use talon_gateway::{GatewayConfig, Limits, RunLimits};
use talon_mock_model::{MockModel, Script};
use talon_runtime::{Host, ModelRoute};

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    talon_testing::stats::percentile(sorted, p)
}

pub fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// The wall clock in milliseconds, with the microseconds.
pub fn now_ms_f() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as f64
        / 1e3
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

pub struct Bench {
    pub running: talon_gateway::Running,
    pub token: String,
    pub client: reqwest::Client,
    _dir: tempfile::TempDir,
    _mock: MockModel,
}

impl Bench {
    /// A gateway over `script` with `config` (its `agents.defaults` gets
    /// the workspace), on SQLite or, with `url`, on PostgreSQL.
    pub async fn start(script: Script, mut config: Value, url: Option<String>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        let mock = MockModel::start(script).await.unwrap();
        if config.get("agents").is_none() {
            config["agents"] = json!({"defaults": {}});
        }
        config["agents"]["defaults"]["workspace"] = json!(workspace);
        let host = Host::new(
            Arc::new(talon_config::Config::parse(&config.to_string(), None).unwrap()),
            ModelRoute {
                base_url: Some(mock.base_url()),
            },
        )
        .unwrap();
        let config = GatewayConfig {
            limits: Limits {
                calls_per_second: 1e9,
                burst: 1_000_000,
                ..Limits::default()
            },
            runs: RunLimits {
                max_concurrent: 256,
                ..RunLimits::default()
            },
            ..GatewayConfig::local(dir.path(), 0, Arc::new(host))
        };
        let config = match url {
            Some(url) => GatewayConfig {
                store: talon_store::StoreConfig::at(url, dir.path()),
                ..config
            },
            None => config,
        };
        let running = talon_gateway::start(config).await.unwrap();
        Self {
            token: running.admin_token.clone().unwrap(),
            running,
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(256)
                .build()
                .unwrap(),
            _dir: dir,
            _mock: mock,
        }
    }

    pub async fn call(&self, method: &str, params: Value) -> Value {
        call(
            &self.client,
            &self.running.addr.to_string(),
            &self.token,
            method,
            params,
        )
        .await
    }

    pub async fn events(&self, types: &str) -> Events {
        Events::open(
            &self.client,
            &self.running.addr.to_string(),
            &self.token,
            types,
        )
        .await
    }
}

/// `POST /v1/{method}` on `addr`, answered 200.
pub async fn call(
    client: &reqwest::Client,
    addr: &str,
    token: &str,
    method: &str,
    params: Value,
) -> Value {
    let response = client
        .post(format!("http://{addr}/v1/{method}"))
        .bearer_auth(token)
        .json(&params)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{method}: {body}");
    body
}

/// The envelope fields the benchmarks read.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seen {
    #[serde(rename = "type")]
    pub kind: String,
    pub run_id: Option<String>,
    pub task_id: Option<String>,
    #[serde(default)]
    pub data: Value,
    /// When it arrived (not on the wire).
    #[serde(skip, default = "Instant::now")]
    pub arrived: Instant,
    /// The same, on the wall clock in ms (not on the wire).
    #[serde(skip)]
    pub arrived_ms: f64,
}

/// Reads SSE events from `/v1/events`.
pub struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Events {
    pub async fn open(client: &reqwest::Client, addr: &str, token: &str, types: &str) -> Self {
        let response = client
            .get(format!("http://{addr}/v1/events?types={types}"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "/v1/events");
        Self {
            response,
            buffer: Vec::new(),
        }
    }

    pub async fn next(&mut self) -> Option<Seen> {
        loop {
            if let Some(mut seen) = take_event(&mut self.buffer) {
                seen.arrived = Instant::now();
                seen.arrived_ms = now_ms_f();
                return Some(seen);
            }
            let chunk = self.response.chunk().await.ok()??;
            self.buffer.extend_from_slice(&chunk);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Takes the whole SSE events at the front of `body` up to the first with
/// readable `data:`.
fn take_event(body: &mut Vec<u8>) -> Option<Seen> {
    while let Some(end) = find(body, b"\n\n") {
        let seen = body[..end]
            .split(|b| *b == b'\n')
            .find_map(|l| l.strip_prefix(b"data: "))
            .and_then(|data| serde_json::from_slice(data).ok());
        body.drain(..end + 2);
        if seen.is_some() {
            return seen;
        }
    }
    None
}

/// Every page of a list method (`key` names its array).
pub async fn list_all(
    client: &reqwest::Client,
    addr: &str,
    token: &str,
    method: &str,
    mut params: Value,
    key: &str,
) -> Vec<Value> {
    let mut all = Vec::new();
    params["limit"] = json!(500);
    loop {
        let page = call(client, addr, token, method, params.clone()).await;
        all.extend(page[key].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(cursor) => params["cursor"] = json!(cursor),
            None => return all,
        }
    }
}
