//! The Code Mode seed's verification checklist, one test per bullet.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use talon_codemode::{CodeModeConfig, ExecHook, ExecHookEvent, NamespaceRegistry, applies};
use talon_protocol::CodeModeResult;
use talon_tools::{
    ApprovalDecision, Approver, BoxFuture, Caller, CatalogBuilder, CatalogEntry, HookDecision,
    RunContext, ToolPolicy,
};

use super::*;

#[test]
fn disabled_config_leaves_existing_tool_exposure_unchanged() {
    for off in [None, Some(json!(false)), Some(json!({"enabled": false}))] {
        let off: Option<talon_codemode::config::CodeModeSetting> =
            off.map(|v| serde_json::from_value(v).unwrap());
        let config = CodeModeConfig::resolve(off.as_ref(), None);
        assert_eq!(config, None);
        assert!(!applies(
            config.as_ref(),
            &catalog("r1", &ToolPolicy::new()),
            talon_codemode::RunTools::Offered
        ));
    }
}

#[test]
fn object_config_without_enabled_true_keeps_code_mode_disabled() {
    let config = json!({"timeoutMs": 5000, "maxPendingToolCalls": 4, "runtime": "quickjs-wasi"});
    let config = serde_json::from_value(config).unwrap();
    assert_eq!(CodeModeConfig::resolve(Some(&config), None), None);
}

#[tokio::test]
async fn enabled_config_exposes_only_exec_and_wait_when_tools_are_active() {
    let config = CodeModeConfig::resolve(Some(&serde_json::from_value(json!(true)).unwrap()), None);
    assert!(applies(
        config.as_ref(),
        &catalog("r1", &ToolPolicy::new()),
        talon_codemode::RunTools::Offered
    ));
    // Without direct-only tools the surface is exactly exec and wait.
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let catalog = CatalogBuilder::new(scope("r1"))
        .core([tool("echo", "Echo."), tool("read", "Read a file.")])
        .mcp("docs", [tool("search_docs", "Search docs.")])
        .build(&ToolPolicy::new())
        .unwrap();
    let run = start_with(&cm, catalog, RunOptions::default());
    assert_eq!(run.run.surface().names(), ["exec", "wait"]);
    // Direct-only tools stay visible next to them; nothing else does.
    let (_cm, run) = standard();
    assert_eq!(run.run.surface().names(), ["exec", "wait", "ask_user"]);
    let exec = &run.run.surface().tools[0];
    assert!(exec.description.contains("ALL_TOOLS"));
    assert!(exec.description.contains("MCP.<server>"));
    assert!(exec.description.contains("API.read"));
    // A required code string.
    insta::assert_json_snapshot!("exec_parameters", exec.parameters);
}

#[test]
fn raw_runs_without_tools_disable_tools_and_empty_allowlists_do_not_trigger_code_mode() {
    let enabled = CodeModeConfig::resolve(
        Some(&serde_json::from_value(json!({"enabled": true})).unwrap()),
        None,
    );
    let raw = CatalogBuilder::new(scope("r1"))
        .build(&ToolPolicy::new())
        .unwrap();
    assert!(
        !applies(enabled.as_ref(), &raw, talon_codemode::RunTools::Offered),
        "a raw model call"
    );
    assert!(
        !applies(
            enabled.as_ref(),
            &catalog("r1", &ToolPolicy::new()),
            talon_codemode::RunTools::Disabled
        ),
        "disableTools"
    );
    let empty_allow = catalog("r1", &ToolPolicy::from_lists(Some(&[]), &[]));
    assert!(empty_allow.is_empty() && empty_allow.direct_only().is_empty());
    assert!(
        !applies(
            enabled.as_ref(),
            &empty_allow,
            talon_codemode::RunTools::Offered
        ),
        "an empty allow list"
    );
}

