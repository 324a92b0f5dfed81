//! The core tools stay inside the workspace; failures carry typed codes.

use serde_json::{Value, json};
use talon_core_tools::{CoreTools, PolicyApprover};
use talon_protocol::ToolSource;
use talon_testing::redact::Redactor;
use talon_tools::{
    ApprovalDecision, Approver, Caller, CatalogBuilder, NoUpdates, RunContext, ToolCall, ToolError,
    ToolErrorCode, ToolExecutor, ToolPolicy, ToolRunner,
};

use std::sync::Arc;

/// A run context that nobody cancels (tests cancel its token themselves).
pub(super) fn context() -> RunContext {
    RunContext {
        scope: Default::default(),
        session_key: "k".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

pub(super) fn runner(dir: &std::path::Path) -> (ToolRunner, RunContext) {
    let core = CoreTools::new(dir).unwrap();
    let catalog = CatalogBuilder::new(Default::default())
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    // Results up to 4 MiB arrive whole, so tests see the tools' own caps.
    let runner = ToolRunner::new(Arc::new(catalog), Arc::new(core))
        .with_approver(Arc::new(PolicyApprover::AllowAll))
        .with_max_result_bytes(4 << 20);
    (runner, context())
}

/// What the model sees of a core tool failure with `code` and `message`.
pub(super) fn failed(code: ToolErrorCode, message: &str) -> Value {
    ToolError::new(code, message).to_json()
}

/// Runs core tool `name` on the executor itself (no runner): the typed
/// error as the tool returned it.
pub(super) async fn execute(
    core: &CoreTools,
    ctx: &RunContext,
    name: &str,
    args: Value,
) -> Result<Value, ToolError> {
    let catalog = CatalogBuilder::new(Default::default())
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    let entry = catalog
        .get(&format!("openclaw:core:{name}"))
        .unwrap()
        .clone();
    let call = ToolCall {
        call_id: "c".into(),
        id: entry.id.clone(),
        args,
        caller: Caller::Direct,
    };
    core.execute(ctx, &entry, &call).await
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
    // Run in the workspace, both streams and the exit code kept.
    pretty_assertions::assert_eq!(
        shell,
        json!({"exitCode": 3, "stdout": format!("{}\n", dir.path().canonicalize().unwrap().display()),
               "stderr": "err\n", "truncated": false})
    );
    let slow = call(
        &runner,
        &ctx,
        "exec",
        json!({"command": "sleep 5", "timeoutMs": 200}),
    )
    .await;
    assert_eq!(
        slow,
        failed(
            ToolErrorCode::Timeout,
            "the command did not finish within 200 ms and was killed"
        )
    );
    // (A timeout is retryable: `failed` says so for its code.)
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
        .await,
        failed(
            ToolErrorCode::AmbiguousMatch,
            "dup.txt: the text occurs 2 times; give more context so it occurs once"
        )
    );
}

#[tokio::test]
async fn paths_that_escape_the_workspace_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    let (runner, ctx) = runner(dir.path());
    let mut refused = Vec::new();
    for path in [
        "../secret.txt",
        "/etc/passwd",
        "link/secret.txt",
        "a/../../x",
        outside.path().join("secret.txt").to_str().unwrap(),
    ] {
        let read = call(&runner, &ctx, "read", json!({"path": path})).await;
        let write = call(
            &runner,
            &ctx,
            "write",
            json!({"path": path, "content": "pwned"}),
        )
        .await;
        refused.push(json!({"path": path, "read": read, "write": write}));
    }
    // Each read and write refused as outside_workspace, saying so.
    let mut redactor = Redactor::new()
        .with(outside.path().display().to_string(), "<outside>")
        .with(dir.path().display().to_string(), "<workspace>");
    for (literal, placeholder) in [(&outside, "<outside>"), (&dir, "<workspace>")] {
        let canonical = literal.path().canonicalize().unwrap().display().to_string();
        redactor = redactor.with(canonical, placeholder);
    }
    insta::assert_json_snapshot!(redactor.value(&Value::Array(refused)));
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "top secret"
    );
    let defs = talon_core_tools::definitions();
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

