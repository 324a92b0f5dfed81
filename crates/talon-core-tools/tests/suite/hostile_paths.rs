//! Hostile paths and files against the core file tools: symlinks out
//! (dangling, chained, through directories), `..` and absolute paths,
//! FIFOs and devices, huge sparse files, binary files, long lines.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_core_tools::{MAX_GREP_PATTERN_BYTES, MAX_READ_BYTES};
use talon_tools::ToolErrorCode;

use super::core_tools::{call, failed, runner};

/// Runs one tool call, failing the test if it does not end within 10 s.
async fn tool(dir: &Path, name: &str, args: Value) -> Value {
    let (runner, ctx) = runner(dir);
    tokio::time::timeout(Duration::from_secs(10), call(&runner, &ctx, name, args))
        .await
        .unwrap_or_else(|_| panic!("{name} hung"))
}

#[tokio::test]
async fn writes_through_dangling_symlinks_to_outside_create_nothing() {
    let outside = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let target = outside.path().join("created.txt");
    symlink(&target, ws.path().join("abs")).unwrap();
    symlink(
        "../../../../../../../../tmp/talon-never/x",
        ws.path().join("rel"),
    )
    .unwrap();
    std::fs::create_dir(ws.path().join("d")).unwrap();
    symlink(
        outside.path().join("sub/deeper.txt"),
        ws.path().join("d/nested"),
    )
    .unwrap();
    for (path, shown) in [
        ("abs", target.display().to_string()),
        (
            "d/nested",
            outside.path().join("sub/deeper.txt").display().to_string(),
        ),
    ] {
        let (code, message) = (
            ToolErrorCode::OutsideWorkspace,
            format!("{path:?} goes through a symlink to {shown} outside the workspace"),
        );
        let write = tool(
            ws.path(),
            "write",
            json!({"path": path, "content": "pwned"}),
        )
        .await;
        assert_eq!(write, failed(code, &message));
        let edit = tool(
            ws.path(),
            "edit",
            json!({"path": path, "old": "a", "new": "b"}),
        )
        .await;
        assert_eq!(edit, failed(code, &message));
    }
    let rel = tool(
        ws.path(),
        "write",
        json!({"path": "rel", "content": "pwned"}),
    )
    .await;
    assert_eq!(
        rel,
        failed(
            ToolErrorCode::OutsideWorkspace,
            "\"rel\" is outside the workspace"
        )
    );
    assert!(!target.exists());
    assert!(!outside.path().join("sub").exists());
    assert!(!Path::new("/tmp/talon-never").exists());
}

