//! Arbitrary bytes as a snapshot: restore must fail cleanly or yield a VM
//! whose use fails cleanly; never a panic. Inputs that start with `TLNS`
//! are resealed with the fuzzing key so the decoder's structure checks are
//! reached too.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use talon_sandbox::{HostFunctions, Sandbox, SandboxConfig, VmOptions};

fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        Sandbox::new(SandboxConfig { snapshot_key: Some([1; 32]), ..Default::default() }).expect("sandbox")
    })
}

fuzz_target!(|data: &[u8]| {
    let functions = HostFunctions::new().asynchronous("later");
    if let Ok(mut vm) = sandbox().restore_vm(data, VmOptions::default(), functions) {
        let _ = vm.settle(1, Ok(serde_json::json!(1)));
        let _ = vm.resume();
        let _ = vm.run_cell("return 1");
    }
});
