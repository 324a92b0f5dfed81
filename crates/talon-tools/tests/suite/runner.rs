//! The one execution path: resolution, hooks, approvals, abort, caps and
//! records.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use talon_protocol::gateway::bounded::RunId;

use serde_json::{Value, json};
use talon_testing::wait;
use talon_tools::{
    ApprovalDecision, Approver, BeforeToolCall, BoxFuture, CallOutcome, Caller, CancellationToken,
    CatalogBuilder, CatalogEntry, HookDecision, NoUpdates, RunContext, RunScope, ToolCall,
    ToolError, ToolErrorCode, ToolExecutor, ToolPolicy, ToolRunner,
};

use super::catalog::tool;

/// Echoes its arguments and counts calls.
#[derive(Default)]
struct Echo {
    calls: AtomicUsize,
    seen: Mutex<Vec<Value>>,
}

impl ToolExecutor for Echo {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.seen.lock().unwrap().push(call.args.clone());
        let result = if entry.tool.name == "fail" {
            Err(ToolError::new(ToolErrorCode::IoError, "disk on fire"))
        } else if entry.tool.name == "big" {
            Ok(json!({"blob": "x".repeat(10_000)}))
        } else {
            Ok(json!({"tool": entry.id, "args": call.args}))
        };
        Box::pin(async move { result })
    }
}

fn ctx() -> RunContext {
    RunContext {
        scope: RunScope::default(),
        session_key: "main".into(),
        sender: None,
        channel: None,
        cancel: CancellationToken::new(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

fn runner(echo: Arc<Echo>) -> ToolRunner {
    let mut guarded = tool("rm", "Remove files");
    guarded.requires_approval = true;
    let catalog = CatalogBuilder::new(RunScope::default())
        .core([
            tool("read", "Read"),
            tool("fail", "Fails"),
            tool("big", "Big result"),
            guarded,
            tool("exec", "Shell"),
        ])
        .build(&ToolPolicy::from_lists(None, &["exec".into()]))
        .unwrap();
    ToolRunner::new(Arc::new(catalog), echo).with_max_result_bytes(1024)
}

fn call(id: &str, args: Value) -> ToolCall {
    ToolCall {
        call_id: format!("c-{id}"),
        id: id.into(),
        args,
        caller: Caller::Direct,
    }
}

#[tokio::test]
async fn runs_a_tool_and_records_the_caller() {
    let echo = Arc::new(Echo::default());
    let runner = runner(echo.clone());
    let nested = ToolCall {
        caller: Caller::Parent("cell-1".into()),
        ..call("openclaw:core:read", json!({"path": "a"}))
    };
    let outcome = runner.call(&ctx(), nested).await;
    assert_eq!(
        outcome,
        CallOutcome::Ok(json!({"tool": "openclaw:core:read", "args": {"path": "a"}}))
    );
    let records = runner.records();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0].status, records[0].caller.clone()),
        ("ok", Caller::Parent("cell-1".into()))
    );
}

#[tokio::test]
async fn unknown_and_denied_ids_answer_alike_and_never_run() {
    let echo = Arc::new(Echo::default());
    let runner = runner(echo.clone());
    let unknown = runner
        .call(&ctx(), call("openclaw:core:nope", json!({})))
        .await;
    let denied = runner
        .call(&ctx(), call("openclaw:core:exec", json!({"command": "id"})))
        .await;
    assert_eq!(unknown, CallOutcome::NotFound);
    assert_eq!(denied, CallOutcome::NotFound);
    assert_eq!(
        denied.to_json("openclaw:core:exec"),
        json!({"error": "unknown tool id \"openclaw:core:exec\"", "status": "not_found"})
    );
    assert_eq!(echo.calls.load(Ordering::Relaxed), 0);
}

struct Redact;

impl BeforeToolCall for Redact {
    fn before<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        mut args: Value,
    ) -> BoxFuture<'a, HookDecision> {
        let decision = if args["path"] == "/etc/shadow" {
            HookDecision::Block(format!("{} may not read /etc/shadow", entry.tool.name))
        } else {
            args["checked"] = json!(true);
            HookDecision::Continue(args)
        };
        Box::pin(async move { decision })
    }
}

#[tokio::test]
async fn hooks_rewrite_or_block() {
    let echo = Arc::new(Echo::default());
    let runner = runner(echo.clone()).with_hook(Arc::new(Redact));
    let blocked = runner
        .call(
            &ctx(),
            call("openclaw:core:read", json!({"path": "/etc/shadow"})),
        )
        .await;
    assert_eq!(
        blocked,
        CallOutcome::Blocked("read may not read /etc/shadow".into())
    );
    let ok = runner
        .call(&ctx(), call("openclaw:core:read", json!({"path": "a"})))
        .await;
    assert_eq!(
        ok,
        CallOutcome::Ok(
            json!({"tool": "openclaw:core:read", "args": {"path": "a", "checked": true}})
        )
    );
    assert_eq!(echo.calls.load(Ordering::Relaxed), 1);
}

struct Approve;

