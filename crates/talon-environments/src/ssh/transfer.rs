//! A workspace as a tar stream and back, in Rust, bounded ([`Caps`]).
//!
//! [`pack`] walks the local mirror without following a link: directories,
//! regular files (opened without following links, refused if swapped for
//! anything else) and symlinks (as links); FIFOs, sockets and devices are
//! left out. [`unpack`] reads what the remote host sent into a fresh
//! directory: it refuses an absolute path or `..` anywhere in a name (the
//! whole transfer fails), never writes through a link (every parent of an
//! entry must be a real directory it made; files are created with
//! `O_EXCL`, which does not follow one), takes only directories, regular
//! files and symlinks (a hard link, device or FIFO is skipped and
//! counted), and keeps permission bits but no set-id or sticky bit and no
//! owner. [`fingerprint`] says whether a tree changed since it was last
//! synced.

use std::fs::{self, File, OpenOptions};
use std::hash::{Hash as _, Hasher as _};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// What one transfer may move.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// Entries.
    pub entries: usize,
    /// Bytes of file content.
    pub bytes: u64,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            entries: 200_000,
            bytes: 4 << 30,
        }
    }
}

/// What a transfer moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Entries (directories, files, links).
    pub entries: usize,
    /// Bytes of file content.
    pub bytes: u64,
    /// Entries left out (special files, hard links).
    pub skipped: usize,
}

impl Counts {
    fn entry(&mut self, caps: Caps, bytes: u64) -> Result<(), String> {
        self.entries += 1;
        self.bytes += bytes;
        if self.entries > caps.entries {
            return Err(format!(
                "the workspace has more than {} entries, more than a transfer takes",
                caps.entries
            ));
        }
        if self.bytes > caps.bytes {
            return Err(format!(
                "the workspace holds more than {} bytes, more than a transfer takes",
                caps.bytes
            ));
        }
        Ok(())
    }
}

/// Every entry under `root` (relative path, path, metadata), parents
/// before children, names sorted, links not followed.
fn walk(
    root: &Path,
    caps: Caps,
    mut visit: impl FnMut(&Path, &Path, &fs::Metadata) -> Result<(), String>,
) -> Result<(), String> {
    let mut stack = vec![PathBuf::new()];
    let mut seen = 0usize;
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let mut names = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            names.push(entry.file_name());
            seen += 1;
            if seen > caps.entries {
                return Err(format!(
                    "the workspace has more than {} entries, more than a transfer takes",
                    caps.entries
                ));
            }
        }
        names.sort();
        let mut dirs = Vec::new();
        for name in names {
            let rel = rel.join(&name);
            let path = root.join(&rel);
            let meta =
                fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            visit(&rel, &path, &meta)?;
            if meta.file_type().is_dir() {
                dirs.push(rel);
            }
        }
        stack.extend(dirs.into_iter().rev());
    }
    Ok(())
}

fn header(kind: tar::EntryType, meta: &fs::Metadata, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(meta.mode() & 0o777);
    header.set_mtime(u64::try_from(meta.mtime()).unwrap_or(0));
    header.set_size(size);
    header
}

/// Writes the tree at `root` to `out` as a tar stream.
pub(crate) fn pack(root: &Path, out: &mut impl Write, caps: Caps) -> Result<Counts, String> {
    let mut builder = tar::Builder::new(out);
    let mut counts = Counts::default();
    let failed = |path: &Path, e: io::Error| format!("sending {}: {e}", path.display());
    walk(root, caps, |rel, path, meta| {
        let kind = meta.file_type();
        if kind.is_dir() {
            counts.entry(caps, 0)?;
            let mut header = header(tar::EntryType::Directory, meta, 0);
            builder
                .append_data(&mut header, rel, io::empty())
                .map_err(|e| failed(path, e))
        } else if kind.is_symlink() {
            counts.entry(caps, 0)?;
            let target = fs::read_link(path).map_err(|e| failed(path, e))?;
            let mut header = header(tar::EntryType::Symlink, meta, 0);
            builder
                .append_link(&mut header, rel, &target)
                .map_err(|e| failed(path, e))
        } else if kind.is_file() {
            let file = talon_fs::open_regular(path, talon_fs::Symlinks::Refuse)
                .map_err(|e| format!("sending {}: {e}", path.display()))?;
            let meta = file.metadata().map_err(|e| failed(path, e))?;
            counts.entry(caps, meta.len())?;
            let mut header = header(tar::EntryType::Regular, &meta, meta.len());
            builder
                .append_data(&mut header, rel, file.take(meta.len()))
                .map_err(|e| failed(path, e))
        } else {
            counts.skipped += 1;
            Ok(())
        }
    })?;
    builder
        .into_inner()
        .map_err(|e| format!("sending the workspace: {e}"))?;
    Ok(counts)
}

