//! One `talon agent` process through a long run of hostile cells and
//! core-tool calls: it must answer every one with a clean error, keep
//! serving to the end, leave no process behind, write nothing outside its
//! workspace, and keep its memory bounded.
//!
//! The model is a scripted mock server in this test process; while the
//! agent waits for the last reply, the test reads the agent's own
//! `/proc/<pid>/status`.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use talon_mock_model::{MockModel, Script, ScriptedCall, Turn};
use talon_testing::wait;

/// A marker no other process uses: `sleep` of this many seconds.
const SLEEP_MARKER: &str = "2987";

fn cell(code: impl Into<String>) -> ScriptedCall {
    ScriptedCall {
        name: "exec".into(),
        arguments: json!({"code": code.into()}),
    }
}

fn ts_cell(code: impl Into<String>) -> ScriptedCall {
    ScriptedCall {
        name: "exec".into(),
        arguments: json!({"code": code.into(), "language": "typescript"}),
    }
}

/// A cell that makes core-tool calls and returns each outcome as `ok` or
/// the error's code.
fn core_calls(calls: &[(&str, Value)]) -> ScriptedCall {
    let list = serde_json::to_string(calls).unwrap();
    cell(format!(
        "const out = [];
         for (const [id, args] of {list}) {{
           try {{ const r = await tools.call(id, args); out.push(['ok', JSON.stringify(r).length]); }}
           catch (e) {{ out.push([e.code ?? 'error', String(e.message).slice(0, 200)]); }}
         }}
         return out;"
    ))
}

/// The hostile turns: every class of the hardening issue, several shapes
/// each, as parallel `exec` calls.
fn hostile_turns(outside: &str) -> Vec<Vec<ScriptedCall>> {
    let read = "openclaw:core:read";
    let write = "openclaw:core:write";
    let edit = "openclaw:core:edit";
    let grep = "openclaw:core:grep";
    let shell = "openclaw:core:exec";
    vec![
        // Deep nesting in the TypeScript strip and the module lexer.
        vec![
            ts_cell(format!(
                "return {}1{}",
                "(".repeat(3_000),
                ")".repeat(3_000)
            )),
            ts_cell(format!("return 1{}", "+1".repeat(100_000))),
            ts_cell(format!(
                "let x: {}number{} = 1; return x",
                "Array<".repeat(5_000),
                ">".repeat(5_000)
            )),
            ts_cell(format!("return {}x", "!".repeat(50_000))),
            cell(format!(
                "return {}1{}",
                "[".repeat(100_000),
                "]".repeat(100_000)
            )),
            cell(format!("return a{}", ".b".repeat(100_000))),
            cell(format!("const s = `{}`; return 1", "${`".repeat(20_000))),
        ],
        // Oversized sources and sandbox bombs.
        vec![
            cell(format!("/*{}*/ return 1", "x".repeat(1 << 20))),
            ts_cell(format!(
                "const s: string = '{}'; return s.length",
                "y".repeat(1 << 20)
            )),
            cell("const a = []; while (true) a.push(new Array(1e6).fill(1));"),
            cell("while (true) {}"),
            cell("for (;;) text('x'.repeat(1 << 20));"),
            cell("function f() { return f() + 1 } return f()"),
            cell("let s = 'x'; while (true) s = s + s;"),
        ],
        // Core tools: escapes, special files, huge files.
        vec![
            core_calls(&[
                (read, json!({"path": "pipe"})),
                (read, json!({"path": "zero"})),
                (read, json!({"path": "huge"})),
                (read, json!({"path": "etc/passwd"})),
                (read, json!({"path": "../outside-secret.txt"})),
                (
                    read,
                    json!({"path": format!("{outside}/outside-secret.txt")}),
                ),
            ]),
            core_calls(&[
                (write, json!({"path": "escape", "content": "pwned"})),
                (
                    write,
                    json!({"path": "escape-dir/created.txt", "content": "pwned"}),
                ),
                (write, json!({"path": "pipe", "content": "x"})),
                (edit, json!({"path": "pipe", "old": "a", "new": "b"})),
                (edit, json!({"path": "zero", "old": "a", "new": "b"})),
                (edit, json!({"path": "huge", "old": "a", "new": "b"})),
            ]),
            core_calls(&[
                (grep, json!({"pattern": "root"})),
                (grep, json!({"pattern": "x", "path": "huge"})),
                (grep, json!({"pattern": "x", "path": "pipe"})),
            ]),
        ],
        // The shell: floods, runaway and background processes, one cell
        // each so that none waits on another.
        vec![
            core_calls(&[(shell, json!({"command": "yes | head -c 300000000"}))]),
            core_calls(&[(
                shell,
                json!({"command": "head -c 100000000 /dev/zero | tr '\\0' 'y' >&2"}),
            )]),
            core_calls(&[
                (
                    shell,
                    json!({"command": format!("sleep {SLEEP_MARKER} & echo started")}),
                ),
                (
                    shell,
                    json!({"command": format!("(sleep {SLEEP_MARKER} &) ; exit 3")}),
                ),
                (
                    shell,
                    json!({"command": format!("sh -c 'sleep {SLEEP_MARKER}' & sleep 600"), "timeoutMs": 300}),
                ),
            ]),
        ],
    ]
}

