//! The files every local sandbox is built from, made once per process in
//! a private directory (`talon-jail-<pid>-XXXXXX`, mode 0700) on
//! `/dev/shm` where it is a writable directory (a tmpfs: the copy below
//! makes some 700 symbolic links, 10 ms there against 25 to 650 ms on a
//! busy ext4 disk), else in `$TMPDIR`:
//!
//! - the seccomp filters, which the wrapper (`bwrap::wrapper`) opens on
//!   descriptors 3 and 4 for bubblewrap, so that spawning a command passes
//!   no descriptor of the gateway's and the standard library can
//!   `posix_spawn` it instead of forking the gateway;
//! - a copy of the allow-listed `/etc` (`bwrap::ETC`), which a sandbox
//!   sees as its `/etc` through one read-only bind ([`View`]). One bind
//!   per entry cost 5.8 ms of each start-up: bubblewrap re-reads the mount
//!   table after each, so the cost grows with their number.
//!
//! A copy is what a bind of each entry would show, taken when the view
//! was made: top-level entries are followed as a bind follows them
//! (their content, not a link), what is inside a directory keeps its
//! symbolic links, and only regular files, directories and links are
//! copied (a FIFO or device in `/etc` is left out, never opened). A
//! second tree, for commands with the host's network, is made of hard
//! links to the first when the first such command comes, and also holds
//! an empty `resolv.conf`: the mount point of the host's, bound over it
//! (name servers change; the host's file is read live). The first has
//! none, as a command without the network has no name resolution.
//!
//! The host's `/etc` is checked at most once a second: its entries'
//! metadata (inode, size, times, mode) are hashed, and a change makes a
//! new view that later commands get; a running command keeps the one it
//! started with, removed when the last such command ends. A change
//! reaches new commands within a second.
//!
//! The directory is swept at the next process's first use when its
//! process is gone (a static's destructor never runs).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::bwrap::ETC;

/// How often the host's `/etc` is looked at again.
const RECHECK: Duration = Duration::from_secs(1);

/// What a copy of `/etc` may hold at most (entries, bytes): the
/// allow-list is a few hundred small files; past this something is wrong
/// with the host, and commands are refused rather than the disk filled.
const MAX_ENTRIES: usize = 20_000;
const MAX_BYTES: u64 = 64 << 20;

/// How deep a directory of the allow-list is followed.
const MAX_DEPTH: usize = 16;

/// The per-process directory and what is in it.
#[derive(Debug)]
pub(crate) struct Files {
    /// The host's `/etc` (another directory in tests).
    source: PathBuf,
    dir: PathBuf,
    filters: [PathBuf; 2],
    /// The current copy (none before the first is made).
    etc: Mutex<Option<Current>>,
}

#[derive(Debug)]
struct Current {
    view: Arc<View>,
    fingerprint: u64,
    checked: Instant,
    generation: u64,
}

/// The copies of the allow-listed `/etc` (without and, once asked for,
/// with the mount point of `resolv.conf`); removed when the last command
/// using them is gone and newer ones have replaced them.
#[derive(Debug)]
pub(crate) struct View {
    dir: PathBuf,
    /// The tree of the host's network, or why it could not be made.
    net: OnceLock<Result<PathBuf, String>>,
}

impl View {
    /// The directory a sandbox binds as its `/etc` (the host network's
    /// made on first use).
    pub(crate) fn dir(&self, host_network: bool) -> std::io::Result<PathBuf> {
        if !host_network {
            return Ok(self.dir.join("off"));
        }
        self.net
            .get_or_init(|| {
                let net = self.dir.join("net");
                link_tree(&self.dir.join("off"), &net)
                    .and_then(|()| std::fs::write(net.join("resolv.conf"), ""))
                    .map(|()| net)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(std::io::Error::other)
    }
}

/// Makes `to` a tree of hard links to the files and links of `from`
/// (directories made anew, with their modes).
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to)?;
    std::fs::set_permissions(to, std::fs::symlink_metadata(from)?.permissions())?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            link_tree(&source, &target)?;
        } else {
            // A link to a symbolic link is one to the link itself.
            std::fs::hard_link(&source, &target)?;
        }
    }
    Ok(())
}

impl Drop for View {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), %error, "an old copy of /etc could not be removed");
        }
    }
}