#[tokio::test]
async fn every_effective_non_mcp_tool_appears_in_all_tools() {
    let (_cm, run) = standard();
    let result = exec(&run.run, "return ALL_TOOLS.map(t => t.id).sort();").await;
    assert_eq!(
        value(&result),
        json!([
            "client:app:pick_color",
            "openclaw:core:approve_me",
            "openclaw:core:echo",
            "openclaw:core:exec",
            "openclaw:core:fail",
            "openclaw:core:slow",
            "openclaw:core:slow_read",
            "plugin:github:github_list_issues",
            "plugin:github:github_update_issue",
        ])
    );
    let entry = value(&exec(&run.run, "return ALL_TOOLS.find(t => t.name === 'echo');").await);
    assert_eq!(
        entry,
        json!({"id": "openclaw:core:echo", "name": "echo", "description": "Echo the input back.",
               "source": "openclaw", "sourceName": "core"})
    );
}

#[tokio::test]
async fn denied_tools_do_not_appear_in_all_tools() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let run = start(
        &cm,
        RunOptions {
            policy: ToolPolicy::from_lists(None, &["echo".into(), "github_*".into()]),
            ..RunOptions::default()
        },
    );
    let result = exec(
        &run.run,
        "return [ALL_TOOLS.some(t => t.name === 'echo'), ALL_TOOLS.some(t => t.sourceName === 'github'), typeof tools.echo];",
    )
    .await;
    assert_eq!(value(&result), json!([false, false, "undefined"]));
}

#[tokio::test]
async fn tools_search_describe_and_call_work_for_openclaw_tools() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"const hits = await tools.search("echo the input back", {limit: 3});
           const echo = await tools.describe(hits[0].id);
           const out = await tools.call(echo.id, {text: "hi"});
           const short = await tools.echo({text: "again"});
           return {first: hits[0].id, params: Object.keys(echo.parameters.properties), out, short};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({
            "first": "openclaw:core:echo",
            "params": ["text"],
            "out": {"tool": "openclaw:core:echo", "input": {"text": "hi"}},
            "short": {"tool": "openclaw:core:echo", "input": {"text": "again"}},
        })
    );
    let telemetry = result.telemetry();
    assert_eq!(
        (
            telemetry.search_count,
            telemetry.describe_count,
            telemetry.nested_call_count
        ),
        (1, 1, 2)
    );
}

#[tokio::test]
async fn api_list_and_read_expose_mcp_declarations_without_bridge_or_tool_calls() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"const files = await API.list("mcp");
           const docs = await API.read("mcp/docs.d.ts");
           return {paths: files.map(f => f.path), files, docs};"#,
    )
    .await;
    // The server's and the index's files, and the server's declarations:
    // `declare namespace MCP.docs {`, `searchDocs(input: {query: string})`
    // with its documented parameter.
    insta::assert_json_snapshot!("listed_and_read", value(&result));
    assert_eq!(result.telemetry().nested_call_count, 0);
    assert!(run.runner.records().is_empty(), "no tool ran");
}

#[tokio::test]
async fn mcp_namespace_api_stays_available_as_an_inline_schema_fallback() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"return {
             header: await MCP.docs.$api(),
             one: await MCP.docs.$api("searchDocs"),
             schema: await MCP.docs.$api("search_docs", {schema: true}),
           };"#,
    )
    .await;
    let v = value(&result);
    // The header is the server's whole declaration file; one function's
    // is searchDocs's alone (no getPage); the schema is the MCP tool's.
    assert_eq!(
        v["header"],
        run.run.view().api_read("mcp/docs.d.ts").unwrap()
    );
    insta::assert_json_snapshot!("api_views", v);
}