#[tokio::test]
async fn a_dangling_symlink_inside_creates_its_target_inside() {
    let ws = tempfile::tempdir().unwrap();
    symlink("notes/new.txt", ws.path().join("link")).unwrap();
    let root = ws.path().canonicalize().unwrap();
    symlink(root.join("abs.txt"), ws.path().join("abslink")).unwrap();
    assert_eq!(
        tool(ws.path(), "write", json!({"path": "link", "content": "hi"})).await,
        json!({"path": "notes/new.txt", "bytes": 2})
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes/new.txt")).unwrap(),
        "hi"
    );
    assert_eq!(
        tool(
            ws.path(),
            "write",
            json!({"path": "abslink", "content": "abs"})
        )
        .await,
        json!({"path": "abs.txt", "bytes": 3})
    );
    // The link itself is untouched; reading through it works.
    assert!(
        std::fs::symlink_metadata(ws.path().join("link"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        tool(ws.path(), "read", json!({"path": "link"})).await,
        json!({"path": "notes/new.txt", "content": "hi", "bytes": 2, "truncated": false})
    );
}

#[tokio::test]
async fn symlinks_to_system_files_are_refused_for_read_and_grep() {
    let ws = tempfile::tempdir().unwrap();
    symlink("/etc/passwd", ws.path().join("passwd")).unwrap();
    symlink("/dev/zero", ws.path().join("zero")).unwrap();
    std::fs::write(ws.path().join("ok.txt"), "root is fine\n").unwrap();
    for (path, target) in [("passwd", "/etc/passwd"), ("zero", "/dev/zero")] {
        let (code, message) = (
            ToolErrorCode::OutsideWorkspace,
            format!("{path:?} goes through a symlink to {target} outside the workspace"),
        );
        for (name, args) in [
            ("read", json!({"path": path})),
            ("grep", json!({"pattern": "root", "path": path})),
            ("list", json!({"path": path})),
            ("edit", json!({"path": path, "old": "root", "new": "x"})),
        ] {
            assert_eq!(
                tool(ws.path(), name, args).await,
                failed(code, &message),
                "{name} {path}"
            );
        }
    }
    // Walks do not follow symlinks at all.
    assert_eq!(
        tool(ws.path(), "grep", json!({"pattern": "root"})).await,
        json!({"matches": [{"path": "ok.txt", "line": 1, "text": "root is fine"}], "truncated": false})
    );
    assert_eq!(
        tool(ws.path(), "list", json!({})).await,
        json!({"paths": ["ok.txt"], "truncated": false})
    );
}

#[tokio::test]
async fn a_symlinked_directory_leading_outside_is_refused_by_every_tool() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret\n").unwrap();
    let ws = tempfile::tempdir().unwrap();
    symlink(outside.path(), ws.path().join("out")).unwrap();
    std::fs::create_dir(ws.path().join("in")).unwrap();
    symlink("../out", ws.path().join("in/again")).unwrap();
    let shown = outside.path().display();
    for path in [
        "out/secret.txt",
        "out/new.txt",
        "in/again/secret.txt",
        "out",
        "out/",
    ] {
        for (name, args) in [
            ("read", json!({"path": path})),
            ("write", json!({"path": path, "content": "pwned"})),
            ("edit", json!({"path": path, "old": "top", "new": "pwned"})),
            ("list", json!({"path": path})),
            ("grep", json!({"pattern": "secret", "path": path})),
        ] {
            let result = tool(ws.path(), name, args).await;
            assert_eq!(
                result,
                failed(
                    ToolErrorCode::OutsideWorkspace,
                    &format!("{path:?} goes through a symlink to {shown} outside the workspace")
                ),
                "{name} {path}"
            );
        }
    }
    assert_eq!(
        tool(ws.path(), "grep", json!({"pattern": "secret"})).await,
        json!({"matches": [], "truncated": false})
    );
    assert_eq!(
        tool(ws.path(), "list", json!({"glob": "**"})).await,
        json!({"paths": [], "truncated": false})
    );
    let mut names: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["secret.txt"]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "top secret\n"
    );
}

#[tokio::test]
async fn dot_dot_and_absolute_paths_are_refused_unless_inside() {
    let outside = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("a")).unwrap();
    std::fs::write(root.join("a/f.txt"), "inside").unwrap();
    let elsewhere = outside.path().join("x.txt");
    for path in [
        "..",
        "../x.txt",
        "a/../../x.txt",
        "a/./../a/../..",
        "/etc/passwd",
        "/",
        elsewhere.to_str().unwrap(),
    ] {
        let (code, message) = (
            ToolErrorCode::OutsideWorkspace,
            format!("{path:?} is outside the workspace"),
        );
        for (name, args) in [
            ("read", json!({"path": path})),
            ("write", json!({"path": path, "content": "pwned"})),
            ("list", json!({"path": path})),
        ] {
            assert_eq!(
                tool(ws.path(), name, args).await,
                failed(code, &message),
                "{name} {path}"
            );
        }
    }
    assert!(!elsewhere.exists());
    // Inside, either spelling works.
    let absolute = root.join("a/f.txt");
    for path in [absolute.to_str().unwrap(), "a/../a/./f.txt"] {
        assert_eq!(
            tool(ws.path(), "read", json!({"path": path})).await,
            json!({"path": "a/f.txt", "content": "inside", "bytes": 6, "truncated": false})
        );
    }
}

