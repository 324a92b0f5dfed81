//! `tool_search_code` in the shared sandbox.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use talon_tools::{CatalogBuilder, ToolPolicy, ToolSurface};
use talon_toolsearch::{Mode, ToolSearchConfig};

use super::{Echo, catalog, ctx, scope, tool, tool_search};

fn code_config() -> ToolSearchConfig {
    ToolSearchConfig {
        mode: Mode::Code,
        code_timeout: Duration::from_millis(2_000),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_searches_describes_and_calls() {
    let echo = Arc::new(Echo::default());
    let ts = tool_search(catalog(), code_config(), echo.clone());
    let body = "const hits = await openclaw.tools.search('create an issue'); \
                const tool = await openclaw.tools.describe(hits[0].id); \
                console.log('calling', tool.id); \
                const [a, b] = await Promise.all([openclaw.tools.call(tool.id, {title: 'x'}), openclaw.tools.call(tool.id, {title: 'y'})]); \
                let missing; try { await openclaw.tools.call('openclaw:core:exec', {}) } catch (e) { missing = e.code } \
                return {a, b, missing, keys: Object.keys(globalThis).length}";
    let out = ts
        .handle(&ctx(), "code-1", "tool_search_code", json!({"code": body}))
        .await;
    assert_eq!(
        out,
        json!({
            "value": {
                "a": {"ran": "plugin:issues:create_issue", "args": {"title": "x"}},
                "b": {"ran": "plugin:issues:create_issue", "args": {"title": "y"}},
                "missing": "not_found",
                "keys": 0
            },
            "console": [{"stream": "stdout", "text": "calling plugin:issues:create_issue\n"}]
        })
    );
    assert_eq!(echo.calls.load(Ordering::Relaxed), 2);
    let t = ToolSurface::telemetry(&*ts);
    assert_eq!(
        (t.code_runs, t.searches, t.describes, t.bridge_calls),
        (1, 1, 1, 3)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unawaited_calls_are_cancelled_when_the_body_returns() {
    let echo = Arc::new(Echo::default());
    let ts = tool_search(catalog(), code_config(), echo.clone());
    let out = ts
        .handle(&ctx(), "code-1", "tool_search_code", json!({"code": "openclaw.tools.call('plugin:issues:create_issue', {}); return 'early'"}))
        .await;
    assert_eq!(out, json!({"value": "early", "console": []}));
    assert_eq!(echo.calls.load(Ordering::Relaxed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapes_get_nothing() {
    let echo = Arc::new(Echo::default());
    let ts = tool_search(catalog(), code_config(), echo);
    let body = "return [Function('return typeof process')(), \
                openclaw.tools.call.constructor.constructor('return typeof require')(), \
                typeof __openclaw_call, Object.isFrozen(openclaw.tools), \
                (() => { const c = openclaw.tools.call; openclaw.tools.call = null; openclaw = null; \
                         return openclaw.tools.call === c ? 'kept' : 'replaced' })()]";
    let out = ts
        .handle(&ctx(), "code-1", "tool_search_code", json!({"code": body}))
        .await;
    assert_eq!(
        out,
        json!({"value": ["undefined", "undefined", "undefined", true, "kept"], "console": []})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_limit_covers_guest_code_and_slow_tools() {
    let catalog = CatalogBuilder::new(scope())
        .core([tool("slow", "A slow tool.")])
        .build(&ToolPolicy::new())
        .unwrap();
    let config = ToolSearchConfig {
        code_timeout: Duration::from_millis(1_000),
        ..code_config()
    };
    let ts = tool_search(catalog, config, Arc::new(Echo::default()));
    let spin = ts
        .handle(
            &ctx(),
            "c1",
            "tool_search_code",
            json!({"code": "while (true) {}"}),
        )
        .await;

    let started = std::time::Instant::now();
    let slow = ts
        .handle(
            &ctx(),
            "c2",
            "tool_search_code",
            json!({"code": "return await openclaw.tools.call('openclaw:core:slow', {})"}),
        )
        .await;
    let timed_out = json!({"code": "timeout", "console": [],
                           "error": "tool_search_code exceeded its time limit of 1000 ms"});
    assert_eq!((spin, slow), (timed_out.clone(), timed_out));
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_reported_not_thrown() {
    let ts = tool_search(catalog(), code_config(), Arc::new(Echo::default()));
    let out = ts
        .handle(
            &ctx(),
            "c1",
            "tool_search_code",
            json!({"code": "return ("}),
        )
        .await;
    assert_eq!(
        out,
        json!({"code": "invalid_input", "console": [],
               "error": "SyntaxError: unexpected token in expression: '}'"})
    );
    let out = ts
        .handle(
            &ctx(),
            "c2",
            "tool_search_code",
            json!({"code": "throw new Error('mine')"}),
        )
        .await;
    // The guest's own error, with no code.
    assert_eq!(
        out,
        json!({"code": null, "console": [], "error": "Error: mine"})
    );
    let out = ts.handle(&ctx(), "c3", "tool_search_code", json!({})).await;
    assert_eq!(
        out,
        json!({"status": "invalid_input", "error": "tool_search_code needs a string code"})
    );
}

#[test]
fn code_mode_without_the_sandbox_fails_closed() {
    let catalog = catalog();
    let config = code_config();
    let surface = talon_toolsearch::build_surface(&catalog, Some(&config)).unwrap();
    let runner = Arc::new(talon_tools::ToolRunner::new(
        Arc::new(catalog),
        Arc::new(Echo::default()),
    ));
    let error = talon_toolsearch::ToolSearch::new(config, surface, runner, None).unwrap_err();
    assert_eq!(
        error.code(),
        Some(talon_protocol::CodeModeErrorCode::RuntimeUnavailable)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_run_stops_the_cell() {
    let ts = tool_search(
        catalog(),
        ToolSearchConfig {
            code_timeout: Duration::from_millis(5_000),
            ..code_config()
        },
        Arc::new(Echo::default()),
    );
    let ctx = ctx();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        // Not a wait on a condition: lets the cell spin a while. A
        // cancellation before it starts must stop it just the same.
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let out = ts
        .handle(
            &ctx,
            "c1",
            "tool_search_code",
            json!({"code": "for (;;) {}"}),
        )
        .await;
    assert_eq!(
        out,
        json!({"code": "aborted", "console": [], "error": "the run was aborted"})
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bodies_fail_cleanly_and_the_next_body_runs() {
    let ts = tool_search(catalog(), code_config(), Arc::new(Echo::default()));
    let oversized = format!(
        "/*{}*/ return 1",
        "x".repeat(talon_toolsearch::MAX_CODE_BYTES)
    );
    let out = ts
        .handle(&ctx(), "c1", "tool_search_code", json!({"code": oversized}))
        .await;
    assert_eq!(
        out,
        json!({"status": "invalid_input", "error": format!(
            "tool_search_code body is {} bytes, over the limit of {} bytes; send a smaller body",
            oversized.len(),
            talon_toolsearch::MAX_CODE_BYTES
        )})
    );
    // Nesting past any parser's stack, a long chain, recursion and an
    // allocation bomb: the guest reports each, the host never recurses on
    // them.
    let bodies = [
        format!("return {}1{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("return {}1{}", "(".repeat(100_000), ")".repeat(100_000)),
        format!("return 1{}", "+1".repeat(200_000)),
        "function f() { return f() } return f()".to_owned(),
        "const a = []; for (;;) a.push(new Array(1e6).fill(0))".to_owned(),
    ];
    for (i, body) in bodies.iter().enumerate() {
        let out = ts
            .handle(
                &ctx(),
                &format!("h{i}"),
                "tool_search_code",
                json!({"code": body}),
            )
            .await;
        assert!(
            out["status"] != "completed" || out["value"] == json!(200_001),
            "{i}: {out}"
        );
    }
    let out = ts
        .handle(
            &ctx(),
            "ok",
            "tool_search_code",
            json!({"code": "return 40 + 2"}),
        )
        .await;
    assert_eq!(out, json!({"value": 42, "console": []}));
}
