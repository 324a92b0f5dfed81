//! The one front for running an agent's run, for every host of runs
//! (`talon agent`, the gateway), and what a run is built from, from the
//! config (`talon exec` and `talon tools` use those parts directly):
//!
//! - [`Host::start`] (`run.rs`): a host hands it a [`RunSpec`] (the run's
//!   [`RunIds`], its cancellation, the [`RunSink`] its events and
//!   checkpoints go to, the approval policy, its [`RunHooks`], its history
//!   as a [`Conversation`] and where it [`Start`]s) and gets a
//!   [`RunHandle`] back, whose [`RunHandle::finish`] runs it in the
//!   caller's task to a [`RunOutcome`]. The loop's context, its event
//!   stamping ([`RunEmitter`]) and its checkpoints ([`Turn`], the stored
//!   form) are built here; hosts never see `talon-agent` or
//!   `talon-provider` types.
//! - [`conversation`]: a session's stored messages as the model reads
//!   them and back, a run's input checked and matched with the calls the
//!   history left pending.
//! - [`models`]: the models a host reaches, its providers' credential
//!   check, and a session's summary ([`Host::summarize`]).
//! - [`RunTools`]: the run's catalog (core tools, the config's MCP servers,
//!   `tools.allow`/`tools.deny`) and the executor behind it;
//! - [`SurfacePlan`] and [`surface::build`]: the surface the model sees
//!   (Code Mode, Tool Search or the tools directly);
//! - [`engine::start`]: the process's one sandbox;
//! - [`provider::select`]: the agent's model at its provider, its client
//!   picked by `api` (Chat Completions or Anthropic Messages), and its
//!   reasoning settings; or a host's override (the scripted mock).
//!
//! Deliberately absent: who is asked about a call the policy sends to a
//! person (each host's [`RunHooks::asker`]), where events go and where
//! suspended cells live (the caller's), the mock model itself
//! (`talon-mock-model`, which the CLI's `mock-model` feature links), and
//! anything that prints.
//!
//! # Parts
//!
//! - `Host` (`host.rs`): one config and one `ModelRoute`; the config's MCP servers (connected once,
//!   shared by the host's runs) and the sandbox (started the first time a surface needs it).
//!   `start` (`run.rs`) builds the loop's context and events and hands them to `prepare`, which
//!   builds the run (model, core tools in the workspace, catalog, policy gate, surface; the sandbox
//!   start and the servers' listing overlap); `RunHandle::finish` executes it through
//!   `talon_agent::AgentRun` to its terminal event (`Start::Resume` goes on from a stored `Turn`,
//!   `Start::Again` from the input with `resumedAfterTurn: 0`, `Start::Proceed` from the app's
//!   answers to client calls, resuming first the Code Mode cells that waited for them).
//!   `RunSpec::client_tools` join the catalog (owner `app`): cataloged under Code Mode, else
//!   direct-only; `tools.directOnly` names tools shown by name whatever the surface;
//!   a client tool that another tool shadows, or that the catalog or policy leaves out, fails the
//!   start (`RuntimeError::ClientTool`). `RunHooks::questions` answers `ask_user`
//!   (`questions.rs`); a run without one does not offer it. `RunSpec::redact` lists values redacted
//!   from every tool result and error. `Host::tool_space` builds the catalog an agent's run would
//!   get, for listing.
//! - `RunHooks::changes` (`changes.rs`, a `ToolOutputs`) takes what the core tools produce beyond
//!   their results: the files `write` and `edit` change (files over `MAX_REPORTED_BYTES` not
//!   reported) and the whole output of an `exec` whose result was cut; a kept log's id joins the
//!   result as `logArtifact`.
//! - `Start::Invoke` (`invoke.rs`): one direct call of a catalog id or unique name through
//!   the run's runner, with the run's events, for `tools.invoke`; client tools are not invokable.
//! - `provider::select` (`provider.rs`): the agent's `model.primary` at its provider, the client its
//!   `api` names (`talon_provider::build`), or every provider pointed at the route's base URL (a
//!   stand-in `mock` provider when no model is configured, for the scripted mock, which answers
//!   both wires); `provider::settings` reads `reasoningDefault`, `thinkingDefault` and
//!   `params.cacheRetention` in OpenClaw's order into the run's options.
//! - `RunTools` (`tools.rs`): `from_config` starts the config's `mcp.servers` for one run (`talon
//!     exec`), `with_manager` shares a host's; the catalog with `tools.allow`/`tools.deny` and
//!   `Semantic::Shared`, and the executor that dispatches entries by source.
//! - `SurfacePlan::from_config` and `surface::build` (`surface.rs`): Code Mode when
//!   `tools.codeMode` applies to the catalog, else Tool Search, else the tools directly. A surface
//!   that needs the sandbox fails closed (`RuntimeError::RuntimeUnavailable`) when it did not
//!   start. Where suspended cells live is the caller's `OpenCells` (the CLI a `FileStore`, the
//!   gateway a `talon_store::CellStore`).
//! - `engine::start`: the process's one sandbox (`CellEngine` with Code Mode's and
//!   `tool_search_code`'s preludes).