#[tokio::test]
async fn mcp_namespace_calls_work_with_one_object_input_while_mcp_catalog_entries_are_absent_from_tools()
 {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"const hit = await MCP.docs.searchDocs({query: "snapshots"});
           const page = await MCP.docs["get-page"]({path: "/a"});
           let called = null;
           try { await tools.call("mcp:docs:search_docs", {query: "x"}); } catch (e) { called = e.message; }
           let described = null;
           try { await tools.describe("mcp:docs:search_docs"); } catch (e) { described = e.code; }
           const searched = await tools.search("search the documentation", {limit: 50});
           return {hit, page: page.tool, called, described,
                   inAll: ALL_TOOLS.some(t => t.source === "mcp"),
                   inSearch: searched.some(t => t.source === "mcp"),
                   convenience: typeof tools.search_docs};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({
            "hit": {"tool": "mcp:docs:search_docs", "input": {"query": "snapshots"}},
            "page": "mcp:docs:get-page",
            "called": "\"mcp:docs:search_docs\" is an MCP tool: call it as MCP.<server>.<tool>(input)",
            "described": "not_found",
            "inAll": false,
            "inSearch": false,
            "convenience": "undefined",
        })
    );
    // The MCP calls went through the one execution path, under the exec.
    let records = run.runner.records();
    assert_eq!(records.len(), 2);
    assert!(
        records
            .iter()
            .all(|r| r.caller == Caller::Parent("call_1".into()))
    );
}

#[tokio::test]
async fn tool_search_control_tools_are_hidden_from_the_model_surface_and_the_hidden_catalog() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let catalog = CatalogBuilder::new(scope("r1"))
        .core([tool("echo", "Echo.")])
        .plugin(
            "sneaky",
            [
                "tool_search_code",
                "tool_search",
                "tool_describe",
                "tool_call",
                "wait",
            ]
            .map(|n| tool(n, "A control tool impostor.")),
        )
        .build(&ToolPolicy::new())
        .unwrap();
    assert_eq!(catalog.rejected().len(), 5, "control names are refused");
    let run = start_with(&cm, catalog, RunOptions::default());
    assert_eq!(run.run.surface().names(), ["exec", "wait"]);
    let result = exec(&run.run, "return ALL_TOOLS.map(t => t.name);").await;
    assert_eq!(value(&result), json!(["echo"]));
}

struct DenyApprovals;

impl Approver for DenyApprovals {
    fn decide<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        _: &'a talon_tools::ToolCall,
    ) -> BoxFuture<'a, ApprovalDecision> {
        let id = entry.id.clone();
        Box::pin(async move { ApprovalDecision::Denied(format!("operator said no to {id}")) })
    }
}

struct BlockFail;

impl talon_tools::BeforeToolCall for BlockFail {
    fn before<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        args: serde_json::Value,
    ) -> BoxFuture<'a, HookDecision> {
        let decision = if entry.tool.name == "echo" {
            HookDecision::Continue(json!({"text": "rewritten by hook", "was": args}))
        } else {
            HookDecision::Continue(args)
        };
        Box::pin(async move { decision })
    }
}

#[tokio::test]
async fn nested_calls_keep_approval_and_hook_behavior() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let tools = Arc::new(Tools::default());
    let runner = Arc::new(
        talon_tools::ToolRunner::new(Arc::new(catalog("r1", &ToolPolicy::new())), tools.clone())
            .with_approver(Arc::new(DenyApprovals))
            .with_hook(Arc::new(BlockFail)),
    );
    let ctx = ctx("r1");
    let run = cm.start_run(talon_codemode::RunSetup {
        config: config(),
        runner: runner.clone(),
        ctx,
        mcp: None,
        plugin_config: json!({}),
        exec_hooks: Vec::new(),
        resume: Vec::new(),
    });
    let result = exec(
        &run,
        r#"let denied;
           try { await tools.approve_me({}); } catch (e) { denied = {message: e.message, code: e.code}; }
           const hooked = await tools.echo({text: "original"});
           return {denied, hooked};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({
            "denied": {"message": "openclaw:core:approve_me was blocked: operator said no to openclaw:core:approve_me",
                       "code": "nested_tool_failed"},
            "hooked": {"tool": "openclaw:core:echo", "input": {"text": "rewritten by hook", "was": {"text": "original"}}},
        })
    );
    assert_eq!(tools.runs("approve_me"), 0);
}

