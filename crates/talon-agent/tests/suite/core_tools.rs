//! The core tools stay inside the workspace.

use serde_json::json;
use talon_agent::CoreTools;
use talon_protocol::ToolSource;
use talon_tools::{
    Caller, CatalogBuilder, NoUpdates, RunContext, ToolCall, ToolPolicy, ToolRunner,
};

use std::sync::Arc;

pub(super) fn runner(dir: &std::path::Path) -> (ToolRunner, RunContext) {
    let core = CoreTools::new(dir).unwrap();
    let catalog = CatalogBuilder::new(Default::default())
        .core(talon_agent::core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    // Results up to 4 MiB arrive whole, so tests see the tools' own caps.
    let runner = ToolRunner::new(Arc::new(catalog), Arc::new(core))
        .with_approver(Arc::new(talon_agent::PolicyApprover::AllowAll))
        .with_max_result_bytes(4 << 20);
    let ctx = RunContext {
        scope: Default::default(),
        session_key: "k".into(),
        sender: None,
        channel: None,
        abort: Default::default(),
        updates: Arc::new(NoUpdates),
    };
    (runner, ctx)
}

pub(super) async fn call(
    runner: &ToolRunner,
    ctx: &RunContext,
    name: &str,
    args: serde_json::Value,
) -> serde_json::Value {
    runner
        .call(
            ctx,
            ToolCall {
                call_id: "c".into(),
                id: format!("openclaw:core:{name}"),
                args,
                caller: Caller::Direct,
            },
        )
        .await
        .to_json(name)
}

#[tokio::test]
async fn read_write_edit_list_grep_and_exec_work_inside_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let (runner, ctx) = runner(dir.path());
    assert_eq!(
        call(
            &runner,
            &ctx,
            "write",
            json!({"path": "src/a.txt", "content": "alpha\nbeta\n"})
        )
        .await,
        json!({"path": "src/a.txt", "bytes": 11})
    );
    assert_eq!(
        call(
            &runner,
            &ctx,
            "edit",
            json!({"path": "src/a.txt", "old": "beta", "new": "gamma"})
        )
        .await,
        json!({"path": "src/a.txt", "replaced": 1})
    );
    assert_eq!(
        call(&runner, &ctx, "read", json!({"path": "src/a.txt"})).await,
        json!({"path": "src/a.txt", "content": "alpha\ngamma\n", "bytes": 12, "truncated": false})
    );
    call(
        &runner,
        &ctx,
        "write",
        json!({"path": "b.md", "content": "gamma ray"}),
    )
    .await;
    assert_eq!(
        call(&runner, &ctx, "list", json!({})).await,
        json!({"paths": ["b.md", "src/a.txt"], "truncated": false})
    );
    assert_eq!(
        call(&runner, &ctx, "list", json!({"glob": "src/*"})).await,
        json!({"paths": ["src/a.txt"], "truncated": false})
    );
    assert_eq!(
        call(&runner, &ctx, "grep", json!({"pattern": "gamma"})).await,
        json!({"matches": [{"path": "b.md", "line": 1, "text": "gamma ray"}, {"path": "src/a.txt", "line": 2, "text": "gamma"}],
               "truncated": false})
    );
    let shell = call(
        &runner,
        &ctx,
        "exec",
        json!({"command": "pwd; echo err >&2; exit 3"}),
    )
    .await;
    assert_eq!(shell["exitCode"], 3);
    assert_eq!(
        shell["stdout"].as_str().unwrap().trim(),
        dir.path().canonicalize().unwrap().display().to_string()
    );
    assert_eq!(shell["stderr"], "err\n");
    let slow = call(
        &runner,
        &ctx,
        "exec",
        json!({"command": "sleep 5", "timeoutMs": 200}),
    )
    .await;
    assert_eq!(
        slow["error"],
        "timeout: the command did not finish within 200 ms and was killed"
    );
    // Edits must be exact and unique.
    call(
        &runner,
        &ctx,
        "write",
        json!({"path": "dup.txt", "content": "x x"}),
    )
    .await;
    assert_eq!(
        call(
            &runner,
            &ctx,
            "edit",
            json!({"path": "dup.txt", "old": "x", "new": "y"})
        )
        .await["error"],
        "ambiguous_match: dup.txt: the text occurs 2 times; give more context so it occurs once"
    );
}

#[tokio::test]
async fn paths_that_escape_the_workspace_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    let (runner, ctx) = runner(dir.path());
    for path in [
        "../secret.txt",
        "/etc/passwd",
        "link/secret.txt",
        "a/../../x",
        outside.path().join("secret.txt").to_str().unwrap(),
    ] {
        let read = call(&runner, &ctx, "read", json!({"path": path})).await;
        assert!(
            read["error"].as_str().unwrap().contains("workspace"),
            "{path}: {read}"
        );
        let write = call(
            &runner,
            &ctx,
            "write",
            json!({"path": path, "content": "pwned"}),
        )
        .await;
        assert!(
            write["error"].as_str().unwrap().contains("workspace"),
            "{path}: {write}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "top secret"
    );
    let defs = talon_agent::core_tools::definitions();
    let needs: Vec<(&str, bool)> = defs
        .iter()
        .map(|d| (d.name.as_str(), d.requires_approval))
        .collect();
    assert_eq!(
        needs,
        [
            ("read", false),
            ("write", true),
            ("edit", true),
            ("list", false),
            ("grep", false),
            ("exec", true)
        ]
    );
    assert!(defs.iter().all(|d| d.source == ToolSource::Openclaw));
}
