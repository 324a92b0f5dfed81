//! Time, memory, stack and output limits: each breach fails the cell with
//! its own error while the host is unharmed.

use std::time::{Duration, Instant};

use serde_json::json;
use talon_protocol::CodeModeErrorCode;
use talon_sandbox::{HostFunctions, Limits, SandboxError};

use super::{assert_fresh_vm_works, fail, run, short, vm_with};

fn assert_timeout(body: &str, timeout_ms: u64) -> talon_sandbox::Vm {
    let limits = short(timeout_ms);
    let mut vm = vm_with(limits, HostFunctions::new());
    let started = Instant::now();
    let error = fail(&mut vm, body);
    let elapsed = started.elapsed();
    assert!(
        matches!(error, SandboxError::Timeout(ms) if ms == timeout_ms),
        "{body}: {error:?}"
    );
    assert_eq!(error.code(), Some(CodeModeErrorCode::Timeout));
    // Graceful stop at the deadline, hard stop at most `hard_stop_grace`
    // later; the rest is scheduling slack on a loaded 2-core machine.
    let bound =
        Duration::from_millis(timeout_ms) + limits.hard_stop_grace + Duration::from_millis(1500);
    assert!(elapsed < bound, "{body}: stopped after {elapsed:?}");
    vm
}

#[test]
fn an_infinite_loop_stops_gracefully_and_the_vm_lives_on() {
    let mut vm = assert_timeout("while (true) {}", 200);
    assert!(
        !vm.is_poisoned(),
        "the interrupt handler stops plain loops without a trap"
    );
    assert_eq!(run(&mut vm, "return 'alive'"), json!("alive"));
}

#[test]
fn long_native_operations_hit_the_hard_stop() {
    // A catastrophic regex and a huge sort run inside native code.
    assert_timeout("return /(a+)+$/.test('a'.repeat(64) + 'b')", 200);
    assert_timeout(
        "const a = []; for (let i = 0; i < 3e6; i++) a.push((i * 7919) % 1000003); \
                    for (;;) a.sort((x, y) => x - y).reverse()",
        300,
    );
    assert_fresh_vm_works();
}

#[test]
fn a_poisoned_vm_refuses_further_use() {
    // Find a stop that needed the trap: a sort whose comparator never returns
    // is interrupted gracefully, so use the regex, which may or may not poll.
    let limits = short(150);
    let mut vm = vm_with(limits, HostFunctions::new());
    let _ = vm.run_cell("return /(x+x+)+y/.test('x'.repeat(100))");
    if vm.is_poisoned() {
        assert!(matches!(
            vm.run_cell("return 1"),
            Err(SandboxError::Poisoned)
        ));
        assert!(matches!(vm.snapshot(), Err(SandboxError::Poisoned)));
    } else {
        assert_eq!(run(&mut vm, "return 1"), json!(1));
    }
}

#[test]
fn allocation_bombs_hit_the_memory_limit() {
    let limits = Limits {
        memory_limit_bytes: 16 << 20,
        ..Limits::default()
    };
    let bombs = [
        "const a = []; for (;;) a.push('x'.repeat(4096) + a.length)",
        "const parts = []; for (;;) parts.push('x'.repeat(1 << 20) + parts.length)",
        "return new Uint8Array(1 << 30).length",
        "return new ArrayBuffer(2 ** 30).byteLength",
        "return new Array(1e8).fill(0).length",
        "const m = new Map(); for (let i = 0; ; i++) m.set(i, {i})",
        "return JSON.stringify(Array.from({length: 1e6}, (_, i) => ({i, s: 'abcdefgh'})))",
    ];
    for bomb in bombs {
        let mut vm = vm_with(limits, HostFunctions::new());
        let error = fail(&mut vm, bomb);
        assert!(
            matches!(error, SandboxError::MemoryLimit),
            "{bomb}: {error:?}"
        );
        assert_eq!(error.code(), Some(CodeModeErrorCode::MemoryLimitExceeded));
        assert!(
            vm.memory_bytes() <= (16 << 20) * 5 / 4 + (8 << 20),
            "{bomb}: {} bytes",
            vm.memory_bytes()
        );
    }
    assert_fresh_vm_works();
}

#[test]
fn catching_out_of_memory_does_not_defeat_the_limit() {
    let limits = Limits {
        memory_limit_bytes: 8 << 20,
        ..Limits::default()
    };
    let mut vm = vm_with(limits, HostFunctions::new());
    // QuickJS-NG's out-of-memory error escapes `catch`; the cell fails.
    let body = "function fill() { const a = []; for (;;) a.push('y'.repeat(1 << 16)) } \
                try { fill() } catch (e) { return 'caught' } return 'not reached'";
    let error = fail(&mut vm, body);
    assert!(matches!(error, SandboxError::MemoryLimit), "{error:?}");
    // The VM was not poisoned: QuickJS's own limit stopped the guest.
    assert!(!vm.is_poisoned());
    assert_eq!(run(&mut vm, "return 'usable'"), json!("usable"));
}

#[test]
fn deep_recursion_hits_the_stack_limit() {
    let mut vm = vm_with(Limits::default(), HostFunctions::new());
    let error = fail(&mut vm, "function f(n) { return f(n + 1) + 1 } return f(0)");
    assert_eq!(
        error.to_string(),
        "RangeError: Maximum call stack size exceeded"
    );
    assert_eq!(run(&mut vm, "return 'fine'"), json!("fine"));
    // Native recursion (the JSON parser) may exhaust the wasm stack before
    // QuickJS's own check: then the VM traps and is discarded.
    let nested = fail(&mut vm, "return JSON.parse('['.repeat(1e6))");
    assert_eq!(
        nested.to_string(),
        "RangeError: Maximum call stack size exceeded"
    );
    assert_fresh_vm_works();
}

#[test]
fn output_is_capped_even_when_the_guest_catches() {
    let limits = Limits {
        max_output_bytes: 1024,
        ..Limits::default()
    };
    let mut vm = vm_with(limits, HostFunctions::new());
    let error = fail(
        &mut vm,
        "for (let i = 0; i < 1000; i++) { try { console.log('line', i) } catch {} } return 'done'",
    );
    assert!(
        matches!(error, SandboxError::OutputLimit(1024)),
        "{error:?}"
    );
    assert_eq!(error.code(), Some(CodeModeErrorCode::OutputLimitExceeded));
    let printed: usize = vm.take_output().iter().map(|o| o.text.len()).sum();
    assert!(printed <= 1024, "{printed}");
}

#[test]
fn a_cancelled_token_stops_the_guest() {
    let mut vm = vm_with(short(10_000), HostFunctions::new());
    let cancel = tokio_util::sync::CancellationToken::new();
    vm.set_cancel(cancel.clone());
    let stopper = std::thread::spawn(move || {
        // Not a wait on a condition: lets the guest spin a while. A
        // cancellation before it starts must stop it just the same.
        std::thread::sleep(Duration::from_millis(100));
        cancel.cancel();
    });
    let started = Instant::now();
    let error = fail(&mut vm, "while (true) {}");
    stopper.join().unwrap();
    assert!(matches!(error, SandboxError::Aborted), "{error:?}");
    assert_eq!(error.code(), Some(CodeModeErrorCode::Aborted));
    assert!(started.elapsed() < Duration::from_secs(5));
}