use std::sync::Arc;

mod cell_approval;
pub mod changes;
pub mod conversation;
pub mod engine;
pub mod host;
mod invoke;
pub mod models;
pub mod provider;
pub mod questions;
pub mod run;
mod sandbox;
pub mod surface;
mod tools;

pub use conversation::{Conversation, RunInputError};
pub(crate) use host::PreparedRun;
pub use host::{Host, ToolSpaceSpec};
pub use models::SummaryError;
pub use provider::ModelRoute;
pub use run::{
    HostTools, RunEmitter, RunHandle, RunHooks, RunIds, RunOutcome, RunSink, RunSpec, Start, Turn,
    TurnState, Workspace,
};
/// The shell's options a host sets per run ([`RunSpec::shell`]): bound
/// secrets, network.
pub use sandbox::Jails;
pub use surface::{CellsError, OpenCells, SurfaceParts, SurfacePlan};
/// An agent's `subagents` section (how far its runs may spawn sub-agents),
/// as the gateway's task ledger reads it.
pub use talon_config::model::{OnParentCancel, SubagentsSection};
pub use talon_core_tools::{Access, Jail, KeepLog, Network, RemoteHost, ShellOptions};
/// Background shell processes, for a host that keeps them (the gateway's
/// task ledger).
pub use talon_core_tools::{
    Background, ProcessEnd, ProcessHost, ProcessLimits, ProcessStart, ProcessTool, Processes,
    process_definition,
};
pub use tools::{Local, RunTools, policy, servers};

/// Why a run cannot be built, each with what it came from.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A config key holds something that cannot be (the message names the
    /// key).
    #[error("{0}")]
    Config(String),
    /// `models.providers`, a model reference, or a provider's client.
    #[error(transparent)]
    Provider(#[from] talon_provider::ProviderError),
    /// `mcp.servers`.
    #[error(transparent)]
    Mcp(#[from] talon_mcp::McpError),
    /// The catalog could not be built.
    #[error(transparent)]
    Catalog(#[from] talon_tools::ToolsError),
    /// Tool Search's surface over the catalog.
    #[error(transparent)]
    ToolSearchSurface(#[from] talon_toolsearch::SurfaceError),
    /// The core tools' workspace cannot be opened.
    #[error("workspace {}: {source}", path.display())]
    Workspace {
        /// The workspace.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Where the run's suspended cells go could not be opened (the host's
    /// [`OpenCells`] said why).
    #[error("{0}")]
    Cells(#[source] surface::CellsError),
    /// The sandbox a surface needs is not there.
    #[error("runtime_unavailable: {0}")]
    RuntimeUnavailable(#[source] Unavailable),
    /// A client tool of the run cannot be offered to the model (the
    /// message names the tool and why).
    #[error("{0}")]
    ClientTool(String),
}

impl RuntimeError {
    /// A config the declaration refused (its key and what is wrong).
    pub fn config(error: talon_config::ConfigError) -> Self {
        Self::Config(error.to_string())
    }
}

/// Why the sandbox a surface needs is not there.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unavailable {
    /// It failed to start (shared by every run that asks after).
    #[error("{0}")]
    Start(#[source] Arc<talon_sandbox::SandboxError>),
    /// Its start-up panicked.
    #[error("the sandbox's start-up panicked: {0}")]
    Panicked(String),
    /// The plan did not ask for it, so it was not started.
    #[error("the sandbox was not started")]
    NotStarted,
    /// It started without the surface's prelude, or the surface could not
    /// be set up on it.
    #[error("{0}")]
    Surface(#[source] Arc<talon_sandbox::SandboxError>),
    /// Code Mode cannot run on it.
    #[error("{0}")]
    CodeMode(#[source] Arc<talon_codemode::RuntimeUnavailable>),
    /// Tool Search's code mode needs it, and it did not start.
    #[error("Tool Search's code mode needs the sandbox, which did not start: {0}")]
    ToolSearchCode(Box<Unavailable>),
}

impl From<talon_sandbox::SandboxError> for Unavailable {
    fn from(error: talon_sandbox::SandboxError) -> Self {
        Self::Surface(Arc::new(error))
    }
}

impl From<talon_codemode::RuntimeUnavailable> for Unavailable {
    fn from(error: talon_codemode::RuntimeUnavailable) -> Self {
        Self::CodeMode(Arc::new(error))
    }
}

/// Suspended Code Mode cells as a host keeps them: the store trait its
/// [`OpenCells`] returns, the limits it is opened with, and the key
/// records are sealed with.
pub mod cells {
    pub use talon_codemode::store::{default_store_key, open_file_store};
    pub use talon_codemode::{
        AwaitingCell, CellCall, CellError, MemoryStore, SnapshotStore, StoreLimits, answer_cell,
        awaiting_cells,
    };
}