/// A streamed reply whose tool call's arguments nest 20,000 deep, and one
/// whose arguments are an unterminated 1 MB string: the agent parses them,
/// so the model must get an error back, not a crashed process.
fn hostile_arguments_turn() -> Turn {
    let chunk = |id: &str, arguments: &str| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "mock-model",
               "choices": [{"index": 0, "delta": {"tool_calls": [{"index": if id == "a" { 0 } else { 1 }, "id": id, "type": "function",
                   "function": {"name": "exec", "arguments": arguments}}]}, "finish_reason": null}]})
    };
    let deep = format!(
        "{{\"code\": {}1{}}}",
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    let open = format!("{{\"code\": \"{}", "x".repeat(1 << 20));
    let last = json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "mock-model",
                      "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    Turn {
        raw: Some(format!(
            "data: {}\n\ndata: {}\n\ndata: {last}\n\ndata: [DONE]\n\n",
            chunk("a", &deep),
            chunk("b", &open)
        )),
        ..Turn::default()
    }
}

/// What each hostile call must come to, turn by turn: the result's status
/// and code (or the guest error's name), and for core-tool calls the core
/// tool's own code of each call.
fn expected_outcomes() -> Vec<Vec<Value>> {
    let ts = json!("failed: typescript_transform_failed");
    vec![
        vec![
            ts.clone(),
            ts.clone(),
            ts.clone(),
            ts,
            json!("failed: RangeError"),
            json!("failed: ReferenceError"),
            json!("failed: RangeError"),
        ],
        vec![
            json!("failed: invalid_input"),
            json!("failed: invalid_input"),
            json!("failed: memory_limit_exceeded"),
            json!("failed: timeout"),
            json!("failed: output_limit_exceeded"),
            json!("failed: RangeError"),
            json!("failed: InternalError"),
        ],
        vec![
            json!([
                "not_regular_file",
                "outside_workspace",
                "ok",
                "outside_workspace",
                "outside_workspace",
                "outside_workspace"
            ]),
            json!([
                "outside_workspace",
                "outside_workspace",
                "not_regular_file",
                "not_regular_file",
                "outside_workspace",
                "too_large"
            ]),
            json!(["ok", "ok", "not_regular_file"]),
        ],
        vec![json!(["ok"]), json!(["ok"]), json!(["ok", "ok", "timeout"])],
    ]
}

/// A tool result reduced to what the test asserts.
fn summary(content: &str) -> Value {
    let result: Value = serde_json::from_str(content).unwrap();
    let status = result["status"].as_str().unwrap_or_default();
    if let Some(calls) = result["value"].as_array() {
        // `core_calls`: `[code, message]` per call; a nested failure's
        // message starts with the core tool's own code.
        return calls
            .iter()
            .map(|call| match call[0].as_str() {
                Some("nested_tool_failed") => {
                    let message = call[1].as_str().unwrap();
                    let inner = message.split_once("failed: ").unwrap().1;
                    json!(inner.split_once(':').unwrap().0)
                }
                Some(code) => json!(code),
                None => json!(null),
            })
            .collect();
    }
    if status == "completed" {
        return json!("completed");
    }
    let cause = match result["code"].as_str() {
        Some(code) => code.to_owned(),
        None => {
            let error = result["error"].as_str().unwrap_or_default();
            error
                .split_once(':')
                .map_or(error, |(name, _)| name)
                .to_owned()
        }
    };
    json!(format!("{status}: {cause}"))
}

fn rss_kib(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{key} in {status}"))
}

