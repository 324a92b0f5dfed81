//! `talon exec`: a `CodeModeResult` on stdout, exit status 0 completed,
//! 1 failed, 2 usage, 3 waiting.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use talon_testing::redact::Redactor;

use super::{MockFiles, home_with_workspace};

/// Runs `talon` with a private home and state directory (no stray
/// `~/.talon/talon.json5`, no shared suspended cells).
fn talon(args: &[&str], stdin: Option<&str>) -> Output {
    let home = tempfile::tempdir().unwrap();
    talon_in(home.path(), args, stdin)
}

fn talon_in(home: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_talon"))
        .args(args)
        .env("HOME", home)
        .env("TALON_STATE_DIR", home.join("state"))
        .env_remove("TALON_CONFIG")
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

/// The result without its telemetry (checked separately).
fn json_of(output: &Output) -> Value {
    let mut value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {} / {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let telemetry = value.as_object_mut().unwrap().remove("telemetry");
    assert!(
        telemetry.is_some_and(|t| t["execCount"].is_u64()),
        "telemetry is present"
    );
    value
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
        json!({"status": "completed", "value": {"sum": 3}, "output": [{"type": "text", "text": "hi\n"}]})
    );
}

#[test]
fn code_comes_from_a_file_or_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cell.js");
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
    let out = talon(
        &[
            "exec",
            "--language",
            "typescript",
            "--code",
            "const n: number = 41;\nreturn n + 1;",
        ],
        None,
    );
    assert_eq!(json_of(&out), json!({"status": "completed", "value": 42}));
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
    let mut results = Vec::new();
    for (args, code) in cases {
        let mut all = vec!["exec"];
        all.extend(args.iter());
        let out = talon(&all, None);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let mut result = json_of(&out);
        // The flood's output, cut at the limit, is only "flood" lines.
        if let Some(output) = result.get_mut("output") {
            let text: String = serde_json::from_value::<Vec<Value>>(output.clone())
                .unwrap()
                .iter()
                .map(|o| o["text"].as_str().unwrap().to_owned())
                .collect();
            assert!(
                text.split_inclusive('\n').all(|l| "flood\n".starts_with(l)),
                "{text}"
            );
            *output = json!("<flood lines>");
        }
        results.push(json!({"code": code, "result": result}));
    }
    insta::assert_json_snapshot!(results);
}

