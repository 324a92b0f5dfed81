//! Background shell processes without the gateway: `exec`'s `background`
//! and `yieldMs` against a recording host, and the `process` tool's
//! actions. Hostile cases: a group that ignores `SIGTERM` and forks,
//! output past the ring, more processes than the bounds, a TTL on the
//! shared clock, writes and kills of ended processes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use talon_core_tools::{
    Background, CoreTools, ProcessEnd, ProcessHost, ProcessLimits, ProcessStart, ProcessTool,
    Processes, ShellOptions,
};
use talon_protocol::clock::Clock;
use talon_testing::wait;
use talon_tools::{
    BoxFuture, Caller, CatalogBuilder, ToolCall, ToolError, ToolErrorCode, ToolExecutor, ToolPolicy,
};

use super::core_tools::{context, execute};
use super::hostile_exec::{all_gone, marker};

/// A host that numbers processes `t1`, `t2`, ... and records what it is
/// told.
#[derive(Debug, Default)]
struct Recorder {
    opened: Mutex<Vec<String>>,
    progress: Mutex<Vec<(String, String)>>,
    ends: Mutex<Vec<(String, ProcessEnd, String)>>,
}

impl ProcessHost for Recorder {
    fn open<'a>(&'a self, start: ProcessStart<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let mut opened = self.opened.lock().unwrap();
            opened.push(start.command.to_owned());
            Ok(format!("t{}", opened.len()))
        })
    }

    fn progress<'a>(&'a self, id: &'a str, tail: &'a str) -> BoxFuture<'a, ()> {
        self.progress
            .lock()
            .unwrap()
            .push((id.to_owned(), tail.to_owned()));
        Box::pin(async {})
    }

    fn ended<'a>(&'a self, id: &'a str, end: &'a ProcessEnd, tail: &'a str) -> BoxFuture<'a, ()> {
        self.ends
            .lock()
            .unwrap()
            .push((id.to_owned(), end.clone(), tail.to_owned()));
        Box::pin(async {})
    }
}

impl Recorder {
    async fn end_of(&self, id: &str) -> (ProcessEnd, String) {
        wait::until_async(
            &format!("{id} to be reported ended"),
            wait::DEADLINE,
            async || {
                self.ends
                    .lock()
                    .unwrap()
                    .iter()
                    .find(|(i, _, _)| i == id)
                    .map(|(_, end, tail)| (end.clone(), tail.clone()))
            },
        )
        .await
    }
}

struct Setup {
    core: CoreTools,
    processes: Processes,
    host: Arc<Recorder>,
    _ws: tempfile::TempDir,
}

fn setup_with(limits: ProcessLimits, clock: Clock, session: &str) -> Setup {
    setup_in(limits, clock, session, talon_core_tools::Jail::default())
}

/// Commands as the admin's unsandboxed mode runs them: no PID namespace
/// whose end would take them along, so only the group's signals do.
fn unsandboxed() -> talon_core_tools::Jail {
    talon_core_tools::Jail::new(talon_jail::Policy {
        mode: talon_jail::Mode::Off,
        network: talon_core_tools::Network::Host,
        ..talon_jail::Policy::default()
    })
}

fn setup_in(
    limits: ProcessLimits,
    clock: Clock,
    session: &str,
    jail: talon_core_tools::Jail,
) -> Setup {
    let ws = tempfile::tempdir().unwrap();
    let processes = Processes::new(limits);
    let host = Arc::new(Recorder::default());
    let core = CoreTools::new(ws.path()).unwrap().with_shell(ShellOptions {
        background: Some(Background {
            processes: processes.clone(),
            host: host.clone(),
            session: session.into(),
            clock,
            default_yield: None,
            redact: vec!["hunter2-secret".into()],
        }),
        jail,
        ..ShellOptions::default()
    });
    Setup {
        core,
        processes,
        host,
        _ws: ws,
    }
}

fn setup() -> Setup {
    setup_with(ProcessLimits::default(), Clock::system(), "s1")
}

impl Setup {
    /// `exec` called with `args`.
    async fn exec(&self, args: Value) -> Result<Value, ToolError> {
        execute(&self.core, &context(), "exec", args).await
    }

    /// The `process` tool of session `s1` called with `args`.
    async fn process(&self, args: Value) -> Result<Value, ToolError> {
        process(&self.processes, "s1", args).await
    }
}

