//! `list` and `grep`: walks of workspace directories through descriptors
//! (never following symlinks, skipping special files and `.git`), a
//! streaming line matcher with caps on matches, line text and bytes, and
//! their `glob` filter: a `globset` path glob with `literal_separator`
//! (`*` never crosses `/`, `**` crosses directories), compiled once per
//! call and matched against each path's bytes from the workspace root.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use nix::dir::Dir;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, fstatat};
use serde_json::{Value, json};

use super::path::{self, Access, Kind, Opened};
use talon_tools::{ToolError, ToolErrorCode};

use super::{
    MAX_GLOB_BYTES, MAX_GREP_BYTES, MAX_GREP_FILES, MAX_GREP_LINE_CHARS, MAX_GREP_PATTERN_BYTES,
    MAX_MATCHES, MAX_WALK_ENTRIES,
};

/// Deepest directory nesting a walk descends into.
const MAX_DEPTH: usize = 64;
/// Bytes of a line kept to show (enough for [`MAX_GREP_LINE_CHARS`]).
const KEEP_BYTES: usize = MAX_GREP_LINE_CHARS * 4;
/// Bytes at the start of a file that decide whether it is binary.
const BINARY_PROBE: usize = 8192;
/// Read buffer of `grep`.
const GREP_BUFFER: usize = 64 * 1024;

/// A regular file met by a walk.
struct Entry<'a> {
    dir: BorrowedFd<'a>,
    name: &'a OsStr,
    rel: PathBuf,
    stat: &'a FileStat,
}

/// Entries examined so far, and whether the walk was cut short by the cap.
#[derive(Default)]
struct Budget {
    entries: usize,
    cut: bool,
}

