//! Reading a tree that someone else may be changing meanwhile (a
//! workspace a model's commands write to), through directory handles
//! only: [`walk_tree`] lists it from a handle of its root with `openat`
//! and `fstatat`, never following a link, and [`open_file_under`] opens
//! one regular file below the root component by component, each with
//! `O_NOFOLLOW`. A directory swapped for a link after it was listed, or a
//! file swapped for a link, a FIFO or a device, is refused, so nothing
//! outside the tree is ever read, whatever changes under the walk.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::tree::{Caps, TreeError, open_dir};

/// One entry of a walked tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A directory.
    Dir,
    /// A regular file of this size.
    File {
        /// Its size in bytes when listed.
        size: u64,
    },
    /// A symbolic link to this target (never followed).
    Link(PathBuf),
}

/// Calls `visit` with the path (relative to the root) and kind of each
/// directory, regular file and link the tree `root` holds, parents
/// before their entries; special files are left out, and entries that
/// vanish or change kind while listed are skipped. `visit` answering
/// `false` for a directory leaves it undescended. Capped in entries and
/// levels (`caps.bytes` is not read).
pub fn walk_tree(
    root: &OwnedFd,
    caps: Caps,
    visit: &mut dyn FnMut(&Path, &Entry) -> bool,
) -> Result<u64, TreeError> {
    let mut seen = 0;
    walk_dir(root, Path::new(""), 0, caps, &mut seen, visit)?;
    Ok(seen)
}

fn walk_dir(
    dir: &OwnedFd,
    relative: &Path,
    depth: u32,
    caps: Caps,
    seen: &mut u64,
    visit: &mut dyn FnMut(&Path, &Entry) -> bool,
) -> Result<(), TreeError> {
    if depth >= caps.depth {
        return Err(TreeError::TooLarge {
            what: "levels",
            cap: u64::from(caps.depth),
        });
    }
    let io = |e: rustix::io::Errno| TreeError::Io {
        path: relative.to_owned(),
        source: e.into(),
    };
    let listing = rustix::fs::Dir::read_from(dir).map_err(io)?;
    let mut names: Vec<Vec<u8>> = Vec::new();
    for entry in listing {
        let name = entry.map_err(io)?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(name);
        }
    }
    // In name order, so that walks of equal trees visit alike.
    names.sort();
    for name in names {
        let name = OsStr::from_bytes(&name);
        let rel = relative.join(name);
        *seen += 1;
        if *seen > caps.entries {
            return Err(TreeError::TooLarge {
                what: "entries",
                cap: caps.entries,
            });
        }
        let Ok(stat) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => {
                if !visit(&rel, &Entry::Dir) {
                    continue;
                }
                // A link swapped in since the stat fails to open: skipped.
                if let Ok(inner) = open_dir(dir, name) {
                    walk_dir(&inner, &rel, depth + 1, caps, seen, visit)?;
                }
            }
            FileType::RegularFile => {
                let size = u64::try_from(stat.st_size).unwrap_or(0);
                visit(&rel, &Entry::File { size });
            }
            FileType::Symlink => {
                if let Ok(target) = rustix::fs::readlinkat(dir, name, Vec::new()) {
                    let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                    visit(&rel, &Entry::Link(target));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Opens the regular file `relative` below the tree `root` holds: each
/// directory component without following a link, then the file without
/// following one and without blocking (a FIFO or device is refused).
pub fn open_file_under(root: &OwnedFd, relative: &Path) -> Result<File, TreeError> {
    let refused = |source: std::io::Error| TreeError::NotDirectory {
        path: relative.to_owned(),
        source,
    };
    let names: Vec<&OsStr> = relative
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(TreeError::NotBelow {
                path: relative.to_owned(),
            }),
        })
        .collect::<Result<_, _>>()?;
    let Some((file, dirs)) = names.split_last() else {
        return Err(TreeError::NotBelow {
            path: relative.to_owned(),
        });
    };
    let mut at: Option<OwnedFd> = None;
    for name in dirs {
        let next = match &at {
            None => open_dir(root, name),
            Some(dir) => open_dir(dir, name),
        };
        at = Some(next.map_err(|e| refused(e.into()))?);
    }
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let opened = match &at {
        None => rustix::fs::openat(root, *file, flags, Mode::empty()),
        Some(dir) => rustix::fs::openat(dir, *file, flags, Mode::empty()),
    };
    let file = File::from(opened.map_err(|e| refused(e.into()))?);
    let meta = file.metadata().map_err(|source| TreeError::Io {
        path: relative.to_owned(),
        source,
    })?;
    if !meta.is_file() {
        return Err(refused(std::io::Error::other("not a regular file")));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: Caps = Caps {
        entries: 1_000,
        bytes: 0,
        depth: 16,
    };

    fn root(path: &Path) -> OwnedFd {
        File::open(path).unwrap().into()
    }

    #[test]
    fn a_walk_lists_without_following_links_and_opens_only_what_is_below() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(tree.join("a/b/f.txt"), "hello").unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("link")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            tree.join("fifo").as_path(),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let fd = root(&tree);
        let mut seen = Vec::new();
        walk_tree(&fd, CAPS, &mut |p, e| {
            seen.push((p.to_owned(), e.clone()));
            true
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                (PathBuf::from("a"), Entry::Dir),
                (PathBuf::from("a/b"), Entry::Dir),
                (PathBuf::from("a/b/f.txt"), Entry::File { size: 5 }),
                (PathBuf::from("link"), Entry::Link(outside.clone())),
            ]
        );
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut open_file_under(&fd, Path::new("a/b/f.txt")).unwrap(),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "hello");
        // Through a link, to a FIFO, or above the root: refused.
        for refused in ["link/secret", "fifo", "../outside/secret", "a"] {
            assert!(
                open_file_under(&fd, Path::new(refused)).is_err(),
                "{refused}"
            );
        }
        // A directory swapped for a link after the root was opened.
        std::fs::rename(tree.join("a"), dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("a")).unwrap();
        assert!(open_file_under(&fd, Path::new("a/secret")).is_err());
    }
}
