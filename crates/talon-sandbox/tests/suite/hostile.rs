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
fn tampering_with_builtins_only_hurts_the_guest() {
    let functions =
        HostFunctions::new().sync("echo", |args| Ok(args.first().cloned().unwrap_or_default()));
    let mut vm = vm_with(Limits::default(), functions);
    let body = "Object.prototype.then = function (r) { r('hijacked') }; \
                Array.prototype[Symbol.iterator] = function* () { yield 'hijacked' }; \
                JSON.parse = () => 'hijacked'; Function.prototype.apply = () => 'hijacked'; \
                Object.freeze(Object.prototype); \
                return {echoed: echo({a: [1, 2]}), n: echo(5)}";
    // The host's value crosses intact; the tampered `then` makes the returned
    // object a thenable, which is the guest's own doing.
    let out = vm.run_cell(body);
    assert!(out.is_ok(), "{out:?}");
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
