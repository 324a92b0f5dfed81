//! `talon config check` and `talon config schema`, and the same check at
//! the start of `talon gateway`, `talon exec` and `talon agent`: unknown
//! keys warn with their line and column, errors stop the command (exit 2).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use super::{finish, spawn_talon};

fn every_key() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../talon-config/tests/fixtures/every-key.json5")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn config_check_reports_each_finding_with_its_place_and_exits_by_severity() {
    let home = tempfile::tempdir().unwrap();
    let clean = finish(spawn_talon(
        home.path(),
        &["config", "check", every_key().to_str().unwrap()],
        &[],
    ));
    assert_eq!(
        (clean.status.code(), text(&clean.stdout)),
        (
            Some(0),
            format!(
                "{f}: note[sandbox]: agents.defaults.sandbox: commands run sandboxed (bubblewrap, network off)\n\
                 {f}: 0 errors, 0 warnings, 1 note\n",
                f = every_key().display()
            )
        )
    );
    let file = home.path().join("talon.json5");
    std::fs::write(
        &file,
        "{\n  agents: { defualts: {} },\n  channels: {},\n  tools: { allow: 'read' },\n}\n",
    )
    .unwrap();
    let bad = finish(spawn_talon(
        home.path(),
        &["config", "check", file.to_str().unwrap()],
        &[],
    ));
    let f = file.display();
    assert_eq!(
        (bad.status.code(), text(&bad.stdout)),
        (
            Some(2),
            format!(
                "{f}:2:13: warning[unknown_key]: agents.defualts: unknown key, ignored; did you mean `defaults`?\n\
                 {f}:3:3: note[not_used]: channels: OpenClaw's key; Talon does not read it (ignored)\n\
                 {f}:4:12: error[wrong_type]: tools.allow: expected an array, found a string (\"read\")\n\
                 {f}: 1 error, 1 warning, 1 note\n"
            )
        )
    );
    // A syntax error: the place of the brace left open.
    std::fs::write(&file, "{\n  agents: {\n    list: [],\n\n").unwrap();
    let broken = finish(spawn_talon(
        home.path(),
        &["config", "check", file.to_str().unwrap()],
        &[],
    ));
    assert_eq!(
        (broken.status.code(), text(&broken.stderr)),
        (
            Some(2),
            format!(
                "talon config check: config file {f}: line 5 column 1: the object opened at line 2 column 11 is not closed: the file ends first\n"
            )
        )
    );
    // The schema editors use, as committed.
    let schema = finish(spawn_talon(home.path(), &["config", "schema"], &[]));
    let printed: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../talon-config/schema/talon.config.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(printed, committed);
}

#[test]
fn every_command_that_reads_a_config_checks_it_first() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("talon.json5");
    std::fs::write(&file, "{ agents: { defaults: { model: 42 } } }").unwrap();
    let config = file.to_str().unwrap();
    let expected = format!(
        "config file {}: 1:25: error[wrong_type]: agents.defaults.model: expected a string or an object, found a number (42)\n",
        file.display()
    );
    for (args, prefix) in [
        (
            vec!["gateway", "--listen", "127.0.0.1:0", "--config", config],
            "talon: ",
        ),
        (
            vec!["exec", "--code", "return 1", "--config", config],
            "talon exec: ",
        ),
        (
            vec!["agent", "--message", "hi", "--config", config],
            "talon agent: ",
        ),
    ] {
        let out = finish(spawn_talon(home.path(), &args, &[]));
        assert_eq!(
            (out.status.code(), text(&out.stderr)),
            (Some(2), format!("{prefix}{expected}")),
            "{args:?}"
        );
    }
}

#[test]
fn a_config_with_every_key_starts_the_gateway_and_runs_a_cell() {
    let home = tempfile::tempdir().unwrap();
    let config = every_key();
    let config = config.to_str().unwrap();
    let exec = finish(spawn_talon(
        home.path(),
        &["exec", "--code", "return 1 + 2", "--config", config],
        &[],
    ));
    assert_eq!(exec.status.code(), Some(0), "{}", text(&exec.stderr));
    insta::assert_json_snapshot!(talon_testing::redact::redacted(
        &serde_json::from_slice::<serde_json::Value>(&exec.stdout).unwrap()
    ));
    // It starts: `start_gateway` returns once it listens.
    let _gateway = super::gateway::start_gateway(home.path(), &["--config", config]);
}

#[test]
fn a_typo_warns_at_start_with_its_place_and_the_gateway_still_serves() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("talon.json5");
    std::fs::write(&file, "{\n  agents: { defualts: {} },\n}\n").unwrap();
    let mut child = spawn_talon(
        home.path(),
        &[
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--config",
            file.to_str().unwrap(),
        ],
        &[],
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while !line.starts_with("talon gateway: listening on http://") {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the gateway exited: {seen}"
        );
        seen.push_str(&line);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let warning = format!(
        "config {}:2:13: warning[unknown_key]: agents.defualts: unknown key, ignored; did you mean `defaults`?",
        file.display()
    );
    assert!(seen.contains(&warning), "{seen}");
}

#[test]
fn an_unknown_agent_is_refused_as_the_gateway_refuses_it() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("talon.json5");
    std::fs::write(&file, "{ agents: { list: [{ id: 'writer' }] } }").unwrap();
    let out = finish(spawn_talon(
        home.path(),
        &[
            "agent",
            "--agent",
            "zzz",
            "--message",
            "hi",
            "--config",
            file.to_str().unwrap(),
        ],
        &[],
    ));
    assert_eq!(
        (out.status.code(), text(&out.stderr)),
        (
            Some(2),
            format!(
                "talon agent: agent \"zzz\" not found: {} declares main, writer (agents.list)\n",
                file.display()
            )
        )
    );
}
