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

/// Search hits with each score (positive) as `"<score>"`: a semantic
/// search's scores depend on the embedding model the machine has.
fn scored(hits: &Value) -> Value {
    let mut hits = hits.clone();
    for hit in hits.as_array_mut().unwrap() {
        assert!(hit["score"].as_f64().unwrap() > 0.0, "{hit}");
        hit["score"] = json!("<score>");
    }
    hits
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
    insta::assert_json_snapshot!(scored(&hits));
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
    let lines: Vec<Value> = lines.iter().map(scored).collect();
    insta::assert_json_snapshot!(lines);
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
    insta::assert_json_snapshot!(entry);
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

/// `talon` with an empty cache directory and no model path: no table.
fn talon_without_model(args: &[&str]) -> std::process::Output {
    let cache = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_talon"))
        .args(args)
        .env("TALON_CACHE_DIR", cache.path())
        .env_remove("TALON_EMBED_MODEL")
        .output()
        .unwrap()
}

#[test]
fn without_the_model_search_ranks_lexically_and_warns_once() {
    let file = catalog_file("lexical");
    let queries = file.with_file_name("queries.txt");
    std::fs::write(
        &queries,
        "slack message\nfile a bug report\nquantum banana telescope\n",
    )
    .unwrap();
    let args = [
        "tools",
        "search",
        "--catalog",
        file.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
    ];
    let out = talon_without_model(&args);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("semantic tool search is off").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("talon models prepare"), "{stderr}");
    // The same answers as an explicitly lexical search, with the model or
    // without it.
    let mut lexical_args = args.to_vec();
    lexical_args.push("--lexical");
    let lexical = talon(&lexical_args);
    assert_eq!(lexical.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&lexical.stdout)
    );
    assert!(
        !String::from_utf8_lossy(&lexical.stderr).contains("semantic tool search is off"),
        "--lexical never loads the table"
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Lexical scores are the same on every machine.
    insta::assert_json_snapshot!(lines);
}

#[test]
fn models_status_says_what_is_missing() {
    let out = talon_without_model(&["models", "status"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("all-minilm-l6-v2-0.1.2"), "{stdout}");
    assert!(stdout.contains("search is lexical"), "{stdout}");
    let out = talon_without_model(&["models", "prepare"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("talon models:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