/// The `process` tool of `session` called with `args`.
async fn process(processes: &Processes, session: &str, args: Value) -> Result<Value, ToolError> {
    let tool = ProcessTool::new(processes.clone(), session.into());
    let catalog = CatalogBuilder::new(Default::default())
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    let entry = catalog.get("openclaw:core:exec").unwrap().clone();
    let call = ToolCall {
        call_id: "p".into(),
        id: "process".into(),
        args,
        caller: Caller::Direct,
    };
    tool.execute(&context(), &entry, &call).await
}

#[tokio::test]
async fn without_a_host_background_and_yield_are_refused_not_ignored() {
    let ws = tempfile::tempdir().unwrap();
    let core = CoreTools::new(ws.path()).unwrap();
    for args in [
        json!({"command": "true", "background": true}),
        json!({"command": "true", "yieldMs": 10}),
    ] {
        let error = execute(&core, &context(), "exec", args).await.unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                ToolErrorCode::Unsupported,
                "exec: background and yieldMs need a host that keeps background processes \
                 (the gateway, with a tools.exec section); run the command without them"
            )
        );
    }
    // `background: false` is the foreground.
    let ran = execute(
        &core,
        &context(),
        "exec",
        json!({"command": "echo fg", "background": false}),
    )
    .await
    .unwrap();
    assert_eq!(ran["stdout"], "fg\n");
}

#[tokio::test]
async fn a_detached_command_answers_at_once_and_is_polled_to_its_end() {
    let s = setup();
    let started = s
        .exec(json!({
            "command": "echo hunter2-secret; read line; echo got $line",
            "background": true
        }))
        .await
        .unwrap();
    assert_eq!(
        (
            &started["status"],
            &started["sessionId"],
            &started["taskId"]
        ),
        (&json!("running"), &json!("t1"), &json!("t1"))
    );
    assert!(started["pid"].is_u64(), "{started}");
    // The host was told the command, secrets redacted.
    assert_eq!(
        *s.host.opened.lock().unwrap(),
        ["echo [redacted]; read line; echo got $line"]
    );
    let listed = s.process(json!({"action": "list"})).await.unwrap();
    assert_eq!(listed["processes"][0]["status"], "running", "{listed}");
    // Another session sees nothing of it.
    let other = process(
        &s.processes,
        "s2",
        json!({"action": "poll", "sessionId": "t1"}),
    )
    .await
    .unwrap_err();
    assert_eq!(other.code, ToolErrorCode::NotFound);
    let wrote = s
        .process(json!({"action": "write", "taskId": "t1", "data": "hello\n", "eof": true}))
        .await
        .unwrap();
    assert_eq!(wrote["written"], 6);
    let polled = s
        .process(json!({"action": "poll", "sessionId": "t1", "timeout": 20000}))
        .await
        .unwrap();
    assert_eq!(
        polled,
        json!({"sessionId": "t1", "taskId": "t1", "status": "completed", "exitCode": 0,
               "output": "hunter2-secret\ngot hello\n", "truncated": false})
    );
    // A second poll has nothing new; log still reads it all.
    let again = s
        .process(json!({"action": "poll", "sessionId": "t1"}))
        .await
        .unwrap();
    assert_eq!(again["output"], "");
    let log = s
        .process(json!({"action": "log", "sessionId": "t1", "offset": 1}))
        .await
        .unwrap();
    assert_eq!(
        (&log["output"], &log["totalLines"]),
        (&json!("got hello"), &json!(2))
    );
    let (end, tail) = s.host.end_of("t1").await;
    assert_eq!(
        (end, tail),
        (ProcessEnd::Exited(0), "[redacted]\ngot hello\n".to_owned())
    );
    // Writing to or killing an ended process says it ended.
    for args in [
        json!({"action": "write", "sessionId": "t1", "data": "x"}),
        json!({"action": "kill", "sessionId": "t1"}),
    ] {
        let error = s.process(args).await.unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                ToolErrorCode::Failed,
                "process: t1 has ended (completed); poll or log still read its output"
            )
        );
    }
}

