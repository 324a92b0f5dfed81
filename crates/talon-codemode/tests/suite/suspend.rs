//! Suspension, `wait`, and durability across runtimes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use talon_codemode::{NamespaceRegistry, SnapshotStore, StoreLimits};
use talon_protocol::{CodeModeResult, CodeModeWaitReason};
use talon_testing::wait;

use super::*;

fn quick() -> RunOptions {
    let mut config = config();
    config.timeout = Duration::from_millis(150);
    RunOptions {
        config,
        ..RunOptions::default()
    }
}

fn file_store(dir: &std::path::Path) -> Arc<dyn SnapshotStore> {
    Arc::new(talon_codemode::open_file_store(dir, StoreLimits::default()).unwrap())
}

/// A runtime over a file store in `dir` and a quick run with `tools`: a
/// process that can die and be replaced by another on the same directory.
fn on_disk(dir: &std::path::Path, tools: &Arc<Tools>) -> (CodeMode, Run) {
    let runtime = code_mode(file_store(dir), Arc::new(NamespaceRegistry::new()));
    let run = start(
        &runtime,
        RunOptions {
            tools: tools.clone(),
            ..quick()
        },
    );
    (runtime, run)
}

#[tokio::test]
async fn yield_control_suspends_and_wait_resumes_at_once() {
    let (_cm, run) = standard();
    let first = exec(
        &run.run,
        "text('a'); await yield_control('checkpoint'); text('b'); return 'done';",
    )
    .await;
    match &first {
        CodeModeResult::Waiting {
            reason,
            pending_tool_calls,
            ..
        } => {
            assert_eq!(*reason, CodeModeWaitReason::Yield);
            assert!(pending_tool_calls.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let started = Instant::now();
    let done = wait(&run.run, &cell_id(&first)).await;
    assert_eq!(value(&done), json!("done"));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn wait_never_returns_waiting_early_when_nothing_changed() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let run = start(&cm, quick());
    let first = exec(&run.run, "return (await tools.slow({ms: 2000})).input.ms;").await;
    let id = cell_id(&first);
    let started = Instant::now();
    let second = wait(&run.run, &id).await;
    assert!(
        matches!(second, CodeModeResult::Waiting { .. }),
        "{second:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "waited its whole budget"
    );
    assert_eq!(second.telemetry().wait_count, 1);
    // Once the call finishes, wait returns as soon as the cell does.
    wait::until_async("the slow call to finish", wait::DEADLINE, async || {
        run.runner
            .records()
            .iter()
            .any(|r| r.id == "openclaw:core:slow" && r.status == "ok")
    })
    .await;
    let started = Instant::now();
    assert_eq!(value(&wait(&run.run, &id).await), json!(2000));
    assert!(started.elapsed() < Duration::from_millis(150));
    assert_eq!(run.tools.runs("slow"), 1);
}

#[tokio::test]
async fn ready_bridge_calls_are_drained_inside_one_exec() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"let total = 0;
           for (let i = 0; i < 50; i++) total += (await tools.echo({i})).input.i;
           const api = await MCP.docs.$api();
           const hit = await MCP.docs.searchDocs({query: "q"});
           return [total, typeof api, hit.tool];"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!([1225, "string", "mcp:docs:search_docs"])
    );
    assert_eq!(result.telemetry().exec_count, 1);
    assert_eq!(result.telemetry().wait_count, 0);
}

#[tokio::test]
async fn a_new_runtime_on_the_same_store_resumes_a_cell_and_never_reruns_finished_calls() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Arc::new(Tools::default());
    let (first_runtime, run) = on_disk(dir.path(), &tools);
    let waiting = exec(
        &run.run,
        "const r = await tools.slow({ms: 300}); text('after'); return r.input.ms;",
    )
    .await;
    let id = cell_id(&waiting);
    let record = dir.path().join(format!("{id}.cell"));
    let suspended = std::fs::read(&record).unwrap();
    // The call finishes while the cell is suspended; its result is stored.
    let copy = wait::until_async(
        "the call's result in the record",
        wait::DEADLINE,
        async || std::fs::read(&record).ok().filter(|now| *now != suspended),
    )
    .await;
    drop(run);
    drop(first_runtime);
    let (_second_runtime, run) = on_disk(dir.path(), &tools);
    let done = wait(&run.run, &id).await;
    assert_eq!(value(&done), json!(300));
    assert_eq!(tools.runs("slow"), 1, "the finished call was not run again");
    assert_eq!(
        entries(dir.path()),
        Vec::<String>::new(),
        "terminal: deleted (only its consumed marker is left)"
    );
    // A copy of the record put back after the resume never runs again.
    std::fs::write(&record, &copy).unwrap();
    let replayed = wait(&run.run, &id).await;
    assert_eq!(failure(&replayed).1, Some("snapshot_restore_failed"));
    assert_eq!(tools.runs("slow"), 1);
}

