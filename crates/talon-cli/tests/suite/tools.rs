//! `talon tools search|describe` against a catalog file.

use std::process::Command;

use serde_json::{Value, json};

fn catalog_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("talon-tools-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("catalog.json");
    let tools = json!([
        {"name": "create_issue", "description": "Create a repository issue or bug report.", "source": "mcp", "owner": "github",
         "parameters": {"type": "object", "properties": {"title": {"type": "string"}}}},
        {"name": "send_message", "description": "Send a message to a Slack channel.", "source": "plugin", "owner": "slack",
         "parameters": {"type": "object", "properties": {"channel_id": {"type": "string"}}}},
        {"name": "read", "description": "Read a workspace file.", "label": "Read file"}
    ]);
    std::fs::write(&path, tools.to_string()).unwrap();
    path
}

fn talon(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_talon"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn search_prints_ranked_hits() {
    let file = catalog_file("search");
    let out = talon(&[
        "tools",
        "search",
        "--catalog",
        file.to_str().unwrap(),
        "--limit",
        "1",
        "file a bug report",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hits: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(hits[0]["id"], "mcp:github:create_issue");
    assert_eq!(hits[0]["name"], "create_issue");
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
    assert_eq!(hits.as_array().unwrap().len(), 1);
}

#[test]
fn queries_file_gives_one_line_per_query_in_order() {
    let file = catalog_file("queries");
    let queries = file.with_file_name("queries.txt");
    std::fs::write(&queries, "slack message\nquantum banana telescope\nread\n").unwrap();
    let out = talon(&[
        "tools",
        "search",
        "--catalog",
        file.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0][0]["id"], "plugin:slack:send_message");
    assert_eq!(lines[1], json!([]));
    assert_eq!(lines[2][0]["id"], "openclaw:core:read");
}

#[test]
fn describe_prints_the_full_entry() {
    let file = catalog_file("describe");
    let out = talon(&[
        "tools",
        "describe",
        "--catalog",
        file.to_str().unwrap(),
        "mcp:github:create_issue",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let entry: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(entry["id"], "mcp:github:create_issue");
    assert_eq!(
        entry["parameters"],
        json!({"type": "object", "properties": {"title": {"type": "string"}}})
    );
    let missing = talon(&[
        "tools",
        "describe",
        "--catalog",
        file.to_str().unwrap(),
        "mcp:github:nope",
    ]);
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn bad_catalog_files_are_usage_errors() {
    let file = catalog_file("bad");
    std::fs::write(&file, "{not json").unwrap();
    let out = talon(&["tools", "search", "--catalog", file.to_str().unwrap(), "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a JSON array of tools"));
    std::fs::write(&file, r#"[{"name": "wait", "description": "x"}]"#).unwrap();
    let out = talon(&["tools", "search", "--catalog", file.to_str().unwrap(), "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reserved"));
}
