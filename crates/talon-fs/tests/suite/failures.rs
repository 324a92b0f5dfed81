//! Paths that cannot be read: missing files and parents, a file used as a
//! directory, malformed paths, permission denied (skipped, saying why,
//! where permissions do not deny, as for root), and non-UTF-8 content for
//! the `_to_string` variant.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use talon_fs::{Symlinks, open_regular, read_capped, read_capped_to_string};

use super::{Shape, shaped};

const BOTH: [Symlinks; 2] = [Symlinks::Follow, Symlinks::Refuse];

#[test]
fn a_missing_file_or_parent_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    for path in [
        dir.path().join("missing.txt"),
        dir.path().join("no/such/dir/f.txt"),
        PathBuf::from(""),
    ] {
        for symlinks in BOTH {
            assert_eq!(
                shaped(read_capped(&path, 10, symlinks)),
                Err(Shape::NotFound(path.clone())),
                "{path:?} {symlinks:?}"
            );
            assert_eq!(
                shaped(open_regular(&path, symlinks)).map(drop),
                Err(Shape::NotFound(path.clone())),
                "{path:?} {symlinks:?}"
            );
        }
    }
}

#[test]
fn a_file_used_as_a_directory_is_an_io_error() {
    // `ENOTDIR` is not `NotFound` (`ErrorKind::NotADirectory`), so it
    // surfaces as `Io`, errno kept.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.txt");
    std::fs::write(&file, "x").unwrap();
    for path in [file.join("child"), dir.path().join("f.txt/")] {
        for symlinks in BOTH {
            assert_eq!(
                shaped(read_capped(&path, 10, symlinks)),
                Err(Shape::Io(path.clone(), Some(libc::ENOTDIR))),
                "{path:?} {symlinks:?}"
            );
        }
    }
}

#[test]
fn a_path_with_a_nul_byte_is_an_io_error_not_a_panic() {
    let path = Path::new(OsStr::from_bytes(b"/tmp/a\0b"));
    assert_eq!(
        shaped(read_capped(path, 10, Symlinks::Follow)),
        Err(Shape::Io(path.to_owned(), None))
    );
}

#[test]
fn a_path_too_long_is_an_io_error() {
    let path = PathBuf::from(format!("/{}", "a".repeat(5000)));
    assert_eq!(
        shaped(read_capped(&path, 10, Symlinks::Refuse)),
        Err(Shape::Io(path.clone(), Some(libc::ENAMETOOLONG)))
    );
}

#[test]
fn a_non_utf8_file_name_is_read_and_named_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(&path, "ok").unwrap();
    assert_eq!(
        shaped(read_capped_to_string(&path, 2, Symlinks::Refuse)),
        Ok("ok".to_owned())
    );
    let error = read_capped(&path, 1, Symlinks::Refuse).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}/caf\u{fffd}.txt: larger than 1 bytes",
            dir.path().display()
        )
    );
}

/// Whether permissions deny `path` to this process: false for root (or any
/// holder of `CAP_DAC_OVERRIDE`), found by trying rather than by uid.
fn permissions_deny(path: &Path) -> bool {
    std::fs::File::open(path).is_err()
}

#[allow(clippy::print_stderr, reason = "a skipped case says why")]
fn skip(why: &str) {
    eprintln!("skipped: {why}");
}

#[test]
fn an_unreadable_file_is_permission_denied() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret");
    std::fs::write(&path, "s").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if !permissions_deny(&path) {
        skip("a mode-000 file opens anyway (running as root?): nothing to deny");
        return;
    }
    for symlinks in BOTH {
        assert_eq!(
            shaped(read_capped(&path, 10, symlinks)),
            Err(Shape::Io(path.clone(), Some(libc::EACCES))),
            "{symlinks:?}"
        );
    }
}

#[test]
fn a_file_in_an_unsearchable_directory_is_permission_denied() {
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let path = locked.join("f.txt");
    std::fs::write(&path, "s").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let denied = permissions_deny(&path);
    // Restored before asserting, so the temporary directory can go.
    let outcome = shaped(read_capped(&path, 10, Symlinks::Refuse));
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    if !denied {
        skip("a mode-000 directory is searched anyway (running as root?): nothing to deny");
        return;
    }
    assert_eq!(outcome, Err(Shape::Io(path, Some(libc::EACCES))));
}

#[test]
fn non_utf8_content_is_not_utf8_for_the_string_variant_only() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8]); 6] = [
        ("invalid-bytes", b"\xff\xfe"),
        ("truncated-sequence", b"caf\xc3"),
        ("overlong-nul", b"\xc0\x80"),
        ("encoded-surrogate", b"\xed\xa0\x80"),
        ("past-u10ffff", b"\xf4\x90\x80\x80"),
        ("latin1", b"caf\xe9"),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(
            shaped(read_capped_to_string(&path, 100, Symlinks::Refuse)),
            Err(Shape::NotUtf8(path.clone())),
            "{name}"
        );
        assert_eq!(
            shaped(read_capped(&path, 100, Symlinks::Refuse)),
            Ok(bytes.to_vec()),
            "{name}"
        );
    }
}

#[test]
fn utf8_edge_cases_are_text() {
    let dir = tempfile::tempdir().unwrap();
    for text in ["\u{feff}with a BOM", "nul\0inside", "\u{10ffff}", "é ✓ 𝄞"] {
        let path = dir.path().join("t");
        std::fs::write(&path, text).unwrap();
        assert_eq!(
            shaped(read_capped_to_string(
                &path,
                text.len() as u64,
                Symlinks::Refuse
            )),
            Ok(text.to_owned()),
            "{text:?}"
        );
    }
}

#[test]
fn over_the_cap_wins_over_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bin");
    std::fs::write(&path, [0xff; 8]).unwrap();
    assert_eq!(
        shaped(read_capped_to_string(&path, 7, Symlinks::Refuse)),
        Err(Shape::TooLarge(path, 7))
    );
}
