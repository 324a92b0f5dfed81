//! Values crossing the bridge, in both directions, without running guest
//! code on the way out.

use serde_json::{Value, json};
use talon_protocol::CodeModeErrorCode;
use talon_sandbox::{BridgeLimits, HostFunctions, Limits, SandboxError};

use super::{fail, run, vm, vm_with};

#[test]
fn json_values_round_trip() {
    let value = json!({
        "null": null, "t": true, "f": false, "int": 42, "neg": -7, "float": 1.5,
        "big": 9_007_199_254_740_991_i64, "text": "héllo \u{1F600} \"quoted\" \n",
        "nested": {"list": [1, [2, [3, {"deep": "yes"}]]], "empty": {}, "none": []},
        "__proto__": "an ordinary key", "constructor": {"x": 1}
    });
    let echo = value.clone();
    let functions = HostFunctions::new().sync("hostValue", move |_| Ok(echo.clone()));
    let mut vm = vm_with(Limits::default(), functions);
    // The value arrives intact, and `__proto__` is an own data property.
    let checks = run(
        &mut vm,
        "const v = hostValue(); return [Object.getPrototypeOf(v) === Object.prototype, \
         Object.getOwnPropertyNames(v).includes('__proto__'), v.nested.list[1][1][1].deep]",
    );
    assert_eq!(checks, json!([true, true, "yes"]));
    assert_eq!(run(&mut vm, "return hostValue()"), value);
}

#[test]
fn guest_values_follow_json_rules() {
    let mut vm = vm();
    let out = run(
        &mut vm,
        "return {u: undefined, f() {}, s: Symbol('x'), n: NaN, i: Infinity, z: -0, \
         arr: [undefined, () => 1, , 3], nested: {e: new Error('inner')}}",
    );
    assert_eq!(
        out,
        json!({"n": null, "i": null, "z": 0, "arr": [null, null, null, 3],
               "nested": {"e": {"name": "Error", "message": "inner"}}})
    );
    assert_eq!(run(&mut vm, "return undefined"), Value::Null);
    // A DAG (the same object twice) is fine; only cycles are refused.
    assert_eq!(
        run(&mut vm, "const o = {a: 1}; return [o, o]"),
        json!([{"a": 1}, {"a": 1}])
    );
}

#[test]
fn conversion_never_runs_guest_code() {
    let mut vm = vm();
    // Tampered prototypes and globals before the value crosses.
    // (`value` last: once Object.prototype has it, every descriptor literal
    // inherits it and defineProperty refuses accessor descriptors.)
    let tamper = "globalThis.ran = []; \
        Object.defineProperty(Object.prototype, 'length', {get() { ran.push('length'); return 1; }}); \
        Object.defineProperty(Array.prototype, 0, {get() { ran.push('index'); return 'x'; }}); \
        Object.defineProperty(Object.prototype, 'get', {get() { ran.push('get'); return 1; }}); \
        Object.defineProperty(Object.prototype, 'value', {get() { ran.push('value'); return 1; }}); \
        Object.prototype.toJSON = function () { ran.push('toJSON'); return 'hijacked'; }; \
        Array.prototype.toJSON = function () { ran.push('toJSON'); return 'hijacked'; }; \
        JSON.stringify = () => { ran.push('stringify'); return '\"hijacked\"'; }; \
        Function.prototype.call = function () { ran.push('call'); }; \
        Object.keys = () => { ran.push('keys'); return []; };";
    vm.eval(tamper).unwrap();
    // `toJSON` on the value itself is not called either.
    let out = run(
        &mut vm,
        "return {a: [1, , 3], b: {toJSON() { ran.push('own'); return 0; }, c: 'd'}}",
    );
    assert_eq!(out, json!({"a": [1, null, 3], "b": {"c": "d"}}));
    assert_eq!(
        vm.eval("ran.length").unwrap(),
        json!(0),
        "guest code ran during conversion"
    );
}

