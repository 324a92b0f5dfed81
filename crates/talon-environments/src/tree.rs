//! A workspace's baseline and its diff, without git: the baseline is a
//! copy of the workspace's files made when it was prepared, kept beside
//! it (`<dir>/baseline`, where the run's tools do not reach), and a run's
//! changes are the two trees compared in Rust.
//!
//! Walking never follows a symlink (a link is compared as its target's
//! text, as git does), reads only regular files (opened without following
//! links, non-blocking: a FIFO or device swapped in is refused), and
//! never leaves the tree it walks: the workspace is written by a run's
//! commands meanwhile, so every listing and every read goes through
//! directory handles from the tree's root ([`talon_fs::walk`]), never a
//! path re-resolved after it was checked. It is bounded ([`Caps`]). The top-level `.git` is not part of either
//! tree; the baseline's `.gitignore` (its top-level one, in git's syntax,
//! read with the `ignore` crate's gitignore matcher) leaves ignored paths
//! out of both.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use talon_fs::walk::Entry;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use talon_protocol::event_data::GitDiffData;

/// Levels of directories a walk descends at most.
const WALK_DEPTH: u32 = 256;

/// What a walk and a diff may cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// Entries walked per tree.
    pub entries: usize,
    /// Files larger than this are compared, not diffed by line.
    pub text_bytes: u64,
    /// The diff's length; past it the rest is summarised.
    pub diff_bytes: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            entries: 100_000,
            text_bytes: 1 << 20,
            diff_bytes: 16 << 20,
        }
    }
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File { size: u64 },
    Link(String),
    Dir,
}

/// A walked tree: relative path (with `/`) to node.
type Tree = BTreeMap<String, Node>;

/// Why a tree could not be walked or copied.
pub(crate) type Failure = String;

/// The top-level `.gitignore`'s rules, in git's syntax as `ignore`'s
/// gitignore matcher reads it (the last matching rule decides; `!`
/// re-includes; a pattern with a `/` before its end is anchored; `*` and
/// `?` stay within a directory, `**` crosses them; `[...]` classes).
#[derive(Debug)]
pub(crate) struct Ignore {
    rules: Gitignore,
}

impl Default for Ignore {
    fn default() -> Self {
        Self {
            rules: Gitignore::empty(),
        }
    }
}

impl Ignore {
    /// The rules of the `.gitignore` at `root` (none when absent or not a
    /// regular file; at most its first 10,000 lines of 256 KiB; a line
    /// that is not a valid glob is skipped, as git skips it).
    pub(crate) fn of(root: &Path) -> Self {
        let text = talon_fs::read_capped_to_string(
            &root.join(".gitignore"),
            256 << 10,
            talon_fs::Symlinks::Refuse,
        )
        .unwrap_or_default();
        let mut builder = GitignoreBuilder::new(root);
        for line in text.lines().take(10_000) {
            if builder.add_line(None, line).is_err() {
                continue;
            }
        }
        match builder.build() {
            Ok(rules) => Self { rules },
            Err(error) => {
                tracing::warn!(%error, "the baseline's .gitignore could not be compiled; nothing is ignored");
                Self::default()
            }
        }
    }

    /// Whether `path` (relative, `/`-separated) is ignored.
    fn ignores(&self, path: &str, is_dir: bool) -> bool {
        self.rules.matched(path, is_dir).is_ignore()
    }
}

/// A handle of the tree at `root` (the gateway's own directory); every
/// read below it goes through handles ([`talon_fs::walk`]).
fn open_root(root: &Path) -> Result<OwnedFd, Failure> {
    std::fs::File::open(root)
        .map(OwnedFd::from)
        .map_err(|e| format!("{}: {e}", root.display()))
}