impl Files {
    /// Makes the directory and writes `filters` (`/etc` is copied by the
    /// first [`Files::etc`]).
    pub(crate) fn new(filters: &[Vec<u8>; 2]) -> std::io::Result<Files> {
        Files::copying(Path::new("/etc"), filters)
    }

    /// [`Files::new`], copying the allow-list from `source`.
    fn copying(source: &Path, filters: &[Vec<u8>; 2]) -> std::io::Result<Files> {
        let shm = Path::new("/dev/shm");
        let tmp = std::env::temp_dir();
        let make = |parent: &Path| {
            sweep(parent);
            tempfile::Builder::new()
                .prefix(&format!("talon-jail-{}-", std::process::id()))
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir_in(parent)
                .map(tempfile::TempDir::keep)
        };
        let dir = match shm.is_dir().then(|| make(shm)) {
            Some(Ok(dir)) => dir,
            _ => make(&tmp)?,
        };
        let paths = [dir.join("seccomp-0.bpf"), dir.join("seccomp-1.bpf")];
        for (path, bytes) in paths.iter().zip(filters) {
            std::fs::write(path, bytes).inspect_err(|_| {
                let _ = std::fs::remove_dir_all(&dir);
            })?;
        }
        Ok(Files {
            source: source.to_owned(),
            dir,
            filters: paths,
            etc: Mutex::new(None),
        })
    }

    /// The files holding the two seccomp programs.
    pub(crate) fn filters(&self) -> &[PathBuf; 2] {
        &self.filters
    }

    /// The current copy of `/etc` (made anew if the host's changed since
    /// it was made, looked at no more than once a second).
    pub(crate) fn etc(&self) -> std::io::Result<Arc<View>> {
        let mut guard = self.etc.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(current) = guard.as_mut() else {
            let (view, fingerprint) = copy(&self.source, &self.dir.join("etc-0"))?;
            let view = Arc::new(view);
            *guard = Some(Current {
                view: Arc::clone(&view),
                fingerprint,
                checked: Instant::now(),
                generation: 0,
            });
            return Ok(view);
        };
        if current.checked.elapsed() < RECHECK {
            return Ok(Arc::clone(&current.view));
        }
        let fingerprint = walk(&self.source, None)?;
        if fingerprint != current.fingerprint {
            let generation = current.generation + 1;
            let (view, fingerprint) =
                copy(&self.source, &self.dir.join(format!("etc-{generation}")))?;
            tracing::info!(
                generation,
                "the host's /etc changed: commands get a new copy"
            );
            *current = Current {
                view: Arc::new(view),
                fingerprint,
                checked: Instant::now(),
                generation,
            };
        } else {
            current.checked = Instant::now();
        }
        Ok(Arc::clone(&current.view))
    }
}

/// Copies the allow-list under `into` (which must not exist).
fn copy(source: &Path, into: &Path) -> std::io::Result<(View, u64)> {
    std::fs::create_dir(into)?;
    // The view is removed with any partial copy if this fails.
    let view = View {
        dir: into.to_owned(),
        net: OnceLock::new(),
    };
    let off = into.join("off");
    std::fs::create_dir(&off)?;
    std::fs::set_permissions(&off, std::fs::Permissions::from_mode(0o755))?;
    let fingerprint = walk(source, Some(&off))?;
    Ok((view, fingerprint))
}

/// Hashes the allow-list's metadata, copying it under `into` when given.
fn walk(root: &Path, into: Option<&Path>) -> std::io::Result<u64> {
    let mut walker = Walker {
        hasher: DefaultHasher::new(),
        into,
        entries: 0,
        bytes: 0,
    };
    for entry in ETC {
        let source = root.join(entry);
        entry.hash(&mut walker.hasher);
        // Followed, as a bind follows it; an absent entry is left out.
        match std::fs::metadata(&source) {
            Ok(meta) => walker.visit(&source, Path::new(entry), &meta, 0)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0u8.hash(&mut walker.hasher),
            Err(e) => return Err(e),
        }
    }
    Ok(walker.hasher.finish())
}

struct Walker<'a> {
    hasher: DefaultHasher,
    into: Option<&'a Path>,
    entries: usize,
    bytes: u64,
}