impl Approver for Approve {
    fn decide<'a>(
        &'a self,
        _: &'a RunContext,
        _: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, ApprovalDecision> {
        let decision = if call.args["force"] == true {
            ApprovalDecision::Denied("no force".into())
        } else {
            ApprovalDecision::Approved
        };
        Box::pin(async move { decision })
    }
}

#[tokio::test]
async fn approval_gates_tools_that_require_it() {
    let echo = Arc::new(Echo::default());
    let runner = runner(echo.clone());
    let outcome = runner
        .call(&ctx(), call("openclaw:core:rm", json!({})))
        .await;
    assert_eq!(
        outcome,
        CallOutcome::Blocked(
            "openclaw:core:rm requires approval and no approver is configured".into()
        )
    );
    let runner = runner_with_approver(echo.clone());
    assert!(matches!(
        runner
            .call(&ctx(), call("openclaw:core:rm", json!({})))
            .await,
        CallOutcome::Ok(_)
    ));
    assert_eq!(
        runner
            .call(&ctx(), call("openclaw:core:rm", json!({"force": true})))
            .await,
        CallOutcome::Blocked("no force".into())
    );
    assert_eq!(echo.calls.load(Ordering::Relaxed), 1);
}

fn runner_with_approver(echo: Arc<Echo>) -> ToolRunner {
    runner(echo).with_approver(Arc::new(Approve))
}

