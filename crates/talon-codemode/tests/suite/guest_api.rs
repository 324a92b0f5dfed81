//! The guest API's details: frozen globals, convenience names, MCP
//! resources and prompts, API paths, output, errors as plain data, exec
//! input.

use std::sync::Arc;

use serde_json::json;
use talon_codemode::NamespaceRegistry;
use talon_protocol::{CodeModeOutput, CodeModeResult};
use talon_tools::{CatalogBuilder, ToolPolicy};

use super::*;

#[tokio::test]
async fn globals_are_frozen_and_cannot_be_replaced() {
    let (_cm, run) = standard();
    // Sloppy-mode writes to frozen globals fail silently; strict ones throw.
    let result = exec(
        &run.run,
        r#"const out = [];
           try { ALL_TOOLS.push({id: "x"}); } catch (e) { out.push(e.name); }
           ALL_TOOLS[0].id = "forged";
           tools.call = () => "hijacked";
           globalThis.tools = {};
           MCP.docs.searchDocs = null;
           delete globalThis.ALL_TOOLS;
           (() => { "use strict"; try { tools.search = null; } catch (e) { out.push(e.name); } })();
           return {out, frozen: Object.isFrozen(ALL_TOOLS) && Object.isFrozen(tools) && Object.isFrozen(MCP),
                   first: ALL_TOOLS[0].id, count: ALL_TOOLS.length, call: (await tools.call("openclaw:core:echo", {})).tool,
                   mcp: typeof MCP.docs.searchDocs};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({"out": ["TypeError", "TypeError"], "frozen": true, "first": "client:app:pick_color", "count": 9,
               "call": "openclaw:core:echo", "mcp": "function"})
    );
}

#[tokio::test]
async fn convenience_names_are_only_for_unambiguous_safe_names_and_never_shadow_helpers() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let catalog = CatalogBuilder::new(scope("r1"))
        .core([
            tool("web_search", "Search the web."),
            tool("search", "A tool named search."),
            tool("read-file", "Read."),
        ])
        .plugin(
            "browser",
            [
                tool("web-search", "Search the web too."),
                tool("call", "A tool named call."),
                tool("describe", "d"),
            ],
        )
        .build(&ToolPolicy::new())
        .unwrap();
    let run = start_with(&cm, catalog, RunOptions::default());
    let result = exec(
        &run.run,
        r#"return {
             web: typeof tools.web_search,
             read: typeof tools.read_file,
             helpers: [typeof tools.search, typeof tools.call, typeof tools.describe],
             searchIsHelper: (await tools.search("named search")).length > 0,
             viaId: (await tools.call("openclaw:core:search", {})).tool,
             keys: Object.keys(tools).sort(),
           };"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({
            "web": "undefined",
            "read": "function",
            "helpers": ["function", "function", "function"],
            "searchIsHelper": true,
            "viaId": "openclaw:core:search",
            "keys": ["call", "describe", "read_file", "search"],
        })
    );
}

#[tokio::test]
async fn mcp_resources_and_prompts_are_there_where_the_server_has_them() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"const memo = await MCP.docs.resources.read({uri: "memo://one"});
           const prompt = await MCP.docs.prompts.get({name: "brief", arguments: {topic: "release"}});
           let missing;
           try { await MCP.docs.resources.read({uri: "memo://nope"}); } catch (e) { missing = [e.code, e.message]; }
           return {memo, text: prompt.messages[0].content.text, missing, servers: Object.keys(MCP)};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({
            "memo": {"contents": [{"uri": "memo://one", "text": "first memo"}]},
            "text": "brief: release",
            "missing": ["nested_tool_failed", "MCP server \"docs\": not_found: no resource memo://nope"],
            "servers": ["docs"],
        })
    );
    // A server without resources or prompts has neither member.
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let catalog = CatalogBuilder::new(scope("r1"))
        .mcp(
            "chrome-devtools",
            [tool("take_snapshot", "Snapshot the page.")],
        )
        .build(&ToolPolicy::new())
        .unwrap();
    let run = start_with(&cm, catalog, RunOptions::default());
    let result = exec(
        &run.run,
        r#"return [typeof MCP.chromeDevtools.takeSnapshot, typeof MCP["chrome-devtools"].take_snapshot,
                   typeof MCP.chromeDevtools.resources, typeof MCP.chromeDevtools.prompts,
                   (await MCP.chromeDevtools.takeSnapshot({output: "markdown"})).input.output];"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!(["function", "function", "undefined", "undefined", "markdown"])
    );
}

#[tokio::test]
async fn api_rejects_unknown_paths_and_dot_segments() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"const out = [];
           for (const p of ["mcp/../secrets", "./mcp/docs.d.ts", "mcp//docs.d.ts", "mcp/nope.d.ts", "/etc/passwd", ".."]) {
             try { await API.read(p); out.push("read " + p); } catch (e) { out.push(e.code); }
           }
           let listed;
           try { await API.list("mcp/.."); } catch (e) { listed = e.code; }
           return {out, listed, all: (await API.list()).map(f => f.path), index: (await API.read("mcp/index.d.ts")).split("\n")[1]};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({
            "out": vec!["not_found"; 6],
            "listed": "not_found",
            "all": ["mcp/docs.d.ts", "mcp/index.d.ts"],
            "index": "// MCP.docs: server \"docs\", 2 tools (mcp/docs.d.ts)",
        })
    );
}

