//! Failures are clear and lose nothing: crashes, hangs, garbage, slow and
//! failed starts, aborts, and clean shutdown without orphans.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use talon_mcp::McpError;

use super::*;

#[tokio::test]
async fn a_server_that_crashes_mid_call_reports_its_stderr_and_the_next_call_reconnects() {
    let manager = manager(json!({"fx": fixture("ok", json!({}))}));
    let first = manager
        .call_tool(None, "fx", "count", json!({}))
        .await
        .unwrap();
    assert_eq!(first["structuredContent"]["calls"], 1);
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
    assert_eq!(again["structuredContent"]["calls"], 1);
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
    assert_eq!(echoed["structuredContent"]["echoed"], "still here");
    manager.shutdown().await;
}

#[tokio::test]
async fn aborting_the_run_cancels_an_in_flight_call() {
    let manager = manager(json!({"fx": fixture("ok", json!({}))}));
    manager.connect("fx").await.unwrap();
    let mut ctx = super::real::ctx();
    let abort = Arc::new(AtomicBool::new(false));
    ctx.abort = abort.clone();
    let started = Instant::now();
    let (result, ()) = tokio::join!(
        manager.call_tool(Some(&ctx), "fx", "hang", json!({})),
        async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            abort.store(true, Ordering::SeqCst);
        }
    );
    assert_eq!(result.unwrap_err(), McpError::Aborted("fx".into()));
    assert!(started.elapsed() < Duration::from_secs(2));
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
    for _ in 0..100 {
        if pids.iter().all(|p| !alive(*p)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(pids.iter().all(|p| !alive(*p)), "no zombies, no orphans");
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
    for _ in 0..100 {
        if pids.iter().all(|p| !alive(*p)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(pids.iter().all(|p| !alive(*p)));
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
    assert_eq!(echoed["structuredContent"]["echoed"], "still here");
}
