//! What an environment's workspace is at the end of a run, as two
//! artifacts: a compressed snapshot (`workspace`: a `.tar.gz` of every
//! regular file, directory and symlink, links stored as links and never
//! followed, special files left out) and the changes since the baseline
//! as a git-format patch (`patch`: an mbox that `git am` applies on the
//! baseline).
//!
//! Both read the workspace without running anything in it: the snapshot
//! walks it with `lstat` and opens each file with `talon_fs`'s safe open
//! (no links, regular files only); the patch wraps the diff computed in
//! Rust ([`crate::tree`]). Both have caps: a workspace over them gives no
//! snapshot (and says why) rather than a partial one.

use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;

/// Bounds on a workspace snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotCaps {
    /// The most entries (files, directories, links).
    pub max_entries: usize,
    /// The most bytes of file content read.
    pub max_bytes: u64,
    /// The largest compressed snapshot kept.
    pub max_compressed: usize,
}

impl Default for SnapshotCaps {
    fn default() -> Self {
        Self {
            max_entries: 100_000,
            max_bytes: 1 << 30,
            max_compressed: 128 << 20,
        }
    }
}

/// A compressed snapshot of a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The `.tar.gz`.
    pub bytes: Vec<u8>,
    /// How many files it holds.
    pub files: usize,
    /// Special files (FIFOs, sockets, devices) left out.
    pub skipped: usize,
}

/// Why no snapshot was made.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The workspace is over a cap.
    #[error("the workspace is too large to snapshot: {0}")]
    TooLarge(String),
    /// Reading or writing failed.
    #[error("the workspace could not be snapshot: {0}")]
    Io(#[from] std::io::Error),
}

/// What a file's content becomes in the snapshot (the caller's
/// redaction): `None` keeps it as it is.
pub type Rewrite<'a> = &'a dyn Fn(&[u8]) -> Option<Vec<u8>>;

/// The snapshot of `workspace` (blocking: call it off the runtime). Each
/// file of at most [`REWRITE_MAX`] bytes passes through `rewrite` (the
/// gateway redacts secrets there); larger files are copied as they are.
pub fn workspace(
    workspace: &Path,
    caps: SnapshotCaps,
    rewrite: Rewrite<'_>,
) -> Result<Snapshot, SnapshotError> {
    let encoder = GzEncoder::new(Vec::new(), Compression::fast());
    let mut tar = tar::Builder::new(encoder);
    tar.follow_symlinks(false);
    tar.mode(tar::HeaderMode::Deterministic);
    let mut state = Walk {
        caps,
        rewrite,
        entries: 0,
        bytes: 0,
        files: 0,
        skipped: 0,
    };
    add_dir(&mut tar, workspace, Path::new(""), &mut state)?;
    let encoder = tar.into_inner()?;
    let bytes = encoder.finish()?;
    if bytes.len() > caps.max_compressed {
        return Err(SnapshotError::TooLarge(format!(
            "{} compressed bytes, over {}",
            bytes.len(),
            caps.max_compressed
        )));
    }
    Ok(Snapshot {
        bytes,
        files: state.files,
        skipped: state.skipped,
    })
}

/// The largest file whose content `rewrite` sees.
pub const REWRITE_MAX: u64 = 16 << 20;

struct Walk<'a> {
    caps: SnapshotCaps,
    rewrite: Rewrite<'a>,
    entries: usize,
    bytes: u64,
    files: usize,
    skipped: usize,
}

impl Walk<'_> {
    fn count(&mut self) -> Result<(), SnapshotError> {
        self.entries += 1;
        if self.entries > self.caps.max_entries {
            return Err(SnapshotError::TooLarge(format!(
                "over {} entries",
                self.caps.max_entries
            )));
        }
        Ok(())
    }
}

fn add_dir(
    tar: &mut tar::Builder<GzEncoder<Vec<u8>>>,
    dir: &Path,
    relative: &Path,
    state: &mut Walk<'_>,
) -> Result<(), SnapshotError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let name = relative.join(entry.file_name());
        let meta = std::fs::symlink_metadata(&path)?;
        let kind = meta.file_type();
        state.count()?;
        if kind.is_dir() {
            let mut header = tar::Header::new_gnu();
            header.set_metadata_in_mode(&meta, tar::HeaderMode::Deterministic);
            header.set_size(0);
            tar.append_data(&mut header, &name, std::io::empty())?;
            add_dir(tar, &path, &name, state)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&path)?;
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_size(0);
            header.set_mode(0o777);
            tar.append_link(&mut header, &name, &target)?;
        } else if kind.is_file() {
            state.bytes += meta.len();
            if state.bytes > state.caps.max_bytes {
                return Err(SnapshotError::TooLarge(format!(
                    "over {} bytes of files",
                    state.caps.max_bytes
                )));
            }
            // Opened without following links and checked regular again:
            // nothing swapped in is read.
            let file = talon_fs::open_regular(&path, talon_fs::Symlinks::Refuse)
                .map_err(std::io::Error::other)?;
            let mut header = tar::Header::new_gnu();
            header.set_metadata_in_mode(&meta, tar::HeaderMode::Deterministic);
            // A file that grew since `lstat` is cut at its size then.
            let mut content = std::io::Read::take(file, meta.len());
            if meta.len() <= REWRITE_MAX {
                let mut bytes = Vec::with_capacity(meta.len() as usize);
                std::io::Read::read_to_end(&mut content, &mut bytes)?;
                let bytes = (state.rewrite)(&bytes).unwrap_or(bytes);
                header.set_size(bytes.len() as u64);
                tar.append_data(&mut header, &name, bytes.as_slice())?;
            } else {
                header.set_size(meta.len());
                tar.append_data(&mut header, &name, content)?;
            }
            state.files += 1;
        } else {
            state.skipped += 1;
        }
    }
    Ok(())
}

/// The changes `diff` (a unified diff against the baseline, as
/// [`crate::tree`] renders it) as a one-patch git-format series: an mbox
/// message with `subject`, which `git am` applies on the baseline.
pub fn patch(diff: &str, subject: &str, date_ms: u64) -> String {
    let subject: String = subject
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    let date =
        httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_millis(date_ms))
            .replace("GMT", "+0000");
    let mut out = String::with_capacity(diff.len() + 256);
    // git's own format-patch separator line (a fixed date, as git writes).
    out.push_str("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n");
    out.push_str("From: Talon <talon@localhost>\n");
    out.push_str(&format!("Date: {date}\n"));
    out.push_str(&format!("Subject: [PATCH] {subject}\n\n"));
    out.push_str("---\n");
    out.push_str(diff);
    if !diff.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("-- \nTalon\n\n");
    out
}
