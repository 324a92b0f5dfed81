//! Managed environments: the seed's `EnvironmentProvider` contract
//! ([`EnvironmentProvider`]) and the gateway's use of it. A provider
//! prepares a workspace, binds secrets by reference and a network policy
//! for the runs started in it, collects what the runs changed (a `diff`
//! artifact with `git.diff`, and `git.branch` for a checkout), and cleans
//! up or retains the workspace by policy. The record of each environment
//! (the protocol's [`Environment`], settings as given) is in the store;
//! its workspace is under `<state_dir>/environments/<id>/`. One provider
//! ships: `local` ([`local`]).
//!
//! # Threat model
//!
//! A caller with `environment.write` chooses settings; a run in the
//! environment controls its workspace (the model writes files, and
//! approved shell commands run there). Neither chooses what the gateway
//! itself reads or runs:
//!
//! - a workspace comes only from an [`EnvironmentPolicy`] source root or
//!   repository the admin configured (none by default: every path source
//!   is refused), never from the state directory;
//! - secrets are named by the admin (name → variable or file); a caller
//!   names which to bind, never where a value comes from;
//! - the gateway never runs git, or anything else, inside a workspace
//!   after it was handed to a run: the baseline is a copy kept beside the
//!   workspace, and the diff is computed in Rust, reading files without
//!   following links ([`tree`]). The one git the gateway runs clones an
//!   admin's repository into a fresh directory with every config channel
//!   but the command line shut and no hooks ([`git`]).

pub(crate) mod git;
pub(crate) mod local;
pub(crate) mod tree;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use talon_protocol::event_data::{GitBranchData, GitDiffData};
use talon_protocol::gateway::{ApiError, EnvironmentCapabilities, ErrorCode};
use talon_runtime::ShellOptions;
use talon_tools::BoxFuture;

/// What an admin lets environments use (`gateway.environments` in the
/// config). Everything is absent by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvironmentPolicy {
    /// Directories whose subdirectories (or themselves) may be copied into
    /// a workspace (`{source: {path}}`).
    pub source_roots: Vec<PathBuf>,
    /// Local git repositories a workspace may check out, by name
    /// (`{source: {git: NAME, ref}}`, or the repository's path).
    pub repositories: BTreeMap<String, PathBuf>,
    /// The secrets a run may be given, by the name callers use (and the
    /// variable its shell commands see).
    pub secrets: BTreeMap<String, SecretSource>,
}

/// Where an admin-named secret's value comes from, read when each run
/// starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// A variable of the gateway's environment.
    Env(String),
    /// A file (its content, one trailing newline dropped; at most 64 KiB).
    File(PathBuf),
}

/// What a provider is given besides settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    /// The admin's policy.
    pub policy: &'a EnvironmentPolicy,
    /// The gateway's state directory (never a source).
    pub state_dir: &'a Path,
}

/// What a run in an environment gets.
#[derive(Debug, Clone, Default)]
pub(crate) struct Binding {
    /// Its shell's variables (the bound secrets' values) and network.
    pub shell: ShellOptions,
    /// The bound values, redacted from everything the run stores.
    pub secrets: Vec<String>,
}

/// What the runs changed, as collected after one.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Collected {
    /// The unified diff against the baseline (`None`: nothing changed).
    pub diff: Option<String>,
    /// Its summary, for `git.diff` (the artifact's id is added once
    /// stored).
    pub summary: Option<GitDiffData>,
    /// The checkout's branch, for `git.branch` (a checkout only).
    pub branch: Option<GitBranchData>,
}

/// The seed's `EnvironmentProvider`.
pub(crate) trait EnvironmentProvider: Send + Sync {
    /// Its id (`local`).
    fn id(&self) -> &'static str;

    /// What it can do.
    fn capabilities(&self) -> EnvironmentCapabilities;

    /// Checks settings before anything is made (`invalid_request`, or
    /// `forbidden` for what the admin's policy does not allow).
    fn check(&self, settings: &Value, context: Context<'_>) -> Result<(), ApiError>;

    /// Prepares the workspace under `dir`; where it is.
    fn prepare<'a>(
        &'a self,
        settings: &'a Value,
        dir: &'a Path,
        context: Context<'a>,
    ) -> BoxFuture<'a, Result<PathBuf, ApiError>>;

    /// What a run started now gets (secrets resolved now, so a changed
    /// value reaches the next run).
    fn bind(&self, settings: &Value, context: Context<'_>) -> Result<Binding, ApiError>;

    /// What the runs changed in the workspace under `dir`.
    fn collect<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<Collected, ApiError>>;

    /// Cleans up or retains the workspace by the settings' policy; what
    /// became of it.
    fn release<'a>(
        &'a self,
        settings: &'a Value,
        dir: &'a Path,
    ) -> BoxFuture<'a, Result<String, ApiError>>;
}

/// The providers this gateway has.
pub(crate) fn provider(id: &str) -> Result<&'static dyn EnvironmentProvider, ApiError> {
    static LOCAL: local::Local = local::Local;
    match id {
        "local" => Ok(&LOCAL),
        other => Err(ApiError::new(
            ErrorCode::NotFound,
            format!("no environment provider {other:?}; this gateway has \"local\""),
        )
        .with_details(serde_json::json!({"providers": ["local"]}))),
    }
}

/// Where environment `id`'s files go.
pub(crate) fn dir_of(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join("environments").join(id)
}
