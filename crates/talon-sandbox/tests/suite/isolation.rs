//! What one operation leaves behind for the next: nothing it should not.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use talon_sandbox::{CellStatus, HostFunctions, Limits, PendingCall, SandboxError};

use super::{assert_fresh_vm_works, fail, run, short, vm_with};

#[test]
fn unawaited_calls_of_a_finished_cell_do_not_leak_into_the_next() {
    let mut vm = vm_with(Limits::default(), HostFunctions::new().asynchronous("tool"));
    assert_eq!(run(&mut vm, "tool('from-cell-1'); return 1"), json!(1));
    let CellStatus::Waiting(calls) = vm.run_cell("return await tool('from-cell-2')").unwrap()
    else {
        panic!("expected waiting")
    };
    assert_eq!(
        calls,
        vec![PendingCall {
            id: 2,
            name: "tool".into(),
            args: vec![json!("from-cell-2")]
        }]
    );
    assert!(
        vm.settle(1, Ok(json!(0))).is_err(),
        "the first cell's call was abandoned"
    );
}

#[test]
fn settle_runs_no_guest_code_until_resume() {
    let marks = Arc::new(AtomicUsize::new(0));
    let seen = marks.clone();
    let functions = HostFunctions::new()
        .asynchronous("tool")
        .sync("mark", move |_| {
            seen.fetch_add(1, Ordering::Relaxed);
            Ok(json!(null))
        });
    let mut vm = vm_with(Limits::default(), functions);
    let body = "Object.defineProperty(Object.prototype, 'then', {get() { mark(); return undefined }, configurable: true}); \
                const v = await tool(); delete Object.prototype.then; return v.x";
    assert!(matches!(vm.run_cell(body).unwrap(), CellStatus::Waiting(_)));
    let before = marks.load(Ordering::Relaxed);
    vm.settle(1, Ok(json!({"x": 5}))).unwrap();
    assert_eq!(
        marks.load(Ordering::Relaxed),
        before,
        "settle ran guest code"
    );
    assert_eq!(vm.resume().unwrap(), CellStatus::Completed(json!(5)));
}

#[test]
fn a_job_flood_that_outlives_its_deadline_poisons_the_vm() {
    let mut vm = vm_with(short(200), HostFunctions::new());
    let error = fail(
        &mut vm,
        "(function f() { Promise.resolve().then(f) })(); return 1",
    );
    assert!(matches!(error, SandboxError::Timeout(200)), "{error:?}");
    // The queue cannot be cleared, so the VM is discarded, not reused.
    assert!(vm.is_poisoned());
    assert!(matches!(
        vm.run_cell("return 1"),
        Err(SandboxError::Poisoned)
    ));
    assert_fresh_vm_works();
}

#[test]
fn a_caught_module_denial_does_not_fail_later_cells() {
    let mut vm = vm_with(Limits::default(), HostFunctions::new());
    let error = fail(&mut vm, "try { await import('x') } catch {} return 1");
    assert!(matches!(error, SandboxError::ModuleAccessDenied(_)));
    assert_eq!(run(&mut vm, "return 2"), json!(2));
}

#[test]
fn eval_while_a_cell_waits_keeps_the_cell() {
    let mut vm = vm_with(Limits::default(), HostFunctions::new().asynchronous("tool"));
    assert!(matches!(
        vm.run_cell("return (await tool()) + 1").unwrap(),
        CellStatus::Waiting(_)
    ));
    assert!(vm.eval("throw new Error('unrelated')").is_err());
    vm.settle(1, Ok(json!(41))).unwrap();
    assert_eq!(vm.resume().unwrap(), CellStatus::Completed(json!(42)));
}

#[test]
fn a_guest_cannot_spoof_the_memory_limit() {
    let mut vm = vm_with(Limits::default(), HostFunctions::new());
    let error = fail(
        &mut vm,
        "throw {name: 'InternalError', message: 'out of memory'}",
    );
    assert!(matches!(error, SandboxError::Guest(_)), "{error:?}");
    // (QuickJS-NG itself treats a thrown `InternalError('out of memory')` as
    // its own uncatchable out-of-memory error; a guest that throws one only
    // mislabels its own failure.)
}
