//! The seeds' end-to-end plans through a real `talon gateway` process:
//! seed 004's Tool Search regression list ("E2E 검증") and seed 000's Code
//! Mode plan ("E2E 테스트 계획"), step by step, each on both wires (Chat
//! Completions and Anthropic Messages). The mock model is a real HTTP
//! server in the test process (the config's provider points at it, so it
//! records every request across the gateway's lives); the test catalog's
//! tools come from a real MCP stdio server (`tests/fixtures/
//! seed_mcp_server.mjs`), since the gateway has no plugin tools: seed
//! 004's "temporary fake plugin" is a fake MCP server here. The gateway is
//! stopped with SIGTERM (a clean exit), the config changed with `talon
//! config set`, and the gateway started again on the same state directory.
//!
//! Both wires share one set of snapshots: the session log does not depend
//! on the wire.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use talon_mock_model::{MockModel, Script};
use talon_testing::redact::Redactor;
use talon_testing::requests::{
    last_tool_result, tool_list as request_tool_list, tool_names as request_tools,
};
use talon_testing::wait;

use super::gateway::{Gateway, body, post, start_gateway_with, talon};

/// A provider's wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    OpenAi,
    Anthropic,
}

impl Wire {
    /// The provider's `api`.
    fn api(self) -> &'static str {
        match self {
            Self::OpenAi => "openai-completions",
            Self::Anthropic => "anthropic-messages",
        }
    }
}

/// The MCP server both plans configure (see its header).
fn fixture() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/seed_mcp_server.mjs"
    )
    .to_owned()
}

/// A client tool the app offers with each run (direct-only on the direct
/// and Tool Search surfaces, in the hidden catalog with Code Mode).
fn pick_color() -> Value {
    json!({
        "name": "pick_color",
        "description": "Let the user pick a colour.",
        "parameters": {"type": "object", "properties": {"palette": {"type": "string"}}}
    })
}

/// A test's home (config, state directory, workspace) and the mock model
/// serving every life of its gateway.
struct Plan {
    home: tempfile::TempDir,
    config: PathBuf,
    mock: MockModel,
    admin: Option<String>,
    // Serves the mock; dropped last.
    _runtime: tokio::runtime::Runtime,
}

