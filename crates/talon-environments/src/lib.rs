//! Managed environments: the seed's `EnvironmentProvider` contract
//! ([`EnvironmentProvider`]), public so that another provider (a hosted
//! service, a CI-style runner) can implement it, and the providers Talon
//! ships ([`Providers::builtin`]): `local` ([`local`]).
//!
//! The `ssh` provider ([`ssh::Ssh`]) runs an environment's commands on a
//! host the admin names (pinned host key, client key from an admin
//! secret, the system OpenSSH client), in bubblewrap there: its workspace
//! is prepared on the gateway as `local` prepares one and mirrored to the
//! host around each command ([`ssh::RemoteShell`]: push, command, pull),
//! under a lease that any gateway node's [`ssh::Ssh::sweep`] enforces. It
//! needs the admin's hosts, so a gateway adds it with [`Providers::with`].
//!
//! A provider, for one environment:
//!
//! 1. **checks** the caller's settings against the admin's
//!    [`EnvironmentPolicy`] ([`EnvironmentProvider::check`]) before anything
//!    is made;
//! 2. **prepares** its workspace under the directory the gateway gives it
//!    ([`EnvironmentProvider::prepare`]);
//! 3. **binds**, for each run started in it, the admin-named secrets the
//!    settings name and the network the run's commands may reach
//!    ([`EnvironmentProvider::bind`]: a [`Binding`]); the run's commands then
//!    run in the gateway's command sandbox (`talon-jail`) in that
//!    workspace, their output streamed as the run's events and kept as
//!    `log` artifacts by the gateway;
//! 4. **collects** what the runs changed ([`EnvironmentProvider::collect`]: a
//!    diff against the baseline, the checkout's branch;
//!    the gateway keeps it as `diff` and `patch` ([`snapshot::patch`])
//!    artifacts, and the workspace itself as a `workspace` artifact
//!    ([`snapshot::workspace`]));
//! 5. **releases** the workspace, cleaning it up or keeping it by the
//!    settings' policy ([`EnvironmentProvider::release`]).
//!
//! Its [`EnvironmentCapabilities`] say truthfully which of the seed's
//! capabilities it has on this host ([`EnvironmentProvider::capabilities`]:
//! `sandbox` only where the host can make the command sandbox).
//!
//! The record of each environment (the protocol's `Environment`, settings
//! as given) is the gateway's, in its store; the workspace is under
//! `<state_dir>/environments/<id>/` ([`dir_of`]).
//!
//! # Threat model
//!
//! A caller with `environment.write` chooses settings; a run in the
//! environment controls its workspace (the model writes files, and
//! approved shell commands run there, sandboxed). Neither chooses what the
//! gateway itself reads or runs:
//!
//! - a workspace comes only from an [`EnvironmentPolicy`] source root or
//!   repository the admin configured (none by default: every path source
//!   is refused), never from the state directory;
//! - secrets are named by the admin (name → variable or file); a caller
//!   names which to bind, never where a value comes from;
//! - a caller's network setting narrows the admin's sandbox policy, never
//!   widens it;
//! - the gateway never runs git, or anything else, inside a workspace
//!   after it was handed to a run: the baseline is a copy kept beside the
//!   workspace, and the diff is computed in Rust, reading files without
//!   following links ([`tree`]). The one git the gateway runs clones an
//!   admin's repository into a fresh directory with every config channel
//!   but the command line shut and no hooks ([`git`]).

pub mod forge;
pub(crate) mod git;
pub mod local;
pub mod snapshot;
pub mod ssh;
pub(crate) mod tree;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use talon_jail::Network;
use talon_protocol::event_data::{GitBranchData, GitDiffData};
use talon_protocol::gateway::{ApiError, EnvironmentCapabilities};

/// A provider's future (boxed, so that the trait stays object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

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
    /// The forges a run's changes may become pull requests on, by name
    /// (`{pullRequest: {forge: NAME}}`).
    pub forges: BTreeMap<String, forge::Forge>,
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
pub struct Context<'a> {
    /// The admin's policy.
    pub policy: &'a EnvironmentPolicy,
    /// The gateway's state directory (never a source).
    pub state_dir: &'a Path,
    /// Whether this host runs commands in the command sandbox (for the
    /// `sandbox` capability).
    pub sandboxed: bool,
    /// The bytes a new environment may take on disk, its workspace and its
    /// baseline together (what is left of the store's quota; `None`: no
    /// quota). A source or checkout larger than its half is refused with
    /// `quota_exceeded` before it is copied.
    pub room: Option<u64>,
}