/// The directory's entries other than consumed markers.
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.ends_with(".mark"))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_record_from_before_a_settle_put_back_is_refused_not_redispatched() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Arc::new(Tools::default());
    let (first_runtime, run) = on_disk(dir.path(), &tools);
    // slow_read is replay-safe: a stale record would dispatch it again.
    let waiting = exec(
        &run.run,
        "return (await tools.slow_read({ms: 300})).input.ms;",
    )
    .await;
    let id = cell_id(&waiting);
    let record = dir.path().join(format!("{id}.cell"));
    let before_settle = std::fs::read(&record).unwrap();
    wait::until_async(
        "the call's result in the record",
        wait::DEADLINE,
        async || std::fs::read(&record).is_ok_and(|now| now != before_settle),
    )
    .await;
    drop(run);
    drop(first_runtime);
    std::fs::write(&record, &before_settle).unwrap();
    let (_second_runtime, run) = on_disk(dir.path(), &tools);
    let result = wait(&run.run, &id).await;
    assert_eq!(failure(&result).1, Some("snapshot_restore_failed"));
    assert_eq!(tools.runs("slow_read"), 1, "not dispatched again");
}

#[tokio::test]
async fn a_tampered_record_fails_wait_with_snapshot_restore_failed() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Arc::new(Tools::default());
    let (_runtime, run) = on_disk(dir.path(), &tools);
    let waiting = exec(&run.run, "await yield_control('x'); return 1;").await;
    let id = cell_id(&waiting);
    let record = dir.path().join(format!("{id}.cell"));
    let mut bytes = std::fs::read(&record).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&record, &bytes).unwrap();
    let result = wait(&run.run, &id).await;
    assert_eq!(failure(&result).1, Some("snapshot_restore_failed"));
    // It is gone: a second wait does not find it.
    let again = wait(&run.run, &id).await;
    assert_eq!(failure(&again).1, Some("invalid_input"));
}

#[tokio::test]
async fn calls_in_flight_when_the_runtime_died_fail_catchably_unless_replay_safe() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Arc::new(Tools::default());
    let (first_runtime, run) = on_disk(dir.path(), &tools);
    let waiting = exec(
        &run.run,
        r#"const [a, b] = await Promise.allSettled([tools.slow({ms: 5000}), tools.slow_read({ms: 10})]);
           return {a: a.status, reason: a.reason && [a.reason.code, a.reason.message], b: b.value && b.value.tool};"#,
    )
    .await;
    // slow_read (10 ms) finished inside the exec; slow is in flight.
    let id = cell_id(&waiting);
    drop(run);
    drop(first_runtime);
    let (_second_runtime, run) = on_disk(dir.path(), &tools);
    let done = wait(&run.run, &id).await;
    assert_eq!(
        value(&done),
        json!({"a": "rejected",
               "reason": ["nested_tool_failed", "the runtime restarted while openclaw:core:slow was running; it was not retried because the tool is not marked replay-safe"],
               "b": "openclaw:core:slow_read"})
    );
    assert_eq!(tools.runs("slow_read"), 1);

    // A replay-safe tool in flight is dispatched again.
    let (first_runtime, run) = on_disk(dir.path(), &tools);
    let id = cell_id(
        &exec(
            &run.run,
            "return (await tools.slow_read({ms: 400})).input.ms;",
        )
        .await,
    );
    drop(run);
    drop(first_runtime);
    let (_second_runtime, run) = on_disk(dir.path(), &tools);
    let mut result = wait(&run.run, &id).await;
    while matches!(result, CodeModeResult::Waiting { .. }) {
        result = wait(&run.run, &id).await;
    }
    assert_eq!(value(&result), json!(400));
    assert_eq!(
        tools.runs("slow_read"),
        3,
        "dispatched again after the restart"
    );
}

#[tokio::test]
async fn completed_failed_and_aborted_cells_cancel_the_calls_they_abandoned() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let run = start(&cm, quick());
    let result = exec(
        &run.run,
        "tools.slow({ms: 300}).catch(() => {}); await tools.echo({}); return 'left it running';",
    )
    .await;
    assert_eq!(value(&result), json!("left it running"));
    // Both calls ended: had `slow` not been cancelled, it would have
    // ended `ok` after its 300 ms.
    wait::until_async("both calls to end", wait::DEADLINE, async || {
        run.runner.records().len() == 2
    })
    .await;
    let mut records: Vec<(String, &str)> = run
        .runner
        .records()
        .into_iter()
        .map(|r| (r.id, r.status))
        .collect();
    records.sort();
    assert_eq!(
        records,
        [
            ("openclaw:core:echo".to_owned(), "ok"),
            ("openclaw:core:slow".to_owned(), "cancelled")
        ]
    );
    assert_eq!(cm.live_cells(), 0);
    assert_eq!(cm.store().purge_expired().unwrap(), 0);
}

