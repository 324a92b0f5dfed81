//! `talon agent --gateway URL`: the same turn as the in-process `talon
//! agent`, run on a real `talon gateway` through the SDK, with the same
//! display; the token from `--token`, `TALON_TOKEN` or the state
//! directory; an approval asked where there is no terminal is refused
//! through `approvals.respond`.

use std::path::Path;

use super::gateway::start_gateway;
use super::{finish, spawn_talon};

const SCRIPT: &str = r#"{"replay": "perRun", "turns": [
     {"toolCalls": [{"name": "exec", "arguments": {"code": "const r = await tools.read({path: 'notes.txt'}); return r.content;"}}],
      "usage": {"prompt": 120, "completion": 9}},
     {"text": "The notes say: the answer is 42.", "usage": {"prompt": 180, "completion": 11}}]}"#;

/// A home with a workspace holding the notes, a config and the script.
fn home_with(script: &str) -> (tempfile::TempDir, Vec<String>) {
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "the answer is 42").unwrap();
    std::fs::write(home.path().join("script.json"), script).unwrap();
    let config = home.path().join("talon.json5");
    std::fs::write(
        &config,
        format!(
            r#"{{ tools: {{ codeMode: {{ enabled: true }} }}, agents: {{ defaults: {{ workspace: "{}" }} }} }}"#,
            workspace.display()
        ),
    )
    .unwrap();
    let args = vec![
        "--config".to_owned(),
        config.to_str().unwrap().to_owned(),
        "--mock-script".to_owned(),
        home.path().join("script.json").to_str().unwrap().to_owned(),
    ];
    (home, args)
}

/// The display without times (the elapsed seconds, each call's
/// milliseconds) and without log lines (the in-process run logs its own
/// warnings; on a gateway they are the gateway's).
fn display(out: &std::process::Output) -> (String, Vec<String>) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with('\u{1b}') && !l.contains(" WARN "))
        .map(|l| match l.rsplit_once(" · ") {
            Some((head, tail)) if tail.ends_with(" s") => head.to_owned(),
            _ => match l.rsplit_once(" (") {
                Some((head, tail)) if tail.ends_with(" ms)") => format!("{head} (_ ms)"),
                _ => l.to_owned(),
            },
        })
        .collect();
    (stdout, stderr)
}

fn agent(home: &Path, extra: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    let mut args = vec!["agent", "-m", "What do my notes say?"];
    args.extend_from_slice(extra);
    finish(spawn_talon(home, &args, env))
}

#[test]
fn a_turn_on_the_gateway_looks_like_a_turn_in_process() {
    let (home, args) = home_with(SCRIPT);
    let workspace = home.path().join("ws");
    let mut local_args: Vec<&str> = args.iter().map(String::as_str).collect();
    local_args.extend(["--workspace", workspace.to_str().unwrap()]);
    let local = agent(home.path(), &local_args, &[]);
    assert_eq!(local.status.code(), Some(0));

    let gateway_args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_gateway, addr, _) = start_gateway(home.path(), &gateway_args);
    let url = format!("http://{addr}");
    // The token from the state directory.
    let remote = agent(home.path(), &["--gateway", &url], &[]);
    let (stdout, stderr) = display(&remote);
    assert_eq!(remote.status.code(), Some(0), "{stdout}\n{stderr:?}");
    assert_eq!((stdout, stderr), display(&local));
    assert!(
        display(&remote).1.contains(
            &"[run.completed] turns 2 · tool calls 1 · tokens 300 in / 20 out".to_owned()
        ),
        "{:?}",
        display(&remote).1
    );
}