/// Visits the regular files under `dir` depth-first in name order; `false`
/// from `visit` (or the entry cap) stops the walk, and it returns `false`.
fn walk(
    dir: &mut Dir,
    rel: &Path,
    depth: usize,
    budget: &mut Budget,
    visit: &mut dyn FnMut(Entry<'_>) -> bool,
) -> bool {
    let mut names: Vec<OsString> = Vec::new();
    for entry in dir.iter() {
        let Ok(entry) = entry else {
            break;
        };
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        budget.entries += 1;
        if budget.entries > MAX_WALK_ENTRIES {
            budget.cut = true;
            return false;
        }
        names.push(name.to_owned());
    }
    names.sort();
    for name in &names {
        let Ok(stat) = fstatat(dir.as_fd(), name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) else {
            continue;
        };
        match Kind::of(&stat) {
            Kind::Dir => {
                if name == ".git" || depth >= MAX_DEPTH {
                    continue;
                }
                let flags =
                    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
                // A directory swapped for a symlink fails here: skipped.
                let Ok(mut sub) = Dir::openat(dir.as_fd(), name.as_os_str(), flags, Mode::empty())
                else {
                    continue;
                };
                if !walk(&mut sub, &rel.join(name), depth + 1, budget, visit) {
                    return false;
                }
            }
            Kind::File => {
                let entry = Entry {
                    dir: dir.as_fd(),
                    name,
                    rel: rel.join(name),
                    stat: &stat,
                };
                if !visit(entry) {
                    return false;
                }
            }
            // Symlinks are not followed; FIFOs, sockets, devices not opened.
            _ => {}
        }
    }
    true
}

/// Opens `given` for browsing and walks it (or visits it, when a file).
fn browse(
    root: &Path,
    given: &str,
    budget: &mut Budget,
    file: &mut dyn FnMut(Opened) -> bool,
    visit: &mut dyn FnMut(Entry<'_>) -> bool,
) -> Result<(), ToolError> {
    let opened = path::open(root, given, Access::Browse)?;
    if !opened.is_dir {
        file(opened);
        return Ok(());
    }
    let rel = opened.rel.clone();
    let mut dir = Dir::from_fd(OwnedFd::from(opened.file))
        .map_err(|e| ToolError::new(ToolErrorCode::IoError, format!("{given:?}: {}", e.desc())))?;
    walk(&mut dir, &rel, 0, budget, visit);
    Ok(())
}

/// The `glob` argument compiled: `*` and `?` within one path component,
/// `**` across components.
fn path_glob(glob: Option<&str>) -> Result<Option<GlobMatcher>, ToolError> {
    let Some(glob) = glob else {
        return Ok(None);
    };
    if glob.len() > MAX_GLOB_BYTES {
        return Err(ToolError::new(
            ToolErrorCode::TooLarge,
            format!(
                "the glob is {} bytes, over the limit of {MAX_GLOB_BYTES}",
                glob.len()
            ),
        ));
    }
    GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map(|glob| Some(glob.compile_matcher()))
        .map_err(|e| ToolError::new(ToolErrorCode::InvalidArgument, format!("invalid glob: {e}")))
}

fn matches_glob(glob: Option<&GlobMatcher>, rel: &Path) -> bool {
    glob.is_none_or(|g| g.is_match(rel))
}

/// `list`: regular files under `given`, filtered by `glob`.
pub(super) fn list(root: &Path, given: &str, glob: Option<&str>) -> Result<Value, ToolError> {
    let glob = path_glob(glob)?;
    let glob = glob.as_ref();
    let mut out: Vec<Value> = Vec::new();
    let mut budget = Budget::default();
    let mut single = None;
    browse(
        root,
        given,
        &mut budget,
        &mut |opened| {
            single = Some(opened.rel.clone());
            true
        },
        &mut |entry| {
            if matches_glob(glob, &entry.rel) {
                out.push(Value::String(entry.rel.display().to_string()));
            }
            out.len() < MAX_MATCHES
        },
    )?;
    if let Some(rel) = single
        && matches_glob(glob, &rel)
    {
        out.push(Value::String(rel.display().to_string()));
    }
    let truncated = out.len() >= MAX_MATCHES || budget.cut;
    Ok(json!({"paths": out, "truncated": truncated}))
}

/// `grep`: lines containing `pattern` in the regular files under `given`.
pub(super) fn grep(
    root: &Path,
    pattern: &str,
    given: &str,
    glob: Option<&str>,
) -> Result<Value, ToolError> {
    if pattern.len() > MAX_GREP_PATTERN_BYTES {
        return Err(ToolError::new(
            ToolErrorCode::TooLarge,
            format!(
                "the pattern is {} bytes, over the limit of {MAX_GREP_PATTERN_BYTES}",
                pattern.len()
            ),
        ));
    }
    let glob = path_glob(glob)?;
    let glob = glob.as_ref();
    let mut state = Grep {
        pattern,
        matches: Vec::new(),
        scanned: 0,
        files: 0,
        truncated: false,
    };
    let mut budget = Budget::default();
    let mut single = None;
    browse(
        root,
        given,
        &mut budget,
        &mut |opened| {
            single = Some(opened);
            true
        },
        &mut |entry| {
            if !matches_glob(glob, &entry.rel) {
                return true;
            }
            state.files += 1;
            if state.files > MAX_GREP_FILES {
                state.truncated = true;
                return false;
            }
            match path::open_file_at(entry.dir, entry.name, OFlag::O_RDONLY, Some(entry.stat)) {
                Ok(file) => state.scan(file, &entry.rel),
                Err(_) => true,
            }
        },
    )?;
    if let Some(opened) = single
        && matches_glob(glob, &opened.rel)
    {
        state.scan(opened.file, &opened.rel);
    }
    let truncated = state.truncated || budget.cut;
    Ok(json!({"matches": state.matches, "truncated": truncated}))
}

struct Grep<'p> {
    pattern: &'p str,
    matches: Vec<Value>,
    scanned: u64,
    files: usize,
    truncated: bool,
}

impl Grep<'_> {
    /// Streams `file` line by line; `false` once a cap is reached.
    fn scan(&mut self, file: std::fs::File, rel: &Path) -> bool {
        let mut reader = BufReader::with_capacity(GREP_BUFFER, file);
        let mut line = Line::default();
        let mut number = 1usize;
        let mut first = true;
        loop {
            let Ok(buf) = reader.fill_buf() else {
                // Unreadable midway: keep what was found, go on.
                return true;
            };
            if buf.is_empty() {
                if line.started {
                    self.finish(&mut line, rel, number);
                }
                return !self.truncated;
            }
            if first {
                first = false;
                if buf[..buf.len().min(BINARY_PROBE)].contains(&0) {
                    return true;
                }
            }
            let left = MAX_GREP_BYTES.saturating_sub(self.scanned);
            if left == 0 {
                self.truncated = true;
                return false;
            }
            let chunk = &buf[..buf.len().min(usize::try_from(left).unwrap_or(usize::MAX))];
            let used = match chunk.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    line.feed(&chunk[..end], self.pattern);
                    self.finish(&mut line, rel, number);
                    number += 1;
                    end + 1
                }
                None => {
                    line.feed(chunk, self.pattern);
                    chunk.len()
                }
            };
            reader.consume(used);
            self.scanned += used as u64;
            if self.truncated {
                return false;
            }
        }
    }

    fn finish(&mut self, line: &mut Line, rel: &Path, number: usize) {
        let done = std::mem::take(line);
        if !done.found {
            return;
        }
        let mut kept = done.kept;
        if done.whole && kept.last() == Some(&b'\r') {
            kept.pop();
        }
        let text: String = String::from_utf8_lossy(&kept)
            .chars()
            .take(MAX_GREP_LINE_CHARS)
            .collect();
        self.matches
            .push(json!({"path": rel.display().to_string(), "line": number, "text": text}));
        if self.matches.len() >= MAX_MATCHES {
            self.truncated = true;
        }
    }
}

/// One line being streamed: its first bytes (to show), whether the pattern
/// was found, and the tail that a match across two pieces could start in.
#[derive(Default)]
struct Line {
    kept: Vec<u8>,
    carry: Vec<u8>,
    found: bool,
    started: bool,
    /// Whether `kept` holds the whole line so far.
    whole: bool,
}

impl Line {
    fn feed(&mut self, piece: &[u8], pattern: &str) {
        if !self.started {
            self.started = true;
            self.whole = true;
        }
        let room = KEEP_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&piece[..piece.len().min(room)]);
        self.whole &= piece.len() <= room;
        if self.found {
            return;
        }
        if pattern.is_empty() {
            self.found = true;
            return;
        }
        let overlap = pattern.len() - 1;
        let mut edge = std::mem::take(&mut self.carry);
        let old = edge.len();
        edge.extend_from_slice(&piece[..piece.len().min(overlap)]);
        if (old > 0 && contains(&edge, pattern)) || contains(piece, pattern) {
            self.found = true;
            return;
        }
        self.carry = if piece.len() >= overlap {
            piece[piece.len() - overlap..].to_vec()
        } else {
            edge[edge.len().saturating_sub(overlap)..].to_vec()
        };
    }
}

/// Whether `haystack` contains `pattern` (linear-time, through `str`).
fn contains(haystack: &[u8], pattern: &str) -> bool {
    match std::str::from_utf8(haystack) {
        Ok(text) => text.contains(pattern),
        Err(_) => String::from_utf8_lossy(haystack).contains(pattern),
    }
}