#[tokio::test]
async fn a_command_that_ends_within_its_yield_is_answered_in_the_foreground() {
    let s = setup();
    let ran = s
        .exec(json!({"command": "echo out; echo err >&2; exit 3", "yieldMs": 20000}))
        .await
        .unwrap();
    assert_eq!(
        ran,
        json!({"exitCode": 3, "stdout": "out\n", "stderr": "err\n", "truncated": false})
    );
    assert!(s.host.opened.lock().unwrap().is_empty());
    assert_eq!(s.processes.live(None), 0);
    // One that outlives it detaches.
    let detached = s
        .exec(json!({"command": "echo early; sleep 30", "yieldMs": 300}))
        .await
        .unwrap();
    assert_eq!(
        (&detached["status"], &detached["tail"]),
        (&json!("running"), &json!("early\n"))
    );
    assert!(s.processes.kill("t1", "killed in the test"));
    assert_eq!(
        s.host.end_of("t1").await.0,
        ProcessEnd::Killed("killed in the test".into())
    );
}

/// Starts a group that ignores `SIGTERM` and forks, kills it with
/// `process kill`, and checks nothing of it is left; answers how long the
/// kill took.
async fn kill_a_stubborn_group(jail: talon_core_tools::Jail) -> Duration {
    let s = setup_in(ProcessLimits::default(), Clock::system(), "s1", jail);
    let (a, b) = (marker(400), marker(401));
    let command = format!(
        "trap '' TERM; (trap '' TERM; sleep {a}) & (trap '' TERM; sleep {b} &) ; echo up; wait"
    );
    s.exec(json!({"command": command, "background": true}))
        .await
        .unwrap();
    wait::until_async("the command to be up", wait::DEADLINE, async || {
        let polled = s
            .process(json!({"action": "log", "sessionId": "t1"}))
            .await
            .unwrap();
        (polled["output"] == "up").then_some(())
    })
    .await;
    let began = std::time::Instant::now();
    let killed = s
        .process(json!({"action": "kill", "sessionId": "t1"}))
        .await
        .unwrap();
    let took = began.elapsed();
    assert_eq!(killed["status"], "killed", "{killed}");
    all_gone(&[&a, &b]).await;
    assert_eq!(
        s.host.end_of("t1").await.0,
        ProcessEnd::Killed("killed with process kill".into())
    );
    took
}

#[tokio::test]
async fn kill_ends_a_sandboxed_group_that_ignores_sigterm_and_forks() {
    // The sandbox's PID namespace ends with bubblewrap, which `SIGTERM`
    // ends: every process of the command goes with it.
    kill_a_stubborn_group(talon_core_tools::Jail::default()).await;
}

#[tokio::test]
async fn kill_escalates_to_sigkill_for_an_unsandboxed_group_that_ignores_sigterm() {
    // Nothing but the group's signals: `SIGTERM` is ignored, `SIGKILL`
    // follows after the grace.
    let took = kill_a_stubborn_group(unsandboxed()).await;
    assert!(
        took >= talon_core_tools::KILL_GRACE,
        "killed in {took:?}, before SIGKILL was due"
    );
}

#[tokio::test]
async fn huge_output_is_kept_to_the_ring_and_paged_by_line() {
    let s = setup_with(
        ProcessLimits {
            retained_bytes: 64 * 1024,
            ..ProcessLimits::default()
        },
        Clock::system(),
        "s1",
    );
    s.exec(json!({"command": "seq 1 2000000", "background": true}))
        .await
        .unwrap();
    let polled = s
        .process(json!({"action": "poll", "sessionId": "t1", "timeout": 60000}))
        .await
        .unwrap();
    assert_eq!(
        (&polled["status"], &polled["truncated"]),
        (&json!("completed"), &json!(true))
    );
    assert!(polled["output"].as_str().unwrap().len() <= 64 * 1024);
    assert!(
        polled["output"]
            .as_str()
            .unwrap()
            .ends_with("1999999\n2000000\n")
    );
    let log = s
        .process(json!({"action": "log", "sessionId": "t1", "limit": 2}))
        .await
        .unwrap();
    assert_eq!(log["output"], "1999999\n2000000");
    assert!(log["droppedBytes"].as_u64().unwrap() > 14_000_000, "{log}");
}