#[tokio::test]
async fn aborting_the_run_stops_a_cell_that_waits_on_nested_calls() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let mut options = quick();
    options.config.timeout = Duration::from_secs(5);
    let run = start(&cm, options);
    let cancel = run.ctx.cancel.clone();
    let (result, ()) = tokio::join!(
        exec(&run.run, "await tools.slow({ms: 3000}); return 1;"),
        async {
            wait::until_async("the slow call to start", wait::DEADLINE, async || {
                run.tools.runs("slow") == 1
            })
            .await;
            cancel.cancel();
        }
    );
    assert_eq!(failure(&result).1, Some("aborted"));
    assert_eq!(cm.live_cells(), 0);
    // A new exec in an aborted run fails at once.
    assert_eq!(
        failure(&exec(&run.run, "return 1").await).1,
        Some("aborted")
    );
}

#[tokio::test]
async fn the_live_snapshot_cap_is_enforced() {
    let store: Arc<dyn SnapshotStore> = Arc::new(talon_codemode::MemoryStore::new(StoreLimits {
        max_snapshot_bytes: 10 << 20,
        max_live_cells: 2,
    }));
    let cm = code_mode(store, Arc::new(NamespaceRegistry::new()));
    let run = start(&cm, quick());
    for _ in 0..2 {
        cell_id(&exec(&run.run, "await yield_control(); return 1;").await);
    }
    let third = exec(&run.run, "await yield_control(); return 1;").await;
    assert_eq!(failure(&third).1, Some("snapshot_limit_exceeded"));
    assert_eq!(third.telemetry().snapshot_events[0].event, "rejected");
}

#[tokio::test]
async fn a_cell_calling_a_client_tool_waits_for_the_app_and_a_later_run_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Arc::new(Tools::default());
    let (_first, run) = on_disk(dir.path(), &tools);
    // echo runs here; pick_color is the app's: once echo has answered,
    // nothing of this process is left to wait for, and the cell is stored
    // at once (well before its timeout).
    let code = "const e = await tools.echo({text: 'hi'}); \
                const c = await tools.pick_color({text: 'warm'}); \
                return {echoed: e.input.text, color: c};";
    let reply = talon_tools::ToolSurface::handle(
        &run.run,
        &run.ctx,
        "call_1",
        "exec",
        json!({"code": code}),
    )
    .await;
    assert_eq!(
        reply.awaiting,
        vec![talon_tools::AppCall {
            call_id: "call_1/2".into(),
            name: "pick_color".into(),
            arguments: json!({"text": "warm"}),
        }]
    );
    assert_eq!(reply.value["status"], "waiting");
    assert_eq!(tools.runs("pick_color"), 0);
    // The store says which cell waits, for which exec call.
    let store = file_store(dir.path());
    let session = talon_protocol::gateway::bounded::SessionId::new("s1");
    let awaiting = talon_codemode::awaiting_cells(store.as_ref(), &session).unwrap();
    assert_eq!(awaiting.len(), 1);
    assert_eq!(
        (
            awaiting[0].parent.as_str(),
            awaiting[0].calls.clone(),
            awaiting[0].scope.run_id.as_str()
        ),
        (
            "call_1",
            vec![talon_codemode::CellCall {
                host_call_id: 2,
                call_id: "call_1/2".to_owned(),
                name: "pick_color".to_owned(),
            }],
            "r1"
        )
    );
    // The app answers; another runtime on the same store (a restart) runs
    // the session's next run, which makes exec call_1 again: the cell
    // goes on from its snapshot with the answer, and echo is not re-run.
    talon_codemode::answer_cell(
        store.as_ref(),
        &awaiting[0],
        &[("call_1/2".into(), "\"teal\"".into())],
    )
    .unwrap();
    let runtime = code_mode(file_store(dir.path()), Arc::new(NamespaceRegistry::new()));
    let runner = Arc::new(talon_tools::ToolRunner::new(
        Arc::new(catalog("r2", &talon_tools::ToolPolicy::new())),
        tools.clone(),
    ));
    let next = runtime.start_run(talon_codemode::RunSetup {
        config: quick().config,
        runner,
        ctx: ctx("r2"),
        mcp: None,
        plugin_config: json!({}),
        exec_hooks: Vec::new(),
        resume: awaiting,
    });
    let result = next
        .exec(
            "call_1",
            json!({"code": "throw new Error('not run again')"}),
        )
        .await;
    assert_eq!(value(&result), json!({"echoed": "hi", "color": "teal"}));
    assert_eq!(tools.runs("echo"), 1);
    // Gone: neither run can resume it.
    assert!(
        talon_codemode::awaiting_cells(store.as_ref(), &session)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_offered_tools_are_checked_against_the_surface() {
    let (_cm, run) = standard();
    let surface: &dyn talon_tools::ToolSurface = &run.run;
    // exec, wait and the direct-only ask_user pass.
    assert_eq!(surface.check_offered(&surface.tools()), Ok(()));
    let mut more = surface.tools().as_ref().clone();
    more.push(talon_protocol::ModelTool {
        name: "pick_color".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    });
    assert_eq!(
        surface.check_offered(&more),
        Err(
            "Code Mode offers the model exec, wait and direct-only tools only, and the request \
             offered \"pick_color\""
                .into()
        )
    );
}