#[tokio::test]
async fn symlink_chains_are_followed_inside_and_refused_when_they_leave_or_loop() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("s.txt"), "secret").unwrap();
    let ws = tempfile::tempdir().unwrap();
    let p = ws.path();
    std::fs::create_dir(p.join("real")).unwrap();
    std::fs::write(p.join("real/data.txt"), "chained").unwrap();
    symlink("c", p.join("b")).unwrap();
    symlink("b", p.join("a")).unwrap();
    symlink("real/data.txt", p.join("c")).unwrap();
    symlink("real", p.join("dirlink")).unwrap();
    assert_eq!(
        tool(p, "read", json!({"path": "a"})).await,
        json!({"path": "real/data.txt", "content": "chained", "bytes": 7, "truncated": false})
    );
    assert_eq!(
        tool(p, "list", json!({"path": "dirlink"})).await,
        json!({"paths": ["real/data.txt"], "truncated": false})
    );
    // A chain whose last hop leaves.
    symlink(outside.path(), p.join("z")).unwrap();
    symlink("z/s.txt", p.join("y")).unwrap();
    symlink("y", p.join("x")).unwrap();
    assert_eq!(
        tool(p, "read", json!({"path": "x"})).await,
        failed(
            ToolErrorCode::OutsideWorkspace,
            &format!(
                "\"x\" goes through a symlink to {} outside the workspace",
                outside.path().display()
            )
        )
    );
    // A relative chain that climbs out one `..` at a time.
    std::fs::create_dir(p.join("deep")).unwrap();
    symlink("../..", p.join("deep/up")).unwrap();
    assert_eq!(
        tool(
            p,
            "write",
            json!({"path": "deep/up/escaped.txt", "content": "x"})
        )
        .await,
        failed(
            ToolErrorCode::OutsideWorkspace,
            "\"deep/up/escaped.txt\" is outside the workspace"
        )
    );
    symlink("loop2", p.join("loop1")).unwrap();
    symlink("loop1", p.join("loop2")).unwrap();
    for name in ["read", "write"] {
        assert_eq!(
            tool(p, name, json!({"path": "loop1", "content": ""})).await,
            failed(ToolErrorCode::TooManyLinks, "\"loop1\": too many symlinks")
        );
    }
}

