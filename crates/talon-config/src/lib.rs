//! Talon's config file, in OpenClaw's shape and syntax (JSON5).
//!
//! Where it is: `--config FILE`, else `$TALON_CONFIG`, else
//! `~/.talon/talon.json5` (which may be absent: an empty config). A file
//! named explicitly must exist. The state directory (the store, suspended
//! cells, artifacts, environments) is `$TALON_STATE_DIR`, else `~/.talon/`.
//!
//! The document is declared once, in [`model`]: serde types per section
//! (`model::Document` and below) whose doc comments, `schemars` bounds and
//! OpenClaw keys (accepted, not read) give the committed JSON Schema, the
//! whole-file check and the bounds enforced at load. A load
//! ([`Config::parse`]) reads the file once into those types
//! ([`Config::document`]); every consumer reads typed sections from it
//! (an agent's override of a `tools.*` setting by [`model::Document::tool`]),
//! never a dotted key.
//!
//! # Parts
//!
//! - `model/`: the declaration (`agents.rs`: models.providers, agents;
//!   `sandbox.rs`: an agent's sandbox; `tools.rs`: tools, Code Mode, Tool Search, approvals, MCP
//!   servers; `infra.rs`: store, gateway, diagnostics) and
//!   [`model::json_schema`], derived from it: the committed
//!   `schema/talon.config.schema.json` (drift-checked by a test; regenerate
//!   with `UPDATE_SCHEMA=1 cargo nextest run -p talon-config`).
//! - `check`: walks the derived schema over the document (unknown keys with
//!   a did-you-mean, OpenClaw's keys as notes, wrong types and values out of
//!   bounds, each with its line and column), reads the document into its
//!   types (`serde_path_to_error` names the key of anything else), then
//!   cross-references the typed sections (`references.rs`: ids, model
//!   references, variables). `Config::check_at_start` runs it for `talon
//!   gateway`, `exec` and `agent`, and `talon config check` prints it.
//! - Settings derived from typed sections for readers that want durations
//!   and defaults laid over: `Config::store` (`StoreSettings`, with
//!   `$TALON_DATABASE_URL` first), `Config::gateway` (`gateway.rs`),
//!   `Config::security` and `Config::environments` (`security.rs`: also the
//!   checks no schema says, host names, origins, absolute paths, secret
//!   names), `Config::otel` (`diagnostics.rs`).
//! - `json5`: the crate's own JSON5 parser (no parser dependency), which keeps where each value
//!   starts (`Spans`, by JSON Pointer), or for an edit the byte ranges of every key, value and
//!   comma (`json5::Layout`), and names the line and column of an error
//!   (`Json5Error::{TooDeep, Syntax}`; also used for mock scripts); it refuses nesting past 128
//!   levels at the opening bracket, so no file can overflow a stack. Files are read through
//!   `talon-fs` (at most `MAX_CONFIG_BYTES`, 16 MiB).
//! - `edit/`: `talon config get|set|unset PATH [VALUE]`, one value read or edited in place (the
//!   bytes of that value alone replaced, using the parser's `json5::Layout`), written atomically
//!   and only when the edited file passes the same check (`edit::edit_file`).
//!
//! A key is added in one place, its section's type in `model/`
//! (`tests/fixtures/every-key.json5` sets every key, and talon-cli's tests
//! start the gateway with it). `models.providers` is turned into
//! `talon_provider::ProviderConfig` by talon-runtime, from the typed
//! entries; a sandbox section builds the `talon_jail::Policy` it sets
//! (`SandboxSection::policy`, checked by the policy's own rules, which
//! `config check` reports at their keys).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use talon_fs::{FsError, Symlinks};

pub mod check;
mod diagnostics;
pub mod edit;
mod gateway;
pub mod json5;
pub mod model;
mod references;
mod security;

pub use diagnostics::{OTLP_PROTOCOL, OtelSettings};
pub use gateway::{GatewaySettings, OpenAiApproval, OpenAiSettings, base_path_of};
pub use json5::Spans;
pub use security::{EnvironmentSettings, ForgeSettings, SecretRef, SecuritySettings};

pub use model::{derive_json_schema, json_schema};

/// The deepest nesting accepted, the same as `serde_json`'s own limit.
pub const MAX_NESTING: usize = 128;

/// Parses JSON5 (and so JSON) text into a value, refusing documents nested
/// deeper than [`MAX_NESTING`] at the bracket that goes past it: the
/// value's drop recurses once per level on the caller's stack, and a file
/// must not be able to overflow it.
pub fn parse_json5(text: &str) -> std::result::Result<Value, Json5Error> {
    json5::parse(text, MAX_NESTING)
}

/// Why a JSON5 document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Json5Error {
    /// Nested deeper than the limit.
    #[error("line {line} column {column}: nested deeper than {limit} levels")]
    TooDeep {
        /// The limit.
        limit: usize,
        /// Where the first level past it opens (1-based).
        line: usize,
        /// Its column (1-based, in characters).
        column: usize,
    },
    /// Not JSON5.
    #[error("line {line} column {column}: {message}")]
    Syntax {
        /// What is wrong, and for a bracket or quote left open, where it
        /// opened.
        message: String,
        /// Where (1-based).
        line: usize,
        /// Its column (1-based, in characters).
        column: usize,
    },
}

