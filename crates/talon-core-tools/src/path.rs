//! Resolving a model-given path inside the workspace, race-resistantly.
//!
//! A path is never handed to the kernel whole. It is split into
//! components and walked from a descriptor of the workspace root with
//! `fstatat(AT_SYMLINK_NOFOLLOW)` and `openat(O_NOFOLLOW)`, one component
//! at a time, so a symlink swapped in mid-walk makes the open fail instead
//! of being followed. Symlinks met on the way are read (`readlinkat`) and
//! their target spliced into the walk: `..` pops a directory we opened
//! ourselves, and popping past the root, or an absolute target that is not
//! under the root, is refused. Links that stay inside are followed, dangling
//! or not. The final open uses `O_NOFOLLOW | O_NONBLOCK` (a FIFO never
//! blocks) and the opened descriptor's `fstat` must show a regular file (or
//! a directory where one is wanted) with the same device and inode as the
//! entry checked, else the walk is retried a few times, then refused.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat, mkdirat};
use talon_tools::{ToolError, ToolErrorCode};

/// Most symlinks followed (and races retried) while resolving one path.
const MAX_LINKS: usize = 40;

/// What the caller will do with the resolved entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// Read a regular file.
    Read,
    /// Read a regular file or a directory (`list`, `grep`).
    Browse,
    /// Create or truncate a regular file; missing parents are created.
    Write,
    /// Read and rewrite an existing regular file.
    Edit,
}

/// The kind of a directory entry, from its `lstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    Device,
}

impl Kind {
    pub(super) fn of(stat: &FileStat) -> Self {
        let format = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        if format == SFlag::S_IFREG {
            Self::File
        } else if format == SFlag::S_IFDIR {
            Self::Dir
        } else if format == SFlag::S_IFLNK {
            Self::Symlink
        } else if format == SFlag::S_IFIFO {
            Self::Fifo
        } else if format == SFlag::S_IFSOCK {
            Self::Socket
        } else {
            Self::Device
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::File => "a regular file",
            Self::Dir => "a directory",
            Self::Symlink => "a symlink",
            Self::Fifo => "a FIFO",
            Self::Socket => "a socket",
            Self::Device => "a device",
        }
    }
}

/// An opened workspace entry.
#[derive(Debug)]
pub(super) struct Opened {
    /// The descriptor (a regular file, or a directory for `Browse`).
    pub file: File,
    /// Its real path relative to the workspace (empty for the root).
    pub rel: PathBuf,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// Its size in bytes, from `fstat` of the descriptor.
    pub size: u64,
}

/// Where a walk ended: `name` inside the directory `dir`, or `dir` itself.
struct Located {
    dir: OwnedFd,
    name: Option<OsString>,
    stat: Option<FileStat>,
    rel: PathBuf,
}

enum Step {
    Done(Opened),
    /// The entry changed between the check and the open: walk again.
    Raced,
}

fn outside(path: &str) -> ToolError {
    ToolError::new(
        ToolErrorCode::OutsideWorkspace,
        format!("{path:?} is outside the workspace"),
    )
}

fn io(path: &str, errno: Errno) -> ToolError {
    match errno {
        Errno::ENOENT => {
            ToolError::new(ToolErrorCode::NotFound, format!("{path:?} does not exist"))
        }
        Errno::ENOTDIR => ToolError::new(
            ToolErrorCode::NotADirectory,
            format!("{path:?}: a parent is not a directory"),
        ),
        Errno::EACCES | Errno::EPERM => ToolError::new(
            ToolErrorCode::PermissionDenied,
            format!("{path:?}: {}", errno.desc()),
        ),
        _ => ToolError::new(
            ToolErrorCode::IoError,
            format!("{path:?}: {}", errno.desc()),
        ),
    }
}

/// The innermost directory the walk holds open: the top of `stack`, else
/// the root.
fn innermost(stack: &mut Vec<(OwnedFd, OsString)>, root_fd: OwnedFd) -> OwnedFd {
    stack.pop().map_or(root_fd, |(fd, _)| fd)
}