impl Walker<'_> {
    fn visit(
        &mut self,
        source: &Path,
        relative: &Path,
        meta: &std::fs::Metadata,
        depth: usize,
    ) -> std::io::Result<()> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES || depth > MAX_DEPTH {
            return Err(std::io::Error::other(format!(
                "the allow-listed /etc holds more than {MAX_ENTRIES} entries or {MAX_DEPTH} levels"
            )));
        }
        (
            meta.ino(),
            meta.dev(),
            meta.len(),
            meta.mode(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
        )
            .hash(&mut self.hasher);
        let target = self.into.map(|into| into.join(relative));
        let kind = meta.file_type();
        if kind.is_symlink() {
            let link = std::fs::read_link(source)?;
            link.hash(&mut self.hasher);
            if let Some(target) = &target {
                std::os::unix::fs::symlink(&link, target)?;
            }
        } else if kind.is_file() {
            self.bytes += meta.len();
            if self.bytes > MAX_BYTES {
                return Err(std::io::Error::other(format!(
                    "the allow-listed /etc holds more than {MAX_BYTES} bytes"
                )));
            }
            if let Some(target) = &target {
                parent(target)?;
                std::fs::copy(source, target)?;
            }
        } else if kind.is_dir() {
            if let Some(target) = &target {
                parent(target)?;
                std::fs::create_dir(target)?;
                std::fs::set_permissions(target, meta.permissions())?;
            }
            let mut children: Vec<_> = std::fs::read_dir(source)?.collect::<Result<_, _>>()?;
            children.sort_by_key(std::fs::DirEntry::file_name);
            for child in children {
                let name = child.file_name();
                name.hash(&mut self.hasher);
                let meta = child.metadata()?;
                self.visit(&child.path(), &relative.join(&name), &meta, depth + 1)?;
            }
        }
        // FIFOs, sockets and devices are left out.
        Ok(())
    }
}

/// Makes the parent directory of a nested entry (`ssl/` of `ssl/certs`).
fn parent(target: &Path) -> std::io::Result<()> {
    match target.parent() {
        Some(dir) if !dir.exists() => std::fs::create_dir_all(dir),
        _ => Ok(()),
    }
}

