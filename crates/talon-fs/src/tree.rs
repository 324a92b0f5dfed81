//! Copying a directory tree that someone else may be changing meanwhile
//! (a workspace's source, inside a root other people write to).
//!
//! Every step goes through a directory handle, never a path re-resolved
//! after it was checked: [`open_dir_under`] opens a root and then each
//! component below it with `O_NOFOLLOW | O_DIRECTORY` (refusing `..`), and
//! [`copy_tree`] walks from such a handle with `openat` and `fstatat`
//! without following links. A directory swapped for a link while the copy
//! runs fails to open and is skipped, so nothing outside the tree is ever
//! read. Regular files are copied (their permission bits and times kept,
//! set-id bits dropped), symbolic links recreated as links, anything else
//! (FIFOs, sockets, devices) skipped. The copy is capped in entries, bytes
//! and depth.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Why a copy failed.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// A component below the root is `..`, or absolute.
    #[error("{}: only plain names below the root", path.display())]
    NotBelow {
        /// The relative path.
        path: PathBuf,
    },
    /// A component could not be opened as a directory without following
    /// a link (a link, not a directory, or gone).
    #[error("{}: not a directory reached without following a link: {source}", path.display())]
    NotDirectory {
        /// The path.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// Past a cap.
    #[error("the tree holds more than {cap} {what}")]
    TooLarge {
        /// `entries`, `bytes` or `levels`.
        what: &'static str,
        /// The cap.
        cap: u64,
    },
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
}

/// How much a copy may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Entries (files, directories, links) at most.
    pub entries: u64,
    /// Bytes of regular files at most.
    pub bytes: u64,
    /// Levels of directories at most.
    pub depth: u32,
}

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Copied {
    /// Entries copied.
    pub entries: u64,
    /// Bytes of regular files copied.
    pub bytes: u64,
    /// What was left out, relative to the tree: special files, and
    /// entries that changed kind while the copy ran.
    pub skipped: Vec<PathBuf>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> TreeError + '_ {
    move |source| TreeError::Io {
        path: path.to_owned(),
        source,
    }
}

pub(crate) fn open_dir(at: impl AsFd, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        at,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Opens `root` (links in it are the caller's to trust), then each
/// component of `relative` below it without following a link.
pub fn open_dir_under(root: &Path, relative: &Path) -> Result<OwnedFd, TreeError> {
    let mut dir: OwnedFd = File::open(root).map_err(io(root))?.into();
    let mut at = root.to_path_buf();
    for component in relative.components() {
        let name = match component {
            Component::Normal(name) => name,
            Component::CurDir => continue,
            _ => {
                return Err(TreeError::NotBelow {
                    path: relative.to_owned(),
                });
            }
        };
        at.push(name);
        dir = open_dir(&dir, name).map_err(|e| TreeError::NotDirectory {
            path: at.clone(),
            source: e.into(),
        })?;
    }
    Ok(dir)
}

/// Copies the tree `source` holds into the directory `destination` (made
/// if absent; what is already there stays).
pub fn copy_tree(source: &OwnedFd, destination: &Path, caps: Caps) -> Result<Copied, TreeError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(destination)
        .map_err(io(destination))?;
    let mut copied = Copied::default();
    copy_dir(source, destination, Path::new(""), 0, caps, &mut copied)?;
    copied.skipped.sort();
    Ok(copied)
}

fn copy_dir(
    source: &OwnedFd,
    destination: &Path,
    relative: &Path,
    depth: u32,
    caps: Caps,
    copied: &mut Copied,
) -> Result<(), TreeError> {
    if depth >= caps.depth {
        return Err(TreeError::TooLarge {
            what: "levels",
            cap: u64::from(caps.depth),
        });
    }
    let listing = rustix::fs::Dir::read_from(source).map_err(|e| io(relative)(e.into()))?;
    for entry in listing {
        let entry = entry.map_err(|e| io(relative)(e.into()))?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        let rel = relative.join(name);
        let to = destination.join(name);
        copied.entries += 1;
        if copied.entries > caps.entries {
            return Err(TreeError::TooLarge {
                what: "entries",
                cap: caps.entries,
            });
        }
        let Ok(stat) = rustix::fs::statat(source, name, AtFlags::SYMLINK_NOFOLLOW) else {
            // Gone since it was listed.
            copied.skipped.push(rel);
            continue;
        };
        let mode = stat.st_mode & 0o777;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => {
                // A link swapped in since the stat fails to open: skipped.
                let Ok(inner) = open_dir(source, name) else {
                    copied.skipped.push(rel);
                    continue;
                };
                std::fs::DirBuilder::new()
                    .mode(mode | 0o700)
                    .create(&to)
                    .or_else(|e| match e.kind() {
                        std::io::ErrorKind::AlreadyExists if to.is_dir() => Ok(()),
                        _ => Err(e),
                    })
                    .map_err(io(&to))?;
                copy_dir(&inner, &to, &rel, depth + 1, caps, copied)?;
            }
            FileType::RegularFile => {
                if !copy_file(source, name, &to, mode, caps, copied)? {
                    copied.skipped.push(rel);
                }
            }
            FileType::Symlink => {
                let Ok(target) = rustix::fs::readlinkat(source, name, Vec::new()) else {
                    copied.skipped.push(rel);
                    continue;
                };
                let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                std::os::unix::fs::symlink(&target, &to).map_err(io(&to))?;
            }
            _ => copied.skipped.push(rel),
        }
    }
    Ok(())
}

