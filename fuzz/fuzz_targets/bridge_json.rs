//! Arbitrary JSON crosses into the guest and back unchanged (within the
//! bridge's limits), whatever its shape.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use talon_sandbox::{CellStatus, HostFunctions, Sandbox, SandboxConfig, VmOptions};

fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| Sandbox::new(SandboxConfig::default()).expect("sandbox"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let echo = value.clone();
    let functions = HostFunctions::new().sync("value", move |_| Ok(echo.clone()));
    let Ok(mut vm) = sandbox().create_vm(VmOptions::default(), functions) else { return };
    if let Ok(CellStatus::Completed(back)) = vm.run_cell("return value()") {
        // Numbers may normalise (1.0 -> 1); compare through f64 for those.
        assert_eq!(normalise(&back), normalise(&value));
    }
});

fn normalise(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Number(n) => serde_json::json!(n.as_f64()),
        serde_json::Value::Array(items) => items.iter().map(normalise).collect(),
        serde_json::Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), normalise(v))).collect(),
        other => other.clone(),
    }
}