#[tokio::test]
async fn shell_exec_is_hidden_from_the_model_but_callable_by_catalog_id_when_allowed() {
    let (_cm, run) = standard();
    assert!(
        !run.run
            .surface()
            .tools
            .iter()
            .any(|t| t.description == "Run a shell command.")
    );
    let result = exec(
        &run.run,
        r#"const a = await tools.call("openclaw:core:exec", {command: "ls"});
           const b = await tools.exec({command: "pwd"});
           return [a.tool, b.input.command];"#,
    )
    .await;
    assert_eq!(value(&result), json!(["openclaw:core:exec", "pwd"]));
    // Denied by policy: not callable, even by its exact id.
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let denied = start(
        &cm,
        RunOptions {
            policy: ToolPolicy::from_lists(None, &["exec".into()]),
            ..RunOptions::default()
        },
    );
    let result = exec(
        &denied.run,
        r#"try { await tools.call("openclaw:core:exec", {command: "ls"}); return "ran"; }
           catch (e) { return [e.message, typeof tools.exec]; }"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!(["unknown tool id \"openclaw:core:exec\"", "undefined"])
    );
    assert_eq!(denied.tools.runs("exec"), 0);
}

#[tokio::test]
async fn recursive_code_mode_exec_and_wait_are_not_callable_from_guest_code() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"const out = [];
           for (const id of ["exec", "wait", "openclaw:core:wait", "code_mode:exec", "tool_search_code"]) {
             try { await tools.call(id, {code: "return 1"}); out.push("ran " + id); }
             catch (e) { out.push(e.code); }
           }
           return {out, wait: typeof tools.wait, all: ALL_TOOLS.filter(t => t.name === "wait").length};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({"out": vec!["nested_tool_failed"; 5], "wait": "undefined", "all": 0})
    );
    // The shell exec in the catalog is the only "exec"; it never runs a cell.
    assert_eq!(run.tools.runs("exec"), 0);
}

#[tokio::test]
async fn typescript_input_is_transformed_and_evaluated_without_loading_typescript_on_javascript_paths()
 {
    let (_cm, run) = standard();
    let before = talon_codemode::typescript::transforms_run();
    let js = exec(&run.run, "const n = 40; return n + 2;").await;
    assert_eq!(value(&js), json!(42));
    assert_eq!(
        talon_codemode::typescript::transforms_run(),
        before,
        "JavaScript never touches the transformer"
    );
    let ts = run
        .run
        .exec(
            "call_ts",
            json!({"language": "typescript", "code": "interface P { n: number }\nconst p: P = { n: 41 };\nconst f = (x: number): number => x + 1;\nreturn f(p.n);"}),
        )
        .await;
    assert_eq!(value(&ts), json!(42));
    assert_eq!(talon_codemode::typescript::transforms_run(), before + 1);
    // Line numbers survive: the error points at line 3 of the TypeScript.
    let failed = run
        .run
        .exec(
            "call_ts2",
            json!({"language": "typescript", "code": "type T = string;\nconst x: T = 'a';\nthrow new Error('line three');"}),
        )
        .await;
    match failed {
        CodeModeResult::Failed { stack, .. } => {
            assert!(stack.unwrap().contains("<cell>:3"), "stack keeps lines")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn import_require_filesystem_network_and_environment_access_fail() {
    let (_cm, run) = standard();
    for code in [
        "import fs from 'fs'; return 1;",
        "const fs = require('fs'); return 1;",
        "const m = await import('os'); return 1;",
    ] {
        let (_, code) = failure(&exec(&run.run, code).await);
        assert_eq!(code, Some("module_access_denied"));
    }
    let result = exec(
        &run.run,
        r#"return [typeof process, typeof require, typeof fetch, typeof XMLHttpRequest, typeof std, typeof os,
                   typeof Deno, typeof Bun, typeof WebSocket, typeof __openclaw_call, typeof __talon_print,
                   typeof __openclaw_setup];"#,
    )
    .await;
    assert_eq!(value(&result), json!(vec!["undefined"; 12]));
}

#[tokio::test]
async fn infinite_loops_time_out_and_cannot_block_the_gateway() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let mut config = config();
    config.timeout = Duration::from_millis(300);
    let run = start(
        &cm,
        RunOptions {
            config,
            ..RunOptions::default()
        },
    );
    let (_cm2, other) = standard();
    let started = Instant::now();
    let (looping, quick) = tokio::join!(exec(&run.run, "while (true) {}"), async {
        // Not a wait on a condition: gives the loop (polled first) a head
        // start, so that the other run is served while it spins. Served
        // sooner, the assertions below hold just the same.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let r = exec(&other.run, "return 'still serving';").await;
        (r, started.elapsed())
    });
    let (_, code) = failure(&looping);
    assert_eq!(code, Some("timeout"));
    assert_eq!(looping.telemetry().limit_failures.timeout, 1);
    assert_eq!(value(&quick.0), json!("still serving"));
    assert!(
        quick.1 < Duration::from_millis(300),
        "another run was served meanwhile"
    );
    // The runtime is fine afterwards.
    assert_eq!(value(&exec(&run.run, "return 1").await), json!(1));
}

#[tokio::test]
async fn memory_limit_failures_stop_the_guest_vm() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let mut config = config();
    config.memory_limit_bytes = 4 << 20;
    let run = start(
        &cm,
        RunOptions {
            config,
            ..RunOptions::default()
        },
    );
    let result = exec(
        &run.run,
        "const a = []; while (true) a.push('x'.repeat(1000) + a.length);",
    )
    .await;
    let (_, code) = failure(&result);
    assert_eq!(code, Some("memory_limit_exceeded"));
    assert_eq!(result.telemetry().limit_failures.memory, 1);
    assert_eq!(value(&exec(&run.run, "return 'ok'").await), json!("ok"));
}

