//! Reading files from places Talon does not control.
//!
//! Configs, mock scripts, catalogs and stored cells come from paths a user,
//! a model or another process can point anywhere: at a FIFO (an open that
//! blocks forever), at `/dev/zero` (a read that never ends), at a file far
//! larger than anything Talon needs. Every such read goes through this
//! crate, which
//!
//! - refuses anything but a regular file before opening it (opening a
//!   device can have side effects), then opens without blocking
//!   (`O_NONBLOCK`, `O_NOCTTY`), so a FIFO or device swapped in cannot hang
//!   the open, and optionally refuses a symlink as the last component
//!   (`O_NOFOLLOW`);
//! - checks the type of what it opened (`fstat` on the open descriptor,
//!   so nothing can be swapped in between the check and the read) and
//!   refuses anything but a regular file;
//! - reads at most `cap` bytes, whatever the file's reported size, and
//!   fails with [`FsError::TooLarge`] if there is more.
//!
//! [`tree`] copies a directory tree through directory handles, never
//! re-resolving a checked path, so a tree someone changes meanwhile cannot
//! bring in what is outside it.
//!
//! Deliberately absent: path confinement (a workspace's rules belong to the
//! tools that have one) and any async API (these reads are small and
//! bounded; callers on a runtime use `spawn_blocking` where it matters).
//!
//! Callers: talon-config (configs), talon-cli (mock scripts, catalogs, query files), talon-cells
//! (suspended-cell records), talon-sandbox (the module cache and its keys), talon-embed (the table
//! and the model's weights), talon-gateway (environments' files). `cache_dir` resolves Talon's
//! cache directory (an explicit one, else `$TALON_CACHE_DIR`, `$XDG_CACHE_HOME/talon`,
//! `$HOME/.cache/talon`). Not every read goes through here yet: talon-cli reads
//! `<state_dir>/admin.token`, and talon-embed hashes the model's files and reads its
//! `tokenizer.json`, with `std::fs`.

pub mod tree;
pub mod walk;

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A failure to read a file, with the path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// Nothing is at the path.
    #[error("{}: no such file", path.display())]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// The path names something other than a regular file.
    #[error("{}: not a regular file ({kind})", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead (`directory`, `FIFO`, `symlink`, ...).
        kind: &'static str,
    },
    /// The file holds more than the cap allows.
    #[error("{}: larger than {cap} bytes", path.display())]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// The cap in bytes.
        cap: u64,
    },
    /// The file is not UTF-8 text.
    #[error("{}: not UTF-8 text", path.display())]
    NotUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// Any other I/O failure.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// This crate's result type.
pub type Result<T> = std::result::Result<T, FsError>;

/// Whether a symlink as the path's last component is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symlinks {
    /// Follow it (to a regular file only: the type check still applies).
    Follow,
    /// Refuse it with [`FsError::NotRegular`].
    Refuse,
}

/// Opens `path` for reading as a regular file, without blocking on FIFOs or
/// devices, and checks its type on the open descriptor.
pub fn open_regular(path: &Path, symlinks: Symlinks) -> Result<File> {
    // A device is refused before it is opened (opening one can have side
    // effects); the descriptor is checked again after the open, so nothing
    // swapped in between is read.
    let before = match symlinks {
        Symlinks::Follow => std::fs::metadata(path),
        Symlinks::Refuse => std::fs::symlink_metadata(path),
    };
    match before {
        Ok(metadata) if !metadata.file_type().is_file() => {
            return Err(FsError::NotRegular {
                path: path.to_owned(),
                kind: kind_name(&metadata.file_type()),
            });
        }
        Err(source) => return Err(open_error(path, symlinks, source)),
        Ok(_) => {}
    }
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
    if symlinks == Symlinks::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|source| open_error(path, symlinks, source))?;
    let metadata = file.metadata().map_err(|source| FsError::Io {
        path: path.to_owned(),
        source,
    })?;
    let file_type = metadata.file_type();
    if !file_type.is_file() {
        return Err(FsError::NotRegular {
            path: path.to_owned(),
            kind: kind_name(&file_type),
        });
    }
    Ok(file)
}