#[test]
fn one_agent_process_survives_a_run_of_hostile_cells_and_tool_calls() {
    let home = tempfile::tempdir().unwrap();
    let outside = home.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("outside-secret.txt"), "secret").unwrap();
    let workspace = home.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(workspace.join("pipe"))
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/dev/zero", workspace.join("zero")).unwrap();
    std::os::unix::fs::symlink("/etc", workspace.join("etc")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("created-by-link.txt"),
        workspace.join("escape"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, workspace.join("escape-dir")).unwrap();
    std::fs::File::create(workspace.join("huge"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    std::fs::write(workspace.join("notes.txt"), "the answer is 42").unwrap();

    // Rounds of hostile turns, then a plain cell, then the answer.
    let rounds = 3;
    let mut turns = Vec::new();
    for _ in 0..rounds {
        for calls in hostile_turns(outside.to_str().unwrap()) {
            turns.push(Turn {
                tool_calls: calls,
                ..Turn::default()
            });
        }
    }
    turns.insert(1, hostile_arguments_turn());
    turns.push(Turn {
        tool_calls: vec![cell(
            "const r = await tools.read({path: 'notes.txt'}); return r.content ?? r;",
        )],
        ..Turn::default()
    });
    turns.push(Turn {
        text: Some("still here".into()),
        delay: Duration::from_secs(2),
        ..Turn::default()
    });
    let turn_count = turns.len();
    assert!(turn_count <= 16, "within the agent's turn limit");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime
        .block_on(MockModel::start(Script {
            turns,
            ..Script::default()
        }))
        .unwrap();
    // The cell limit leaves the 300 MB flood room to drain on a loaded
    // 2-core machine (it took over 3 s there), or its cell would come back
    // `waiting` instead of answered.
    let config = home.path().join("talon.json5");
    std::fs::write(
        &config,
        json!({
            "models": {"providers": {"mock": {"baseUrl": mock.base_url()}}},
            "agents": {"defaults": {"model": {"primary": "mock/mock-model"}}},
            "tools": {"approvals": "allow", "codeMode": {"enabled": true, "timeoutMs": 8000}},
        })
        .to_string(),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_talon"))
        .args(["agent", "--config", config.to_str().unwrap(), "--workspace"])
        .arg(&workspace)
        .args(["-m", "do your worst"])
        .env("HOME", home.path())
        .env("TALON_STATE_DIR", home.path().join("state"))
        .env_remove("TALON_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // While the agent waits for the last reply, read its memory.
    let stopped = wait::until(
        "the agent to ask for its last reply",
        Duration::from_secs(600),
        || {
            let asked = mock.requests().len();
            if asked >= turn_count {
                Ok(false)
            } else if child.try_wait().unwrap().is_some() {
                Ok(true)
            } else {
                Err(format!("{asked} of {turn_count} requests"))
            }
        },
    );
    if stopped {
        let out = child.wait_with_output().unwrap();
        panic!(
            "the agent stopped serving after {} requests: {}\n{}",
            mock.requests().len(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "still here");

    // Every hostile call got an answer: the last request carries the plain
    // cell's result, so the process served to the end.
    let requests = mock.requests();
    let last = requests.last().unwrap()["messages"].as_array().unwrap();
    let tool_results: Vec<&Value> = last.iter().filter(|m| m["role"] == "tool").collect();
    let summaries: Vec<Value> = tool_results
        .iter()
        .map(|r| summary(r["content"].as_str().unwrap()))
        .collect();
    let mut expected = Vec::new();
    for round in 0..rounds {
        for (turn, outcomes) in expected_outcomes().into_iter().enumerate() {
            expected.extend(outcomes);
            if round == 0 && turn == 0 {
                expected.extend([
                    json!("invalid_input: the arguments are not JSON"),
                    json!("invalid_input: the arguments are not JSON"),
                ]);
            }
        }
    }
    expected.push(json!("completed"));
    assert_eq!(summaries, expected);
    let final_result = tool_results.last().unwrap()["content"].as_str().unwrap();
    assert!(final_result.contains("the answer is 42"), "{final_result}");

    // Nothing was written outside, nothing was left running.
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        1,
        "only the secret is outside"
    );
    let leftover = Command::new("pgrep")
        .args(["-f", &format!("sleep {SLEEP_MARKER}")])
        .output()
        .unwrap();
    assert!(
        leftover.stdout.is_empty(),
        "background processes outlived the agent: {}",
        String::from_utf8_lossy(&leftover.stdout)
    );

    // Memory: the floods (300 MB of shell output, 3 MiB sources, 2 GiB
    // files) never became host memory.
    let rss = rss_kib(&status, "VmRSS:");
    let peak = rss_kib(&status, "VmHWM:");
    eprintln!("agent after {turn_count} turns: VmRSS {rss} KiB, VmHWM {peak} KiB");
    assert!(rss < 320 << 10, "VmRSS {rss} KiB");
    assert!(peak < 384 << 10, "VmHWM {peak} KiB");
}
