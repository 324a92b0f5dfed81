mod approvals;
mod artifacts;
mod call_ends;
mod cell_approvals;
mod cells;
mod client_tools;
mod connections;
mod cost;
mod dashboard;
mod deletes;
mod deltas;
mod docs;
mod env_support;
mod environments;
mod event_types;
mod hostile;
mod http;
mod invoke;
mod limits;
mod nodes;
mod observe;
mod openai;
mod openai_responses;
mod process_nodes;
mod processes;
mod pull_requests;
mod questions;
mod raw;
mod retention;
mod run_ends;
mod run_list;
mod runs;
mod schedules;
mod scopes;
mod session_events;
mod ssh;
mod stream;
mod task_cancel;
mod tasks;
mod tokens;
mod toolspace;
pub mod ws;

use std::sync::Arc;

use serde_json::{Value, json};
use talon_gateway::{GatewayConfig, Running};
use talon_mock_model::{MockModel, Replay, Script, ScriptedCall, Turn};
use talon_runtime::{Host, ModelRoute};

/// A gateway on a free loopback port over a fresh state directory, its
/// runs' model served by a scripted mock.
pub struct TestGateway {
    pub running: Running,
    pub admin: String,
    pub client: reqwest::Client,
    pub dir: tempfile::TempDir,
    pub mock: Arc<MockModel>,
    /// Moves the gateway's clock (its store's) ahead, instead of a test
    /// sleeping until something expires.
    pub time: talon_protocol::clock::TimeTravel,
}

/// A config whose core tools work in `dir`/workspace, with `extra`
/// merged in (objects key by key, anything else replaced).
pub fn config_in(dir: &std::path::Path, extra: Value) -> talon_config::Config {
    fn merge(into: &mut Value, from: &Value) {
        match (into.as_object_mut(), from.as_object()) {
            (Some(into), Some(from)) => {
                for (k, v) in from {
                    merge(into.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
            _ => *into = from.clone(),
        }
    }
    let mut doc = json!({"agents": {"defaults": {"workspace": dir.join("workspace")}}});
    merge(&mut doc, &extra);
    talon_config::Config::parse(&doc.to_string(), None).unwrap()
}

/// A host over `config`, its model the mock.
pub fn host(config: talon_config::Config, mock: &MockModel) -> Arc<Host> {
    Arc::new(
        Host::new(
            Arc::new(config),
            ModelRoute {
                base_url: Some(mock.base_url()),
            },
        )
        .unwrap(),
    )
}

/// Options of a test gateway.
pub struct Options {
    pub limits: talon_gateway::Limits,
    pub script: Script,
    pub config: Value,
    pub runs: talon_gateway::RunLimits,
    pub environments: talon_gateway::EnvironmentPolicy,
    pub ssh_hosts: talon_gateway::SshHosts,
    pub browsers: talon_gateway::BrowserPolicy,
    pub ticket_ttl: std::time::Duration,
    pub openai: talon_gateway::OpenAiPolicy,
    pub base_path: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            limits: talon_gateway::Limits::default(),
            script: Script::texts(&["Hello from the mock."]),
            config: json!({}),
            runs: talon_gateway::RunLimits::default(),
            environments: talon_gateway::EnvironmentPolicy::default(),
            ssh_hosts: talon_gateway::SshHosts::default(),
            browsers: talon_gateway::BrowserPolicy::default(),
            ticket_ttl: talon_gateway::tokens::TICKET_TTL,
            openai: talon_gateway::OpenAiPolicy::default(),
            base_path: String::new(),
        }
    }
}

impl TestGateway {
    pub async fn start() -> Self {
        Self::start_opts(Options::default()).await
    }

    pub async fn start_with(limits: talon_gateway::Limits) -> Self {
        Self::start_opts(Options {
            limits,
            ..Options::default()
        })
        .await
    }

    pub async fn with_script(script: Script) -> Self {
        Self::start_opts(Options {
            script,
            ..Options::default()
        })
        .await
    }

    pub async fn start_opts(options: Options) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mock = Arc::new(MockModel::start(options.script).await.unwrap());
        let (clock, time) = talon_protocol::clock::Clock::adjustable();
        let local = GatewayConfig::local(
            dir.path(),
            0,
            host(config_in(dir.path(), options.config), &mock),
        );
        let config = GatewayConfig {
            store: talon_store::StoreConfig {
                clock,
                ..local.store.clone()
            },
            limits: options.limits,
            runs: options.runs,
            environments: options.environments,
            ssh_hosts: options.ssh_hosts,
            browsers: options.browsers,
            ticket_ttl: options.ticket_ttl,
            openai: options.openai,
            base_path: options.base_path,
            ..local
        };
        let running = talon_gateway::start(config).await.unwrap();
        let admin = running
            .admin_token
            .clone()
            .expect("a first start mints an admin token");
        Self {
            running,
            admin,
            client: reqwest::Client::new(),
            dir,
            mock,
            time,
        }
    }

    /// A config for another gateway on this one's state directory.
    pub fn same_state(&self) -> GatewayConfig {
        GatewayConfig::local(
            self.dir.path(),
            0,
            host(config_in(self.dir.path(), json!({})), &self.mock),
        )
    }

    /// Stops this gateway, then starts another on its state directory and
    /// mock model, with `config` merged in as [`Options::config`] is.
    pub async fn restarted(self, config: Value) -> Self {
        let Self {
            running,
            admin,
            client,
            dir,
            mock,
            time,
        } = self;
        let clock = running.store.clock().clone();
        running.shutdown().await;
        let mut next =
            GatewayConfig::local(dir.path(), 0, host(config_in(dir.path(), config), &mock));
        next.store.clock = clock;
        Self {
            running: talon_gateway::start(next).await.unwrap(),
            admin,
            client,
            dir,
            mock,
            time,
        }
    }

    /// Runs `input` to its end (it must complete) with the admin token:
    /// its result and its events.
    pub async fn completed_run(&self, input: &str) -> (Value, Vec<Value>) {
        let (status, run) = self
            .call(&self.admin, "runs.create", json!({"input": input}))
            .await;
        assert_eq!(status, 200, "{run}");
        let (_, result) = self
            .call(
                &self.admin,
                "runs.wait",
                json!({"runId": run["id"], "timeoutMs": 20_000}),
            )
            .await;
        assert_eq!(result["status"], "completed", "{result}");
        let (_, page) = self
            .call(&self.admin, "runs.events", json!({"runId": run["id"]}))
            .await;
        (result, page["events"].as_array().unwrap().clone())
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.running.addr)
    }

    /// `GET /v1/artifacts/<id>/content` with the admin token, `range` its
    /// `Range` header if any.
    pub async fn artifact_content(&self, id: &Value, range: Option<&str>) -> reqwest::Response {
        let url = format!("/v1/artifacts/{}/content", id.as_str().unwrap());
        let mut request = self.client.get(self.url(&url)).bearer_auth(&self.admin);
        if let Some(range) = range {
            request = request.header("range", range);
        }
        request.send().await.unwrap()
    }

    /// The whole content of the artifact `id`, as text.
    pub async fn artifact_text(&self, id: &Value) -> String {
        self.artifact_content(id, None).await.text().await.unwrap()
    }

    /// `POST /v1/<method>` with `token`: the status and the JSON body.
    pub async fn call(&self, token: &str, method: &str, params: Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(&format!("/v1/{method}")))
            .bearer_auth(token)
            .json(&params)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }
}