/// What a run in an environment gets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Binding {
    /// Variables its shell commands see (the bound secrets' values).
    pub env: Vec<(String, String)>,
    /// The network its commands ask for (narrowed by the admin's sandbox
    /// policy; `None`: the policy's).
    pub network: Option<Network>,
    /// The bound values, redacted from everything the run stores.
    pub secrets: Vec<String>,
}

/// What the runs changed, as collected after one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Collected {
    /// The unified diff against the baseline (`None`: nothing changed).
    pub diff: Option<String>,
    /// Its summary, for `git.diff` (the artifact's id is added once
    /// stored).
    pub summary: Option<GitDiffData>,
    /// The checkout's branch, for `git.branch` (a checkout only).
    pub branch: Option<GitBranchData>,
}

/// The seed's `EnvironmentProvider`.
pub trait EnvironmentProvider: Send + Sync {
    /// Its id (`local`).
    fn id(&self) -> &'static str;

    /// What it can do on this host.
    fn capabilities(&self, context: Context<'_>) -> EnvironmentCapabilities;

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

    /// Where a run's changes become a pull request, when the settings ask
    /// for one (`None`: they do not; the provider cannot).
    fn pull_request(
        &self,
        settings: &Value,
        environment_id: &str,
        context: Context<'_>,
    ) -> Result<Option<PullRequestTarget>, ApiError> {
        let _ = (settings, environment_id, context);
        Ok(None)
    }
}

/// Where and how a run's changes become a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestTarget {
    /// The admin's forge.
    pub forge: forge::Forge,
    /// Its token (the admin-named secret's value, read now).
    pub token: String,
    /// The base branch.
    pub base: String,
    /// The branch pushed (`talon/<environment id>` unless the settings
    /// name one).
    pub branch: String,
    /// Opened as a draft.
    pub draft: bool,
}

/// The providers a gateway has, by id.
#[derive(Clone)]
pub struct Providers {
    list: Vec<Arc<dyn EnvironmentProvider>>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.ids()).finish()
    }
}

impl Default for Providers {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Providers {
    /// The providers Talon ships: `local`.
    pub fn builtin() -> Providers {
        Providers {
            list: vec![Arc::new(local::Local)],
        }
    }

    /// These and `provider` (which replaces one of the same id).
    pub fn with(mut self, provider: Arc<dyn EnvironmentProvider>) -> Providers {
        self.list.retain(|p| p.id() != provider.id());
        self.list.push(provider);
        self
    }

    /// Their ids.
    pub fn ids(&self) -> Vec<&'static str> {
        self.list.iter().map(|p| p.id()).collect()
    }

    /// The provider `id` names, or `not_found` listing the others.
    pub fn get(&self, id: &str) -> Result<Arc<dyn EnvironmentProvider>, ApiError> {
        self.list
            .iter()
            .find(|p| p.id() == id)
            .cloned()
            .ok_or_else(|| {
                let ids = self.ids();
                talon_protocol::gateway::refuse::no_environment_provider(
                    id,
                    &serde_json::to_string(&ids).unwrap_or_default(),
                )
                .with_details(talon_protocol::gateway::ErrorDetails {
                    providers: ids.iter().map(|id| (*id).to_owned()).collect(),
                    ..Default::default()
                })
            })
    }
}

/// The bytes the tree at `dir` takes, by its files' apparent sizes (a
/// sparse file counts whole), walked through directory handles without
/// following a link; best effort: 0 when `dir` cannot be opened, and what
/// was counted when the walk stops at its caps.
pub fn footprint(dir: &Path) -> u64 {
    let Ok(root) = std::fs::File::open(dir) else {
        return 0;
    };
    let root = std::os::fd::OwnedFd::from(root);
    let caps = talon_fs::tree::Caps {
        entries: 10_000_000,
        bytes: 0,
        depth: 512,
    };
    let mut bytes = 0u64;
    let _ = talon_fs::walk::walk_tree(&root, caps, &mut |_, entry| {
        if let talon_fs::walk::Entry::File { size } = entry {
            bytes = bytes.saturating_add(*size);
        }
        true
    });
    bytes
}

/// Where environment `id`'s files go.
pub fn dir_of(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join("environments").join(id)
}
