//! Arbitrary text as a cell, with tight limits: every outcome is a value or
//! a `SandboxError`, and the sandbox keeps working. Text over Code Mode's
//! default source cap is refused first, as `exec` refuses it.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use talon_sandbox::{HostFunctions, Limits, Sandbox, SandboxConfig, VmOptions};

fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| Sandbox::new(SandboxConfig::default()).expect("sandbox"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else { return };
    if talon_codemode::input::check_source_size(source, talon_codemode::config::DEFAULT_MAX_SOURCE_BYTES).is_err() {
        return;
    }
    let limits = Limits { timeout: Duration::from_millis(100), memory_limit_bytes: 8 << 20, ..Limits::default() };
    let functions = HostFunctions::new().sync("echo", |args| Ok(args.first().cloned().unwrap_or_default()));
    if let Ok(mut vm) = sandbox().create_vm(VmOptions { limits, ..Default::default() }, functions) {
        let _ = vm.run_cell(source);
        if !vm.is_poisoned() {
            let _ = vm.snapshot();
        }
    }
});