/// A name from the archive as components under the root: `./` and empty
/// parts dropped; `..`, an absolute path or a NUL refused.
fn components(name: &[u8]) -> Result<Vec<&[u8]>, String> {
    if name.starts_with(b"/") || name.contains(&0) {
        return Err(format!(
            "the remote workspace's archive names {:?}, an absolute path; nothing was taken",
            String::from_utf8_lossy(name)
        ));
    }
    let mut parts = Vec::new();
    for part in name.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                return Err(format!(
                    "the remote workspace's archive names {:?}, which leads out with ..; nothing was taken",
                    String::from_utf8_lossy(name)
                ));
            }
            part => parts.push(part),
        }
    }
    Ok(parts)
}

/// `root/parts[..]`, each parent a real directory (made when missing,
/// never through a link).
fn parent_dirs(root: &Path, parts: &[&[u8]]) -> Result<PathBuf, String> {
    let mut path = root.to_path_buf();
    for part in parts {
        path.push(std::ffi::OsStr::from_bytes(part));
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_dir() => {}
            Ok(_) => {
                return Err(format!(
                    "the remote workspace's archive puts an entry under {}, which is not a directory; nothing was taken",
                    path.display()
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Ok(path)
}

/// Removes what is at `path` (not following a link), if anything.
fn clear(path: &Path) -> Result<(), String> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
    .map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads a tar stream into the directory `root` (made here: it must not
/// exist).
pub(crate) fn unpack(input: &mut impl Read, root: &Path, caps: Caps) -> Result<Counts, String> {
    fs::create_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let mut archive = tar::Archive::new(input);
    let mut counts = Counts::default();
    let entries = archive
        .entries()
        .map_err(|e| format!("reading the remote workspace: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("reading the remote workspace: {e}"))?;
        let name = entry.path_bytes().into_owned();
        let parts = components(&name)?;
        let Some((last, parents)) = parts.split_last() else {
            continue;
        };
        let kind = entry.header().entry_type();
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        let mtime = entry.header().mtime().unwrap_or(0);
        match kind {
            tar::EntryType::Directory => {
                counts.entry(caps, 0)?;
                let path = parent_dirs(root, &parts)?;
                fs::set_permissions(&path, fs::Permissions::from_mode(mode | 0o700))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry.header().size().unwrap_or(0);
                counts.entry(caps, size)?;
                let mut path = parent_dirs(root, parents)?;
                path.push(std::ffi::OsStr::from_bytes(last));
                clear(&path)?;
                let mut file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode | 0o600)
                    .open(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let copied = io::copy(&mut (&mut entry).take(size), &mut file)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                if copied != size {
                    return Err(format!(
                        "the remote workspace's archive ended inside {}",
                        path.display()
                    ));
                }
                set_mtime(&file, mtime);
                fs::set_permissions(&path, fs::Permissions::from_mode(mode))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            tar::EntryType::Symlink => {
                counts.entry(caps, 0)?;
                let target = entry
                    .link_name_bytes()
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                if target.is_empty() || target.contains(&0) {
                    counts.skipped += 1;
                    continue;
                }
                let mut path = parent_dirs(root, parents)?;
                path.push(std::ffi::OsStr::from_bytes(last));
                clear(&path)?;
                std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&target), &path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => {}
            _ => counts.skipped += 1,
        }
    }
    Ok(counts)
}

fn set_mtime(file: &File, mtime: u64) {
    // A file whose time cannot be set keeps the current one.
    let _ = file.set_modified(UNIX_EPOCH + Duration::from_secs(mtime));
}

/// A digest of the tree at `root`: names, kinds, sizes, times and modes
/// (not contents), as a later [`fingerprint`] of the same tree repeats it
/// only if nothing was written since.
pub(crate) fn fingerprint(root: &Path, caps: Caps) -> Result<u64, String> {
    let mut hasher = std::hash::DefaultHasher::new();
    walk(root, caps, |rel, _, meta| {
        rel.as_os_str().as_bytes().hash(&mut hasher);
        (
            meta.mode(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ino(),
        )
            .hash(&mut hasher);
        Ok(())
    })?;
    Ok(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        build(&mut builder);
        builder.into_inner().unwrap()
    }

    fn raw(
        builder: &mut tar::Builder<Vec<u8>>,
        kind: tar::EntryType,
        name: &[u8],
        link: &[u8],
        data: &[u8],
    ) {
        let mut header = tar::Header::new_old();
        header.set_entry_type(kind);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        // Names written as they are, unchecked, as a hostile host would.
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.as_old_mut().linkname[..link.len()].copy_from_slice(link);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }

    #[test]
    fn a_round_trip_keeps_files_links_and_modes() {
        let from = tempfile::tempdir().unwrap();
        let sub = from.path().join("dir with 'quotes' $(x)");
        fs::create_dir(&sub).unwrap();
        fs::write(sub.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(sub.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(from.path().join("new\nline"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", from.path().join("link")).unwrap();
        let mut bytes = Vec::new();
        let packed = pack(from.path(), &mut bytes, Caps::default()).unwrap();
        assert_eq!((packed.entries, packed.bytes), (4, 11));
        let to = tempfile::tempdir().unwrap();
        let root = to.path().join("w");
        unpack(&mut bytes.as_slice(), &root, Caps::default()).unwrap();
        assert_eq!(fs::read_to_string(root.join("new\nline")).unwrap(), "x");
        let run = root.join("dir with 'quotes' $(x)/run.sh");
        assert_eq!(fs::metadata(&run).unwrap().mode() & 0o777, 0o755);
        assert_eq!(
            fs::read_link(root.join("link")).unwrap(),
            Path::new("/etc/passwd")
        );
        assert_eq!(
            fingerprint(&root, Caps::default()).unwrap(),
            fingerprint(&root, Caps::default()).unwrap()
        );
    }

    #[test]
    fn dot_dot_absolute_and_writes_through_links_are_refused() {
        for (name, bytes) in [
            (
                "dot-dot",
                archive(|b| raw(b, tar::EntryType::Regular, b"a/../../escape", b"", b"x")),
            ),
            (
                "absolute",
                archive(|b| raw(b, tar::EntryType::Regular, b"/tmp/escape", b"", b"x")),
            ),
            (
                "through a link",
                archive(|b| {
                    raw(b, tar::EntryType::Symlink, b"out", b"/tmp", b"");
                    raw(b, tar::EntryType::Regular, b"out/escape", b"", b"x");
                }),
            ),
        ] {
            let to = tempfile::tempdir().unwrap();
            let error = unpack(&mut bytes.as_slice(), &to.path().join("w"), Caps::default())
                .expect_err(name);
            assert!(error.contains("nothing was taken"), "{name}: {error}");
        }
        // A link then a file of the same name: the link is replaced, not
        // followed.
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("target");
        fs::write(&target, "kept").unwrap();
        let bytes = archive(|b| {
            raw(
                b,
                tar::EntryType::Symlink,
                b"f",
                target.as_os_str().as_bytes(),
                b"",
            );
            raw(b, tar::EntryType::Regular, b"f", b"", b"new");
            raw(b, tar::EntryType::Fifo, b"fifo", b"", b"");
            raw(b, tar::EntryType::Link, b"hard", b"/etc/shadow", b"");
        });
        let to = tempfile::tempdir().unwrap();
        let counts = unpack(&mut bytes.as_slice(), &to.path().join("w"), Caps::default()).unwrap();
        assert_eq!(counts.skipped, 2);
        assert_eq!(fs::read_to_string(&target).unwrap(), "kept");
        assert_eq!(fs::read_to_string(to.path().join("w/f")).unwrap(), "new");
    }

    #[test]
    fn caps_hold() {
        let from = tempfile::tempdir().unwrap();
        for i in 0..5 {
            fs::write(from.path().join(i.to_string()), "12345").unwrap();
        }
        let caps = Caps {
            entries: 3,
            bytes: 1 << 20,
        };
        assert!(pack(from.path(), &mut Vec::new(), caps).is_err());
        let caps = Caps {
            entries: 100,
            bytes: 10,
        };
        assert!(pack(from.path(), &mut Vec::new(), caps).is_err());
    }
}
