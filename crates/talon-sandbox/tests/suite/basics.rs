//! Scripts, cells, promises, jobs, exceptions, output.

use serde_json::json;
use talon_protocol::{CodeModeErrorCode, ConsoleOutput, OutputStream};
use talon_sandbox::{GuestError, SandboxError};

use super::{fail, run, vm};

#[test]
fn eval_returns_the_completion_value() {
    let mut vm = vm();
    assert_eq!(vm.eval("1 + 2").unwrap(), json!(3));
    assert_eq!(vm.eval("var x = 40; x + 2").unwrap(), json!(42));
    // Globals persist between evaluations of one VM.
    assert_eq!(vm.eval("x").unwrap(), json!(40));
}

#[test]
fn a_cell_is_an_async_function_body() {
    let mut vm = vm();
    assert_eq!(run(&mut vm, "return 1 + 2"), json!(3));
    assert_eq!(
        run(&mut vm, "const a = await Promise.resolve(20); return a + 1"),
        json!(21)
    );
    assert_eq!(run(&mut vm, "await null"), json!(null));
    let chained =
        "let n = 0; for (let i = 0; i < 100; i++) { n += await new Promise(r => r(i)); } return n";
    assert_eq!(run(&mut vm, chained), json!(4950));
}

#[test]
fn exceptions_carry_name_message_and_stack() {
    let mut vm = vm();
    let error = fail(
        &mut vm,
        "function inner() { throw new TypeError('bad thing'); }\ninner();",
    );
    let SandboxError::Guest(GuestError {
        name,
        message,
        stack,
        code: None,
    }) = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!(
        (name.as_str(), message.as_str()),
        ("TypeError", "bad thing")
    );
    let stack = stack.as_deref().unwrap();
    assert!(
        stack.contains("inner") && stack.contains("<cell>:1"),
        "{stack}"
    );
    assert_eq!(
        error.code(),
        None,
        "a cell's own exception has no protocol code"
    );

    let thrown = fail(&mut vm, "throw 'plain string'");
    assert_eq!(thrown.to_string(), "Error: plain string");
    let rejected = fail(&mut vm, "await Promise.reject(new RangeError('nope'))");
    assert_eq!(rejected.to_string(), "RangeError: nope");
}

#[test]
fn syntax_errors_are_invalid_input() {
    let mut vm = vm();
    let error = fail(&mut vm, "return (");
    assert!(
        matches!(&error, SandboxError::Syntax(e) if e.name == "SyntaxError"),
        "{error:?}"
    );
    assert_eq!(error.code(), Some(CodeModeErrorCode::InvalidInput));
    // The VM stays usable.
    assert_eq!(run(&mut vm, "return 'still fine'"), json!("still fine"));
}

#[test]
fn console_output_is_captured_by_stream() {
    let mut vm = vm();
    run(
        &mut vm,
        "console.log('a', 1, {b: [2]}); console.error('oops'); console.info('c')",
    );
    assert_eq!(
        vm.take_output(),
        vec![
            ConsoleOutput {
                stream: OutputStream::Stdout,
                text: "a 1 {\"b\":[2]}\n".into()
            },
            ConsoleOutput {
                stream: OutputStream::Stderr,
                text: "oops\n".into()
            },
            ConsoleOutput {
                stream: OutputStream::Stdout,
                text: "c\n".into()
            },
        ]
    );
    assert_eq!(vm.take_output(), vec![]);
}

#[test]
fn the_guest_sees_no_host_surface() {
    let mut vm = vm();
    let probe = "return [typeof require, typeof process, typeof std, typeof os, typeof fetch, \
                 typeof __talon_print, typeof __talon_random, typeof WebAssembly]";
    assert_eq!(
        run(&mut vm, probe),
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined"
        ])
    );
}

#[test]
fn the_clock_is_the_hosts_choice() {
    let options = talon_sandbox::VmOptions {
        clock: talon_sandbox::Clock::Fixed {
            unix_ms: 1_700_000_000_000,
        },
        ..Default::default()
    };
    let mut vm = super::sandbox()
        .create_vm(options, talon_sandbox::HostFunctions::new())
        .unwrap();
    assert_eq!(
        run(
            &mut vm,
            "return [Date.now(), new Date().toISOString(), performance.now()]"
        ),
        json!([1_700_000_000_000_i64, "2023-11-14T22:13:20.000Z", 0])
    );
    // The system clock reads the real time.
    let mut vm = vm_now();
    let now = run(&mut vm, "return Date.now()").as_i64().unwrap();
    let host = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!((host - now).abs() < 5_000, "guest {now} host {host}");
}

fn vm_now() -> talon_sandbox::Vm {
    vm()
}