/// Reads a whole regular file of at most `cap` bytes.
pub fn read_capped(path: &Path, cap: u64, symlinks: Symlinks) -> Result<Vec<u8>> {
    let file = open_regular(path, symlinks)?;
    let mut bytes = Vec::new();
    // One byte more than the cap tells "exactly at the cap" from "over it",
    // whatever size the file reports (procfs and growing files lie).
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| FsError::Io {
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > cap {
        return Err(FsError::TooLarge {
            path: path.to_owned(),
            cap,
        });
    }
    Ok(bytes)
}

/// Reads a whole regular UTF-8 file of at most `cap` bytes.
pub fn read_capped_to_string(path: &Path, cap: u64, symlinks: Symlinks) -> Result<String> {
    let bytes = read_capped(path, cap, symlinks)?;
    String::from_utf8(bytes).map_err(|_| FsError::NotUtf8 {
        path: path.to_owned(),
    })
}

/// A name for a file type, for error messages.
pub fn kind_name(file_type: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_dir() {
        "directory"
    } else if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_fifo() {
        "FIFO"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_file() {
        "regular file"
    } else {
        "unknown file type"
    }
}

fn open_error(path: &Path, symlinks: Symlinks, source: std::io::Error) -> FsError {
    match source.kind() {
        std::io::ErrorKind::NotFound => FsError::NotFound {
            path: path.to_owned(),
        },
        // O_NOFOLLOW on a symlink fails with ELOOP.
        _ if symlinks == Symlinks::Refuse && source.raw_os_error() == Some(libc::ELOOP) => {
            FsError::NotRegular {
                path: path.to_owned(),
                kind: "symlink",
            }
        }
        _ => FsError::Io {
            path: path.to_owned(),
            source,
        },
    }
}

/// Talon's cache directory: `explicit` when given, else `$TALON_CACHE_DIR`,
/// else `$XDG_CACHE_HOME/talon`, else `$HOME/.cache/talon`; `None` when
/// none of those is set. What lives there (compiled modules, the snapshot
/// key, the embedding model) can always be rebuilt or fetched again.
pub fn cache_dir(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = explicit {
        return Some(dir.to_owned());
    }
    if let Some(dir) = std::env::var_os("TALON_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("talon"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("talon"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn reads_a_regular_file_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "hello").unwrap();
        assert_eq!(
            read_capped_to_string(&path, 5, Symlinks::Refuse).unwrap(),
            "hello"
        );
        let err = read_capped(&path, 4, Symlinks::Refuse).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: larger than 4 bytes", path.display())
        );
    }

    #[test]
    fn special_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        for symlinks in [Symlinks::Follow, Symlinks::Refuse] {
            let err = read_capped(&fifo, 100, symlinks).unwrap_err();
            assert!(
                matches!(err, FsError::NotRegular { kind: "FIFO", .. }),
                "{err}"
            );
        }
        let err = read_capped(dir.path(), 100, Symlinks::Follow).unwrap_err();
        assert!(
            matches!(
                err,
                FsError::NotRegular {
                    kind: "directory",
                    ..
                }
            ),
            "{err}"
        );
        let err = read_capped(Path::new("/dev/zero"), 100, Symlinks::Follow).unwrap_err();
        assert!(
            matches!(
                err,
                FsError::NotRegular {
                    kind: "character device",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn symlinks_follow_to_regular_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.txt");
        std::fs::write(&target, "x").unwrap();
        let link = dir.path().join("link");
        symlink(&target, &link).unwrap();
        assert_eq!(read_capped(&link, 10, Symlinks::Follow).unwrap(), b"x");
        let err = read_capped(&link, 10, Symlinks::Refuse).unwrap_err();
        assert!(
            matches!(
                err,
                FsError::NotRegular {
                    kind: "symlink",
                    ..
                }
            ),
            "{err}"
        );
        let zero = dir.path().join("zero");
        symlink("/dev/zero", &zero).unwrap();
        let err = read_capped(&zero, 10, Symlinks::Follow).unwrap_err();
        assert!(matches!(err, FsError::NotRegular { .. }), "{err}");
        let missing = dir.path().join("missing");
        assert!(matches!(
            read_capped(&missing, 10, Symlinks::Follow).unwrap_err(),
            FsError::NotFound { .. }
        ));
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_capped_to_string(&path, 10, Symlinks::Follow).unwrap_err(),
            FsError::NotUtf8 { .. }
        ));
    }
}