impl Plan {
    /// A home whose config points the `mock/mock-model` provider at a mock
    /// replaying `turns` (in order, across runs and lives) over `wire`,
    /// starts the MCP `servers`, and has `tools` (JSON5 members).
    fn new(wire: Wire, turns: Value, servers: Value, tools: &str) -> Self {
        let home = tempfile::tempdir().unwrap();
        let workspace = home.path().join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(workspace.join("README.md"), "# Talon test workspace").unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let script = Script::from_json(&json!({ "turns": turns })).unwrap();
        let mock = runtime.block_on(MockModel::start(script)).unwrap();
        let config = home.path().join("talon.json5");
        std::fs::write(
            &config,
            format!(
                "// Written by the seed E2E tests.\n{{\n  \
                   models: {{ providers: {{ mock: {{ baseUrl: {url}, api: {api}, models: [{{ id: \"mock-model\" }}] }} }} }},\n  \
                   agents: {{ defaults: {{ model: {{ primary: \"mock/mock-model\" }}, workspace: {workspace} }} }},\n  \
                   mcp: {{ servers: {servers} }},\n  \
                   tools: {{ approvals: \"allow\", {tools} }},\n\
                 }}\n",
                url = json!(mock.base_url()),
                api = json!(wire.api()),
                workspace = json!(workspace),
            ),
        )
        .unwrap();
        Self {
            home,
            config,
            mock,
            admin: None,
            _runtime: runtime,
        }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    /// `talon config <args> --config <file>`: its stdout.
    fn talon_config(&self, args: &[&str]) -> String {
        let config = self.config.to_str().unwrap();
        let out = talon(
            self.home(),
            &[&["config"], args, &["--config", config]].concat(),
        );
        assert!(out.status.success(), "talon config {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// `talon config set PATH VALUE`, then `get` reads it back.
    fn set(&self, path: &str, value: &str) {
        self.talon_config(&["set", path, value]);
        assert_eq!(self.talon_config(&["get", path]).trim(), value);
    }

    /// Starts `talon gateway` on the config and the state directory (the
    /// admin token is the one the first start printed). Its cache
    /// directory is the home's, whatever the environment says: no
    /// embedding model there, so catalog searches rank lexically (the same
    /// hits on every machine).
    fn start(&mut self) -> Life {
        let cache = self.home().join("cache");
        let (mut gateway, addr, stderr) = start_gateway_with(
            self.home(),
            &["--config", self.config.to_str().unwrap()],
            &[("TALON_CACHE_DIR", &cache)],
        );
        if self.admin.is_none() {
            let mut admin = String::new();
            BufReader::new(gateway.stdout.take().unwrap())
                .read_line(&mut admin)
                .unwrap();
            self.admin = Some(admin.trim().to_owned());
        }
        Life {
            gateway,
            addr,
            admin: self.admin.clone().unwrap(),
            stderr,
        }
    }

    /// The mock's requests so far.
    fn requests(&self) -> Vec<Value> {
        self.mock.requests()
    }
}

/// One life of the gateway (killed if the test fails before `stop`).
struct Life {
    gateway: Gateway,
    addr: String,
    admin: String,
    stderr: BufReader<std::process::ChildStderr>,
}

impl Life {
    /// A method's result (it must answer 200).
    fn call(&self, method: &str, params: Value) -> Value {
        let response = post(&self.addr, &self.admin, method, &params.to_string());
        assert!(response.starts_with("HTTP/1.1 200"), "{method}: {response}");
        body(&response)
    }

    /// Starts a run; its id.
    fn create(&self, params: Value) -> String {
        self.call("runs.create", params)["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The run's result once it has ended.
    fn wait(&self, run_id: &str) -> Value {
        loop {
            let result = self.call("runs.wait", json!({"runId": run_id, "timeoutMs": 30_000}));
            if result["status"] != "accepted" {
                return result;
            }
        }
    }

    /// The run's session log: its events.
    fn events(&self, run_id: &str) -> Vec<Value> {
        let page = self.call("runs.events", json!({"runId": run_id}));
        assert_eq!(page["done"], true, "{page}");
        page["events"].as_array().unwrap().clone()
    }

    /// Runs `params` to its end: its result and its events.
    fn run(&self, params: Value) -> (Value, Vec<Value>) {
        let id = self.create(params);
        (self.wait(&id), self.events(&id))
    }

    /// The content of the run's trajectory artifact, as JSON.
    fn trajectory(&self, result: &Value) -> Value {
        let artifact = result["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["type"] == "trajectory")
            .unwrap_or_else(|| panic!("no trajectory: {result}"));
        let download = self.call("artifacts.download", json!({"artifactId": artifact["id"]}));
        let url = download["url"].as_str().unwrap();
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        write!(
            stream,
            "GET {url} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            self.addr, self.admin
        )
        .unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let response = String::from_utf8(response).unwrap();
        let (head, content) = response.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            !head.to_ascii_lowercase().contains("transfer-encoding"),
            "{head}"
        );
        serde_json::from_str(content).unwrap()
    }

    /// SIGTERM: the gateway stops cleanly (exit status 0); its log.
    fn stop(mut self) -> String {
        let status = Command::new("kill")
            .args(["-TERM", &self.gateway.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = self.gateway.wait().unwrap();
        let mut log = String::new();
        self.stderr.read_to_string(&mut log).unwrap();
        assert!(exit.success(), "{exit:?}: {log}");
        assert!(!log.contains("panicked"), "{log}");
        log
    }
}

/// A run's end event's telemetry.
fn telemetry(events: &[Value]) -> Value {
    events.last().unwrap()["data"]["telemetry"].clone()
}

/// `value` without what varies between runs of the same test on either
/// wire: a redactor's ids and times, the run id in a message id
/// (`msg_<run id>_0001`), a cell snapshot's size (the QuickJS heap's),
/// `raw` (the provider's own reply, which is the wire's), and the
/// telemetry's bytes of tools (counted in the wire's format; checked to
/// add up here, and against the recorded requests by the tests).
fn stable(r: &mut Redactor, value: &Value) -> Value {
    fn walk(r: &mut Redactor, value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("raw");
                if map.contains_key("event") && map.contains_key("bytes") {
                    map.insert("bytes".into(), "<bytes>".into());
                }
                if let (Some(tools), Some(prompt), Some(calls)) = (
                    map.get("toolBytes").and_then(Value::as_u64),
                    map.get("promptBytes").and_then(Value::as_u64),
                    map.get("modelCalls").and_then(Value::as_u64),
                ) {
                    assert_eq!(map["bytesSent"], (tools + prompt) * calls, "{map:?}");
                    map.insert("toolBytes".into(), "<wire bytes>".into());
                    map.insert("bytesSent".into(), "<wire bytes>".into());
                }
                map.values_mut().for_each(|v| walk(r, v));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(r, v)),
            Value::String(text) => {
                // `msg_run_<24 hex>_<n>`: the run id is no word of its own.
                if let Some(rest) = text.strip_prefix("msg_")
                    && rest.starts_with("run_")
                    && let Some((run, n)) = rest.split_at_checked(28)
                {
                    let run = r.value(&Value::String(run.to_owned()));
                    *text = format!("msg_{}{n}", run.as_str().unwrap());
                }
            }
            _ => {}
        }
    }
    let mut value = value.clone();
    walk(r, &mut value);
    super::sized(r.value(&value))
}

/// A run's session log as one whole value: [`stable`], each event's id
/// (the store's sequence) as `"<id>"`, streamed deltas left out.
fn log(r: &mut Redactor, events: &[Value]) -> Value {
    let whole = super::events(r, events);
    stable(r, &whole)
}

/// The events of a trajectory artifact.
fn trajectory_events(trajectory: &Value) -> Vec<Value> {
    match trajectory {
        Value::Array(events) => events.clone(),
        Value::Object(map) => map["events"].as_array().unwrap().clone(),
        other => panic!("a trajectory of {other}"),
    }
}

mod code_mode;
mod tool_search;