/// The components of `path` below `root` (absolute paths must be under
/// `root`, compared component-wise), or `None` when it is elsewhere.
fn components_below(root: &Path, path: &Path) -> Option<Vec<OsString>> {
    let relative = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    let mut out = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => out.push(name.to_owned()),
            Component::ParentDir => out.push(OsString::from("..")),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Opens the workspace root as a directory descriptor.
fn open_root(root: &Path) -> Result<OwnedFd, ToolError> {
    nix::fcntl::open(
        root,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        ToolError::new(
            ToolErrorCode::IoError,
            format!("cannot open the workspace: {}", e.desc()),
        )
    })
}

fn open_dir_at(dir: impl AsFd, name: &OsStr) -> Result<OwnedFd, Errno> {
    openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// Walks `path` from `root`, following symlinks that stay inside. With
/// `create`, missing directories on the way are made.
fn locate(root: &Path, path: &str, create: bool) -> Result<Located, ToolError> {
    let given = components_below(root, Path::new(path)).ok_or_else(|| outside(path))?;
    // A path that climbs out on its own is refused before anything is
    // looked at (or created).
    let mut depth = 0usize;
    for name in &given {
        depth = if name == ".." {
            depth.checked_sub(1).ok_or_else(|| outside(path))?
        } else {
            depth + 1
        };
    }
    let root_fd = open_root(root)?;
    let mut queue: Vec<OsString> = given.into_iter().rev().collect();
    let mut stack: Vec<(OwnedFd, OsString)> = Vec::new();
    let mut links = 0usize;
    let rel_of = |stack: &[(OwnedFd, OsString)]| stack.iter().map(|(_, n)| n).collect::<PathBuf>();
    while let Some(name) = queue.pop() {
        if name == ".." {
            stack.pop().ok_or_else(|| outside(path))?;
            continue;
        }
        let last = queue.is_empty();
        let dir = stack.last().map_or(root_fd.as_fd(), |(fd, _)| fd.as_fd());
        let stat = match fstatat(dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::ENOENT) if last => {
                let rel = rel_of(&stack).join(&name);
                let dir = innermost(&mut stack, root_fd);
                return Ok(Located {
                    dir,
                    name: Some(name),
                    stat: None,
                    rel,
                });
            }
            Err(Errno::ENOENT) if create => {
                match mkdirat(dir, name.as_os_str(), Mode::from_bits_truncate(0o777)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(io(path, e)),
                }
                queue.push(name);
                continue;
            }
            Err(e) => return Err(io(path, e)),
        };
        match Kind::of(&stat) {
            Kind::Symlink => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(ToolError::new(
                        ToolErrorCode::TooManyLinks,
                        format!("{path:?}: too many symlinks"),
                    ));
                }
                let target =
                    nix::fcntl::readlinkat(dir, name.as_os_str()).map_err(|e| io(path, e))?;
                let target = Path::new(&target);
                let parts = components_below(root, target).ok_or_else(|| {
                    ToolError::new(
                        ToolErrorCode::OutsideWorkspace,
                        format!(
                            "{path:?} goes through a symlink to {} outside the workspace",
                            target.display()
                        ),
                    )
                })?;
                if target.is_absolute() {
                    stack.clear();
                }
                queue.extend(parts.into_iter().rev());
            }
            Kind::Dir if !last => match open_dir_at(dir, &name) {
                Ok(fd) => stack.push((fd, name)),
                // Swapped for a symlink or something else: look again.
                Err(Errno::ELOOP | Errno::ENOTDIR | Errno::ENOENT) if links < MAX_LINKS => {
                    links += 1;
                    queue.push(name);
                }
                Err(e) => return Err(io(path, e)),
            },
            kind if !last => {
                return Err(ToolError::new(
                    ToolErrorCode::NotADirectory,
                    format!(
                        "{path:?}: {} is {}, not a directory",
                        name.display(),
                        kind.describe()
                    ),
                ));
            }
            _ => {
                let rel = rel_of(&stack).join(&name);
                let dir = innermost(&mut stack, root_fd);
                return Ok(Located {
                    dir,
                    name: Some(name),
                    stat: Some(stat),
                    rel,
                });
            }
        }
    }
    // The path named a directory we hold open (the root, or via `..`).
    let rel = rel_of(&stack);
    let dir = innermost(&mut stack, root_fd);
    let stat = fstat(&dir).map_err(|e| io(path, e))?;
    Ok(Located {
        dir,
        name: None,
        stat: Some(stat),
        rel,
    })
}

