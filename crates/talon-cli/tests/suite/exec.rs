//! `talon exec`: JSON on stdout, exit status 0 / 1 / 2.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn talon(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_talon"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn completed_cells_print_their_value_and_exit_zero() {
    let out = talon(
        &["exec", "--code", "console.log('hi'); return {sum: 1 + 2}"],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        json_of(&out),
        json!({"status": "completed", "value": {"sum": 3}, "output": [{"stream": "stdout", "text": "hi\n"}]})
    );
}

#[test]
fn code_comes_from_a_file_or_standard_input() {
    let dir = std::env::temp_dir().join(format!("talon-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cell.js");
    std::fs::write(
        &file,
        "const x = await Promise.resolve(20);\nreturn x + 1;\n",
    )
    .unwrap();
    let out = talon(&["exec", "--file", file.to_str().unwrap()], None);
    assert_eq!(json_of(&out), json!({"status": "completed", "value": 21}));
    let out = talon(&["exec"], Some("return 'from stdin'"));
    assert_eq!(
        json_of(&out),
        json!({"status": "completed", "value": "from stdin"})
    );
    let out = talon(&["exec", "--file", "-"], Some("return [1]"));
    assert_eq!(json_of(&out), json!({"status": "completed", "value": [1]}));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failures_print_a_code_and_exit_one() {
    let cases = [
        (
            vec!["--timeout-ms", "200", "--code", "while (true) {}"],
            "timeout",
        ),
        (
            vec![
                "--memory-limit-bytes",
                "4000000",
                "--code",
                "const a = []; for (;;) a.push('x'.repeat(1e5) + a.length)",
            ],
            "memory_limit_exceeded",
        ),
        (vec!["--code", "return ("], "invalid_input"),
        (
            vec!["--code", "return await import('os')"],
            "module_access_denied",
        ),
        (
            vec!["--code", "for (;;) console.log('flood')"],
            "output_limit_exceeded",
        ),
    ];
    for (args, code) in cases {
        let mut all = vec!["exec"];
        all.extend(args.iter());
        let out = talon(&all, None);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let value = json_of(&out);
        assert_eq!(value["status"], "failed", "{args:?}");
        assert_eq!(value["code"], code, "{args:?}: {value}");
        assert!(value["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
}

#[test]
fn an_uncaught_exception_has_no_code_but_a_stack() {
    let out = talon(&["exec", "--code", "throw new TypeError('nope')"], None);
    assert_eq!(out.status.code(), Some(1));
    let value = json_of(&out);
    assert_eq!(value["error"], "TypeError: nope");
    assert_eq!(value.get("code"), None);
    assert!(value["stack"].as_str().unwrap().contains("<cell>:1"));
}

#[test]
fn bad_usage_exits_two() {
    let out = talon(&["exec", "--timeout-ms", "soon", "--code", "1"], None);
    assert_eq!(out.status.code(), Some(2));
    let out = talon(&["exec", "--file", "/definitely/not/here.js"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/definitely/not/here.js"));
    let out = talon(&["exec", "--code", "1", "--file", "x.js"], None);
    assert_eq!(out.status.code(), Some(2));
}
