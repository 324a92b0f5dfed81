//! `edit_file`: the config file edited in place only when the edited file
//! passes the check, written atomically, and left alone otherwise.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};
use talon_config::ConfigError;
use talon_config::edit::{Change, ConfigPath, EditError, edit_file};

fn set(at: &str, value: Value) -> Change {
    Change::Set {
        path: ConfigPath::parse(at).unwrap(),
        value,
    }
}

fn unset(at: &str) -> Change {
    Change::Unset {
        path: ConfigPath::parse(at).unwrap(),
    }
}

/// The directory's entries, sorted (no temporary file may be left).
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Each refused finding as `severity[code]: key: message`.
fn refused(error: ConfigError) -> Vec<String> {
    match error {
        ConfigError::Refused { errors, .. } => errors
            .iter()
            .map(|d| {
                format!(
                    "{}[{}]: {}: {}",
                    d.severity.as_str(),
                    d.code.as_str(),
                    d.key,
                    d.message
                )
            })
            .collect(),
        other => panic!("not refused: {other}"),
    }
}

const TEXT: &str = "// mine\n{\n  tools: {\n    codeMode: { enabled: true }, // on\n  },\n}\n";

#[test]
fn an_edit_that_passes_the_check_is_written_in_place_keeping_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("talon.json5");
    std::fs::write(&file, TEXT).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let edited = edit_file(Some(&file), &set("tools.codeMode.timeoutMs", json!(5000))).unwrap();
    assert!(!edited.created);
    assert_eq!(edited.introduced, []);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "// mine\n{\n  tools: {\n    codeMode: { enabled: true, timeoutMs: 5000 }, // on\n  },\n}\n"
    );
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    edit_file(Some(&file), &unset("tools.codeMode.timeoutMs")).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), TEXT);
    assert_eq!(entries(dir.path()), ["talon.json5"]);
    // OpenClaw's key: written, with the check's note.
    let edited = edit_file(Some(&file), &set("channels", json!({}))).unwrap();
    assert_eq!(
        edited
            .introduced
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["6:3: note[not_used]: channels: OpenClaw's key; Talon does not read it (ignored)"]
    );
    // Unset of what is not there.
    assert!(matches!(
        edit_file(Some(&file), &unset("tools.deny")),
        Err(ConfigError::Edit {
            source: EditError::Absent { .. },
            ..
        })
    ));
}

#[test]
fn set_creates_a_missing_file_private() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("new.json5");
    let edited = edit_file(Some(&file), &set("tools.toolSearch", json!(true))).unwrap();
    assert!(edited.created);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\n  tools: {\n    toolSearch: true\n  }\n}\n"
    );
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777,
        0o600
    );
    let missing = dir.path().join("other.json5");
    assert!(matches!(
        edit_file(Some(&missing), &unset("tools")),
        Err(ConfigError::Edit {
            source: EditError::Absent { .. },
            ..
        })
    ));
    assert!(!missing.exists());
}

#[test]
fn what_the_check_refuses_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("talon.json5");
    std::fs::write(&file, TEXT).unwrap();
    let cases = [
        (
            set("tools.allow", json!("read")),
            "error[wrong_type]: tools.allow: expected an array, found a string (\"read\")",
        ),
        (
            set("tools.codeMode.timeoutMs", json!(-1)),
            "error[bad_value]: tools.codeMode.timeoutMs: -1 is out of range: expected a whole number of at least 0",
        ),
        (
            set("tools.toolSerch", json!(true)),
            "warning[unknown_key]: tools.toolSerch: unknown key, ignored; did you mean `toolSearch`?",
        ),
        (
            set("__proto__x", json!(1)),
            "warning[unknown_key]: __proto__x: unknown key, ignored",
        ),
        (
            set("agents.defaults.model", json!("nowhere/model")),
            "error[unknown_reference]: agents.defaults.model: provider \"nowhere\" is not in models.providers; models.providers defines none",
        ),
    ];
    for (change, expected) in cases {
        let error = edit_file(Some(&file), &change).unwrap_err();
        assert_eq!(refused(error), [expected], "{change:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), TEXT);
    }
    assert_eq!(entries(dir.path()), ["talon.json5"]);
    // A file with an unknown key already: other edits go through; with an
    // error already, none does until it is fixed.
    std::fs::write(&file, "{ tols: {}, tools: { allow: 'read' } }").unwrap();
    assert_eq!(
        refused(edit_file(Some(&file), &set("tools.toolSearch", json!(true))).unwrap_err()),
        ["error[wrong_type]: tools.allow: expected an array, found a string (\"read\")"]
    );
    edit_file(Some(&file), &set("tools.allow", json!(["read"]))).unwrap();
    edit_file(Some(&file), &set("tools.toolSearch", json!(true))).unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{ tols: {}, tools: { allow: [\"read\"], toolSearch: true } }"
    );
}

#[test]
fn a_symlink_stays_one_and_special_or_broken_files_are_refused_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.json5");
    let link = dir.path().join("link.json5");
    std::fs::write(&real, "{}").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    edit_file(Some(&link), &set("tools.toolSearch", json!(false))).unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(&real).unwrap(),
        "{\n  tools: {\n    toolSearch: false\n  }\n}"
    );
    // A FIFO and /dev/zero: refused at once, without reading.
    let fifo = dir.path().join("fifo.json5");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let zero = dir.path().join("zero.json5");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (file, kind) in [(&fifo, "FIFO"), (&zero, "character device")] {
        let error = edit_file(Some(file), &set("a", json!(1))).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "config file {f}: {f}: not a regular file ({kind})",
                f = file.display()
            )
        );
    }
    // A symlink to nothing is not replaced by a file.
    let dangling = dir.path().join("dangling.json5");
    std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).unwrap();
    assert!(edit_file(Some(&dangling), &set("a", json!(1))).is_err());
    assert!(!dir.path().join("nothing").exists());
    // Not JSON5: refused, unchanged.
    let broken = dir.path().join("broken.json5");
    std::fs::write(&broken, "{ tools: ").unwrap();
    assert!(matches!(
        edit_file(Some(&broken), &set("a", json!(1))),
        Err(ConfigError::Syntax { .. })
    ));
    assert_eq!(std::fs::read_to_string(&broken).unwrap(), "{ tools: ");
    assert_eq!(
        entries(dir.path()),
        [
            "broken.json5",
            "dangling.json5",
            "fifo.json5",
            "link.json5",
            "real.json5",
            "zero.json5"
        ]
    );
}

#[test]
fn an_edit_past_the_size_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("talon.json5");
    let big = "x".repeat(talon_config::MAX_CONFIG_BYTES as usize);
    std::fs::write(&file, "{}").unwrap();
    let error = edit_file(Some(&file), &set("models.providers.p.baseUrl", json!(big))).unwrap_err();
    assert!(
        matches!(
            error,
            ConfigError::Edit {
                source: EditError::TooLarge { .. },
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");
}