#[tokio::test]
async fn processes_past_the_bounds_are_refused_and_none_outlives_the_node() {
    let s = setup_with(
        ProcessLimits {
            per_session: 2,
            per_node: 3,
            ..ProcessLimits::default()
        },
        Clock::system(),
        "s1",
    );
    let m = marker(500);
    let start = |core: CoreTools| {
        let m = m.clone();
        async move {
            execute(
                &core,
                &context(),
                "exec",
                json!({"command": format!("sleep {m}"), "background": true}),
            )
            .await
        }
    };
    let mut refused = Vec::new();
    for _ in 0..50 {
        if let Err(error) = start(s.core.clone()).await {
            refused.push(error);
        }
    }
    assert_eq!(refused.len(), 48);
    assert_eq!(
        refused[0].message,
        "exec: this session has 2 background processes running, the most it may have \
         (tools.exec.maxPerSession); kill one with process (action kill) or wait for one to end"
    );
    // Another session of the same node gets the node's last slot.
    let other = CoreTools::new(s._ws.path())
        .unwrap()
        .with_shell(ShellOptions {
            background: Some(Background {
                processes: s.processes.clone(),
                host: s.host.clone(),
                session: "s2".into(),
                clock: Clock::system(),
                default_yield: None,
                redact: Vec::new(),
            }),
            ..ShellOptions::default()
        });
    start(other.clone()).await.unwrap();
    let error = start(other).await.unwrap_err();
    assert_eq!(
        error.message,
        "exec: 3 background processes are running on this gateway, the most it runs \
         (tools.exec.maxPerNode); try again when one has ended"
    );
    s.processes.stop_all("the test ends");
    all_gone(&[&m]).await;
    assert_eq!(
        s.host.end_of("t3").await.0,
        ProcessEnd::Stopped("the test ends".into())
    );
    wait::until_async("every process to have ended", wait::DEADLINE, async || {
        s.processes.live(None) == 0
    })
    .await;
}

#[tokio::test]
async fn a_process_past_its_ttl_on_the_shared_clock_is_killed_timed_out() {
    let (clock, time) = Clock::adjustable();
    let s = setup_with(
        ProcessLimits {
            ttl: Duration::from_secs(60),
            ..ProcessLimits::default()
        },
        clock,
        "s1",
    );
    let m = marker(600);
    s.exec(json!({"command": format!("sleep {m}"), "background": true}))
        .await
        .unwrap();
    time.advance(Duration::from_secs(61));
    assert_eq!(
        s.host.end_of("t1").await.0,
        ProcessEnd::TimedOut(Duration::from_secs(60))
    );
    all_gone(&[&m]).await;
}

#[tokio::test]
async fn processes_killed_as_they_start_leave_nothing() {
    // A kill that lands while the sandbox is still starting (before its
    // inner process took `--die-with-parent`) must not leave the command
    // running: where there is a pids cgroup, what is left in it is
    // killed too.
    let s = setup_with(
        ProcessLimits {
            per_session: 64,
            ..ProcessLimits::default()
        },
        Clock::system(),
        "s1",
    );
    let markers: Vec<String> = (0..30).map(|_| marker(800)).collect();
    for (i, m) in markers.iter().enumerate() {
        s.exec(json!({"command": format!("sleep {m}"), "background": true}))
            .await
            .unwrap();
        assert!(s.processes.kill(&format!("t{}", i + 1), "killed at once"));
    }
    let all: Vec<&str> = markers.iter().map(String::as_str).collect();
    all_gone(&all).await;
}

#[tokio::test]
async fn a_run_cancelled_during_the_yield_kills_the_command_and_records_nothing() {
    let s = setup();
    let m = marker(900);
    let ctx = context();
    let cancel = ctx.cancel.clone();
    let call = execute(
        &s.core,
        &ctx,
        "exec",
        json!({"command": format!("echo up; sleep {m}"), "yieldMs": 30000}),
    );
    let (ended, ()) = tokio::join!(call, async {
        wait::until_async("the command to run", wait::DEADLINE, async || {
            !super::hostile_exec::host_pids(&format!("sleep {m}")).is_empty()
        })
        .await;
        cancel.cancel();
    });
    let error = ended.unwrap_err();
    assert_eq!(
        (error.code, error.message.as_str()),
        (
            ToolErrorCode::Aborted,
            "the run was aborted; the command was killed"
        )
    );
    all_gone(&[&m]).await;
    assert!(s.host.opened.lock().unwrap().is_empty());
}
