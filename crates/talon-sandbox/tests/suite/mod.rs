mod basics;
mod bridge;
mod contract;
mod driver;
mod host_functions;
mod hostile;
mod isolation;
mod limits;
mod pool;
mod preludes;
mod snapshots;

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;
use talon_sandbox::{
    CellStatus, HostFunctions, Limits, Sandbox, SandboxConfig, SandboxError, Vm, VmOptions,
};

/// The snapshot key of the test sandbox (tests forge snapshots with it).
pub const TEST_KEY: [u8; 32] = [7; 32];

/// One sandbox per test process.
pub fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        Sandbox::new(SandboxConfig {
            snapshot_key: Some(TEST_KEY),
            ..SandboxConfig::default()
        })
        .expect("sandbox")
    })
}

pub fn vm() -> Vm {
    vm_with(Limits::default(), HostFunctions::new())
}

pub fn vm_with(limits: Limits, functions: HostFunctions) -> Vm {
    sandbox()
        .create_vm(
            VmOptions {
                limits,
                ..VmOptions::default()
            },
            functions,
        )
        .expect("vm")
}

pub fn short(timeout_ms: u64) -> Limits {
    Limits {
        timeout: Duration::from_millis(timeout_ms),
        ..Limits::default()
    }
}

/// Runs a cell that must complete and returns its value.
pub fn run(vm: &mut Vm, body: &str) -> Value {
    match vm.run_cell(body) {
        Ok(CellStatus::Completed(value)) => value,
        other => panic!("cell {body:?} did not complete: {other:?}"),
    }
}

/// Runs a cell that must fail and returns the error.
pub fn fail(vm: &mut Vm, body: &str) -> SandboxError {
    match vm.run_cell(body) {
        Err(e) => e,
        other => panic!("cell {body:?} did not fail: {other:?}"),
    }
}

/// After any hostile cell, the same process still creates and runs a fresh
/// VM normally.
pub fn assert_fresh_vm_works() {
    let mut vm = vm();
    assert_eq!(
        run(&mut vm, "return [1 + 2, 'ok']"),
        serde_json::json!([3, "ok"])
    );
}