#[test]
fn the_token_comes_from_the_flag_or_the_environment_and_a_bad_one_fails() {
    let (home, args) = home_with(SCRIPT);
    let gateway_args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_gateway, addr, _) = start_gateway(home.path(), &gateway_args);
    let url = format!("http://{addr}");
    let admin = std::fs::read_to_string(home.path().join("state/admin.token")).unwrap();
    let other_home = tempfile::tempdir().unwrap();
    // No state directory token here: the flag. An address without a
    // scheme is http://.
    let flagged = agent(
        other_home.path(),
        &["--gateway", &addr, "--token", admin.trim()],
        &[],
    );
    assert_eq!(flagged.status.code(), Some(0), "{flagged:?}");
    // The environment.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_talon"));
    let out = child
        .args(["agent", "-m", "hi", "--gateway", &url])
        .env("HOME", other_home.path())
        .env("TALON_STATE_DIR", other_home.path().join("state"))
        .env("TALON_TOKEN", admin.trim())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let bad = agent(
        other_home.path(),
        &["--gateway", &url, "--token", "talon_nope"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unauthenticated"), "{stderr}");
    let none = agent(other_home.path(), &["--gateway", &url], &[]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no token"));
    // Nothing listens there: say so, and what to do.
    let nowhere = agent(
        other_home.path(),
        &["--gateway", "127.0.0.1:9", "--token", "x"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&nowhere.stderr);
    assert_eq!(nowhere.status.code(), Some(2));
    assert!(
        stderr.starts_with("talon agent: could not connect to the gateway at http://127.0.0.1:9: ")
            && stderr
                .trim_end()
                .ends_with("(is the gateway running there? `talon gateway` starts one)"),
        "{stderr}"
    );
    let both = agent(
        other_home.path(),
        &["--gateway", &url, "--workspace", "/tmp"],
        &[],
    );
    assert_eq!(
        both.status.code(),
        Some(2),
        "--workspace is the gateway's business"
    );
}

#[test]
fn an_approval_without_a_terminal_is_refused_through_the_gateway() {
    let (home, args) = home_with(
        r#"{"replay": "perRun", "turns": [
            {"toolCalls": [{"name": "write", "arguments": {"path": "note.txt", "content": "x"}}]},
            {"text": "I could not write it."}]}"#,
    );
    // Without Code Mode the model calls `write` directly.
    std::fs::write(
        home.path().join("talon.json5"),
        format!(
            r#"{{ agents: {{ defaults: {{ workspace: "{}" }} }} }}"#,
            home.path().join("ws").display()
        ),
    )
    .unwrap();
    let gateway_args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_gateway, addr, _) = start_gateway(home.path(), &gateway_args);
    let out = agent(home.path(), &["--gateway", &format!("http://{addr}")], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("approval denied"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "I could not write it."
    );
    assert!(!home.path().join("ws/note.txt").exists());
}

#[test]
fn a_provider_that_is_down_fails_the_run_unavailable_naming_its_url() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("talon.json5");
    std::fs::write(
        &config,
        r#"{ models: { providers: { down: { baseUrl: "http://127.0.0.1:9/v1", maxRetries: 0, models: [{ id: "m" }] } } },
             agents: { defaults: { model: "down/m" } } }"#,
    )
    .unwrap();
    let (_gateway, addr, _) = start_gateway(home.path(), &["--config", config.to_str().unwrap()]);
    let out = agent(home.path(), &["--gateway", &addr], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: provider \"down\" at http://127.0.0.1:9/v1 cannot be reached: ")
            && stderr.contains("(is it running? check models.providers.down.baseUrl)"),
        "{stderr}"
    );
}

#[test]
fn the_same_approval_rules_decide_in_process_and_on_the_gateway() {
    // `write` needs approval and a rule allows it; `exec` needs approval
    // and a rule denies it; `read` needs none, but a rule asks, and with
    // no terminal to ask on it is refused, in process and through the
    // gateway alike.
    let (home, args) = home_with(
        r#"{"replay": "perRun", "turns": [
            {"toolCalls": [{"name": "write", "arguments": {"path": "note.txt", "content": "x"}}]},
            {"toolCalls": [{"name": "exec", "arguments": {"command": "echo hi"}}]},
            {"toolCalls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
            {"text": "Done."}]}"#,
    );
    let workspace = home.path().join("ws");
    std::fs::write(
        home.path().join("talon.json5"),
        format!(
            r#"{{ agents: {{ defaults: {{ workspace: "{}" }} }},
                 tools: {{ approvals: {{ mode: "ask", rules: [
                     {{ tool: "WRITE", action: "allow" }},
                     {{ tool: "openclaw:core:ex?c", action: "deny" }},
                     {{ tool: "group:fs", risk: "low", action: "ask" }} ] }} }} }}"#,
            workspace.display()
        ),
    )
    .unwrap();
    let mut local_args: Vec<&str> = args.iter().map(String::as_str).collect();
    local_args.extend(["--workspace", workspace.to_str().unwrap()]);
    let local = agent(home.path(), &local_args, &[]);
    assert_eq!(local.status.code(), Some(0), "{local:?}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("note.txt")).unwrap(),
        "x"
    );
    std::fs::remove_file(workspace.join("note.txt")).unwrap();

    let gateway_args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_gateway, addr, _) = start_gateway(home.path(), &gateway_args);
    let remote = agent(home.path(), &["--gateway", &format!("http://{addr}")], &[]);
    assert_eq!(remote.status.code(), Some(0), "{remote:?}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("note.txt")).unwrap(),
        "x"
    );
    let (local, remote) = (display(&local), display(&remote));
    assert_eq!(
        local,
        (
            "Done.\n".to_owned(),
            [
                r#"→ write {"content":"x","path":"note.txt"}"#,
                "  ✓ write (_ ms)",
                r#"→ exec {"command":"echo hi"}"#,
                r#"  ✗ exec: {"error":"exec is denied by the approval policy (tools.approvals)","status":"blocked"}"#,
                r#"→ read {"path":"notes.txt"}"#,
                "  approval denied",
                r#"  ✗ read: {"error":"the call of read was denied: no terminal to ask on (stdin is not a terminal)","status":"blocked"}"#,
                "[run.completed] turns 4 · tool calls 3 · tokens 40 in / 20 out",
            ]
            .map(String::from)
            .to_vec()
        )
    );
    assert_eq!(remote, local);
}