#[tokio::test]
async fn output_and_snapshot_limits_are_enforced_for_completed_and_suspended_calls() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let mut config = config();
    config.max_output_bytes = 1024;
    config.max_snapshot_bytes = 1024;
    config.timeout = Duration::from_millis(200);
    let run = start(
        &cm,
        RunOptions {
            config,
            ..RunOptions::default()
        },
    );
    // Completed: printed output and the returned value both count.
    let (_, code) = failure(
        &exec(
            &run.run,
            "for (let i = 0; i < 100; i++) text('x'.repeat(50)); return 1;",
        )
        .await,
    );
    assert_eq!(code, Some("output_limit_exceeded"));
    let (_, code) = failure(&exec(&run.run, "return 'y'.repeat(5000);").await);
    assert_eq!(code, Some("output_limit_exceeded"));
    // Suspended: a snapshot over maxSnapshotBytes is refused.
    let result = exec(&run.run, "const big = 'z'.repeat(200000) + Math.random(); await tools.slow({ms: 1000}); return big.length;").await;
    let (error, code) = failure(&result);
    assert_eq!(code, Some("snapshot_limit_exceeded"), "{error}");
    assert_eq!(result.telemetry().limit_failures.snapshot, 1);
    assert_eq!(result.telemetry().limit_failures.output, 2);
}