/// Removes the directories of this crate's processes that are gone
/// (their own: another user's are not touched).
fn sweep(tmp: &Path) {
    let uid = nix::unistd::Uid::effective().as_raw();
    crate::sweep_gone(tmp, |path| {
        let meta = std::fs::symlink_metadata(path)?;
        if meta.is_dir() && meta.uid() == uid {
            std::fs::remove_dir_all(path)?;
        }
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use std::path::Path;

    #[test]
    fn a_copy_holds_what_a_bind_of_each_entry_would_show() {
        let files = super::Files::new(&[vec![1; 8], vec![2; 8]]).unwrap();
        assert_eq!(std::fs::read(&files.filters()[0]).unwrap(), vec![1; 8]);
        let view = files.etc().unwrap();
        for (entry, network) in super::ETC.iter().flat_map(|e| [(e, false), (e, true)]) {
            let host = Path::new("/etc").join(entry);
            let copied = view.dir(network).unwrap().join(entry);
            match std::fs::metadata(&host) {
                Ok(meta) if meta.is_file() => {
                    assert_eq!(
                        std::fs::read(&host).unwrap(),
                        std::fs::read(&copied).unwrap()
                    );
                }
                Ok(meta) if meta.is_dir() => assert!(copied.is_dir(), "{entry}"),
                Ok(_) => {}
                Err(_) => assert!(!copied.exists(), "{entry}"),
            }
        }
        assert!(!view.dir(false).unwrap().join("shadow").exists());
        assert!(!view.dir(false).unwrap().join("resolv.conf").exists());
        assert_eq!(
            std::fs::read(view.dir(true).unwrap().join("resolv.conf")).unwrap(),
            b""
        );
        // The same view until the host's changes.
        assert!(std::sync::Arc::ptr_eq(&view, &files.etc().unwrap()));
    }

    /// A made-up `/etc`: `passwd`, `ssl/certs/` with a file and a link,
    /// `hosts` as a link to a file elsewhere, `shadow`, and a FIFO where
    /// `gai.conf` would be.
    fn fake_etc() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let etc = root.path();
        std::fs::write(etc.join("passwd"), "root:x:0:0::/root:/bin/sh\n").unwrap();
        std::fs::write(etc.join("shadow"), "root:secret\n").unwrap();
        std::fs::create_dir_all(etc.join("ssl/certs")).unwrap();
        std::fs::write(etc.join("ssl/certs/ca.pem"), "pem").unwrap();
        std::os::unix::fs::symlink("/usr/share/ca.pem", etc.join("ssl/certs/link.pem")).unwrap();
        std::fs::write(etc.join("hosts.real"), "127.0.0.1 localhost\n").unwrap();
        std::os::unix::fs::symlink(etc.join("hosts.real"), etc.join("hosts")).unwrap();
        nix::unistd::mkfifo(&etc.join("gai.conf"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        root
    }

    #[test]
    fn a_copy_follows_top_level_links_keeps_inner_ones_and_never_opens_a_fifo() {
        let etc = fake_etc();
        let files = super::Files::copying(etc.path(), &[vec![], vec![]]).unwrap();
        let view = files.etc().unwrap();
        let off = view.dir(false).unwrap();
        let mut seen: Vec<String> = walkdir(&off);
        seen.sort();
        let mut expected = [
            "hosts: file 127.0.0.1 localhost\n",
            "passwd: file root:x:0:0::/root:/bin/sh\n",
            "ssl: dir",
            "ssl/certs: dir",
            "ssl/certs/ca.pem: file pem",
            "ssl/certs/link.pem: link /usr/share/ca.pem",
        ];
        expected.sort_unstable();
        assert_eq!(seen, expected);
        let mut net = walkdir(&view.dir(true).unwrap());
        net.sort();
        assert_eq!(net.len(), seen.len() + 1);
        assert!(net.contains(&"resolv.conf: file ".to_owned()));
    }

    fn walkdir(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                out.push(format!(
                    "{name}: link {}",
                    std::fs::read_link(&path).unwrap().display()
                ));
            } else if kind.is_dir() {
                out.push(format!("{name}: dir"));
                out.extend(walkdir(&path).into_iter().map(|e| format!("{name}/{e}")));
            } else {
                out.push(format!(
                    "{name}: file {}",
                    std::fs::read_to_string(&path).unwrap()
                ));
            }
        }
        out
    }

    #[test]
    fn a_change_to_the_hosts_etc_reaches_the_next_commands_and_the_old_copy_goes_with_its_last() {
        let etc = fake_etc();
        let files = super::Files::copying(etc.path(), &[vec![], vec![]]).unwrap();
        let before = files.etc().unwrap();
        // An edit in place, inside a directory (its mtime does not change).
        std::fs::write(etc.path().join("ssl/certs/ca.pem"), "new pem").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let after = loop {
            let now = files.etc().unwrap();
            if !std::sync::Arc::ptr_eq(&now, &before) {
                break now;
            }
            assert!(std::time::Instant::now() < deadline, "no new copy");
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let read = |view: &super::View| {
            std::fs::read_to_string(view.dir(false).unwrap().join("ssl/certs/ca.pem")).unwrap()
        };
        // A running command keeps what it started with.
        assert_eq!(
            (read(&before), read(&after)),
            ("pem".to_owned(), "new pem".to_owned())
        );
        let old = before.dir(false).unwrap();
        drop(before);
        assert!(!old.exists());
        assert!(after.dir(false).unwrap().exists());
    }

    #[test]
    fn an_etc_past_the_caps_is_refused_not_copied_on() {
        let etc = tempfile::tempdir().unwrap();
        // A link loop is not followed (inner links are kept as links); a
        // directory too deep is refused.
        let mut deep = etc.path().join("perl");
        for _ in 0..=super::MAX_DEPTH {
            deep = deep.join("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::os::unix::fs::symlink("..", etc.path().join("perl/loop")).unwrap();
        let files = super::Files::copying(etc.path(), &[vec![], vec![]]).unwrap();
        let error = files.etc().unwrap_err();
        assert!(error.to_string().contains("levels"), "{error}");
        // Nothing of the partial copy is left.
        assert_eq!(std::fs::read_dir(&files.dir).unwrap().count(), 2);
    }

    #[test]
    fn the_sweep_removes_only_directories_of_processes_that_are_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let own = format!("talon-jail-{}-abc", std::process::id());
        for name in [
            "talon-jail-999999999-x",
            own.as_str(),
            "talon-jail-x-y",
            "other",
        ] {
            std::fs::create_dir(tmp.path().join(name)).unwrap();
        }
        std::fs::write(tmp.path().join("talon-jail-999999999-x/f"), "").unwrap();
        super::sweep(tmp.path());
        let mut left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["other", own.as_str(), "talon-jail-x-y"]);
    }
}