/// The real absolute path `path` names inside `root` (which need not
/// exist yet), or why not.
pub(super) fn resolve(root: &Path, path: &str) -> Result<PathBuf, ToolError> {
    locate(root, path, false).map(|found| root.join(found.rel))
}

/// Resolves and opens `path` for `access`.
pub(super) fn open(root: &Path, path: &str, access: Access) -> Result<Opened, ToolError> {
    for _ in 0..MAX_LINKS {
        let found = locate(root, path, access == Access::Write)?;
        if let Step::Done(opened) = open_located(found, path, access)? {
            return Ok(opened);
        }
    }
    Err(ToolError::new(
        ToolErrorCode::PathChanged,
        format!("{path:?} kept changing while it was opened"),
    ))
}

fn open_located(found: Located, path: &str, access: Access) -> Result<Step, ToolError> {
    let Located {
        dir,
        name,
        stat,
        rel,
    } = found;
    let Some(name) = name else {
        // `dir` itself, already opened without following links.
        if access != Access::Browse {
            return Err(is_directory(path));
        }
        let size = stat.map_or(0, |s| u64::try_from(s.st_size).unwrap_or(0));
        return Ok(Step::Done(Opened {
            file: File::from(dir),
            rel,
            is_dir: true,
            size,
        }));
    };
    let Some(stat) = stat else {
        if access != Access::Write {
            return Err(io(path, Errno::ENOENT));
        }
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
        return match open_file_at(&dir, &name, flags, None) {
            Ok(file) => Ok(Step::Done(Opened {
                file,
                rel,
                is_dir: false,
                size: 0,
            })),
            Err(Errno::EEXIST) => Ok(Step::Raced),
            Err(e) => Err(io(path, e)),
        };
    };
    let kind = Kind::of(&stat);
    match (kind, access) {
        (Kind::File, _) | (Kind::Dir, Access::Browse) => {}
        (Kind::Dir, _) => return Err(is_directory(path)),
        (kind, _) => return Err(not_regular(path, kind)),
    }
    let flags = match (kind, access) {
        (Kind::Dir, _) => OFlag::O_RDONLY | OFlag::O_DIRECTORY,
        (_, Access::Read | Access::Browse) => OFlag::O_RDONLY,
        (_, Access::Write) => OFlag::O_WRONLY,
        (_, Access::Edit) => OFlag::O_RDWR,
    };
    match open_file_at(&dir, &name, flags, Some(&stat)) {
        Ok(file) => {
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            if access == Access::Write {
                file.set_len(0).map_err(|e| {
                    ToolError::new(ToolErrorCode::IoError, format!("{}: {e}", rel.display()))
                })?;
            }
            Ok(Step::Done(Opened {
                file,
                rel,
                is_dir: kind == Kind::Dir,
                size,
            }))
        }
        Err(Errno::ELOOP | Errno::ENOENT | Errno::ESTALE | Errno::ENXIO) => Ok(Step::Raced),
        Err(e) => Err(io(path, e)),
    }
}

fn is_directory(path: &str) -> ToolError {
    ToolError::new(
        ToolErrorCode::IsADirectory,
        format!("{path:?} is a directory, not a regular file"),
    )
}

fn not_regular(path: &str, kind: Kind) -> ToolError {
    ToolError::new(
        ToolErrorCode::NotRegularFile,
        format!("{path:?} is {}, not a regular file", kind.describe()),
    )
}

/// Opens `name` in `dir` with `O_NOFOLLOW | O_NONBLOCK`; when `expected`
/// is given, the descriptor must be the same file of the same kind
/// (`ENXIO` otherwise, which callers treat as a race).
pub(super) fn open_file_at(
    dir: impl AsFd,
    name: &OsStr,
    flags: OFlag,
    expected: Option<&FileStat>,
) -> Result<File, Errno> {
    let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
    let fd = openat(dir, name, flags, Mode::from_bits_truncate(0o666))?;
    let actual = fstat(&fd)?;
    let kind = Kind::of(&actual);
    if !matches!(kind, Kind::File | Kind::Dir) {
        return Err(Errno::ENXIO);
    }
    if let Some(expected) = expected
        && (actual.st_dev != expected.st_dev
            || actual.st_ino != expected.st_ino
            || kind != Kind::of(expected))
    {
        return Err(Errno::ENXIO);
    }
    Ok(File::from(fd))
}