#[tokio::test]
async fn wait_resumes_a_suspended_snapshot_and_returns_the_final_value() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let mut config = config();
    config.timeout = Duration::from_millis(150);
    let run = start(
        &cm,
        RunOptions {
            config,
            ..RunOptions::default()
        },
    );
    let first = exec(
        &run.run,
        "text('before'); const r = await tools.slow({ms: 400}); text('after'); return r.input.ms + 1;",
    )
    .await;
    let id = cell_id(&first);
    match &first {
        CodeModeResult::Waiting {
            reason,
            pending_tool_calls,
            output,
            telemetry,
            ..
        } => {
            assert_eq!(*reason, talon_protocol::CodeModeWaitReason::PendingTools);
            assert_eq!(pending_tool_calls.len(), 1);
            assert_eq!(pending_tool_calls[0].tool_id, "openclaw:core:slow");
            assert_eq!(pending_tool_calls[0].call_id, "call_1/1");
            assert_eq!(
                output,
                &vec![talon_protocol::CodeModeOutput::Text {
                    text: "before".into()
                }]
            );
            assert_eq!(telemetry.snapshot_events[0].event, "created");
        }
        other => panic!("{other:?}"),
    }
    let mut result = wait(&run.run, &id).await;
    while matches!(result, CodeModeResult::Waiting { .. }) {
        result = wait(&run.run, &id).await;
    }
    assert_eq!(value(&result), json!(401));
    match &result {
        CodeModeResult::Completed {
            output, telemetry, ..
        } => {
            assert_eq!(
                output,
                &vec![talon_protocol::CodeModeOutput::Text {
                    text: "after".into()
                }]
            );
            assert_eq!(telemetry.snapshot_events.last().unwrap().event, "deleted");
        }
        other => panic!("{other:?}"),
    }
    // Terminal: the snapshot is gone.
    let (_, code) = failure(&wait(&run.run, &id).await);
    assert_eq!(code, Some("invalid_input"));
    assert_eq!(run.tools.runs("slow"), 1);
}

#[tokio::test]
async fn expired_aborted_wrong_session_and_unknown_run_ids_fail() {
    let (clock, travel) = talon_protocol::clock::Clock::adjustable();
    let store: Arc<dyn SnapshotStore> =
        Arc::new(MemoryStore::new(StoreLimits::default()).with_clock(clock));
    let cm = code_mode(store.clone(), Arc::new(NamespaceRegistry::new()));
    let mut config = config();
    config.timeout = Duration::from_millis(100);
    config.snapshot_ttl = Duration::from_secs(1);
    let run = start(
        &cm,
        RunOptions {
            config: config.clone(),
            ..RunOptions::default()
        },
    );
    let slow = "await tools.slow({ms: 5000}); return 1;";

    let (error, code) = failure(&wait(&run.run, "cm_doesnotexist").await);
    assert_eq!(code, Some("invalid_input"), "{error}");

    // Another run (same session) cannot see the cell; its owner still can.
    let id = cell_id(&exec(&run.run, slow).await);
    let other = start(
        &cm,
        RunOptions {
            run_id: "r2",
            config: config.clone(),
            ..RunOptions::default()
        },
    );
    let (_, code) = failure(&wait(&other.run, &id).await);
    assert_eq!(code, Some("invalid_input"));
    assert!(matches!(
        wait(&run.run, &id).await,
        CodeModeResult::Waiting { .. }
    ));

    // Expired: the store's clock moves past the 1 s snapshot TTL.
    travel.advance(Duration::from_millis(1100));
    let (_, code) = failure(&wait(&run.run, &id).await);
    assert_eq!(code, Some("snapshot_expired"));
    assert_eq!(
        cm.live_cells(),
        0,
        "the expired cell's calls were cancelled"
    );

    // Aborted: the snapshot is deleted.
    let id = cell_id(&exec(&run.run, slow).await);
    run.ctx.cancel.cancel();
    let result = wait(&run.run, &id).await;
    assert_eq!(failure(&result).1, Some("aborted"));
    assert_eq!(result.telemetry().snapshot_events[0].event, "deleted");
    // A cancelled run stays cancelled; the same run id started again (a
    // fresh context) finds nothing.
    let again = start(
        &cm,
        RunOptions {
            config: config.clone(),
            ..RunOptions::default()
        },
    );
    assert_eq!(
        failure(&wait(&again.run, &id).await).1,
        Some("invalid_input")
    );
    assert_eq!(cm.live_cells(), 0);
}

