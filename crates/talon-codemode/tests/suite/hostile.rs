//! The sandbox's hostile list, re-run through `exec`: each case fails
//! with a clear code (or is contained), and the next cell works.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use talon_codemode::NamespaceRegistry;
use talon_protocol::CodeModeResult;

use super::*;

fn tight() -> RunOptions {
    let mut config = config();
    config.timeout = Duration::from_millis(400);
    config.memory_limit_bytes = 16 << 20;
    config.max_output_bytes = 16 << 10;
    RunOptions {
        config,
        ..RunOptions::default()
    }
}

#[tokio::test]
async fn hostile_cells_fail_cleanly_and_the_next_cell_works() {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let run = start(&cm, tight());
    // Allocation bombs stop at the heap limit, or at the clock on a loaded
    // machine: either limit contains them.
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("busy loop", "while (true) {}", Some("timeout")),
        (
            "catastrophic regex",
            "return /(a+)+$/.test('a'.repeat(40) + 'b');",
            Some("timeout"),
        ),
        (
            "huge stringify",
            "const a = []; for (let i = 0; i < 1e6; i++) a.push({i, s: 'xxxxxxxx'}); return JSON.stringify(a).length;",
            Some("memory_limit_exceeded|timeout"),
        ),
        (
            "array bomb",
            "const a = []; while (true) a.push(new Array(1e5).fill(1));",
            Some("memory_limit_exceeded|timeout"),
        ),
        ("string bomb", "let s = 'x'; while (true) s = s + s;", None),
        (
            "typed array bomb",
            "const a = []; while (true) a.push(new Float64Array(1e6));",
            Some("memory_limit_exceeded|timeout"),
        ),
        (
            "map bomb",
            "const m = new Map(); for (let i = 0; ; i++) m.set(i, {i});",
            Some("memory_limit_exceeded|timeout"),
        ),
        (
            "deep recursion",
            "function f(n) { return f(n + 1) + 1; } return f(0);",
            None,
        ),
        (
            "promise flood",
            "for (;;) { await Promise.resolve(); }",
            Some("timeout"),
        ),
        // Each job allocates: the heap or the clock runs out first.
        (
            "job flood",
            "const go = () => Promise.resolve().then(go); go(); await new Promise(() => {});",
            Some("timeout|memory_limit_exceeded"),
        ),
        (
            "output flood",
            "for (;;) console.log('spam spam spam spam');",
            Some("output_limit_exceeded"),
        ),
        (
            "throw a non-error",
            "throw {toString() { while (true) {} }};",
            None,
        ),
        ("syntax error", "return (;", Some("invalid_input")),
        (
            "never settles",
            "await new Promise(() => {}); return 1;",
            Some("timeout"),
        ),
    ];
    for (name, code, expected) in cases {
        let result = exec(&run.run, code).await;
        let (error, got) = failure(&result);
        match expected {
            Some(any) if any.contains('|') => {
                assert!(
                    any.split('|').any(|c| Some(c) == got),
                    "{name}: {error} {got:?}"
                )
            }
            _ => assert_eq!(got, *expected, "{name}: {error}"),
        }
        assert_eq!(
            value(&exec(&run.run, "return 6 * 7;").await),
            json!(42),
            "after {name}"
        );
    }
}

#[tokio::test]
async fn tampering_with_builtins_does_not_reach_the_host() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"Object.defineProperty(Object.prototype, "id", {get() { throw new Error("getter ran"); }, configurable: true});
           Array.prototype.map = function () { throw new Error("map ran"); };
           JSON.stringify = () => { throw new Error("stringify ran"); };
           JSON.parse = () => { throw new Error("parse ran"); };
           Reflect.apply = () => { throw new Error("apply ran"); };
           Function.prototype.call = () => { throw new Error("call ran"); };
           Object.prototype.toJSON = function () { return "poisoned"; };
           let refused;
           try { await tools.echo({text: "hi", get secret() { throw new Error("input getter ran"); }}); }
           catch (e) { refused = e.message; }
           const out = await tools.echo({text: "hi"});
           const hits = await tools.search("echo");
           return {refused, out, hit: hits[0].name};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({"refused": "__openclaw_call: argument 1: value cannot cross the sandbox bridge: an accessor (getters are not run) at $.secret",
               "out": {"tool": "openclaw:core:echo", "input": {"text": "hi"}}, "hit": "echo"})
    );
}

#[tokio::test]
async fn many_nested_calls_and_bridge_calls_in_one_cell() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"let n = 0;
           for (let i = 0; i < 20000; i++) { if ((await API.list()).length === 2) n++; }
           const calls = await Promise.all(Array.from({length: 500}, (_, i) => tools.echo({i})));
           return [n, calls.length, calls[499].input.i];"#,
    )
    .await;
    assert_eq!(value(&result), json!([20000, 500, 499]));
}

#[tokio::test]
async fn bad_values_crossing_the_bridge_are_errors_not_panics() {
    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        r#"const out = [];
           const cyclic = {}; cyclic.me = cyclic;
           let deep = {}; for (let i = 0; i < 1000; i++) deep = {deep};
           for (const input of [cyclic, deep, () => 1, Symbol("s"), new Proxy({}, {ownKeys() { throw new Error("trap"); }})]) {
             try { await tools.echo(input); out.push("sent"); } catch (e) { out.push(e.name); }
           }
           try { await tools.call(123n, {}); } catch (e) { out.push(e.name); }
           try { await tools.describe({toString() { return "openclaw:core:echo"; }}); out.push("described"); } catch (e) { out.push(e.code); }
           return out;"#,
    )
    .await;
    match result {
        CodeModeResult::Completed { value, .. } => {
            let out = value.as_array().unwrap();
            assert_eq!(out.len(), 7);
            assert!(
                out[..5]
                    .iter()
                    .all(|v| v == "Error" || v == "TypeError" || v == "sent"),
                "{value}"
            );
            assert_eq!(out[0], json!("Error"), "cycles are refused");
            assert_eq!(out[1], json!("Error"), "too deep is refused");
        }
        other => panic!("{other:?}"),
    }
}