/// One scripted turn that calls `name` with `arguments`.
pub fn tool_turn(name: &str, arguments: Value) -> Turn {
    Turn {
        tool_calls: vec![ScriptedCall {
            name: name.into(),
            arguments,
        }],
        ..Turn::default()
    }
}

/// Every run calls `name` with `arguments` once, then says `text`.
pub fn call_then_say(name: &str, arguments: Value, text: &str) -> Script {
    calls_then_say(vec![tool_turn(name, arguments)], text)
}

/// Every run takes the turns `calls` (each a [`tool_turn`]), then says `text`.
pub fn calls_then_say(calls: Vec<Turn>, text: &str) -> Script {
    let mut turns = calls;
    turns.push(Turn {
        text: Some(text.into()),
        ..Turn::default()
    });
    Script {
        turns,
        replay: Replay::PerRun,
        ..Script::default()
    }
}

/// The first of a run's pending requests of a kind (`approvals` or
/// `questions`), once there is one.
pub async fn next_pending(g: &TestGateway, t: &ws::Transport, kind: &str, run_id: &Value) -> Value {
    let what = format!("the run's next pending {kind}");
    talon_testing::wait::until_async(&what, talon_testing::wait::DEADLINE, async || {
        let list = t
            .call(
                g,
                &format!("{kind}.list"),
                json!({"runId": run_id, "status": "pending"}),
            )
            .await
            .unwrap();
        list[kind].as_array().unwrap().first().cloned()
    })
    .await
}

/// A run's stored events (`runs.events`, the first page).
pub async fn stored_events(g: &TestGateway, t: &ws::Transport, run_id: &Value) -> Vec<Value> {
    let page = t
        .call(g, "runs.events", json!({"runId": run_id}))
        .await
        .unwrap();
    page["events"].as_array().unwrap().clone()
}

/// What the model was last told of a call: the content of the last tool
/// message of its last request.
pub fn told(g: &TestGateway) -> String {
    let requests = g.mock.requests();
    let last = requests.last().unwrap();
    let tool = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap();
    tool["content"].as_str().unwrap().to_owned()
}
