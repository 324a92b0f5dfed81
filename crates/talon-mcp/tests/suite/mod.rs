mod code_mode;
mod config;
mod failures;
mod real;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use talon_mcp::{EnvLookup, McpManager, servers_from_json};
use talon_testing::wait;

/// Where the pinned npm servers are installed.
pub fn npm_servers() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp-servers/node_modules/@modelcontextprotocol");
    assert!(
        dir.join("server-everything/dist/index.js").exists(),
        "the test MCP servers are not installed: run scripts/setup.sh --test-servers"
    );
    dir
}

pub fn everything_js() -> String {
    npm_servers()
        .join("server-everything/dist/index.js")
        .display()
        .to_string()
}

pub fn filesystem_js() -> String {
    npm_servers()
        .join("server-filesystem/dist/index.js")
        .display()
        .to_string()
}

pub fn fixture_js() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fixture_server.mjs")
        .display()
        .to_string()
}

/// An environment with PATH and HOME from the test process plus `extra`.
pub fn env_with(extra: &[(&str, &str)]) -> EnvLookup {
    let mut map: HashMap<String, String> = ["PATH", "HOME"]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_owned(), v)))
        .collect();
    for (k, v) in extra {
        map.insert((*k).to_owned(), (*v).to_owned());
    }
    Arc::new(move |name| map.get(name).cloned())
}

/// A manager over `servers` (the `mcp.servers` object).
pub fn manager(servers: Value) -> McpManager {
    McpManager::new(servers_from_json(&servers).unwrap(), env_with(&[]))
}

pub fn stdio_everything() -> Value {
    json!({"everything": {"command": "node", "args": [everything_js(), "stdio"]}})
}

pub fn fixture(mode: &str, extra: Value) -> Value {
    let mut server = json!({"command": "node", "args": [fixture_js(), mode]});
    if let (Value::Object(s), Value::Object(e)) = (&mut server, extra) {
        s.extend(e);
    }
    server
}

/// `node server-everything streamableHttp` on a free port, killed on drop.
pub struct HttpServer {
    pub url: String,
    _child: tokio::process::Child,
}

pub async fn http_everything() -> HttpServer {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let child = tokio::process::Command::new("node")
        .args([everything_js(), "streamableHttp".into()])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait::until_async(
        &format!("server-everything to listen on port {port}"),
        wait::DEADLINE,
        async || {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
        },
    )
    .await;
    HttpServer {
        url: format!("http://127.0.0.1:{port}/mcp"),
        _child: child,
    }
}

/// Whether a process exists (a zombie does not count).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.split_whitespace()
            .nth(2)
            .is_none_or(|state| state != "Z")
    })
}
