//! Hostile input from the list that the other files do not cover:
//! floods, tampering, module loading, and recovery after each.

use serde_json::json;
use talon_protocol::CodeModeErrorCode;
use talon_sandbox::{HostFunctions, Limits, SandboxError};

use super::{assert_fresh_vm_works, fail, run, short, vm, vm_with};

#[test]
fn promise_and_job_floods_are_stopped_by_the_deadline() {
    for body in [
        "function again() { Promise.resolve().then(again) } again(); await new Promise(() => {})",
        "for (;;) { Promise.resolve(1).then(x => x) }",
        "const spin = async () => { for (;;) await null }; await spin()",
    ] {
        let mut vm = vm_with(short(200), HostFunctions::new());
        let error = fail(&mut vm, body);
        assert!(
            matches!(error, SandboxError::Timeout(_) | SandboxError::MemoryLimit),
            "{body}: {error:?}"
        );
    }
    assert_fresh_vm_works();
}

#[test]
fn huge_json_stringify_is_bounded() {
    let mut vm = vm_with(
        Limits {
            memory_limit_bytes: 32 << 20,
            ..short(2_000)
        },
        HostFunctions::new(),
    );
    let error = fail(
        &mut vm,
        "const o = {}; let cur = o; for (let i = 0; i < 1e7; i++) { cur.k = {v: 'x'.repeat(64)}; cur = cur.k } \
         return JSON.stringify(o).length",
    );
    assert!(
        matches!(
            error,
            SandboxError::Timeout(_) | SandboxError::MemoryLimit | SandboxError::Guest(_)
        ),
        "{error:?}"
    );
    assert_fresh_vm_works();
}

#[test]
fn module_loading_is_denied() {
    for body in [
        "return await import('os')",
        "return await import('./relative.js')",
        "try { await import('std') } catch (e) {} return 'swallowed'",
    ] {
        let mut vm = vm();
        let error = fail(&mut vm, body);
        assert!(
            matches!(error, SandboxError::ModuleAccessDenied(_)),
            "{body}: {error:?}"
        );
        assert_eq!(error.code(), Some(CodeModeErrorCode::ModuleAccessDenied));
    }
    let mut vm = vm();
    assert_eq!(
        run(
            &mut vm,
            "return [typeof require, typeof module, typeof exports, typeof std, typeof os]"
        ),
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined"
        ])
    );
    assert_fresh_vm_works();
}

#[test]
fn tampering_with_builtins_does_not_reach_the_bridge() {
    let functions =
        HostFunctions::new().sync("echo", |args| Ok(args.first().cloned().unwrap_or_default()));
    let mut vm = vm_with(Limits::default(), functions);
    let body = "globalThis.ran = []; \
        Object.defineProperty(Object.prototype, 'a', {set(v) { ran.push('set a') }, get() { return 'fake' }}); \
        Object.defineProperty(Array.prototype, 0, {set(v) { ran.push('set 0') }, get() { return 'fake' }}); \
        Array.prototype[Symbol.iterator] = function* () { yield 'hijacked' }; \
        JSON.parse = () => 'hijacked'; JSON.stringify = () => 'hijacked'; \
        Function.prototype.apply = () => 'hijacked'; Function.prototype.call = () => 'hijacked'; \
        const echoed = echo({a: [1, 2], b: {c: null}}); \
        return {echoed, n: echo(5), ran: ran.length, first: echoed.a[0]}";
    assert_eq!(
        run(&mut vm, body),
        json!({"echoed": {"a": [1, 2], "b": {"c": null}}, "n": 5, "ran": 0, "first": 1})
    );
    assert_fresh_vm_works();
}

#[test]
fn a_syntax_error_is_invalid_input_and_harmless() {
    let mut vm = vm();
    for body in ["return {", "let let = 1", "}}}}", "return 1 +", "\u{0}"] {
        let error = fail(&mut vm, body);
        assert_eq!(
            error.code(),
            Some(CodeModeErrorCode::InvalidInput),
            "{body}: {error:?}"
        );
    }
    assert_eq!(run(&mut vm, "return 'ok'"), json!("ok"));
}