/// Walks the tree `root` holds: every entry but the top-level `.git` and
/// what `ignore` leaves out, through directory handles (a directory
/// swapped for a link while it is walked is never entered).
fn walk(root: &OwnedFd, ignore: &Ignore, caps: Caps) -> Result<Tree, Failure> {
    let mut tree = Tree::new();
    let limits = talon_fs::tree::Caps {
        entries: caps.entries as u64,
        bytes: 0,
        depth: WALK_DEPTH,
    };
    talon_fs::walk::walk_tree(root, limits, &mut |relative, entry| {
        let path = relative.to_string_lossy().into_owned();
        let is_dir = *entry == Entry::Dir;
        if path == ".git" || ignore.ignores(&path, is_dir) {
            return false;
        }
        let node = match entry {
            Entry::Dir => Node::Dir,
            Entry::File { size } => Node::File { size: *size },
            Entry::Link(target) => Node::Link(target.to_string_lossy().into_owned()),
        };
        tree.insert(path, node);
        true
    })
    .map_err(|e| match e {
        talon_fs::tree::TreeError::TooLarge {
            what: "entries",
            cap,
        } => {
            format!("more than {cap} entries")
        }
        other => other.to_string(),
    })?;
    Ok(tree)
}

/// Copies `workspace`'s tree (as [`walk`] sees it) to `baseline`, which
/// must not exist.
pub(crate) fn snapshot(workspace: &Path, baseline: &Path, caps: Caps) -> Result<(), Failure> {
    let ignore = Ignore::of(workspace);
    let root = open_root(workspace)?;
    let tree = walk(&root, &ignore, caps)?;
    // The rules the diff applies are the baseline's `.gitignore`, copied
    // with the rest of the tree.
    std::fs::create_dir(baseline).map_err(|e| format!("{}: {e}", baseline.display()))?;
    for (path, node) in &tree {
        let to = baseline.join(path);
        let made = match node {
            Node::Dir => std::fs::create_dir_all(&to),
            Node::Link(target) => std::os::unix::fs::symlink(target, &to),
            Node::File { .. } => copy_regular(&root, path, &to),
        };
        made.map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

fn copy_regular(root: &OwnedFd, path: &str, to: &Path) -> std::io::Result<()> {
    let mut source =
        talon_fs::walk::open_file_under(root, Path::new(path)).map_err(std::io::Error::other)?;
    let mut target = std::fs::File::create_new(to)?;
    std::io::copy(&mut source, &mut target)?;
    Ok(())
}

/// Reads a regular file below `root` of at most `cap` bytes without
/// following links; `None` when it is larger (or unreadable).
fn read_small(root: &OwnedFd, path: &str, cap: u64) -> Option<Vec<u8>> {
    let file = talon_fs::walk::open_file_under(root, Path::new(path)).ok()?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= cap).then_some(bytes)
}

/// Whether the two regular files at `path` below `a` and `b` hold the
/// same bytes (streamed).
fn same_content(a: &OwnedFd, b: &OwnedFd, path: &str) -> bool {
    let open = |root: &OwnedFd| talon_fs::walk::open_file_under(root, Path::new(path)).ok();
    let (Some(mut a), Some(mut b)) = (open(a), open(b)) else {
        return false;
    };
    let (mut left, mut right) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    loop {
        let n = match a.read(&mut left) {
            Ok(n) => n,
            Err(_) => return false,
        };
        let mut got = 0;
        while got < n {
            match b.read(&mut right[got..n]) {
                Ok(0) | Err(_) => return false,
                Ok(m) => got += m,
            }
        }
        if left[..n] != right[..n] {
            return false;
        }
        if n == 0 {
            return matches!(b.read(&mut right[..1]), Ok(0));
        }
    }
}

/// The changes from `baseline` to `workspace`: a unified diff and its
/// summary (`None` when nothing changed).
pub(crate) fn diff(
    baseline: &Path,
    workspace: &Path,
    caps: Caps,
) -> Result<Option<(String, GitDiffData)>, Failure> {
    let ignore = Ignore::of(baseline);
    let (baseline, workspace) = (open_root(baseline)?, open_root(workspace)?);
    let before = walk(&baseline, &ignore, caps)?;
    let after = walk(&workspace, &ignore, caps)?;
    let mut paths: Vec<&String> = before.keys().chain(after.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut out = String::new();
    let mut summary = GitDiffData {
        files: Vec::new(),
        additions: 0,
        deletions: 0,
        artifact_id: None,
    };
    let mut omitted = 0usize;
    for path in paths {
        let (old, new) = (before.get(path), after.get(path));
        let content = |root: &OwnedFd, node: Option<&Node>| -> Option<Content> {
            match node? {
                Node::Dir => None,
                Node::Link(target) => Some(Content::Text(target.clone().into_bytes())),
                Node::File { size } if *size > caps.text_bytes => Some(Content::Large),
                Node::File { .. } => Some(match read_small(root, path, caps.text_bytes) {
                    Some(bytes) if !bytes.contains(&0) => Content::Text(bytes),
                    _ => Content::Binary,
                }),
            }
        };
        let changed = match (old, new) {
            (None, None) | (Some(Node::Dir), Some(Node::Dir)) => false,
            (Some(Node::File { size: a }), Some(Node::File { size: b })) => {
                a != b || !same_content(&baseline, &workspace, path)
            }
            (a, b) => a != b,
        };
        if !changed {
            continue;
        }
        let (old, new) = (content(&baseline, old), content(&workspace, new));
        if old.is_none() && new.is_none() {
            continue;
        }
        summary.files.push(path.clone());
        let text = match (&old, &new) {
            (Some(Content::Text(_)) | None, Some(Content::Text(_)) | None) => {
                let a = match &old {
                    Some(Content::Text(a)) => Some(a.as_slice()),
                    _ => None,
                };
                let b: &[u8] = match &new {
                    Some(Content::Text(b)) => b,
                    _ => &[],
                };
                let rendered = render(path, a, b, new.is_none());
                for line in rendered.lines() {
                    if line.starts_with('+') && !line.starts_with("+++") {
                        summary.additions += 1;
                    } else if line.starts_with('-') && !line.starts_with("---") {
                        summary.deletions += 1;
                    }
                }
                rendered
            }
            _ => format!(
                "Binary files {} and {} differ\n",
                side("a", path, old.is_some()),
                side("b", path, new.is_some())
            ),
        };
        if out.len() + text.len() > caps.diff_bytes {
            omitted += 1;
            continue;
        }
        out.push_str(&text);
    }
    if summary.files.is_empty() {
        return Ok(None);
    }
    if omitted > 0 {
        out.push_str(&format!(
            "# {omitted} more changed file(s) not shown: the diff is capped at {} bytes\n",
            caps.diff_bytes
        ));
    }
    Ok(Some((out, summary)))
}

enum Content {
    Text(Vec<u8>),
    Binary,
    Large,
}

fn side(prefix: &str, path: &str, present: bool) -> String {
    if present {
        format!("{prefix}/{path}")
    } else {
        "/dev/null".to_owned()
    }
}

/// A unified diff of one path: `before` `None` for a new file, `deleted`
/// for a removed one.
fn render(path: &str, before: Option<&[u8]>, after: &[u8], deleted: bool) -> String {
    let old = before.map(String::from_utf8_lossy).unwrap_or_default();
    let new = String::from_utf8_lossy(after);
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(
            &side("a", path, before.is_some()),
            &side("b", path, !deleted),
        )
        .to_string()
}

/// The baseline of the workspace under `dir`.
pub(crate) fn baseline_of(dir: &Path) -> PathBuf {
    dir.join("baseline")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn gitignore_rules_follow_git() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            ".gitignore",
            "# comment\n\n*.log\n!keep.log\n/top.txt\nbuild/\ndocs/*.md\nsrc/**/gen\n\
             *.[oa]\n[unclosed\n",
        );
        let ignore = Ignore::of(dir.path());
        for (path, is_dir, ignored) in [
            ("x.log", false, true),
            ("deep/er/x.log", false, true),
            ("keep.log", false, false),
            ("top.txt", false, true),
            ("sub/top.txt", false, false),
            ("build", true, true),
            ("build", false, false),
            ("a/build", true, true),
            ("docs/a.md", false, true),
            ("docs/sub/a.md", false, false),
            ("src/gen", true, true),
            ("src/a/b/gen", false, true),
            ("lib.o", false, true),
            ("lib.c", false, false),
        ] {
            assert_eq!(ignore.ignores(path, is_dir), ignored, "{path}");
        }
    }

    #[test]
    fn changes_are_diffed_without_git_and_ignored_paths_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        write(&ws, "a.txt", "one\ntwo\n");
        write(&ws, "gone.txt", "bye\n");
        write(&ws, ".gitignore", "build/\n*.log\n!keep.log\n");
        write(&ws, ".git/config", "[core]\n");
        std::os::unix::fs::symlink("a.txt", ws.join("link")).unwrap();
        snapshot(&ws, &baseline_of(dir.path()), Caps::default()).unwrap();
        assert!(!baseline_of(dir.path()).join(".git").exists());
        write(&ws, "a.txt", "one\n2\n");
        std::fs::remove_file(ws.join("gone.txt")).unwrap();
        write(&ws, "new/b.txt", "fresh\n");
        write(&ws, "build/out.o", "ignored");
        write(&ws, "x.log", "ignored");
        write(&ws, "keep.log", "kept\n");
        write(
            &ws,
            ".git/config",
            "[core]\n\tfsmonitor = touch /tmp/pwned\n",
        );
        std::fs::remove_file(ws.join("link")).unwrap();
        std::os::unix::fs::symlink("/etc/shadow", ws.join("link")).unwrap();
        let (text, summary) = diff(&baseline_of(dir.path()), &ws, Caps::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            summary,
            GitDiffData {
                files: ["a.txt", "gone.txt", "keep.log", "link", "new/b.txt"]
                    .map(String::from)
                    .to_vec(),
                additions: 4,
                deletions: 3,
                artifact_id: None,
            }
        );
        assert!(text.contains("--- a/a.txt\n+++ b/a.txt\n"), "{text}");
        assert!(text.contains("--- a/gone.txt\n+++ /dev/null\n"), "{text}");
        assert!(text.contains("--- /dev/null\n+++ b/new/b.txt\n"), "{text}");
        // A link is its target's text, never the file it names.
        assert!(text.contains("+/etc/shadow"), "{text}");
        assert!(!text.contains("root:"), "{text}");
        // Nothing changed: nothing to say.
        let again = dir.path().join("again");
        snapshot(&ws, &again, Caps::default()).unwrap();
        assert_eq!(diff(&again, &ws, Caps::default()).unwrap(), None);
    }

    #[test]
    fn large_and_binary_files_are_compared_not_printed_and_caps_hold() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        write(&ws, "big.txt", &"x".repeat(2 << 20));
        std::fs::write(ws.join("bin"), [0u8, 1, 2]).unwrap();
        snapshot(&ws, &baseline_of(dir.path()), Caps::default()).unwrap();
        write(&ws, "big.txt", &"y".repeat(2 << 20));
        std::fs::write(ws.join("bin"), [0u8, 1, 3]).unwrap();
        let (text, summary) = diff(&baseline_of(dir.path()), &ws, Caps::default())
            .unwrap()
            .unwrap();
        assert_eq!(summary.files, ["big.txt", "bin"]);
        assert_eq!(
            text,
            "Binary files a/big.txt and b/big.txt differ\nBinary files a/bin and b/bin differ\n"
        );
        let tight = Caps {
            entries: 1,
            ..Caps::default()
        };
        assert_eq!(
            diff(&baseline_of(dir.path()), &ws, tight).unwrap_err(),
            "more than 1 entries"
        );
    }

    #[test]
    fn a_directory_swapped_for_a_link_while_diffed_never_leaks_outside() {
        let dir = tempfile::tempdir().unwrap();
        let (workspace, baseline) = (dir.path().join("ws"), dir.path().join("base"));
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(workspace.join("d")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("f.txt"), "OUTSIDE SECRET\n").unwrap();
        std::fs::write(workspace.join("d/f.txt"), "mine\n").unwrap();
        snapshot(&workspace, &baseline, Caps::default()).unwrap();
        std::fs::write(workspace.join("d/f.txt"), "changed\n").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, workspace, outside) = (stop.clone(), workspace.clone(), outside.clone());
            std::thread::spawn(move || {
                let (real, aside) = (workspace.join("d"), workspace.join("d.real"));
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // The directory and a link to outside take turns.
                    if std::fs::rename(&real, &aside).is_ok() {
                        let _ = std::os::unix::fs::symlink(&outside, &real);
                        std::thread::yield_now();
                        let _ = std::fs::remove_file(&real);
                        let _ = std::fs::rename(&aside, &real);
                    }
                }
            })
        };
        for _ in 0..300 {
            if let Ok(Some((text, _))) = diff(&baseline, &workspace, Caps::default()) {
                assert!(!text.contains("OUTSIDE SECRET"), "{text}");
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
    }
}
