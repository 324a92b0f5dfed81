//! The gateways the benchmarks drive: in-process (as `runs.rs` starts
//! one) or a `talon gateway` process; their calls, and an SSE reader that
//! notes each event's arrival.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// The `talon` binary: `TALON_BIN`, else `talon` beside this bench's
/// profile directory (`target/release/talon`), else the debug one.
fn talon_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("TALON_BIN") {
        return bin.into();
    }
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/tasks-<hash>
    let target = exe.parent().unwrap().parent().unwrap().parent().unwrap();
    ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("talon"))
        .find(|p| p.exists())
        .expect("build talon: cargo build --release -p talon-cli --features talon-cli/mock-model")
}

/// Where a gateway process's model is.
pub enum Model<'a> {
    /// `--mock-script` with this script (the mock inside the process).
    Script(&'a str),
    /// A provider `mock` at this base URL (a mock outside the process).
    At(&'a str),
}

/// A `talon gateway` process, its address and its directory (its
/// `stdout` and `stderr` are files there).
pub struct Node {
    pub child: tokio::process::Child,
    pub addr: String,
    pub dir: PathBuf,
    /// The admin token it printed (the first line of its stdout that
    /// is one: a wrapper such as heaptrack may print before it).
    pub token: String,
}

impl Node {
    /// Starts `talon gateway` in `dir` (made) with `config` (its
    /// `agents.defaults` gets the workspace) and `env`; waits until it
    /// listens.
    pub async fn start(
        dir: &Path,
        mut config: Value,
        model: Model<'_>,
        env: &[(&str, &str)],
    ) -> Self {
        std::fs::create_dir_all(dir.join("workspace")).unwrap();
        if config.get("agents").is_none() {
            config["agents"] = json!({"defaults": {}});
        }
        config["agents"]["defaults"]["workspace"] = json!(dir.join("workspace"));
        let mut command = tokio::process::Command::new(talon_bin());
        command.args(["gateway", "--listen", "127.0.0.1:0", "--config"]);
        command.arg(dir.join("talon.json5"));
        match model {
            Model::Script(script) => {
                std::fs::write(dir.join("script.json"), script).unwrap();
                command.arg("--mock-script").arg(dir.join("script.json"));
            }
            Model::At(url) => {
                config["models"] = json!({"providers": {"mock": {"baseUrl": url}}});
                config["agents"]["defaults"]["model"] = json!({"primary": "mock/mock-model"});
            }
        }
        std::fs::write(dir.join("talon.json5"), config.to_string()).unwrap();
        let child = command
            .env("HOME", dir)
            .env("TALON_STATE_DIR", dir.join("state"))
            .env_remove("TALON_CONFIG")
            .envs(env.iter().copied())
            .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
            if let Some(addr) = stderr
                .lines()
                .find_map(|l| l.strip_prefix("talon gateway: listening on http://"))
            {
                let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap();
                return Self {
                    child,
                    addr: addr.trim().to_owned(),
                    dir: dir.to_owned(),
                    token: stdout
                        .lines()
                        .map(str::trim)
                        .find(|l| l.starts_with("talon_"))
                        .unwrap_or_default()
                        .to_owned(),
                };
            }
            assert!(
                Instant::now() < deadline,
                "{} did not start: {stderr}",
                dir.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Its resident memory in MiB (`VmRSS` of `/proc/<pid>/status`).
    pub fn rss_mib(&self) -> f64 {
        let pid = self.child.id().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kib / 1024.0
    }
}
