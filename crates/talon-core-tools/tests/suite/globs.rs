//! `list`'s and `grep`'s `glob`: a path glob (`*` within one directory,
//! `**` across them), an invalid or oversized glob a stable error, a
//! pathological one bounded.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_core_tools::MAX_GLOB_BYTES;
use talon_tools::ToolErrorCode;

use super::core_tools::{call, runner};

async fn tool(dir: &Path, name: &str, args: Value) -> Value {
    let (runner, ctx) = runner(dir);
    tokio::time::timeout(Duration::from_secs(10), call(&runner, &ctx, name, args))
        .await
        .unwrap_or_else(|_| panic!("{name} hung"))
}

fn tree() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    for path in [
        "a.rs",
        "src/b.rs",
        "src/x/c.rs",
        "src/x/y/d.rs",
        "src/e.txt",
    ] {
        let path = ws.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "needle\n").unwrap();
    }
    ws
}

async fn listed(ws: &Path, glob: &str) -> Value {
    tool(ws, "list", json!({"glob": glob})).await["paths"].clone()
}

#[tokio::test]
async fn star_stays_in_a_directory_and_double_star_crosses_them() {
    let ws = tree();
    let ws = ws.path();
    assert_eq!(listed(ws, "*.rs").await, json!(["a.rs"]));
    assert_eq!(listed(ws, "src/*").await, json!(["src/b.rs", "src/e.txt"]));
    assert_eq!(listed(ws, "src/?.rs").await, json!(["src/b.rs"]));
    assert_eq!(
        listed(ws, "**/*.rs").await,
        json!(["a.rs", "src/b.rs", "src/x/c.rs", "src/x/y/d.rs"])
    );
    assert_eq!(
        listed(ws, "src/**/*.rs").await,
        json!(["src/b.rs", "src/x/c.rs", "src/x/y/d.rs"])
    );
    assert_eq!(
        listed(ws, "src/x/**").await,
        json!(["src/x/c.rs", "src/x/y/d.rs"])
    );
    assert_eq!(
        listed(ws, "src/{b,e}.*").await,
        json!(["src/b.rs", "src/e.txt"])
    );
    // A path given to list is still matched from the workspace root.
    assert_eq!(
        tool(ws, "list", json!({"path": "src/x", "glob": "src/x/*"})).await,
        json!({"paths": ["src/x/c.rs"], "truncated": false})
    );
    let grep = tool(ws, "grep", json!({"pattern": "needle", "glob": "src/*.rs"})).await;
    assert_eq!(
        grep,
        json!({"matches": [{"path": "src/b.rs", "line": 1, "text": "needle"}], "truncated": false})
    );
}

#[tokio::test]
async fn an_invalid_or_oversized_glob_is_a_stable_error() {
    let ws = tree();
    for name in ["list", "grep"] {
        for glob in ["src/[a", "{a,b", "a\\", "[z-a]"] {
            let result = tool(ws.path(), name, json!({"pattern": "x", "glob": glob})).await;
            assert_eq!(
                result["code"],
                ToolErrorCode::InvalidArgument.as_str(),
                "{name} {glob}: {result}"
            );
            let message = result["error"].as_str().unwrap();
            assert!(
                message.starts_with("invalid_argument: invalid glob: "),
                "{message}"
            );
        }
        let long = "a".repeat(MAX_GLOB_BYTES + 1);
        let result = tool(ws.path(), name, json!({"pattern": "x", "glob": long})).await;
        assert_eq!(result["code"], ToolErrorCode::TooLarge.as_str(), "{name}");
    }
}

#[tokio::test]
async fn a_pathological_glob_is_bounded() {
    let ws = tempfile::tempdir().unwrap();
    let long = "a".repeat(200);
    for i in 0..50 {
        std::fs::write(ws.path().join(format!("{long}{i}")), "").unwrap();
    }
    // As long as allowed, nearly all of it stars: a backtracking matcher
    // retries each star at every position of these names.
    let glob = format!("{}b", "*a".repeat((MAX_GLOB_BYTES - 1) / 2));
    assert!(glob.len() <= MAX_GLOB_BYTES);
    let started = Instant::now();
    assert_eq!(
        tool(ws.path(), "list", json!({"glob": glob})).await,
        json!({"paths": [], "truncated": false})
    );
    let stars = format!("{}*", "*".repeat(MAX_GLOB_BYTES - 1));
    assert_eq!(
        tool(ws.path(), "list", json!({"glob": stars})).await["paths"]
            .as_array()
            .map(Vec::len),
        Some(50)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
