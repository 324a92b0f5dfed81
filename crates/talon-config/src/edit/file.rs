//! The config file an edit changes: found as every command finds it
//! (`--config`, `$TALON_CONFIG`, `~/.talon/talon.json5`), read through
//! `talon-fs` (a regular file, a symlink to one followed, at most
//! [`MAX_CONFIG_BYTES`](crate::MAX_CONFIG_BYTES)), edited, checked as
//! `talon config check` checks it, and written only when the check passes:
//! to a new file beside it (same directory, the old file's permissions),
//! synced, then renamed over it, so a reader sees the old file or the new
//! one and never half of either. A symlink stays a symlink: the file it
//! points to is replaced. `set` on a file that does not exist creates it
//! (mode 0600; `~/.talon/` too, mode 0700, for the default file).

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{ConfigPath, EditError, set_text, unset_text};
use crate::check::{self, Code, Diagnostic, Severity};
use crate::{Config, ConfigError, Result};

/// An edit of one value.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// `talon config set PATH VALUE`.
    Set {
        /// Where.
        path: ConfigPath,
        /// The new value.
        value: Value,
    },
    /// `talon config unset PATH`.
    Unset {
        /// Where.
        path: ConfigPath,
    },
}

/// A change written.
#[derive(Debug, Clone)]
pub struct Edited {
    /// The config file, as named.
    pub file: PathBuf,
    /// Whether the edit created it.
    pub created: bool,
    /// What the check finds in the edited file that it did not find
    /// before and that does not refuse the edit (a note that Talon does
    /// not read an OpenClaw key, say), in file order.
    pub introduced: Vec<Diagnostic>,
}

/// What a new file starts as.
const EMPTY: &str = "{\n}\n";

/// Makes `change` to the config file (`explicit`, else `$TALON_CONFIG`,
/// else `~/.talon/talon.json5`). The edited file must pass the check
/// `talon config check` runs: no errors, and no unknown key the old file
/// did not have; else [`ConfigError::Refused`] with those findings, and
/// the file is left as it was.
pub fn edit_file(explicit: Option<&Path>, change: &Change) -> Result<Edited> {
    let (file, default) = crate::config_file(explicit).ok_or(ConfigError::NoHome)?;
    let old_text = match Config::read_text(&file) {
        Ok(text) => Some(text),
        Err(ConfigError::NotFound(_)) if std::fs::symlink_metadata(&file).is_err() => None,
        Err(ConfigError::NotFound(path)) => {
            return Err(ConfigError::Read {
                path,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "a symlink to a file that does not exist",
                ),
            });
        }
        Err(e) => return Err(e),
    };
    let old = old_text
        .as_deref()
        .map(|text| Config::parse(text, Some(file.clone())))
        .transpose()?;
    let edit_error = |source: EditError| ConfigError::Edit {
        path: file.clone(),
        source,
    };
    let text = old_text.as_deref().unwrap_or(EMPTY);
    let edited = match change {
        Change::Set { path, value } => set_text(text, path, value),
        Change::Unset { path } if old_text.is_none() => Err(EditError::Absent {
            key: path.to_string(),
        }),
        Change::Unset { path } => unset_text(text, path),
    }
    .map_err(edit_error)?;
    let new = Config::parse(&edited, Some(file.clone()))?;
    let before = old.as_ref().map(check::check).unwrap_or_default();
    let same = |a: &Diagnostic, b: &Diagnostic| {
        (a.severity, a.code, &a.key, &a.message) == (b.severity, b.code, &b.key, &b.message)
    };
    let (refusing, introduced): (Vec<Diagnostic>, Vec<Diagnostic>) = check::check(&new)
        .into_iter()
        .filter(|d| d.severity == Severity::Error || !before.iter().any(|b| same(b, d)))
        .partition(|d| d.severity == Severity::Error || d.code == Code::UnknownKey);
    if !refusing.is_empty() {
        return Err(ConfigError::Refused {
            path: file,
            errors: refusing,
        });
    }
    if old_text.as_deref() != Some(edited.as_str()) {
        write(&file, &edited, old_text.is_some(), default)?;
    }
    Ok(Edited {
        file,
        created: old_text.is_none(),
        introduced,
    })
}

/// Writes `text` over `file` (the file a symlink points to, when it is
/// one) through a synced file beside it and a rename.
fn write(file: &Path, text: &str, exists: bool, create_dirs: bool) -> Result<()> {
    let failed = |path: &Path| {
        let path = path.to_owned();
        move |source| ConfigError::Write { path, source }
    };
    let target = if exists {
        std::fs::canonicalize(file).map_err(failed(file))?
    } else {
        file.to_owned()
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    if create_dirs && !exists {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(failed(&dir))?;
    }
    let old = if exists {
        Some(std::fs::metadata(&target).map_err(failed(&target))?)
    } else {
        None
    };
    let mode = old
        .as_ref()
        .map_or(0o600, |m| m.permissions().mode() & 0o7777);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temporary = dir.join(format!(".{name}.{}-{nanos}.tmp", std::process::id()));
    let written = (|| {
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)?;
        if let Some(old) = &old {
            // Kept when allowed (root editing another user's file).
            let _ = std::os::unix::fs::fchown(&out, Some(old.uid()), Some(old.gid()));
        }
        out.set_permissions(Permissions::from_mode(mode))?;
        out.write_all(text.as_bytes())?;
        out.sync_all()?;
        std::fs::rename(&temporary, &target)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map_err(failed(&target))?;
    // The rename itself survives a crash once the directory is synced.
    if let Ok(dir) = File::open(&dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}
