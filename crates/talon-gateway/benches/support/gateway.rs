//! An in-process gateway over the scripted mock model, in a temporary
//! directory, with a client of it; and the method call every bench makes.

use std::fmt::Display;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use talon_gateway::{GatewayConfig, Limits};
use talon_mock_model::{MockModel, Replay, Script, ScriptedCall, Turn};
use talon_runtime::{Host, ModelRoute};

use super::sse::{Envelope, Events};

/// Longer than the gateway's heap trimmer waits after runs end.
pub const SETTLE: Duration = Duration::from_secs(3);

/// A script every run replays: `text`; the mock keeps no requests (what
/// it would record is not the gateway's memory).
pub fn text_per_run(text: &str) -> Script {
    Script {
        turns: vec![Turn {
            text: Some(text.into()),
            ..Turn::default()
        }],
        replay: Replay::PerRun,
        forget_requests: true,
        ..Script::default()
    }
}

/// A script every run replays: a call of `tool` with `arguments`, then
/// `text`; the mock keeps no requests.
pub fn call_then_text(tool: &str, arguments: Value, text: &str) -> Script {
    Script {
        turns: vec![
            Turn {
                tool_calls: vec![ScriptedCall {
                    name: tool.into(),
                    arguments,
                }],
                ..Turn::default()
            },
            Turn {
                text: Some(text.into()),
                ..Turn::default()
            },
        ],
        replay: Replay::PerRun,
        forget_requests: true,
        ..Script::default()
    }
}

/// A client that keeps up to 256 idle connections to a host (for many
/// calls in flight at once).
pub fn pooled_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap()
}

/// A gateway in this process, its admin token and a client.
pub struct Gateway {
    pub running: talon_gateway::Running,
    /// The admin token (empty on a node of a shared store, which mints
    /// none: the caller sets the first node's).
    pub token: String,
    pub client: reqwest::Client,
    _mock: MockModel,
    _dir: tempfile::TempDir,
}

impl Gateway {
    /// Starts the mock model on `script` and a gateway on `doc` (its
    /// `agents.defaults.workspace` set to a `workspace` made in the
    /// gateway's temporary directory), SQLite, with a rate limit no bench
    /// reaches; `tune` changes the rest of its config (given the
    /// directory).
    pub async fn start(
        script: Script,
        mut doc: Value,
        client: reqwest::Client,
        tune: impl FnOnce(&mut GatewayConfig, &Path),
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        let mock = MockModel::start(script).await.unwrap();
        if doc.get("agents").is_none() {
            doc["agents"] = json!({"defaults": {}});
        }
        doc["agents"]["defaults"]["workspace"] = json!(workspace);
        let host = Host::new(
            Arc::new(talon_config::Config::parse(&doc.to_string(), None).unwrap()),
            ModelRoute {
                base_url: Some(mock.base_url()),
            },
        )
        .unwrap();
        let mut config = GatewayConfig {
            limits: Limits {
                calls_per_second: 1e9,
                burst: 1_000_000,
                ..Limits::default()
            },
            ..GatewayConfig::local(dir.path(), 0, Arc::new(host))
        };
        tune(&mut config, dir.path());
        let running = talon_gateway::start(config).await.unwrap();
        Self {
            token: running.admin_token.clone().unwrap_or_default(),
            running,
            client,
            _mock: mock,
            _dir: dir,
        }
    }

    /// `path` on this gateway.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.running.addr)
    }

    /// `POST /v1/{method}`, answered 200.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        call(&self.client, self.running.addr, &self.token, method, params).await
    }

    /// `runs.wait` on `run` (its id) for up to `timeout_ms`, answered
    /// `completed`.
    pub async fn wait_completed(&self, run: &Value, timeout_ms: u64) {
        let result = self
            .call("runs.wait", json!({"runId": run, "timeoutMs": timeout_ms}))
            .await;
        assert_eq!(result["status"], "completed", "{result}");
    }

    /// `GET path`, answered 200 (a stream, its body unread).
    pub async fn get(&self, path: &str) -> reqwest::Response {
        let response = self
            .client
            .get(self.url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response
    }

    /// The SSE events of `GET path`.
    pub async fn events<T: Envelope>(&self, path: &str) -> Events<T> {
        Events::new(self.get(path).await)
    }
}

/// `POST /v1/{method}` on `addr`, answered 200.
pub async fn call(
    client: &reqwest::Client,
    addr: impl Display,
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
