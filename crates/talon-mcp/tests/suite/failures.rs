//! Failures are clear and lose nothing: crashes, hangs, garbage, slow and
//! failed starts, cancellation (prompt, without polling, and told to the
//! server), typed tool errors, and clean shutdown without orphans.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_mcp::McpError;
use talon_protocol::ToolSource;
use talon_testing::wait;
use talon_tools::{
    CallOutcome, Caller, CancellationToken, CatalogBuilder, McpServers, RunContext, RunScope,
    ToolCall, ToolError, ToolErrorCode, ToolExecutor, ToolPolicy, ToolRunner,
};

use super::*;

/// The fixture's whole answer to `echo` of `message`.
fn echo_of(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "structuredContent": {"echoed": message}})
}

/// The fixture's whole answer to `count` when its process has seen
/// `calls` calls.
fn counted(calls: u64) -> Value {
    json!({"content": [{"type": "text", "text": calls.to_string()}], "structuredContent": {"calls": calls}})
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_reports_its_stderr_and_the_next_call_reconnects() {
    let manager = manager(json!({"fx": fixture("ok", json!({}))}));
    let first = manager
        .call_tool(None, "fx", "count", json!({}))
        .await
        .unwrap();
    pretty_assertions::assert_eq!(first, counted(1));
    let error = manager
        .call_tool(None, "fx", "crash", json!({}))
        .await
        .unwrap_err();
    match &error {
        McpError::Closed { server, stderr, .. } => {
            assert_eq!(server, "fx");
            assert!(
                stderr.contains("panic: deliberate failure in the middle of a call"),
                "{stderr}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("MCP server \"fx\" closed the connection"),
        "{error}"
    );
    // A new process: its call count starts again.
    let again = manager
        .call_tool(None, "fx", "count", json!({}))
        .await
        .unwrap();
    pretty_assertions::assert_eq!(again, counted(1));
    manager.shutdown().await;
}

#[tokio::test]
async fn a_hanging_server_hits_the_request_timeout() {
    let manager = manager(json!({"fx": fixture("ok", json!({"requestTimeoutMs": 300}))}));
    let started = Instant::now();
    let error = manager
        .call_tool(None, "fx", "hang", json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        McpError::Timeout {
            server: "fx".into(),
            method: "tools/call".into(),
            timeout_ms: 300
        }
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    // The connection is still good.
    let echoed = manager
        .call_tool(None, "fx", "echo", json!({"message": "still here"}))
        .await
        .unwrap();
    pretty_assertions::assert_eq!(echoed, echo_of("still here"));
    manager.shutdown().await;
}

/// A fixture server that logs `hang` calls and `notifications/cancelled`
/// to a file; the file's path.
fn logging_fixture(dir: &tempfile::TempDir, extra: serde_json::Value) -> (McpManager, PathBuf) {
    let log = dir.path().join("log");
    let mut settings = json!({"env": {"FIXTURE_LOG_FILE": log.display().to_string()}});
    if let (Some(s), serde_json::Value::Object(e)) = (settings.as_object_mut(), extra) {
        s.extend(e);
    }
    (manager(json!({"fx": fixture("ok", settings)})), log)
}

/// The log's lines once `done` holds for them (the fixture writes them
/// asynchronously).
async fn log_lines(log: &Path, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    wait::until_async("the fixture's log line", wait::DEADLINE, async || {
        let lines: Vec<String> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        if done(&lines) { Ok(lines) } else { Err(lines) }
    })
    .await
}

/// The request id of the `hang` call in the log, once the server got it.
async fn hung_request(log: &Path) -> String {
    let lines = log_lines(log, |l| l.iter().any(|l| l.starts_with("hang "))).await;
    lines
        .iter()
        .find_map(|l| l.strip_prefix("hang "))
        .unwrap()
        .to_owned()
}

/// Cancels `cancel` once the server got the `hang` call; when.
async fn cancel_when_hung(log: &Path, cancel: &CancellationToken) -> Instant {
    hung_request(log).await;
    cancel.cancel();
    Instant::now()
}

#[tokio::test]
async fn cancelling_the_run_ends_an_in_flight_call_at_once_and_tells_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, log) = logging_fixture(&dir, json!({}));
    manager.connect("fx").await.unwrap();
    let ctx = super::real::ctx();
    let call = async {
        let result = manager.call_tool(Some(&ctx), "fx", "hang", json!({})).await;
        (result, Instant::now())
    };
    let ((result, returned), cancelled) = tokio::join!(call, cancel_when_hung(&log, &ctx.cancel));
    assert_eq!(result.unwrap_err(), McpError::Aborted("fx".into()));
    // Nothing polls: the call ends as soon as the token is cancelled (the
    // bound is generous; the latency itself is benchmarked elsewhere).
    let latency = returned.saturating_duration_since(cancelled);
    assert!(latency < Duration::from_millis(500), "{latency:?}");
    // The dropped request was cancelled at the server.
    let id = hung_request(&log).await;
    log_lines(&log, |l| l.contains(&format!("cancelled {id}"))).await;
    // The connection is still good.
    let echoed = manager
        .call_tool(None, "fx", "echo", json!({"message": "still here"}))
        .await
        .unwrap();
    pretty_assertions::assert_eq!(echoed, echo_of("still here"));
    manager.shutdown().await;
}

#[tokio::test]
async fn a_run_already_cancelled_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, log) = logging_fixture(&dir, json!({}));
    manager.connect("fx").await.unwrap();
    let ctx = super::real::ctx();
    ctx.cancel.cancel();
    let error = manager
        .call_tool(Some(&ctx), "fx", "hang", json!({}))
        .await
        .unwrap_err();
    assert_eq!(error, McpError::Aborted("fx".into()));
    // The next request reaches the server; the cancelled one never did.
    manager
        .call_tool(None, "fx", "echo", json!({"message": "x"}))
        .await
        .unwrap();
    assert!(
        std::fs::read_to_string(&log).unwrap_or_default().is_empty(),
        "the server saw the cancelled call"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn cancelling_while_the_server_starts_stops_waiting_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let manager = manager(
        json!({"fx": {"command": "node", "args": [fixture_js(), "slow-start", "1500"], "connectionTimeoutMs": 10000,
                      "env": {"FIXTURE_PID_FILE": pid_file.display().to_string()}}}),
    );
    let ctx = super::real::ctx();
    let call = async {
        let result = manager
            .call_tool(Some(&ctx), "fx", "echo", json!({"message": "x"}))
            .await;
        (result, Instant::now())
    };
    let ((result, returned), cancelled) = tokio::join!(call, async {
        // The server process is up (it writes its pid before its slow
        // start), not yet answering.
        wait::until_async("the server to start", wait::DEADLINE, async || {
            pid_file.exists()
        })
        .await;
        ctx.cancel.cancel();
        Instant::now()
    });
    assert_eq!(result.unwrap_err(), McpError::Aborted("fx".into()));
    let latency = returned.saturating_duration_since(cancelled);
    assert!(latency < Duration::from_millis(500), "{latency:?}");
    // The abandoned start is no failure: the next call starts the server.
    let echoed = manager
        .call_tool(None, "fx", "echo", json!({"message": "started"}))
        .await
        .unwrap();
    pretty_assertions::assert_eq!(echoed, echo_of("started"));
    manager.shutdown().await;
}