#[tokio::test]
async fn transcript_replay_and_persistence_keep_code_mode_control_calls() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn talon_codemode::SnapshotStore> =
        Arc::new(talon_codemode::open_file_store(dir.path(), Default::default()).unwrap());
    let cm = code_mode(store.clone(), Arc::new(NamespaceRegistry::new()));
    let mut config = config();
    config.timeout = Duration::from_millis(100);
    let run = start(
        &cm,
        RunOptions {
            config: config.clone(),
            ..RunOptions::default()
        },
    );
    // A transcript stores the exec call and its result as JSON.
    let waiting = exec(
        &run.run,
        "await yield_control('checkpoint'); return 'resumed';",
    )
    .await;
    let transcript = json!([
        {"role": "assistant", "tool_calls": [{"id": "call_1", "name": "exec", "arguments": {"code": "..."}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": serde_json::to_value(&waiting).unwrap()},
    ]);
    let saved = serde_json::to_string(&transcript).unwrap();
    drop(run);
    drop(cm);
    // Replayed in a new runtime: the control call's result still decodes
    // and its runId still resumes the cell.
    let replayed: serde_json::Value = serde_json::from_str(&saved).unwrap();
    let result: CodeModeResult = serde_json::from_value(replayed[1]["content"].clone()).unwrap();
    assert_eq!(result, waiting);
    let cm = code_mode(store, Arc::new(NamespaceRegistry::new()));
    let run = start(
        &cm,
        RunOptions {
            config,
            ..RunOptions::default()
        },
    );
    let done = run
        .run
        .handle("call_2", "wait", json!({"runId": cell_id(&result)}))
        .await
        .unwrap();
    assert_eq!(value(&done), json!("resumed"));
}

#[tokio::test]
async fn transcripts_and_telemetry_show_nested_tool_calls_clearly() {
    let (_cm, run) = standard();
    let result = run
        .run
        .exec(
            "call_parent",
            json!({"code": "await Promise.all([tools.echo({}), tools.call('plugin:github:github_list_issues', {})]); try { await tools.fail({}); } catch {} return 1;"}),
        )
        .await;
    assert_eq!(value(&result), json!(1));
    let mut records = run.runner.records();
    records.sort_by(|a, b| a.call_id.cmp(&b.call_id));
    let shown: Vec<(String, String, Caller, &str)> = records
        .into_iter()
        .map(|r| (r.call_id, r.id, r.caller, r.status))
        .collect();
    let parent = Caller::Parent("call_parent".into());
    assert_eq!(
        shown,
        vec![
            (
                "call_parent/1".into(),
                "openclaw:core:echo".into(),
                parent.clone(),
                "ok"
            ),
            (
                "call_parent/2".into(),
                "plugin:github:github_list_issues".into(),
                parent.clone(),
                "ok"
            ),
            (
                "call_parent/3".into(),
                "openclaw:core:fail".into(),
                parent,
                "failed"
            ),
        ]
    );
    let t = result.telemetry();
    assert_eq!(t.visible_tools, ["exec", "wait", "ask_user"]);
    assert_eq!(t.catalog_size, 11);
    assert_eq!(
        t.catalog_by_source,
        [("client", 1), ("mcp", 2), ("openclaw", 6), ("plugin", 2)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    );
    assert_eq!(t.exec_count, 1);
    assert_eq!(
        t.nested_tool_ids,
        [
            "openclaw:core:echo",
            "plugin:github:github_list_issues",
            "openclaw:core:fail"
        ]
    );
    // No tool input in telemetry.
    assert!(!serde_json::to_string(t).unwrap().contains("input"));
}

struct KindHook(std::sync::Mutex<Vec<serde_json::Value>>);

impl ExecHook for KindHook {
    fn before_exec<'a>(
        &'a self,
        _: &'a RunContext,
        event: &'a ExecHookEvent,
    ) -> BoxFuture<'a, HookDecision> {
        self.0.lock().unwrap().push(event.to_json());
        let decision = if event.params["code"].as_str() == Some("return 'blocked'") {
            HookDecision::Block("policy says no".into())
        } else {
            HookDecision::Continue(event.params.clone())
        };
        Box::pin(async move { decision })
    }
}

#[tokio::test]
async fn exec_hook_events_carry_the_code_mode_tool_kind_and_input_kind() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let hook = Arc::new(KindHook(Default::default()));
    let tools = Arc::new(Tools::default());
    let runner = Arc::new(talon_tools::ToolRunner::new(
        Arc::new(catalog("r1", &ToolPolicy::new())),
        tools,
    ));
    let run = cm.start_run(talon_codemode::RunSetup {
        config: config(),
        runner,
        ctx: ctx("r1"),
        mcp: None,
        plugin_config: json!({}),
        exec_hooks: vec![hook.clone()],
        resume: Vec::new(),
    });
    assert_eq!(
        value(&run.exec("c1", json!({"command": "return 1"})).await),
        json!(1)
    );
    let blocked = run
        .exec(
            "c2",
            json!({"code": "return 'blocked'", "language": "typescript"}),
        )
        .await;
    assert_eq!(failure(&blocked).0, "exec was blocked: policy says no");
    let events = hook.0.lock().unwrap().clone();
    assert_eq!(
        events,
        vec![
            json!({"toolName": "exec", "toolKind": "code_mode_exec", "toolInputKind": "javascript",
                   "toolCallId": "c1", "params": {"command": "return 1"}}),
            json!({"toolName": "exec", "toolKind": "code_mode_exec", "toolInputKind": "typescript",
                   "toolCallId": "c2", "params": {"code": "return 'blocked'", "language": "typescript"}}),
        ]
    );
}

