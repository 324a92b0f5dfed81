//! Host functions by stable name: synchronous, asynchronous (a promise the
//! host settles later), failing, and floods of calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use talon_protocol::CodeModeErrorCode;
use talon_sandbox::{CellStatus, HostCallError, HostFunctions, Limits, PendingCall, SandboxError};

use super::{assert_fresh_vm_works, fail, run, vm_with};

#[test]
fn sync_functions_get_json_arguments_and_return_json() {
    let functions = HostFunctions::new().sync("add", |args| {
        let sum: f64 = args.iter().filter_map(|a| a.as_f64()).sum();
        Ok(json!({"sum": sum, "argc": args.len()}))
    });
    let mut vm = vm_with(Limits::default(), functions);
    assert_eq!(
        run(&mut vm, "return add(1, 2, 3.5)"),
        json!({"sum": 6.5, "argc": 3})
    );
    // Installed as a hidden global: callable, not enumerable.
    assert_eq!(
        run(
            &mut vm,
            "return [typeof add, Object.keys(globalThis).includes('add')]"
        ),
        json!(["function", false])
    );
}

#[test]
fn a_failing_host_function_throws_a_plain_catchable_error() {
    let functions = HostFunctions::new().sync("explode", |_| {
        Err(HostCallError::new("it broke").with_code("nested_tool_failed"))
    });
    let mut vm = vm_with(Limits::default(), functions);
    let caught = run(
        &mut vm,
        "try { explode() } catch (e) { return [e instanceof Error, e.message, e.code, \
         Object.getPrototypeOf(e) === Error.prototype] }",
    );
    assert_eq!(
        caught,
        json!([true, "it broke", "nested_tool_failed", true])
    );
    let uncaught = fail(&mut vm, "explode()");
    assert_eq!(uncaught.to_string(), "Error: it broke");
}

#[test]
fn unknown_host_functions_fail_in_the_guest() {
    let mut vm = vm_with(Limits::default(), HostFunctions::new());
    let error = fail(&mut vm, "return missing()");
    assert_eq!(error.to_string(), "ReferenceError: missing is not defined");
}

#[test]
fn async_functions_return_promises_the_host_settles() {
    let functions = HostFunctions::new().asynchronous("fetchThing");
    let mut vm = vm_with(Limits::default(), functions);
    let body = "const [a, b] = await Promise.all([fetchThing('a'), fetchThing('b', 2)]); \
                let c; try { await fetchThing('c') } catch (e) { c = e.message + '/' + e.code } \
                return {a, b, c}";
    let CellStatus::Waiting(calls) = vm.run_cell(body).unwrap() else {
        panic!("expected waiting")
    };
    assert_eq!(
        calls,
        vec![
            PendingCall {
                id: 1,
                name: "fetchThing".into(),
                args: vec![json!("a")]
            },
            PendingCall {
                id: 2,
                name: "fetchThing".into(),
                args: vec![json!("b"), json!(2)]
            },
        ]
    );
    // Settle out of order.
    vm.settle(2, Ok(json!({"got": "b"}))).unwrap();
    assert_eq!(vm.resume().unwrap(), CellStatus::Waiting(vec![]));
    vm.settle(1, Ok(json!(["a"]))).unwrap();
    let CellStatus::Waiting(calls) = vm.resume().unwrap() else {
        panic!("expected waiting")
    };
    assert_eq!(
        calls,
        vec![PendingCall {
            id: 3,
            name: "fetchThing".into(),
            args: vec![json!("c")]
        }]
    );
    vm.settle(
        3,
        Err(HostCallError::new("no c").with_code("nested_tool_failed")),
    )
    .unwrap();
    assert_eq!(
        vm.resume().unwrap(),
        CellStatus::Completed(
            json!({"a": ["a"], "b": {"got": "b"}, "c": "no c/nested_tool_failed"})
        )
    );
    // Settling an unknown id is an error, not a panic.
    assert!(matches!(
        vm.settle(99, Ok(json!(1))),
        Err(SandboxError::Internal(_))
    ));
}

#[test]
fn pending_async_calls_are_bounded() {
    let limits = Limits {
        max_pending_calls: 4,
        ..Limits::default()
    };
    let mut vm = vm_with(limits, HostFunctions::new().asynchronous("slow"));
    let body = "const ps = []; try { for (let i = 0; i < 10; i++) ps.push(slow(i)); } \
                catch (e) { return [ps.length, e.code] }";
    assert_eq!(
        run(&mut vm, body),
        json!([4, "too_many_pending_tool_calls"])
    );
}

#[test]
fn a_hundred_thousand_host_calls() {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let functions = HostFunctions::new().sync("tick", move |args| {
        seen.fetch_add(1, Ordering::Relaxed);
        Ok(args.first().cloned().unwrap_or_default())
    });
    let mut vm = vm_with(Limits::default(), functions);
    assert_eq!(
        run(
            &mut vm,
            "let s = 0; for (let i = 0; i < 100000; i++) s += tick(i); return s"
        ),
        json!(4_999_950_000_i64)
    );
    assert_eq!(count.load(Ordering::Relaxed), 100_000);
    assert!(vm.host_calls() >= 100_000);
    assert_fresh_vm_works();
}

#[test]
fn a_cell_that_waits_on_nothing_is_stalled() {
    let mut vm = vm_with(Limits::default(), HostFunctions::new());
    let error = fail(&mut vm, "await new Promise(() => {})");
    assert!(matches!(error, SandboxError::Stalled));
    assert_eq!(error.code(), Some(CodeModeErrorCode::Timeout));
}
