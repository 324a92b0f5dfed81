//! Regular files within the cap: exact reads at, under and around the cap
//! (zero and `u64::MAX` included), the `File` `open_regular` hands back,
//! the errors' messages, and `cache_dir`'s explicit directory.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use talon_fs::{FsError, Symlinks, cache_dir, open_regular, read_capped, read_capped_to_string};

use super::{Shape, shaped};

const BOTH: [Symlinks; 2] = [Symlinks::Follow, Symlinks::Refuse];

fn file_with(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_file_is_read_whole_at_under_and_far_under_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(dir.path(), "a.txt", b"hello\n");
    for symlinks in BOTH {
        for cap in [6, 7, 1 << 20, u64::MAX] {
            assert_eq!(
                shaped(read_capped(&path, cap, symlinks)),
                Ok(b"hello\n".to_vec()),
                "cap {cap}, {symlinks:?}"
            );
            assert_eq!(
                shaped(read_capped_to_string(&path, cap, symlinks)),
                Ok("hello\n".to_owned()),
                "cap {cap}, {symlinks:?}"
            );
        }
    }
}

#[test]
fn one_byte_over_the_cap_is_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(dir.path(), "a.txt", b"hello\n");
    for cap in [0, 1, 5] {
        assert_eq!(
            shaped(read_capped(&path, cap, Symlinks::Refuse)),
            Err(Shape::TooLarge(path.clone(), cap)),
            "cap {cap}"
        );
        assert_eq!(
            shaped(read_capped_to_string(&path, cap, Symlinks::Follow)),
            Err(Shape::TooLarge(path.clone(), cap)),
            "cap {cap}"
        );
    }
}

#[test]
fn an_empty_file_fits_a_zero_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(dir.path(), "empty", b"");
    assert_eq!(shaped(read_capped(&path, 0, Symlinks::Refuse)), Ok(vec![]));
    assert_eq!(
        shaped(read_capped_to_string(&path, 0, Symlinks::Follow)),
        Ok(String::new())
    );
}

#[test]
fn binary_content_is_read_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..=255u8).cycle().take(4096 + 17).collect();
    let path = file_with(dir.path(), "bin", &bytes);
    assert_eq!(
        shaped(read_capped(&path, bytes.len() as u64, Symlinks::Refuse)),
        Ok(bytes)
    );
}

#[test]
fn open_regular_hands_back_a_readable_seekable_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(dir.path(), "a.txt", b"0123456789");
    for symlinks in BOTH {
        let mut file = open_regular(&path, symlinks).unwrap();
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "0123456789");
        // O_NONBLOCK changes nothing for a regular file: seeks and reads
        // behave as usual.
        file.seek(SeekFrom::Start(4)).unwrap();
        let mut tail = String::new();
        file.read_to_string(&mut tail).unwrap();
        assert_eq!(tail, "456789");
    }
}

#[test]
fn open_regular_opens_read_only() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(dir.path(), "a.txt", b"keep");
    let mut file = open_regular(&path, Symlinks::Refuse).unwrap();
    let error = file.write_all(b"clobber").unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::EBADF));
    assert_eq!(std::fs::read(&path).unwrap(), b"keep");
}

#[test]
fn the_content_of_the_file_at_read_time_is_what_is_read() {
    // No caching between reads: a rewritten file reads anew, and one
    // rewritten past the cap is refused.
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(dir.path(), "a.txt", b"one");
    assert_eq!(
        shaped(read_capped(&path, 3, Symlinks::Refuse)),
        Ok(b"one".to_vec())
    );
    std::fs::write(&path, b"two").unwrap();
    assert_eq!(
        shaped(read_capped(&path, 3, Symlinks::Refuse)),
        Ok(b"two".to_vec())
    );
    std::fs::write(&path, b"three").unwrap();
    assert_eq!(
        shaped(read_capped(&path, 3, Symlinks::Refuse)),
        Err(Shape::TooLarge(path, 3))
    );
}

#[test]
fn every_error_names_its_path_in_its_message() {
    let path = PathBuf::from("/some/where/f.json");
    let messages: Vec<String> = [
        FsError::NotFound { path: path.clone() },
        FsError::NotRegular {
            path: path.clone(),
            kind: "FIFO",
        },
        FsError::TooLarge {
            path: path.clone(),
            cap: 1024,
        },
        FsError::NotUtf8 { path: path.clone() },
        FsError::Io {
            path: path.clone(),
            source: std::io::Error::from_raw_os_error(libc::EACCES),
        },
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
        messages,
        [
            "/some/where/f.json: no such file",
            "/some/where/f.json: not a regular file (FIFO)",
            "/some/where/f.json: larger than 1024 bytes",
            "/some/where/f.json: not UTF-8 text",
            "/some/where/f.json: Permission denied (os error 13)",
        ]
    );
}

#[test]
fn an_io_error_keeps_its_source() {
    use std::error::Error;
    let error = FsError::Io {
        path: PathBuf::from("x"),
        source: std::io::Error::from_raw_os_error(libc::EIO),
    };
    assert_eq!(
        error.source().map(ToString::to_string),
        Some("Input/output error (os error 5)".to_owned())
    );
    assert_eq!(
        FsError::NotFound {
            path: PathBuf::from("x")
        }
        .source()
        .map(ToString::to_string),
        None
    );
}

#[test]
fn an_explicit_cache_dir_wins_as_given() {
    // The environment fallbacks are not exercised here: changing the
    // environment of a multi-threaded test binary is unsound.
    for dir in ["/var/cache/mine", "relative/dir", ""] {
        assert_eq!(
            cache_dir(Some(Path::new(dir))),
            Some(PathBuf::from(dir)),
            "{dir:?}"
        );
    }
}