/// A runner over the manager's tools for this run.
async fn runner(manager: &McpManager) -> (ToolRunner, RunContext) {
    let run = manager.for_run().await;
    assert!(run.failed.is_empty(), "{:?}", run.failed);
    let catalog = run
        .register(CatalogBuilder::new(RunScope::default()))
        .build(&ToolPolicy::new())
        .unwrap();
    (
        ToolRunner::new(Arc::new(catalog), Arc::new(manager.executor())),
        super::real::ctx(),
    )
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        call_id: "c1".into(),
        id: id.into(),
        args: json!({}),
        caller: Caller::Direct,
    }
}

#[tokio::test]
async fn cancelling_a_run_drops_the_executor_and_the_server_hears_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, log) = logging_fixture(&dir, json!({}));
    let (runner, ctx) = runner(&manager).await;
    let call = async {
        let outcome = runner.call(&ctx, call("mcp:fx:hang")).await;
        (outcome, Instant::now())
    };
    let ((outcome, returned), cancelled) = tokio::join!(call, cancel_when_hung(&log, &ctx.cancel));
    assert_eq!(outcome, CallOutcome::Aborted);
    let latency = returned.saturating_duration_since(cancelled);
    assert!(latency < Duration::from_millis(500), "{latency:?}");
    let id = hung_request(&log).await;
    log_lines(&log, |l| l.contains(&format!("cancelled {id}"))).await;
    manager.shutdown().await;
}