#[test]
fn accessors_proxies_and_cycles_are_refused() {
    let mut vm = vm();
    let cases = [
        (
            "return {get x() { throw new Error('ran') }}",
            "an accessor (getters are not run) at $.x",
        ),
        (
            "return [new Proxy({}, {ownKeys() { throw 1 }})]",
            "a Proxy at $[0]",
        ),
        (
            "const o = {k: {}}; o.k.back = o; return o",
            "a cycle at $.k.back",
        ),
        (
            "return {n: 10n}",
            "a BigInt (convert it with String() or Number()) at $.n",
        ),
        (
            "return {d: new Date(0)}",
            "a Date (convert it to plain data first) at $.d",
        ),
        (
            "return [new Map()]",
            "a Map (convert it to plain data first) at $[0]",
        ),
        (
            "return new Uint8Array(4)",
            "a typed array (convert it to plain data first) at $",
        ),
        (
            "return {p: Promise.resolve(1)}",
            "a Promise (await it first) (convert it to plain data first) at $.p",
        ),
    ];
    for (body, message) in cases {
        let error = fail(&mut vm, body);
        assert_eq!(
            error.to_string(),
            format!("value cannot cross the sandbox bridge: {message}"),
            "{body}"
        );
        assert_eq!(error.code(), Some(CodeModeErrorCode::InvalidInput));
    }
}

#[test]
fn depth_and_size_are_bounded() {
    let limits = Limits {
        bridge: BridgeLimits {
            max_depth: 10,
            max_bytes: 10_000,
        },
        ..Limits::default()
    };
    let mut vm = vm_with(limits, HostFunctions::new());
    let deep = fail(
        &mut vm,
        "let v = 1; for (let i = 0; i < 20; i++) v = [v]; return v",
    );
    assert!(
        matches!(deep, SandboxError::ValueTooLarge(ref m) if m.starts_with("nesting deeper than 10")),
        "{deep}"
    );
    let wide = fail(&mut vm, "return 'x'.repeat(20000)");
    assert!(matches!(wide, SandboxError::ValueTooLarge(_)), "{wide}");
    assert_eq!(wide.code(), Some(CodeModeErrorCode::OutputLimitExceeded));
    assert_eq!(run(&mut vm, "return 'x'.repeat(100).length"), json!(100));
}

#[test]
fn host_values_too_deep_for_the_guest_are_refused() {
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = json!([deep]);
    }
    let functions = HostFunctions::new().sync("deep", move |_| Ok(deep.clone()));
    let mut vm = vm_with(Limits::default(), functions);
    let error = fail(&mut vm, "return deep()");
    assert!(
        error.to_string().contains("nesting deeper than 64"),
        "{error}"
    );
}

#[test]
fn lone_surrogates_and_nul_survive_as_text() {
    let mut vm = vm();
    assert_eq!(run(&mut vm, "return 'a\\u0000b'"), json!("a\u{0}b"));
    assert_eq!(run(&mut vm, "return '\\ud800'.length"), json!(1));
    assert_eq!(run(&mut vm, "return 'x\\ud800y'"), json!("x\u{FFFD}y"));
}

#[test]
fn engine_error_hooks_cannot_be_installed() {
    let mut vm = vm();
    // Assignments are ignored (sloppy) or refused (strict): the engine builds
    // errors, including the host's, without calling back into the guest.
    let out = run(
        &mut vm,
        "globalThis.ran = 0; \
         try { Error.prepareStackTrace = () => { ran++ } } catch {} \
         try { Error.stackTraceLimit = {valueOf() { ran++; return 10 }} } catch {} \
         try { Object.defineProperty(Error, 'prepareStackTrace', {get() { ran++ }}) } catch {} \
         try { null.x } catch (e) {} \
         return {ok: {a: [1]}, ran}",
    );
    assert_eq!(out, json!({"ok": {"a": [1]}, "ran": 0}));
}

#[test]
fn sparse_arrays_are_counted_at_their_json_size() {
    let limits = Limits {
        bridge: BridgeLimits {
            max_depth: 64,
            max_bytes: 1 << 20,
        },
        ..Limits::default()
    };
    let mut vm = vm_with(limits, HostFunctions::new());
    let error = fail(&mut vm, "const a = []; a.length = 16e6; return a");
    assert!(matches!(error, SandboxError::ValueTooLarge(_)), "{error:?}");
    let error = fail(&mut vm, "return '\\u0001'.repeat(400000)");
    assert!(
        matches!(error, SandboxError::ValueTooLarge(_)),
        "escapes count: {error:?}"
    );
}

#[test]
fn error_text_copied_out_of_the_guest_is_capped() {
    let mut vm = vm();
    let error = fail(&mut vm, "throw new Error('x'.repeat(1e6))");
    let SandboxError::Guest(e) = error else {
        panic!("{error:?}")
    };
    assert_eq!(e.message.len(), 16 * 1024);
    let error = fail(&mut vm, "return {['k'.repeat(1e6)]: 10n}");
    assert!(error.to_string().len() < 200, "{}", error.to_string().len());
}