#[tokio::test]
async fn aborted_runs_execute_nothing() {
    let echo = Arc::new(Echo::default());
    let runner = runner(echo.clone());
    let ctx = ctx();
    ctx.cancel.cancel();
    assert_eq!(
        runner
            .call(&ctx, call("openclaw:core:read", json!({})))
            .await,
        CallOutcome::Aborted
    );
    assert_eq!(echo.calls.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn failures_and_large_results_are_plain_json() {
    let echo = Arc::new(Echo::default());
    let runner = runner(echo.clone());
    let failed = runner
        .call(&ctx(), call("openclaw:core:fail", json!({})))
        .await;
    assert_eq!(
        failed.to_json("openclaw:core:fail"),
        json!({"error": "io_error: disk on fire", "status": "failed", "code": "io_error"})
    );
    let CallOutcome::Ok(big) = runner
        .call(&ctx(), call("openclaw:core:big", json!({})))
        .await
    else {
        panic!()
    };
    // Truncated: its size (10 011 bytes) and a preview of at most 512.
    insta::assert_json_snapshot!("truncated", big);
    let statuses: Vec<&str> = runner.records().iter().map(|r| r.status).collect();
    assert_eq!(statuses, ["failed", "ok"]);
}

/// Tracks how many calls run at once.
#[derive(Default)]
struct Overlap {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl ToolExecutor for Overlap {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        _: &'a CatalogEntry,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.max.fetch_max(now, Ordering::SeqCst);
            // Not a wait: the call lasts a while, so calls can overlap.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            Ok(json!(null))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_tools_never_overlap_parallel_ones_do() {
    let mut one_at_a_time = tool("migrate", "Migrate");
    one_at_a_time.execution_mode = talon_protocol::ExecutionMode::Sequential;
    let catalog = CatalogBuilder::new(RunScope::default())
        .core([one_at_a_time, tool("fetch", "Fetch")])
        .build(&ToolPolicy::new())
        .unwrap();
    for (id, expected_max) in [("openclaw:core:migrate", 1), ("openclaw:core:fetch", 4)] {
        let overlap = Arc::new(Overlap::default());
        let runner = Arc::new(ToolRunner::new(Arc::new(catalog.clone()), overlap.clone()));
        let calls: Vec<_> = (0..4)
            .map(|i| {
                let runner = runner.clone();
                let id = id.to_owned();
                tokio::spawn(async move {
                    let call = ToolCall {
                        call_id: format!("c{i}"),
                        id,
                        args: json!({}),
                        caller: Caller::Direct,
                    };
                    runner.call(&ctx(), call).await
                })
            })
            .collect();
        for call in calls {
            assert_eq!(call.await.unwrap(), CallOutcome::Ok(json!(null)));
        }
        assert_eq!(overlap.max.load(Ordering::SeqCst), expected_max, "{id}");
    }
}

#[tokio::test]
async fn another_runs_context_and_oversized_ids_are_unknown() {
    let echo = Arc::new(Echo::default());
    let runner = runner(echo.clone());
    let mut foreign = ctx();
    foreign.scope.run_id = RunId::new("someone-else");
    assert_eq!(
        runner
            .call(&foreign, call("openclaw:core:read", json!({})))
            .await,
        CallOutcome::NotFound
    );
    let long = "x".repeat(10_000);
    let outcome = runner.call(&ctx(), call(&long, json!({}))).await;
    assert_eq!(outcome, CallOutcome::NotFound);
    // The id is not echoed whole.
    insta::assert_json_snapshot!("long_id_not_found", outcome.to_json(&long));
    assert!(runner.records().iter().all(|r| r.id.len() <= 260));
    assert_eq!(echo.calls.load(Ordering::Relaxed), 0);
}

/// Never finishes.
#[derive(Default)]
struct Hang {
    /// Told when a call starts executing.
    executing: tokio::sync::Notify,
}

impl ToolExecutor for Hang {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        _: &'a CatalogEntry,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.executing.notify_one();
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn a_dropped_call_is_recorded_as_cancelled() {
    let catalog = CatalogBuilder::new(RunScope::default())
        .core([tool("slow", "Slow")])
        .build(&ToolPolicy::new())
        .unwrap();
    let runner = ToolRunner::new(Arc::new(catalog), Arc::new(Hang::default()));
    let call = ToolCall {
        call_id: "c1".into(),
        id: "openclaw:core:slow".into(),
        args: json!({}),
        caller: Caller::Parent("cell".into()),
    };
    let outcome = tokio::time::timeout(
        std::time::Duration::from_millis(50),
        runner.call(&ctx(), call),
    )
    .await;
    assert!(outcome.is_err());
    let records = runner.records();
    assert_eq!(
        (records.len(), records[0].status, records[0].caller.clone()),
        (1, "cancelled", Caller::Parent("cell".into()))
    );
}

#[tokio::test]
async fn cancelling_the_run_drops_an_executing_call_at_once() {
    let catalog = CatalogBuilder::new(RunScope::default())
        .core([tool("slow", "Slow")])
        .build(&ToolPolicy::new())
        .unwrap();
    let hang = Arc::new(Hang::default());
    let runner = Arc::new(ToolRunner::new(Arc::new(catalog), hang.clone()));
    let ctx = ctx();
    let call = ToolCall {
        call_id: "c1".into(),
        id: "openclaw:core:slow".into(),
        args: json!({}),
        caller: Caller::Direct,
    };
    let task = {
        let (runner, ctx) = (runner.clone(), ctx.clone());
        tokio::spawn(async move { runner.call(&ctx, call).await })
    };
    wait::within(
        "the call to execute",
        wait::DEADLINE,
        hang.executing.notified(),
    )
    .await;
    ctx.cancel.cancel();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(5), task)
        .await
        .expect("the call ends once the run is cancelled")
        .unwrap();
    assert_eq!(outcome, CallOutcome::Aborted);
    let statuses: Vec<_> = runner.records().iter().map(|r| r.status).collect();
    assert_eq!(statuses, ["aborted"]);
}

/// Logs what the runner asks of it, in order with the executor's log.
struct Recorder(Arc<Mutex<Vec<String>>>, AtomicUsize);

impl talon_tools::CallObserver for Recorder {
    fn started(&self, _: &RunContext, call: &ToolCall, _: Option<&CatalogEntry>) {
        self.0.lock().unwrap().push(format!("started {}", call.id));
    }

    fn recorded(&self) -> BoxFuture<'_, bool> {
        let log = self.0.clone();
        // The second time, the store is gone.
        let works = self.1.fetch_add(1, Ordering::SeqCst) == 0;
        Box::pin(async move {
            // A store commit takes a while: the tool must still wait. (Not a
            // wait on a condition: a slow store.)
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            log.lock().unwrap().push("recorded".into());
            works
        })
    }

    fn finished(&self, _: &RunContext, call: &ToolCall, _: &CallOutcome, _: std::time::Duration) {
        self.0.lock().unwrap().push(format!("finished {}", call.id));
    }
}

/// Logs each execution into the shared log.
struct Logged(Arc<Mutex<Vec<String>>>);

impl ToolExecutor for Logged {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.0.lock().unwrap().push(format!("execute {}", entry.id));
        Box::pin(async { Ok(json!(true)) })
    }
}

#[tokio::test]
async fn a_tool_that_is_not_replay_safe_runs_only_once_its_start_is_on_record() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut read = tool("read", "Read");
    read.replay_safe = true;
    let catalog = CatalogBuilder::new(RunScope::default())
        .core([read, tool("write", "Write")])
        .build(&ToolPolicy::new())
        .unwrap();
    let runner = ToolRunner::new(Arc::new(catalog), Arc::new(Logged(log.clone())))
        .with_observer(Arc::new(Recorder(log.clone(), AtomicUsize::new(0))));
    for id in ["openclaw:core:write", "openclaw:core:read"] {
        assert_eq!(
            runner.call(&ctx(), call(id, json!({}))).await,
            CallOutcome::Ok(json!(true))
        );
    }
    assert_eq!(
        *log.lock().unwrap(),
        [
            "started openclaw:core:write",
            "recorded",
            "execute openclaw:core:write",
            "finished openclaw:core:write",
            "started openclaw:core:read",
            "execute openclaw:core:read",
            "finished openclaw:core:read",
        ]
    );
    // A start that could not be recorded: the tool does not run.
    log.lock().unwrap().clear();
    let outcome = runner
        .call(&ctx(), call("openclaw:core:write", json!({})))
        .await;
    let CallOutcome::Failed(error) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(error.code, ToolErrorCode::Unavailable);
    assert!(error.message.contains("was not run"), "{}", error.message);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "started openclaw:core:write",
            "recorded",
            "finished openclaw:core:write",
        ]
    );
}