#[tokio::test]
async fn output_keeps_the_guest_order_and_serializes_safely() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"text("one");
           json({a: 1});
           console.log("two", 2);
           console.log("three");
           const cyclic = {}; cyclic.self = cyclic;
           json(cyclic);
           json(10n);
           text({b: [1]});
           json(undefined);
           return {done: true};"#,
    )
    .await;
    match result {
        CodeModeResult::Completed { value, output, .. } => {
            assert_eq!(value, json!({"done": true}));
            assert_eq!(
                output,
                vec![
                    CodeModeOutput::Text { text: "one".into() },
                    CodeModeOutput::Json {
                        value: json!({"a": 1})
                    },
                    CodeModeOutput::Text {
                        text: "two 2\nthree\n".into()
                    },
                    CodeModeOutput::Json {
                        value: json!("[object Object]")
                    },
                    CodeModeOutput::Json { value: json!("10") },
                    CodeModeOutput::Text {
                        text: "{\"b\":[1]}".into()
                    },
                    CodeModeOutput::Json { value: json!(null) },
                ]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn errors_reaching_the_guest_are_plain_data() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"try { await tools.fail({}); } catch (e) {
             return {isError: e instanceof Error, ctor: e.constructor === Error, proto: Object.getPrototypeOf(e) === Error.prototype,
                     keys: Object.getOwnPropertyNames(e).sort(), code: e.code, message: e.message,
                     fns: Object.getOwnPropertyNames(e).filter(k => typeof e[k] === "function")};
           }"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({"isError": true, "ctor": true, "proto": true, "keys": ["code", "message"],
               "code": "nested_tool_failed", "message": "openclaw:core:fail failed: it failed on purpose", "fns": []})
    );
    // Uncaught, the failure keeps its code.
    let (error, code) = failure(&exec(&run.run, "await tools.fail({}); return 1;").await);
    assert_eq!(code, Some("nested_tool_failed"));
    assert_eq!(
        error,
        "Error: openclaw:core:fail failed: it failed on purpose"
    );
}

#[tokio::test]
async fn exec_input_is_checked_before_any_guest_code_runs() {
    let (_cm, run) = standard();
    let cases = [
        (json!({}), "invalid_input"),
        (json!({"code": "   "}), "invalid_input"),
        (
            json!({"code": "return 1", "command": "return 2"}),
            "invalid_input",
        ),
        (json!({"code": "ls -la"}), "invalid_input"),
        (json!({"code": "cat file | grep x"}), "invalid_input"),
        (
            json!({"code": "return 1", "language": "python"}),
            "unsupported_language",
        ),
        (
            json!({"code": "enum E { A }\nreturn E.A;", "language": "typescript"}),
            "typescript_transform_failed",
        ),
        (
            json!({"code": "const x = require('child_process');"}),
            "module_access_denied",
        ),
        (
            json!({"code": "return (", "language": "javascript"}),
            "invalid_input",
        ),
    ];
    for (args, expected) in cases {
        let result = run.run.exec("c", args.clone()).await;
        assert_eq!(failure(&result).1, Some(expected), "{args}");
    }
    let shell = run.run.exec("c", json!({"code": "ls -la"})).await;
    assert!(failure(&shell).0.contains("exec expects `code`"));
    // Strings and comments that mention modules are fine.
    let ok = run
        .run
        .exec("c", json!({"command": "// require('fs')\nreturn 'import(\"x\")';", "code": "// require('fs')\nreturn 'import(\"x\")';"}))
        .await;
    assert_eq!(value(&ok), json!("import(\"x\")"));
    assert_eq!(run.tools.runs("echo"), 0);
}

#[tokio::test]
async fn many_parallel_nested_calls_queue_behind_max_pending_tool_calls() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let mut config = config();
    config.max_pending_tool_calls = 3;
    let run = start(
        &cm,
        RunOptions {
            config,
            ..RunOptions::default()
        },
    );
    let result = exec(
        &run.run,
        r#"const results = await Promise.all(Array.from({length: 12}, (_, i) => tools.slow({ms: 20, i})));
           return results.map(r => r.input.i);"#,
    )
    .await;
    assert_eq!(value(&result), json!((0..12).collect::<Vec<_>>()));
    assert_eq!(
        run.tools.slow_max.load(std::sync::atomic::Ordering::SeqCst),
        3
    );
    // Beyond the guest-side cap, calls are refused with a catchable error.
    let result = exec(
        &run.run,
        r#"const ps = []; let refused = 0;
           for (let i = 0; i < 1100; i++) { try { ps.push(tools.echo({i}).catch(() => {})); } catch (e) { if (e.code === "too_many_pending_tool_calls") refused++; } }
           await Promise.all(ps);
           return refused;"#,
    )
    .await;
    assert_eq!(value(&result), json!(76));
}

#[tokio::test]
async fn mcp_server_objects_make_tool_functions_on_demand_and_stay_read_only() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"const s = MCP.docs;
           const out = {same: s.searchDocs === s.searchDocs, has: ["searchDocs" in s, "get-page" in s, "nope" in s],
                         missing: typeof s.nope, keys: Object.keys(s).sort()};
           (() => { "use strict";
             try { s.searchDocs = null; out.write = "allowed"; } catch (e) { out.write = e.name; }
             try { Object.defineProperty(s, "x", {value: 1}); out.define = "allowed"; } catch (e) { out.define = e.name; }
             try { delete s.$api; out.del = "allowed"; } catch (e) { out.del = e.name; } })();
           out.still = typeof s.searchDocs;
           return out;"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({"same": true, "has": [true, true, false], "missing": "undefined", "keys": ["$api", "prompts", "resources"],
               "write": "TypeError", "define": "TypeError", "del": "TypeError", "still": "function"})
    );
}