#[test]
fn an_uncaught_exception_has_no_code_but_a_stack() {
    let out = talon(&["exec", "--code", "throw new TypeError('nope')"], None);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_json_snapshot!(json_of(&out));
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

#[test]
fn config_limits_apply_and_bad_config_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("talon.json5");
    std::fs::write(
        &config,
        "// limits for cells\n{ tools: { codeMode: { timeoutMs: 150, maxOutputBytes: 1024, } } }",
    )
    .unwrap();
    let path = config.to_str().unwrap();
    let out = talon_in(
        home.path(),
        &["exec", "--config", path, "--code", "while (true) {}"],
        None,
    );
    pretty_assertions::assert_eq!(
        json_of(&out),
        json!({
            "code": "timeout",
            "error": "the cell exceeded its time limit of 150 ms",
            "status": "failed"
        })
    );
    // $TALON_CONFIG is read when there is no flag.
    let out = Command::new(env!("CARGO_BIN_EXE_talon"))
        .args(["exec", "--code", "text('x'.repeat(2000)); return 1"])
        .env("HOME", home.path())
        .env("TALON_STATE_DIR", home.path().join("state"))
        .env("TALON_CONFIG", path)
        .output()
        .unwrap();
    pretty_assertions::assert_eq!(
        json_of(&out),
        json!({
            "code": "output_limit_exceeded",
            "error": "the cell exceeded its output limit of 1024 bytes",
            "status": "failed"
        })
    );
    // ~/.talon/talon.json5 is the default.
    std::fs::create_dir_all(home.path().join(".talon")).unwrap();
    std::fs::write(
        home.path().join(".talon/talon.json5"),
        "{tools: {codeMode: {languages: ['javascript']}}}",
    )
    .unwrap();
    let out = talon_in(
        home.path(),
        &["exec", "--language", "typescript", "--code", "return 1"],
        None,
    );
    pretty_assertions::assert_eq!(
        json_of(&out),
        json!({
            "code": "unsupported_language",
            "error": "language \"typescript\" is not enabled for this agent",
            "status": "failed"
        })
    );
    // Bad values name the field; bad files say where.
    std::fs::write(&config, "{tools: {codeMode: {timeoutMs: 'soon'}}}").unwrap();
    let out = talon_in(
        home.path(),
        &["exec", "--config", path, "--code", "return 1"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tools.codeMode.timeoutMs"));
    std::fs::write(&config, "{tools: ").unwrap();
    let out = talon_in(
        home.path(),
        &["exec", "--config", path, "--code", "return 1"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(path));
    let out = talon_in(
        home.path(),
        &["exec", "--config", "/no/such/talon.json5", "--code", "1"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_suspended_cell_is_resumed_by_wait_from_another_process() {
    let home = tempfile::tempdir().unwrap();
    let out = talon_in(
        home.path(),
        &[
            "exec",
            "--code",
            "text('first'); await yield_control('checkpoint'); text('second'); return 'resumed';",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(3));
    let waiting = json_of(&out);
    let mut r = Redactor::new();
    pretty_assertions::assert_eq!(
        r.value(&waiting),
        json!({
            "output": [{"text": "first", "type": "text"}],
            "reason": "yield",
            "runId": "<cm_1>",
            "status": "waiting"
        })
    );
    let run_id = waiting["runId"].as_str().unwrap();
    let out = talon_in(home.path(), &["exec", "--wait", run_id], None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        json_of(&out),
        json!({"status": "completed", "value": "resumed", "output": [{"type": "text", "text": "second"}]})
    );
    // Finished: the runId is gone.
    let out = talon_in(home.path(), &["exec", "--wait", run_id], None);
    assert_eq!(out.status.code(), Some(1));
    pretty_assertions::assert_eq!(
        r.value(&json_of(&out)),
        json!({
            "code": "invalid_input",
            "error": "unknown runId \"<cm_1>\": no suspended cell of this run has it",
            "status": "failed"
        })
    );
    // Another agent cannot resume this agent's cell.
    let out = talon_in(
        home.path(),
        &["exec", "--code", "await yield_control(); return 1;"],
        None,
    );
    let waiting = json_of(&out);
    let run_id = waiting["runId"].as_str().unwrap();
    pretty_assertions::assert_eq!(
        r.value(&waiting),
        json!({"reason": "yield", "runId": "<cm_2>", "status": "waiting"})
    );
    let out = talon_in(
        home.path(),
        &["exec", "--agent", "other", "--wait", run_id],
        None,
    );
    pretty_assertions::assert_eq!(
        r.value(&json_of(&out)),
        json!({
            "code": "invalid_input",
            "error": "unknown runId \"<cm_2>\": no suspended cell of this run has it",
            "status": "failed"
        })
    );
}

#[test]
fn debug_code_mode_logs_the_visible_tools_and_bridge_activity() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_talon"))
        .args([
            "exec",
            "--code",
            "await tools.search('anything'); return ALL_TOOLS.length",
        ])
        .env("HOME", home.path())
        .env("TALON_STATE_DIR", home.path().join("state"))
        .env("TALON_DEBUG_CODE_MODE", "1")
        .output()
        .unwrap();
    assert_eq!(json_of(&out), json!({"status": "completed", "value": 0}));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("model-visible tools") && stderr.contains("[\"exec\", \"wait\"]"),
        "{stderr}"
    );
    assert!(stderr.contains("bridge: tools.search"), "{stderr}");
    // Off by default.
    let out = talon_in(home.path(), &["exec", "--code", "return 1"], None);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("model-visible tools"));
}

fn everything_js() -> String {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(path.exists(), "run scripts/setup.sh --test-servers");
    path.display().to_string()
}

#[test]
fn exec_reaches_a_real_mcp_server_named_in_the_config() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("talon.json5");
    std::fs::write(
        &config,
        format!(
            "{{ mcp: {{ servers: {{ everything: {{ command: 'node', args: ['{}', 'stdio'] }},\n\
               broken: {{ command: '/nonexistent/server' }} }} }} }}",
            everything_js()
        ),
    )
    .unwrap();
    let path = config.to_str().unwrap();
    let out = talon_in(
        home.path(),
        &[
            "exec",
            "--config",
            path,
            "--code",
            r#"return await MCP.everything.echo({message:"hi"})"#,
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json_of(&out),
        json!({"status": "completed", "value": {"content": [{"type": "text", "text": "Echo: hi"}]}})
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("MCP server \\\"broken\\\" failed to start")
            || stderr.contains("MCP server \"broken\" failed to start"),
        "{stderr}"
    );
    // The broken server's tools are absent; the policy applies to MCP tools.
    std::fs::write(
        &config,
        format!(
            "{{ tools: {{ deny: ['echo'] }}, mcp: {{ servers: {{ everything: {{ command: 'node', args: ['{}', 'stdio'] }} }} }} }}",
            everything_js()
        ),
    )
    .unwrap();
    let out = talon_in(
        home.path(),
        &[
            "exec",
            "--config",
            path,
            "--code",
            "return [typeof MCP.everything.echo, typeof MCP.everything.getSum, typeof MCP.broken]",
        ],
        None,
    );
    assert_eq!(
        json_of(&out),
        json!({"status": "completed", "value": ["undefined", "function", "undefined"]})
    );
}

#[test]
fn talon_agent_runs_a_turn_against_a_mock_script_and_prints_a_summary() {
    let (home, workspace) = home_with_workspace();
    std::fs::write(workspace.join("notes.txt"), "the answer is 42").unwrap();
    let files = MockFiles::write(
        home.path(),
        r#"{"turns": [
             {"toolCalls": [{"name": "exec", "arguments": {"code": "const r = await tools.read({path: 'notes.txt'}); return r.content;"}}],
              "usage": {"prompt": 120, "completion": 9}},
             {"text": "The notes say: the answer is 42.", "usage": {"prompt": 180, "completion": 11}}]}"#,
        "{ tools: { codeMode: { enabled: true }, codeMod: {} }, gateway: { port: 18789 } }",
    );
    let out = talon_in(
        home.path(),
        &files.agent(&workspace, "What do my notes say?"),
        None,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "The notes say: the answer is 42.");
    assert!(stderr.contains("→ exec "), "{stderr}");
    assert!(
        stderr.contains("    → openclaw:core:read"),
        "nested calls are indented: {stderr}"
    );
    assert!(
        stderr.contains("[run.completed] turns 2 · tool calls 1 · tokens 300 in / 20 out"),
        "{stderr}"
    );
    // A typo warns, with its place and a did-you-mean; OpenClaw's own
    // key (gateway.port) does not.
    assert!(
        stderr.contains(":1:41: warning[unknown_key]: tools.codeMod: unknown key, ignored; did you mean `codeMode`?"),
        "{stderr}"
    );
    assert!(!stderr.contains("gateway.port"), "{stderr}");
}
