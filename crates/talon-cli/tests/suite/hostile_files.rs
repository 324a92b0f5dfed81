//! Files from configurable places (configs, mock scripts, cell files,
//! catalogs, query lists) that are special files, endless, oversized or
//! nested past any parser's stack: each is a usage error (exit 2) with a
//! clear message, promptly, and never a hang or an abort.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{finish, spawn_talon};

fn talon(home: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    finish(spawn_talon(home, args, env))
}

/// A directory of hostile files: `fifo`, `zero` (a link to `/dev/zero`),
/// `big` (sparse, 100 MiB), `deep` (JSON nested 20,000 deep), `deep5`
/// (JSON5 nested 20,000 deep) and `dir`.
struct Hostile {
    dir: tempfile::TempDir,
}

impl Hostile {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        let fifo = path.join("fifo");
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        std::os::unix::fs::symlink("/dev/zero", path.join("zero")).unwrap();
        std::fs::File::create(path.join("big"))
            .unwrap()
            .set_len(100 << 20)
            .unwrap();
        std::fs::write(path.join("deep"), "[".repeat(20_000) + &"]".repeat(20_000)).unwrap();
        std::fs::write(
            path.join("deep5"),
            "{a: ".repeat(20_000) + "1" + &"}".repeat(20_000),
        )
        .unwrap();
        std::fs::create_dir(path.join("dir")).unwrap();
        std::fs::create_dir(path.join("home")).unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn home(&self) -> PathBuf {
        self.path("home")
    }
}

fn assert_usage_error(out: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(expected),
        "expected {expected:?} in {stderr}"
    );
}

#[test]
fn hostile_config_files_are_refused() {
    let files = Hostile::new();
    let home = files.home();
    let cases = [
        ("fifo", "not a regular file (FIFO)"),
        ("zero", "not a regular file (character device)"),
        ("dir", "not a regular file (directory)"),
        ("big", "larger than 16777216 bytes"),
        ("deep", "line 1 column 129: nested deeper than 128 levels"),
        ("deep5", "line 1 column 513: nested deeper than 128 levels"),
    ];
    for (name, expected) in cases {
        let config = files.path(name);
        let config = config.to_str().unwrap();
        let out = talon(
            &home,
            &["exec", "--config", config, "--code", "return 1"],
            &[],
        );
        assert_usage_error(&out, expected);
        // The same file found through $TALON_CONFIG, and by `talon agent`.
        let out = talon(
            &home,
            &["exec", "--code", "return 1"],
            &[("TALON_CONFIG", &files.path(name))],
        );
        assert_usage_error(&out, expected);
        let out = talon(&home, &["agent", "--config", config, "-m", "hi"], &[]);
        assert_usage_error(&out, expected);
    }
}

#[test]
fn hostile_mock_scripts_are_refused() {
    let files = Hostile::new();
    let home = files.home();
    let cases = [
        ("fifo", "not a regular file (FIFO)"),
        ("zero", "not a regular file (character device)"),
        ("big", "larger than 16777216 bytes"),
        ("deep", "nested deeper than 128 levels"),
        ("deep5", "nested deeper than 128 levels"),
    ];
    for (name, expected) in cases {
        let script = files.path(name);
        let out = talon(
            &home,
            &[
                "agent",
                "--mock-script",
                script.to_str().unwrap(),
                "-m",
                "hi",
            ],
            &[],
        );
        assert_usage_error(&out, expected);
    }
}

#[test]
fn hostile_cell_files_are_refused() {
    let files = Hostile::new();
    let home = files.home();
    for (name, expected) in [
        ("fifo", "not a regular file (FIFO)"),
        ("zero", "not a regular file (character device)"),
        ("dir", "not a regular file (directory)"),
    ] {
        let file = files.path(name);
        let out = talon(&home, &["exec", "--file", file.to_str().unwrap()], &[]);
        assert_usage_error(&out, expected);
    }
}

#[test]
fn hostile_catalogs_and_query_lists_are_refused() {
    let files = Hostile::new();
    let home = files.home();
    let good = files.path("catalog.json");
    std::fs::write(
        &good,
        r#"[{"name": "read", "description": "Read a file."}]"#,
    )
    .unwrap();
    // A tool whose schema nests 20,000 deep: the JSON parser's own limit.
    std::fs::write(
        files.path("deep-catalog"),
        format!(
            r#"[{{"name": "x", "description": "d", "parameters": {}1{}}}]"#,
            r#"{"a": "#.repeat(20_000),
            "}".repeat(20_000)
        ),
    )
    .unwrap();
    for (name, expected) in [
        ("fifo", "not a regular file (FIFO)"),
        ("zero", "not a regular file (character device)"),
        ("deep-catalog", "recursion limit exceeded"),
    ] {
        let catalog = files.path(name);
        let out = talon(
            &home,
            &[
                "tools",
                "search",
                "--catalog",
                catalog.to_str().unwrap(),
                "x",
            ],
            &[],
        );
        assert_usage_error(&out, expected);
    }
    for (name, expected) in [
        ("fifo", "not a regular file (FIFO)"),
        ("zero", "not a regular file (character device)"),
    ] {
        let queries = files.path(name);
        let out = talon(
            &home,
            &[
                "tools",
                "search",
                "--catalog",
                good.to_str().unwrap(),
                "--queries",
                queries.to_str().unwrap(),
            ],
            &[],
        );
        assert_usage_error(&out, expected);
    }
}