#[tokio::test]
async fn fifos_fail_promptly_and_walks_skip_them() {
    let ws = tempfile::tempdir().unwrap();
    nix::unistd::mkfifo(
        &ws.path().join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    symlink("pipe", ws.path().join("pipelink")).unwrap();
    std::fs::write(ws.path().join("a.txt"), "needle\n").unwrap();
    for path in ["pipe", "pipelink"] {
        let (code, message) = (
            ToolErrorCode::NotRegularFile,
            format!("{path:?} is a FIFO, not a regular file"),
        );
        for (name, args) in [
            ("read", json!({"path": path})),
            ("write", json!({"path": path, "content": "x"})),
            ("edit", json!({"path": path, "old": "a", "new": "b"})),
            ("grep", json!({"pattern": "needle", "path": path})),
            ("list", json!({"path": path})),
        ] {
            assert_eq!(
                tool(ws.path(), name, args).await,
                failed(code, &message),
                "{name} {path}"
            );
        }
    }
    assert_eq!(
        tool(ws.path(), "grep", json!({"pattern": "needle"})).await,
        json!({"matches": [{"path": "a.txt", "line": 1, "text": "needle"}], "truncated": false})
    );
    assert_eq!(
        tool(ws.path(), "list", json!({})).await,
        json!({"paths": ["a.txt"], "truncated": false})
    );
    // Directories are not files either.
    assert_eq!(
        tool(ws.path(), "read", json!({"path": "."})).await,
        failed(
            ToolErrorCode::IsADirectory,
            "\".\" is a directory, not a regular file"
        )
    );
}

#[tokio::test]
async fn a_2_gib_sparse_file_is_read_in_a_bounded_window_and_skipped_by_grep() {
    let ws = tempfile::tempdir().unwrap();
    let size: u64 = 2 << 30;
    let file = std::fs::File::create(ws.path().join("huge.bin")).unwrap();
    file.set_len(size).unwrap();
    let started = Instant::now();
    let read = tool(ws.path(), "read", json!({"path": "huge.bin"})).await;
    // One window of the file's zeros.
    assert!(
        read == json!({"path": "huge.bin", "content": "\0".repeat(MAX_READ_BYTES), "bytes": size,
                       "truncated": true, "nextOffset": MAX_READ_BYTES}),
        "{}",
        // Not the whole window's zeros: a diff would print them all.
        talon_testing::redact::Redactor::new()
            .with("\0".repeat(64), "<64 zeros>")
            .value(&read)
    );
    assert_eq!(
        tool(
            ws.path(),
            "read",
            json!({"path": "huge.bin", "offset": size - 3})
        )
        .await,
        json!({"path": "huge.bin", "content": "\0\0\0", "bytes": size, "truncated": false,
               "offset": size - 3})
    );
    assert_eq!(
        tool(ws.path(), "grep", json!({"pattern": "x"})).await,
        json!({"matches": [], "truncated": false})
    );
    assert_eq!(
        tool(
            ws.path(),
            "edit",
            json!({"path": "huge.bin", "old": "a", "new": "b"})
        )
        .await,
        failed(
            ToolErrorCode::TooLarge,
            "huge.bin: the file is larger than 8388608 bytes, too large to edit; use exec"
        )
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn read_pages_through_a_text_file_on_character_boundaries() {
    let ws = tempfile::tempdir().unwrap();
    // 'é' is two bytes: the first window ends inside one, and is cut before it.
    let text = format!("{}é{}", "a".repeat(MAX_READ_BYTES - 1), "b".repeat(10));
    std::fs::write(ws.path().join("t.txt"), &text).unwrap();
    let first = tool(ws.path(), "read", json!({"path": "t.txt"})).await;
    assert!(
        first
            == json!({"path": "t.txt", "content": "a".repeat(MAX_READ_BYTES - 1),
                      "bytes": text.len(), "truncated": true, "nextOffset": MAX_READ_BYTES - 1}),
        "{}",
        // Not the whole window: a diff would print it all.
        talon_testing::redact::Redactor::new()
            .with("a".repeat(64), "<64 a>")
            .value(&first)
    );
    assert_eq!(
        tool(
            ws.path(),
            "read",
            json!({"path": "t.txt", "offset": MAX_READ_BYTES - 1, "limit": 5})
        )
        .await,
        json!({"path": "t.txt", "content": "ébbb", "bytes": text.len(), "truncated": true,
               "offset": MAX_READ_BYTES - 1, "nextOffset": MAX_READ_BYTES + 4})
    );
    assert_eq!(
        tool(ws.path(), "read", json!({"path": "t.txt", "offset": -1})).await,
        failed(
            ToolErrorCode::InvalidArgument,
            "read: \"offset\" must be a non-negative integer"
        )
    );
}

#[tokio::test]
async fn grep_streams_long_lines_skips_binary_files_and_caps_bytes_scanned() {
    let ws = tempfile::tempdir().unwrap();
    let p = ws.path();
    // A 3 MiB line whose match straddles the 64 KiB read buffer.
    let mut long = "a".repeat((64 << 10) - 3);
    long.push_str("needle");
    long.push_str(&"b".repeat(3 << 20));
    long.push('\n');
    long.push_str("no\r\nneedle again\r\n");
    std::fs::write(p.join("long.txt"), &long).unwrap();
    std::fs::write(p.join("bin.dat"), b"needle\0needle\n").unwrap();
    assert_eq!(
        tool(p, "grep", json!({"pattern": "needle"})).await,
        json!({"matches": [{"path": "long.txt", "line": 1, "text": "a".repeat(400)},
                           {"path": "long.txt", "line": 3, "text": "needle again"}],
               "truncated": false})
    );
    // More than 64 MiB of text: the scan stops and says so.
    let line = format!("{}\n", "x".repeat(1023));
    let mut big = std::io::BufWriter::new(std::fs::File::create(p.join("big.txt")).unwrap());
    for _ in 0..(70 << 10) {
        std::io::Write::write_all(&mut big, line.as_bytes()).unwrap();
    }
    std::io::Write::write_all(&mut big, b"needle at the end\n").unwrap();
    drop(big);
    assert_eq!(
        tool(p, "grep", json!({"pattern": "needle", "path": "big.txt"})).await,
        json!({"matches": [], "truncated": true})
    );
}

#[tokio::test]
async fn list_stops_at_its_match_cap() {
    let ws = tempfile::tempdir().unwrap();
    for i in 0..600 {
        std::fs::write(ws.path().join(format!("f{i:03}")), "").unwrap();
    }
    let listed = tool(ws.path(), "list", json!({})).await;
    // The first 500 paths, in order.
    let first_500: Vec<String> = (0..500).map(|i| format!("f{i:03}")).collect();
    pretty_assertions::assert_eq!(listed, json!({"paths": first_500, "truncated": true}));
}

#[tokio::test]
async fn grep_refuses_patterns_longer_than_its_cap() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "needle\n").unwrap();
    let pattern = "n".repeat(MAX_GREP_PATTERN_BYTES + 1);
    assert_eq!(
        tool(ws.path(), "grep", json!({"pattern": pattern})).await,
        failed(
            ToolErrorCode::TooLarge,
            &format!(
                "the pattern is {} bytes, over the limit of {}",
                pattern.len(),
                MAX_GREP_PATTERN_BYTES
            )
        )
    );
    let pattern = "n".repeat(MAX_GREP_PATTERN_BYTES);
    assert_eq!(
        tool(ws.path(), "grep", json!({"pattern": pattern})).await,
        json!({"matches": [], "truncated": false})
    );
}