#[tokio::test]
async fn the_executor_returns_typed_errors_with_stable_codes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("bin.dat"), [0xff, 0xfe, 0x00]).unwrap();
    let core = CoreTools::new(dir.path()).unwrap();
    let ctx = context();
    let cases = [
        (
            "read",
            json!({"path": "../x"}),
            ToolErrorCode::OutsideWorkspace,
        ),
        (
            "read",
            json!({"path": "missing.txt"}),
            ToolErrorCode::NotFound,
        ),
        ("read", json!({"path": "sub"}), ToolErrorCode::IsADirectory),
        (
            "read",
            json!({"path": "bin.dat/x"}),
            ToolErrorCode::NotADirectory,
        ),
        ("read", json!({}), ToolErrorCode::InvalidArgument),
        (
            "edit",
            json!({"path": "bin.dat", "old": "a", "new": "b"}),
            ToolErrorCode::NotText,
        ),
        (
            "exec",
            json!({"command": 3}),
            ToolErrorCode::InvalidArgument,
        ),
        ("rm", json!({}), ToolErrorCode::UnknownTool),
    ];
    for (name, args, code) in cases {
        let error = if name == "rm" {
            // Not in the catalog: the executor itself is asked.
            let mut entry = CatalogBuilder::new(Default::default())
                .core(talon_core_tools::definitions())
                .build(&ToolPolicy::new())
                .unwrap()
                .get("openclaw:core:read")
                .unwrap()
                .clone();
            entry.tool.name = "rm".into();
            let call = ToolCall {
                call_id: "c".into(),
                id: entry.id.clone(),
                args,
                caller: Caller::Direct,
            };
            core.execute(&ctx, &entry, &call).await.unwrap_err()
        } else {
            execute(&core, &ctx, name, args.clone()).await.unwrap_err()
        };
        assert_eq!(error.code, code, "{name}: {error}");
        assert!(!error.retryable, "{name}: {error}");
        assert!(
            error.to_string().starts_with(&format!("{code}: ")),
            "{name}: {error}"
        );
    }
}

#[tokio::test]
async fn the_policy_approver_allows_or_denies_everything() {
    let catalog = CatalogBuilder::new(Default::default())
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    let entry = catalog.get("openclaw:core:write").unwrap();
    let ctx = context();
    let asked = talon_tools::ToolCall {
        call_id: "c1".into(),
        id: entry.id.clone(),
        args: json!({}),
        caller: talon_tools::Caller::Direct,
    };
    assert_eq!(
        PolicyApprover::AllowAll.decide(&ctx, entry, &asked).await,
        ApprovalDecision::Approved
    );
    assert_eq!(
        PolicyApprover::DenyAll.decide(&ctx, entry, &asked).await,
        ApprovalDecision::Denied(
            "openclaw:core:write needs approval and this run cannot ask (denied by policy)".into()
        )
    );
    // Through the runner, a denied write is blocked and creates nothing.
    let dir = tempfile::tempdir().unwrap();
    let runner = ToolRunner::new(
        Arc::new(catalog.clone()),
        Arc::new(CoreTools::new(dir.path()).unwrap()),
    )
    .with_approver(Arc::new(PolicyApprover::DenyAll));
    let blocked = call(
        &runner,
        &ctx,
        "write",
        json!({"path": "x.txt", "content": "hi"}),
    )
    .await;
    pretty_assertions::assert_eq!(
        blocked,
        json!({"error": "openclaw:core:write needs approval and this run cannot ask (denied by policy)",
               "status": "blocked"})
    );
    assert!(!dir.path().join("x.txt").exists());
    // Read-only tools need no approval.
    std::fs::write(dir.path().join("y.txt"), "ok").unwrap();
    pretty_assertions::assert_eq!(
        call(&runner, &ctx, "read", json!({"path": "y.txt"})).await,
        json!({"path": "y.txt", "content": "ok", "bytes": 2, "truncated": false})
    );
}