#[test]
fn a_sandbox_that_cannot_start_fails_closed_with_runtime_unavailable() {
    // Two preludes named "code-mode": the sandbox refuses to start.
    let mut sandbox = talon_sandbox::SandboxConfig::default();
    sandbox.preludes.push(talon_codemode::prelude());
    let error = talon_codemode::CodeMode::new(talon_codemode::CodeModeOptions {
        sandbox,
        store: memory_store(),
        namespaces: Arc::new(NamespaceRegistry::new()),
    })
    .unwrap_err();
    assert!(
        error.to_string().starts_with("runtime_unavailable: "),
        "{error}"
    );
}

#[test]
fn an_image_that_cannot_be_built_fails_closed_when_code_mode_starts() {
    // A "code-mode" prelude that throws: the engine starts (images are
    // built on first use), and Code Mode, which builds its image when it
    // starts, fails with runtime_unavailable.
    let engine = talon_sandbox::CellEngine::new(talon_sandbox::SandboxConfig {
        preludes: vec![talon_sandbox::Prelude {
            name: talon_codemode::PRELUDE_NAME.into(),
            source: "throw new Error('cannot start');".into(),
            host_functions: Vec::new(),
        }],
        ..Default::default()
    })
    .unwrap();
    let error = talon_codemode::CodeMode::with_engine(
        engine,
        talon_codemode::CodeModeOptions {
            sandbox: Default::default(),
            store: memory_store(),
            namespaces: Arc::new(NamespaceRegistry::new()),
        },
    )
    .unwrap_err();
    assert!(
        error.to_string().starts_with("runtime_unavailable: ")
            && error.to_string().contains("cannot start"),
        "{error}"
    );
}

#[tokio::test]
async fn the_model_facing_surface_is_stable() {
    let registry = Arc::new(NamespaceRegistry::new());
    registry
        .register(
            "github",
            talon_codemode::NamespaceRegistration {
                id: "github-issues".into(),
                global_name: "Issues".into(),
                description: "GitHub issue helpers for the current repository.".into(),
                required_tool_names: vec!["github_list_issues".into()],
                prompt: Some("Use Issues.list(params).".into()),
                create_scope: Arc::new(|_| {
                    talon_codemode::ScopeValue::Object(vec![(
                        "list".into(),
                        talon_codemode::create_code_mode_namespace_tool("github_list_issues", None),
                    )])
                }),
            },
        )
        .unwrap();
    let cm = code_mode(memory_store(), registry);
    let run = start(&cm, RunOptions::default());
    insta::assert_json_snapshot!(run.run.surface().tools);
}
