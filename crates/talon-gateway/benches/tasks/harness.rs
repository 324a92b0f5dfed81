//! The gateways the benchmarks drive: in-process (the support module's,
//! as `runs.rs` starts one) or a `talon gateway` process; the events they
//! read, each with its arrival noted, and paged lists.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_mock_model::Script;

use crate::support::gateway::{Gateway, call, pooled_client};
use crate::support::measure::now_ms_f;
use crate::support::sse::Envelope;

/// A gateway in this process over `script` with `config`, on SQLite or,
/// with `url`, on PostgreSQL; up to 256 runs at once.
pub async fn start(script: Script, config: Value, url: Option<String>) -> Gateway {
    Gateway::start(script, config, pooled_client(), |config, dir| {
        config.runs.max_concurrent = 256;
        if let Some(url) = url {
            config.store = talon_store::StoreConfig::at(url, dir);
        }
    })
    .await
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

impl Envelope for Seen {
    fn on_arrival(&mut self) {
        self.arrived = Instant::now();
        self.arrived_ms = now_ms_f();
    }
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