/// Config failures.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file named by `--config` or `$TALON_CONFIG` does not exist.
    #[error("config file {0} does not exist")]
    NotFound(PathBuf),
    /// It could not be read.
    #[error("reading config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is a special file (a FIFO, a device, a directory), or too large.
    #[error("config file {path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: FsError,
    },
    /// It is not JSON5 (or nests too deeply).
    #[error("config file {path}: {source}")]
    Syntax {
        /// The file (`<config>` for a document without one).
        path: PathBuf,
        /// What is wrong, and where.
        source: Json5Error,
    },
    /// Its top level is not an object.
    #[error("config file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the position.
        message: String,
    },
    /// A value has the wrong type or is out of range.
    #[error("config key {key}: {message}")]
    Invalid {
        /// The dotted key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The whole-file check found errors (each with its line and column).
    #[error("config file {}: {}", path.display(), Errors(errors))]
    Check {
        /// The file.
        path: PathBuf,
        /// The errors, in file order.
        errors: Vec<check::Diagnostic>,
    },
    /// Neither the flag, `$TALON_CONFIG`, nor a home directory names a file.
    #[error("no config file: pass --config FILE or set TALON_CONFIG")]
    NoHome,
    /// An edit (`talon config set|unset`) cannot be made.
    #[error("config file {}: {source}", path.display())]
    Edit {
        /// The file.
        path: PathBuf,
        /// Why.
        source: edit::EditError,
    },
    /// An edit would leave a file the check refuses: it is not written.
    #[error("config file {}: the edit is refused, the file is unchanged: {}", path.display(), Errors(errors))]
    Refused {
        /// The file.
        path: PathBuf,
        /// What the check finds in the edited file: its errors and the
        /// unknown keys the edit would add (positions in the edited text).
        errors: Vec<check::Diagnostic>,
    },
    /// The edited file could not be written.
    #[error("writing config file {}: {source}", path.display())]
    Write {
        /// The file (or its directory).
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A list of errors as one message.
struct Errors<'a>(&'a [check::Diagnostic]);

impl std::fmt::Display for Errors<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            [one] => write!(f, "{one}"),
            many => {
                write!(f, "{} errors", many.len())?;
                many.iter().try_for_each(|d| write!(f, "\n  {d}"))
            }
        }
    }
}

/// `Result` of this crate.
pub type Result<T> = std::result::Result<T, ConfigError>;

/// Where the gateway keeps its state, and for how long it keeps events
/// (`store` in the config).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreSettings {
    /// `$TALON_DATABASE_URL`, else `store.url` (`sqlite:PATH` or
    /// `postgres://...`); absent: SQLite under the state directory.
    pub url: Option<String>,
    /// `store.retention.maxAgeDays`: events older than this are removed.
    pub max_event_age: Option<std::time::Duration>,
    /// `store.retention.maxEvents`: at most this many events are kept.
    pub max_events: Option<u64>,
    /// `store.retention.artifactMaxAgeDays`: artifacts older than this are
    /// purged (absent: the gateway's default, 30 days).
    pub max_artifact_age: Option<std::time::Duration>,
}

/// The largest config file read (a config is small; this bounds a mistake).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// A loaded config document: the JSON5 text read once into its types
/// ([`model::Document`]), with what the declaration's check found.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from (`None`: no file, the empty config).
    pub path: Option<PathBuf>,
    /// The document as written (for `talon config get` and edits).
    pub raw: Value,
    /// Where each value starts in the file, for diagnostics.
    pub spans: Spans,
    /// The document in its types; when the check refused values, what
    /// is left once they are taken out (see `valid`).
    document: Arc<model::Document>,
    /// Whether the whole document was read (no value refused).
    valid: bool,
    /// What the declaration's check found (the cross-references are
    /// added by [`check::check`]).
    structural: Arc<[check::Diagnostic]>,
}

impl PartialEq for Config {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.raw == other.raw
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            path: None,
            raw: Value::Object(Default::default()),
            spans: Spans::default(),
            document: Arc::default(),
            valid: true,
            structural: Arc::new([]),
        }
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The state directory: `$TALON_STATE_DIR`, else `~/.talon/`, else
/// `./.talon` when there is no home directory.
pub fn state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TALON_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    home().map_or_else(|| PathBuf::from(".talon"), |h| h.join(".talon"))
}

/// The config file: `explicit`, else `$TALON_CONFIG`, else
/// `~/.talon/talon.json5` (which may not exist); `true` for the last.
/// `None` when there is no home directory either.
pub fn config_file(explicit: Option<&Path>) -> Option<(PathBuf, bool)> {
    if let Some(path) = explicit {
        return Some((path.to_owned(), false));
    }
    if let Some(path) = std::env::var_os("TALON_CONFIG").filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(path), false));
    }
    home().map(|home| (home.join(".talon").join("talon.json5"), true))
}

