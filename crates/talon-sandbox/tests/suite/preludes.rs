//! Surface preludes, each baked into its own image (Code Mode's guest API
//! is one).

use serde_json::json;
use talon_sandbox::{
    CellStatus, HostFunctions, Prelude, Sandbox, SandboxConfig, SandboxError, VmOptions,
};

use super::TEST_KEY;

fn sandbox_with_prelude() -> Sandbox {
    let prelude = Prelude {
        name: "greeter".into(),
        source: "(() => { const hello = globalThis.hello; const fetchName = globalThis.fetchName; \
                 delete globalThis.hello; delete globalThis.fetchName; \
                 globalThis.greet = async (n) => hello(await fetchName(n)) + '!'; })()"
            .into(),
        host_functions: vec!["hello".into(), "fetchName".into()],
    };
    let config = SandboxConfig {
        preludes: vec![prelude],
        snapshot_key: Some(TEST_KEY),
        ..Default::default()
    };
    Sandbox::new(config).unwrap()
}

/// The options of a VM of the greeter's image.
fn greeter() -> VmOptions {
    VmOptions {
        prelude: Some("greeter".into()),
        ..VmOptions::default()
    }
}

fn functions() -> HostFunctions {
    HostFunctions::new()
        .sync("hello", |args| {
            Ok(json!(format!("hi {}", args[0].as_str().unwrap_or("?"))))
        })
        .asynchronous("fetchName")
}

#[test]
fn a_prelude_captures_host_functions_and_hides_them() {
    let sandbox = sandbox_with_prelude();
    let mut vm = sandbox.create_vm(greeter(), functions()).unwrap();
    let status = vm
        .run_cell("return [await greet(1), typeof hello, typeof fetchName]")
        .unwrap();
    let CellStatus::Waiting(calls) = status else {
        panic!("expected waiting")
    };
    assert_eq!(calls[0].name, "fetchName");
    // The image survives a snapshot and a restart like any VM state.
    let bytes = vm.snapshot().unwrap();
    let restarted = sandbox_with_prelude();
    let mut vm = restarted
        .restore_vm(&bytes, greeter(), functions())
        .unwrap();
    vm.settle(calls[0].id, Ok(json!("ada"))).unwrap();
    assert_eq!(
        vm.resume().unwrap(),
        CellStatus::Completed(json!(["hi ada!", "undefined", "undefined"]))
    );
}

#[test]
fn a_throwing_prelude_makes_its_image_unavailable() {
    let prelude = Prelude {
        name: "broken".into(),
        source: "throw new Error('nope')".into(),
        host_functions: vec![],
    };
    // Images are built on first use: the sandbox starts, the image's first
    // VM fails, and so does every later one; other images are unaffected.
    let sandbox = Sandbox::new(SandboxConfig {
        preludes: vec![prelude],
        snapshot_key: Some(TEST_KEY),
        ..Default::default()
    })
    .unwrap();
    let broken = VmOptions {
        prelude: Some("broken".into()),
        ..VmOptions::default()
    };
    for _ in 0..2 {
        let error = sandbox
            .create_vm(broken.clone(), HostFunctions::new())
            .unwrap_err();
        assert!(
            matches!(error, SandboxError::RuntimeUnavailable(ref m) if m.contains("Error: nope")),
            "{error}"
        );
        assert_eq!(
            error.code(),
            Some(talon_protocol::CodeModeErrorCode::RuntimeUnavailable)
        );
    }
    let mut bare = sandbox
        .create_vm(VmOptions::default(), HostFunctions::new())
        .unwrap();
    assert_eq!(bare.eval("1 + 1").unwrap(), json!(2));
}