#[tokio::test]
async fn failures_reach_the_runner_as_typed_tool_errors() {
    let manager = manager(json!({"fx": fixture("ok", json!({"requestTimeoutMs": 300}))}));
    let (runner, ctx) = runner(&manager).await;
    let failed = |outcome: CallOutcome| match outcome {
        CallOutcome::Failed(error) => error,
        other => panic!("{other:?}"),
    };
    let timeout = failed(runner.call(&ctx, call("mcp:fx:hang")).await);
    assert_eq!(
        timeout,
        ToolError::new(
            ToolErrorCode::Timeout,
            "MCP server \"fx\" did not answer tools/call within 300 ms"
        )
    );
    assert!(timeout.retryable);
    let crash = failed(runner.call(&ctx, call("mcp:fx:crash")).await);
    assert_eq!(
        (crash.code, crash.retryable),
        (ToolErrorCode::Unavailable, true)
    );
    assert!(
        crash
            .to_string()
            .starts_with("unavailable: MCP server \"fx\" closed the connection"),
        "{crash}"
    );
    // The fixture offers no resources or prompts.
    let unsupported = McpServers::read_resource(&manager, &ctx, "fx", "demo://x")
        .await
        .unwrap_err();
    assert_eq!(
        unsupported,
        ToolError::new(
            ToolErrorCode::Unsupported,
            "MCP server \"fx\" does not offer resources"
        )
    );
    let unknown = McpServers::get_prompt(&manager, &ctx, "nope", "p", &json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        (unknown.code, unknown.message.as_str()),
        (
            ToolErrorCode::Unavailable,
            "no MCP server \"nope\" in this run"
        )
    );
    // An entry that is not MCP's never reaches a server.
    let mut entry = runner.catalog().get("mcp:fx:echo").unwrap().clone();
    entry.tool.source = ToolSource::Plugin;
    let misrouted = manager
        .executor()
        .execute(&ctx, &entry, &call("mcp:fx:echo"))
        .await
        .unwrap_err();
    assert_eq!(misrouted.code, ToolErrorCode::Internal);
    manager.shutdown().await;
}

#[tokio::test]
async fn garbage_on_stdout_is_a_start_error_not_a_panic_or_a_hang() {
    let manager = manager(json!({"fx": fixture("garbage", json!({"connectionTimeoutMs": 500}))}));
    let started = Instant::now();
    let run = manager.for_run().await;
    assert!(run.tools.is_empty());
    match &run.failed[..] {
        [
            McpError::Start {
                server, message, ..
            },
        ] => {
            assert_eq!(server, "fx");
            assert_eq!(message, "no answer to initialize within 500 ms");
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_reported_once_per_run_and_its_tools_are_absent() {
    let manager = manager(json!({
        "broken": fixture("fail-start", json!({})),
        "fine": fixture("ok", json!({})),
        "missing": {"command": "/nonexistent/mcp-server"},
    }));
    let run = manager.for_run().await;
    let servers: Vec<&str> = run.tools.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(servers, ["fine"]);
    assert_eq!(run.failed.len(), 2);
    let broken = run.failed[0].to_string();
    assert!(
        broken.starts_with("MCP server \"broken\" failed to start: "),
        "{broken}"
    );
    assert!(
        broken.contains("stderr: fixture: missing credentials\nfatal: cannot start"),
        "{broken}"
    );
    assert!(run.failed[1].to_string().starts_with(
        "MCP server \"missing\" failed to start: cannot run \"/nonexistent/mcp-server\""
    ));
    // Within the backoff the failure comes back at once.
    let started = Instant::now();
    let again = manager.for_run().await;
    assert_eq!(again.failed.len(), 2);
    assert!(started.elapsed() < Duration::from_millis(200));
    manager.shutdown().await;
}

#[tokio::test]
async fn a_slow_start_within_the_connection_timeout_works_and_beyond_it_fails() {
    let slow = manager(
        json!({"fx": {"command": "node", "args": [fixture_js(), "slow-start", "400"], "connectionTimeoutMs": 5000}}),
    );
    let run = slow.for_run().await;
    assert!(run.failed.is_empty(), "{:?}", run.failed);
    slow.shutdown().await;
    let too_slow = manager(
        json!({"fx": {"command": "node", "args": [fixture_js(), "slow-start", "3000"], "connectionTimeoutMs": 300}}),
    );
    let run = too_slow.for_run().await;
    assert!(
        matches!(&run.failed[..], [McpError::Start { .. }]),
        "{:?}",
        run.failed
    );
    too_slow.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_the_child_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let manager = manager(json!({"fx": fixture("ok", json!({"env": {
        "FIXTURE_PID_FILE": pid_file.display().to_string(), "FIXTURE_GRANDCHILD": "1"}}))}));
    manager.connect("fx").await.unwrap();
    let pids: Vec<u32> = std::fs::read_to_string(&pid_file)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|p| alive(*p)));
    manager.shutdown().await;
    // No zombies, no orphans.
    wait::until_async(
        "the child and its child to exit",
        wait::DEADLINE,
        async || pids.iter().all(|p| !alive(*p)),
    )
    .await;
}

#[tokio::test]
async fn dropping_the_manager_kills_the_child_too() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let manager = manager(json!({"fx": fixture("ok", json!({"env": {
        "FIXTURE_PID_FILE": pid_file.display().to_string(), "FIXTURE_GRANDCHILD": "1"}}))}));
    manager.connect("fx").await.unwrap();
    let pids: Vec<u32> = std::fs::read_to_string(&pid_file)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    drop(manager);
    wait::until_async(
        "the child and its child to exit",
        wait::DEADLINE,
        async || pids.iter().all(|p| !alive(*p)),
    )
    .await;
}