impl Config {
    /// Finds and reads the config: `explicit`, else `$TALON_CONFIG`, else
    /// `~/.talon/talon.json5` if it exists, else the empty config.
    pub fn load(explicit: Option<&Path>) -> Result<Self> {
        match config_file(explicit) {
            None => Ok(Self::default()),
            Some((default, true)) if !default.exists() => Ok(Self::default()),
            Some((path, _)) => Self::read(&path),
        }
    }

    /// Reads one file: a regular file (a symlink to one is followed; a FIFO,
    /// device or directory is refused without blocking) of at most
    /// [`MAX_CONFIG_BYTES`].
    pub fn read(path: &Path) -> Result<Self> {
        let text = Self::read_text(path)?;
        Self::parse(&text, Some(path.to_owned()))
    }

    /// Reads one file's text, as [`Config::read`] does.
    pub fn read_text(path: &Path) -> Result<String> {
        talon_fs::read_capped_to_string(path, MAX_CONFIG_BYTES, Symlinks::Follow).map_err(|e| {
            match e {
                FsError::NotFound { path } => ConfigError::NotFound(path),
                FsError::Io { path, source } => ConfigError::Read { path, source },
                other => ConfigError::Unreadable {
                    path: path.to_owned(),
                    source: other,
                },
            }
        })
    }

    /// Parses a document.
    pub fn parse(text: &str, path: Option<PathBuf>) -> Result<Self> {
        let shown = path.clone().unwrap_or_else(|| PathBuf::from("<config>"));
        let (raw, spans) =
            json5::parse_spanned(text, MAX_NESTING).map_err(|source| ConfigError::Syntax {
                path: shown.clone(),
                source,
            })?;
        if !raw.is_object() {
            return Err(ConfigError::Parse {
                path: shown,
                message: "the top level must be an object".into(),
            });
        }
        let (structural, whole, rest) = check::structural(&raw, &spans);
        Ok(Self {
            path,
            raw,
            spans,
            valid: whole.is_some(),
            document: Arc::new(whole.unwrap_or(rest)),
            structural: structural.into(),
        })
    }

    /// The document in its types, read once when the config was loaded;
    /// refused when the check found a value of the wrong type or out of
    /// bounds (the first one, by its key).
    pub fn document(&self) -> Result<&model::Document> {
        if self.valid {
            return Ok(&self.document);
        }
        let first = self
            .structural
            .iter()
            .find(|d| d.severity == check::Severity::Error);
        Err(ConfigError::Invalid {
            key: first.map_or_else(String::new, |d| d.key.clone()),
            message: first.map_or_else(String::new, |d| d.message.clone()),
        })
    }

    /// The document shared, for a holder that outlives this `Config`.
    pub fn shared(&self) -> Result<Arc<model::Document>> {
        self.document().map(|_| Arc::clone(&self.document))
    }

    /// The whole-file check ([`check::check`]) as every command runs it
    /// at start: warnings are logged (each with its line and column),
    /// OpenClaw's unread keys counted in one line, and any error fails
    /// with all of them ([`ConfigError::Check`]).
    pub fn check_at_start(&self) -> Result<Vec<check::Diagnostic>> {
        let found = check::check(self);
        let file = self.shown_path();
        let errors: Vec<check::Diagnostic> = found
            .iter()
            .filter(|d| d.severity == check::Severity::Error)
            .cloned()
            .collect();
        if !errors.is_empty() {
            return Err(ConfigError::Check { path: file, errors });
        }
        for d in found
            .iter()
            .filter(|d| d.severity == check::Severity::Warning)
        {
            tracing::warn!("config {}:{d}", file.display());
        }
        let notes = found
            .iter()
            .filter(|d| d.severity == check::Severity::Note)
            .count();
        if notes > 0 {
            tracing::info!(
                keys = notes,
                "config {}: OpenClaw keys Talon does not read (`talon config check` lists them)",
                file.display()
            );
        }
        Ok(found)
    }

    /// The file's path as messages show it.
    pub fn shown_path(&self) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| PathBuf::from("<config>"))
    }

    /// The `store` section, with `$TALON_DATABASE_URL` taking precedence
    /// over `store.url`.
    pub fn store(&self) -> Result<StoreSettings> {
        self.store_with(std::env::var("TALON_DATABASE_URL").ok())
    }

    fn store_with(&self, env_url: Option<String>) -> Result<StoreSettings> {
        let store = &self.document()?.store;
        let from_env = env_url.filter(|u| !u.trim().is_empty());
        let days =
            |days: Option<f64>| days.map(|d| std::time::Duration::from_secs_f64(d * 86_400.0));
        Ok(StoreSettings {
            url: from_env.or_else(|| store.url.clone()),
            max_event_age: days(store.retention.max_age_days),
            max_events: store.retention.max_events,
            max_artifact_age: days(store.retention.artifact_max_age_days),
        })
    }
}

#[cfg(test)]
mod tests;
