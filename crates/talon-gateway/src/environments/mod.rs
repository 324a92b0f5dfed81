//! Managed environments: the seed's `EnvironmentProvider` contract
//! ([`EnvironmentProvider`]) and the gateway's use of it. A provider
//! prepares a workspace, binds secrets by reference and a network policy
//! for the runs started in it, collects what the runs changed (a `diff`
//! artifact), and cleans up or retains the workspace by policy. The
//! record of each environment (the protocol's [`Environment`], settings
//! as given) is in the store; its workspace is under
//! `<state_dir>/environments/<id>/`. One provider ships: `local`
//! ([`local`]).

pub(crate) mod local;

use std::path::{Path, PathBuf};

use serde_json::Value;
use talon_core_tools::ShellOptions;
use talon_protocol::gateway::{ApiError, EnvironmentCapabilities, ErrorCode};
use talon_tools::BoxFuture;

/// What a run in an environment gets.
#[derive(Debug, Clone, Default)]
pub(crate) struct Binding {
    /// Its shell's variables (the bound secrets' values) and network.
    pub shell: ShellOptions,
    /// The bound values, redacted from everything the run stores.
    pub secrets: Vec<String>,
}

/// The seed's `EnvironmentProvider`.
pub(crate) trait EnvironmentProvider: Send + Sync {
    /// Its id (`local`).
    fn id(&self) -> &'static str;

    /// What it can do.
    fn capabilities(&self) -> EnvironmentCapabilities;

    /// Checks settings before anything is made (`invalid_request`).
    fn check(&self, settings: &Value) -> Result<(), ApiError>;

    /// Prepares the workspace under `dir`; where it is.
    fn prepare<'a>(
        &'a self,
        settings: &'a Value,
        dir: &'a Path,
    ) -> BoxFuture<'a, Result<PathBuf, ApiError>>;

    /// What a run started now gets (secrets resolved now, so a changed
    /// value reaches the next run).
    fn bind(&self, settings: &Value) -> Result<Binding, ApiError>;

    /// What the runs changed in the workspace, as a unified diff (`None`:
    /// nothing).
    fn collect<'a>(
        &'a self,
        workspace: &'a Path,
    ) -> BoxFuture<'a, Result<Option<String>, ApiError>>;

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
