//! `talon config check` and `talon config schema`, and the same check at
//! the start of `talon gateway`, `talon exec` and `talon agent`: unknown
//! keys warn with their line and column, errors stop the command (exit 2).
//! `talon config get|set|unset`: one value read, or edited in place and
//! written only when the edited file passes that check.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
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

const COMMENTED: &str = "// mine\n{\n  tools: {\n    codeMode: { enabled: true }, // on\n  },\n  agents: { list: [{ id: 'main' }] },\n}\n";

/// `talon config ARGS` in `home`: exit status, stdout, stderr.
fn config(home: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = finish(spawn_talon(home, &[&["config"], args].concat(), &[]));
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn config_get_set_and_unset_edit_one_value_in_place() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("talon.json5");
    std::fs::write(&file, COMMENTED).unwrap();
    let f = file.to_str().unwrap();
    assert_eq!(
        config(
            home.path(),
            &["set", "tools.toolSearch", "true", "--config", f]
        ),
        (
            Some(0),
            format!("{f}: set tools.toolSearch\n"),
            String::new()
        )
    );
    assert_eq!(
        config(
            home.path(),
            &["set", "agents.list.0.name", "Main agent", "--config", f]
        ),
        (
            Some(0),
            format!("{f}: set agents.list.0.name\n"),
            String::new()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "// mine\n{\n  tools: {\n    codeMode: { enabled: true }, // on\n    toolSearch: true,\n  },\n  agents: { list: [{ id: 'main', name: \"Main agent\" }] },\n}\n"
    );
    for (path, printed) in [
        ("tools.toolSearch", "true\n"),
        ("agents.list[0].name", "\"Main agent\"\n"),
        ("tools.codeMode", "{\n  \"enabled\": true\n}\n"),
    ] {
        assert_eq!(
            config(home.path(), &["get", path, "--config", f]),
            (Some(0), printed.to_owned(), String::new()),
            "{path}"
        );
    }
    for path in ["tools.toolSearch", "agents.list[0].name"] {
        assert_eq!(
            config(home.path(), &["unset", path, "--config", f]).0,
            Some(0)
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), COMMENTED);
    // Not set: exit 1, saying so.
    assert_eq!(
        config(home.path(), &["get", "tools.deny", "--config", f]),
        (
            Some(1),
            String::new(),
            format!("talon config get: {f}: tools.deny is not set\n")
        )
    );
    assert_eq!(
        config(home.path(), &["unset", "tools.deny", "--config", f]),
        (
            Some(1),
            String::new(),
            format!("talon config unset: config file {f}: tools.deny is not set\n")
        )
    );
    assert_eq!(
        config(
            home.path(),
            &["get", "tools.codeMode.enabled.x", "--config", f]
        ),
        (
            Some(1),
            String::new(),
            format!(
                "talon config get: {f}: tools.codeMode.enabled.x cannot be reached: tools.codeMode.enabled is a boolean (true)\n"
            )
        )
    );
}

#[test]
fn config_set_finds_the_file_as_every_command_does_and_creates_it() {
    let home = tempfile::tempdir().unwrap();
    // ~/.talon/talon.json5, created with its directory.
    let default = home.path().join(".talon/talon.json5");
    assert_eq!(
        config(home.path(), &["set", "gateway.limits.maxStreams", "8"]).0,
        Some(0)
    );
    assert_eq!(
        std::fs::read_to_string(&default).unwrap(),
        "{\n  gateway: {\n    limits: {\n      maxStreams: 8\n    }\n  }\n}\n"
    );
    assert_eq!(
        std::fs::metadata(home.path().join(".talon"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    assert_eq!(
        config(home.path(), &["get", "gateway.limits"]),
        (
            Some(0),
            "{\n  \"maxStreams\": 8\n}\n".to_owned(),
            String::new()
        )
    );
    // $TALON_CONFIG.
    let named = home.path().join("named.json5");
    let out = finish(spawn_talon(
        home.path(),
        &["config", "set", "tools.toolSearch", "false"],
        &[("TALON_CONFIG", &named)],
    ));
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (
            Some(0),
            format!("{}: set tools.toolSearch (created)\n", named.display())
        )
    );
    assert_eq!(
        std::fs::read_to_string(&named).unwrap(),
        "{\n  tools: {\n    toolSearch: false\n  }\n}\n"
    );
}

#[test]
fn config_set_refuses_what_config_check_refuses_and_leaves_the_file() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("talon.json5");
    std::fs::write(&file, COMMENTED).unwrap();
    let f = file.to_str().unwrap();
    for (args, finding) in [
        (
            vec!["tools.allow", "read"],
            "error[wrong_type]: tools.allow: expected an array, found a string (\"read\")",
        ),
        (
            vec!["tools.codeMode.timeoutMs", "-5"],
            "error[bad_value]: tools.codeMode.timeoutMs: -5 is out of range: expected a whole number of at least 0",
        ),
        (
            vec!["tools.toolSerch", "true"],
            "warning[unknown_key]: tools.toolSerch: unknown key, ignored; did you mean `toolSearch`?",
        ),
    ] {
        let out = config(
            home.path(),
            &[&["set"], &args[..], &["--config", f]].concat(),
        );
        assert_eq!(
            out,
            (
                Some(2),
                String::new(),
                format!("{f}: {finding}\ntalon config set: refused: {f} is unchanged\n")
            ),
            "{args:?}"
        );
    }
    // A value past the nesting limit, a path through a number, a bad path,
    // a key JavaScript takes as the prototype.
    let deep = format!("{}1{}", "[".repeat(50_000), "]".repeat(50_000));
    for (args, message) in [
        (
            vec!["a", deep.as_str()],
            "the value is not JSON5: line 1 column 129: nested deeper than 128 levels".to_owned(),
        ),
        (
            vec!["tools.codeMode.enabled.x", "1"],
            format!(
                "config file {f}: tools.codeMode.enabled.x cannot be reached: tools.codeMode.enabled is a boolean (true)"
            ),
        ),
        (
            vec!["tools..allow", "[]"],
            "bad path \"tools..allow\": an empty key at character 7 (keys are separated by one `.`)".to_owned(),
        ),
        (
            vec!["__proto__.polluted", "1"],
            format!(
                "config file {f}: __proto__.polluted: the key \"__proto__\" is refused (JavaScript takes it as an object's prototype)"
            ),
        ),
        (
            vec!["a", "{a: "],
            "the value is not JSON5: line 1 column 5: the object opened at line 1 column 1 is not closed: the file ends first".to_owned(),
        ),
    ] {
        let out = config(home.path(), &[&["set"], &args[..], &["--config", f]].concat());
        assert_eq!(
            out,
            (Some(2), String::new(), format!("talon config set: {message}\n")),
            "{message}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), COMMENTED);
    // A file that is not JSON5, a FIFO, /dev/zero: refused at once.
    std::fs::write(&file, "{ tools: ").unwrap();
    let fifo = home.path().join("fifo.json5");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let zero = home.path().join("zero.json5");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (path, message) in [
        (
            &file,
            "line 1 column 10: the object opened at line 1 column 1 is not closed: the file ends first".to_owned(),
        ),
        (&fifo, format!("{}: not a regular file (FIFO)", fifo.display())),
        (
            &zero,
            format!("{}: not a regular file (character device)", zero.display()),
        ),
    ] {
        let out = config(
            home.path(),
            &["set", "a", "1", "--config", path.to_str().unwrap()],
        );
        assert_eq!(
            out,
            (
                Some(2),
                String::new(),
                format!(
                    "talon config set: config file {}: {message}\n",
                    path.display()
                )
            )
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ tools: ");
}
