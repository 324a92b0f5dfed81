//! Cancelling a run (or running out of time) while a tool call is in
//! flight: the run returns promptly, the call is reported as aborted, and
//! the shell command's process group is gone.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::json;
use talon_agent::{AgentRun, CollectSink, RunEvents, RunOptions, RunResult, RunStatus};
use talon_core_tools::{CoreTools, PolicyApprover};
use talon_mock_model::{MockModel, Script};
use talon_protocol::EventType;
use talon_provider::ProviderConfig;
use talon_provider::config::OPENAI_COMPLETIONS;
use talon_provider::openai::OpenAiCompatible;
use talon_testing::redact::redacted;
use talon_testing::wait;
use talon_tools::{
    CancellationToken, CatalogBuilder, DirectSurface, NoUpdates, RunContext, RunScope, ToolPolicy,
    ToolRunner,
};

/// The model asks for a shell command that writes `pgid` once it runs,
/// then sleeps for 30 s (and a little more: `mark` makes its command line
/// unique, so that the host finds its processes; pids written from inside
/// the sandbox are its own PID namespace's).
fn sleeper(mark: &str) -> String {
    format!("echo started > pgid; sleep 30.{mark}")
}

/// A mark no other test's command has.
fn mark() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "{}{}",
        std::process::id() % 10_000,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether any process whose command line holds `needle` is still running
/// (zombies waiting for their reaper do not count: they run nothing).
fn group_alive(needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    let me = std::process::id().to_string();
    entries.flatten().any(|entry| {
        if entry.file_name().to_str() == Some(me.as_str()) {
            return false;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            return false;
        };
        if !String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(needle)
        {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        stat.rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next()
            != Some("Z")
    })
}

/// Waits for the command's processes to be gone (the kill lands
/// asynchronously); panics when they are not. The deadline is well inside
/// the command's own 30 s, so a command nobody killed cannot pass by
/// ending on its own.
async fn group_gone(needle: &str) {
    wait::until_async(
        &format!("the processes of {needle:?} to be gone with the run"),
        Duration::from_secs(10),
        async || !group_alive(needle),
    )
    .await;
}

/// Waits for the command to start.
async fn pgid_in(dir: &Path, needle: &str) -> String {
    wait::until_async("the command to start", wait::DEADLINE, async || {
        std::fs::read_to_string(dir.join("pgid"))
            .ok()
            .filter(|t| !t.is_empty())
    })
    .await;
    needle.to_owned()
}

/// Runs one turn whose tool call is [`sleeper`], calling `stop` once the
/// command runs; the result, when `stop` was called, the command's group
/// and the events.
async fn run_sleeper(
    timeout: Duration,
    stop: impl FnOnce(&CancellationToken),
) -> (RunResult, Instant, String, Arc<CollectSink>) {
    let mark = mark();
    let needle = format!("sleep 30.{mark}");
    let mock = MockModel::start(
        Script::from_json(&json!({"turns": [
            {"toolCalls": [{"name": "exec", "arguments": {"command": sleeper(&mark)}}]},
            {"text": "never asked"},
        ]}))
        .unwrap(),
    )
    .await
    .unwrap();
    let config = ProviderConfig::new("mock", OPENAI_COMPLETIONS, &mock.base_url());
    let client = OpenAiCompatible::new(config).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scope = RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s1"),
        run_id: RunId::new("r1"),
    };
    let ctx = RunContext {
        scope: scope.clone(),
        session_key: "agent:main:s1".into(),
        sender: None,
        channel: None,
        cancel: CancellationToken::new(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    };
    let catalog = CatalogBuilder::new(scope)
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    let runner = Arc::new(
        ToolRunner::new(
            Arc::new(catalog),
            Arc::new(CoreTools::new(dir.path()).unwrap()),
        )
        .with_approver(Arc::new(PolicyApprover::AllowAll)),
    );
    let sink = Arc::new(CollectSink::default());
    let run = AgentRun {
        provider: &client,
        surface: Arc::new(DirectSurface::new(runner)),
        ctx: ctx.clone(),
        events: Arc::new(RunEvents::new(sink.clone(), &ctx)),
        options: RunOptions {
            model: "mock-model".into(),
            timeout,
            ..RunOptions::default()
        },
    };
    let (result, (stopped, pgid)) = tokio::join!(run.run(Vec::new(), "sleep"), async {
        let pgid = pgid_in(dir.path(), &needle).await;
        assert!(group_alive(&pgid), "the command is not running");
        stop(&ctx.cancel);
        (Instant::now(), pgid)
    });
    // The second turn was never asked for.
    assert_eq!(mock.requests().len(), 1);
    (result, stopped, pgid, sink)
}

/// The `tool.call.failed` event's data of the in-flight call, redacted.
fn aborted_call(sink: &CollectSink) -> serde_json::Value {
    let events = sink.events();
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventType::ToolCallFailed)
        .collect();
    assert_eq!(failed.len(), 1, "{events:?}");
    redacted(&failed[0].data)
}

/// The `tool.call.failed` data of the exec call aborted because `why`.
fn aborted(why: &str) -> serde_json::Value {
    json!({"callId": "call_1", "durationMs": "<ms>", "name": "exec", "status": "aborted",
           "error": {"error": why, "status": "aborted"}})
}

#[tokio::test]
async fn cancelling_a_run_with_a_command_in_flight_returns_promptly_and_kills_it() {
    let (result, cancelled, pgid, sink) =
        run_sleeper(Duration::from_secs(120), CancellationToken::cancel).await;
    let took = cancelled.elapsed();
    assert!(took < Duration::from_secs(1), "the run took {took:?}");
    assert_eq!(
        (
            result.status,
            result.error.as_ref().map(|e| e.message.as_str()),
            result.tool_calls
        ),
        (RunStatus::Cancelled, Some("the run was aborted"), 1)
    );
    group_gone(&pgid).await;
    pretty_assertions::assert_eq!(aborted_call(&sink), aborted("the run was aborted"));
    let kinds: Vec<_> = sink.events().iter().map(|e| e.kind).collect();
    assert_eq!(kinds.last(), Some(&EventType::RunCancelled));
}

#[tokio::test]
async fn a_run_that_times_out_with_a_command_in_flight_kills_it() {
    let started = Instant::now();
    let (result, _, pgid, sink) = run_sleeper(Duration::from_millis(1500), |_| {}).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "the run took {took:?}");
    assert_eq!(result.status, RunStatus::TimedOut);
    group_gone(&pgid).await;
    pretty_assertions::assert_eq!(
        aborted_call(&sink),
        aborted("the run exceeded its time limit of 1500 ms")
    );
    let kinds: Vec<_> = sink.events().iter().map(|e| e.kind).collect();
    assert_eq!(kinds.last(), Some(&EventType::RunTimedOut));
}