/// Copies one regular file opened from its directory without following a
/// link; `false` when it is no longer a regular file.
fn copy_file(
    dir: &OwnedFd,
    name: &OsStr,
    to: &Path,
    mode: u32,
    caps: Caps,
    copied: &mut Copied,
) -> Result<bool, TreeError> {
    let opened = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    );
    let Ok(fd) = opened else {
        return Ok(false);
    };
    let mut from = File::from(fd);
    let meta = from.metadata().map_err(io(to))?;
    if !meta.is_file() {
        return Ok(false);
    }
    if copied.bytes.saturating_add(meta.len()) > caps.bytes {
        return Err(TreeError::TooLarge {
            what: "bytes",
            cap: caps.bytes,
        });
    }
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(to)
        .map_err(io(to))?;
    // At most what is left of the cap, should the file grow meanwhile.
    let left = caps.bytes - copied.bytes;
    let written =
        std::io::copy(&mut std::io::Read::take(&mut from, left), &mut out).map_err(io(to))?;
    copied.bytes += written;
    let times = std::fs::FileTimes::new()
        .set_accessed(meta.accessed().map_err(io(to))?)
        .set_modified(meta.modified().map_err(io(to))?);
    out.set_times(times).map_err(io(to))?;
    out.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(io(to))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: Caps = Caps {
        entries: 10_000,
        bytes: 1 << 30,
        depth: 64,
    };

    #[test]
    fn a_tree_is_copied_with_links_as_links_and_special_files_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("a/b")).unwrap();
        std::fs::write(src.join("a/b/file.txt"), "hello").unwrap();
        std::fs::set_permissions(
            src.join("a/b/file.txt"),
            std::fs::Permissions::from_mode(0o4755),
        )
        .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            src.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let dst = dir.path().join("dst");
        let copied = copy_tree(&open_dir_under(&src, Path::new("")).unwrap(), &dst, CAPS).unwrap();
        assert_eq!(
            copied,
            Copied {
                entries: 5,
                bytes: 5,
                skipped: vec![PathBuf::from("fifo")],
            }
        );
        assert_eq!(
            std::fs::read_to_string(dst.join("a/b/file.txt")).unwrap(),
            "hello"
        );
        let mode = std::fs::metadata(dst.join("a/b/file.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755, "set-id bits dropped");
        assert_eq!(
            std::fs::read_link(dst.join("link")).unwrap(),
            Path::new("/etc/passwd")
        );
        // Caps hold.
        let small = Caps { bytes: 4, ..CAPS };
        let error = copy_tree(
            &open_dir_under(&src, Path::new("")).unwrap(),
            &dir.path().join("d2"),
            small,
        );
        assert!(
            matches!(error, Err(TreeError::TooLarge { what: "bytes", .. })),
            "{error:?}"
        );
        let shallow = Caps { depth: 2, ..CAPS };
        let error = copy_tree(
            &open_dir_under(&src, Path::new("")).unwrap(),
            &dir.path().join("d3"),
            shallow,
        );
        assert!(
            matches!(error, Err(TreeError::TooLarge { what: "levels", .. })),
            "{error:?}"
        );
    }

    #[test]
    fn a_component_that_is_a_link_or_dotdot_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        assert!(open_dir_under(&root, Path::new("real")).is_ok());
        assert!(matches!(
            open_dir_under(&root, Path::new("out")),
            Err(TreeError::NotDirectory { .. })
        ));
        assert!(matches!(
            open_dir_under(&root, Path::new("real/../out")),
            Err(TreeError::NotBelow { .. })
        ));
    }

    /// A writer swapping a directory for a link to outside while copies
    /// run: no copy ever holds what is outside.
    #[test]
    fn a_directory_swapped_for_a_link_during_the_copy_never_brings_in_the_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("SECRET"), "outside").unwrap();
        std::fs::create_dir_all(root.join("src/sub")).unwrap();
        for n in 0..50 {
            std::fs::write(root.join(format!("src/sub/f{n}")), "inside").unwrap();
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let stop = stop.clone();
            let root = root.clone();
            let outside = outside.clone();
            std::thread::spawn(move || {
                let sub = root.join("src/sub");
                let aside = root.join("src/aside");
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::rename(&sub, &aside);
                    let _ = std::os::unix::fs::symlink(&outside, &sub);
                    let _ = std::fs::remove_file(&sub);
                    let _ = std::fs::rename(&aside, &sub);
                }
            })
        };
        for n in 0..100 {
            let dst = dir.path().join(format!("copy{n}"));
            if let Ok(fd) = open_dir_under(&root, Path::new("src")) {
                let _ = copy_tree(&fd, &dst, CAPS);
            }
            for entry in walk(&dst) {
                let text = std::fs::read_to_string(&entry).unwrap_or_default();
                assert_ne!(text, "outside", "{}", entry.display());
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
    }

    /// Every regular file under `dir`, not following links.
    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_file() {
                    files.push(entry.path());
                }
            }
        }
        files
    }
}