#[tokio::test]
async fn a_result_nested_past_any_parser_is_an_error_not_an_abort() {
    let manager = manager(json!({"fx": fixture("ok", json!({"requestTimeoutMs": 3000}))}));
    let started = Instant::now();
    let error = manager
        .call_tool(None, "fx", "deep", json!({}))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10), "{error}");
    // The server is still usable (reconnected if the transport gave up).
    let echoed = manager
        .call_tool(None, "fx", "echo", json!({"message": "still here"}))
        .await
        .unwrap();
    pretty_assertions::assert_eq!(echoed, echo_of("still here"));
}

/// Collects updates.
#[derive(Default)]
struct Updates(std::sync::Mutex<Vec<(String, Value)>>);

impl talon_tools::UpdateSink for Updates {
    fn update(&self, call_id: &str, update: Value) {
        self.0.lock().unwrap().push((call_id.to_owned(), update));
    }
}

#[tokio::test]
async fn a_servers_progress_reaches_the_call_as_deltas_thinned_and_never_once_it_returned() {
    let manager = manager(json!({"fx": fixture("ok", json!({}))}));
    let updates = Arc::new(Updates::default());
    let to = talon_mcp::ProgressTo {
        sink: updates.clone(),
        call_id: "call_7".into(),
    };
    // Three steps far enough apart: each is a delta.
    let result = manager
        .call_tool_reporting(
            None,
            "fx",
            "progress",
            json!({"steps": 3, "gapMs": 150}),
            Some(to.clone()),
        )
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "3 steps");
    // The fixture's late notification (sent after its answer) may land
    // before the call returns, never after: nothing more arrives once it
    // has, while the server is busy with another call.
    let at_return = updates.0.lock().unwrap().len();
    manager
        .call_tool(None, "fx", "echo", json!({"message": "after"}))
        .await
        .unwrap();
    let mut seen = std::mem::take(&mut *updates.0.lock().unwrap());
    assert_eq!(seen.len(), at_return);
    assert!(at_return <= 4, "{seen:?}");
    seen.truncate(3);
    assert_eq!(
        seen,
        (1..=3)
            .map(|i| (
                "call_7".to_owned(),
                json!({"progress": f64::from(i), "total": 3.0, "message": format!("step {i}")})
            ))
            .collect::<Vec<_>>()
    );
    // A flood of 2,000 at once is thinned to what 100 ms allows.
    let started = Instant::now();
    manager
        .call_tool_reporting(None, "fx", "progress", json!({"steps": 2000}), Some(to))
        .await
        .unwrap();
    let allowed = 1 + started.elapsed().as_millis() / talon_mcp::PROGRESS_INTERVAL.as_millis();
    let seen = updates.0.lock().unwrap().len();
    assert!(
        seen >= 1 && seen as u128 <= allowed,
        "{seen} deltas in {:?}",
        started.elapsed()
    );
}
