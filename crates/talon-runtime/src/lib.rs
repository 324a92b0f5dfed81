//! What a run of an agent is built from, from the config, for every host
//! of runs (`talon agent`, `talon exec`, the gateway):
//!
//! - [`RunTools`]: the run's catalog (core tools, the config's MCP servers,
//!   `tools.allow`/`tools.deny`) and the executor behind it;
//! - [`SurfacePlan`] and [`surface::build`]: the surface the model sees
//!   (Code Mode, Tool Search or the tools directly);
//! - [`engine::start`]: the process's one sandbox;
//! - [`provider::select`]: the agent's model at its provider, or a host's
//!   override (the scripted mock);
//! - [`Host`]: builds a run from all of these and executes it through the
//!   agent loop, sharing the MCP servers and the sandbox between runs.
//!
//! Deliberately absent: approvals (each host asks its own way), where
//! events go and where suspended cells live (the caller's), the mock
//! model itself (`talon-mock-model`, which the CLI's `mock-model` feature
//! links), and anything that prints.
//!
//! # Parts
//!
//! - `Host` (`host.rs`): one config and one `ModelRoute`; the config's MCP servers (connected once,
//!   shared by the host's runs) and the sandbox (started the first time a surface needs it).
//!   `prepare(RunSpec)` builds a run (model, core tools in the workspace, catalog, surface; the
//!   sandbox start and the servers' listing overlap) and `PreparedRun::run(history, message)`
//!   executes it through `talon_agent::AgentRun` to its terminal event (`resume` goes on from a
//!   `talon_agent::Checkpoint`, `proceed` from the app's answers to client calls).
//!   `RunSpec::client_tools` join the catalog direct-only (owner `app`); a client tool that another
//!   tool shadows, or that the catalog or policy leaves out, fails the build
//!   (`RuntimeError::ClientTool`). `RunSpec::questions` answers `ask_user` (`questions.rs`); a run
//!   without one does not offer it. `RunSpec::redact` lists values redacted from every tool result
//!   and error. `Host::tool_space` builds the catalog an agent's run would get, for listing.
//! - `RunSpec::changes` (`changes.rs`, a `ToolOutputs`) takes what the core tools produce beyond
//!   their results: the files `write` and `edit` change (files over `MAX_REPORTED_BYTES` not
//!   reported) and the whole output of an `exec` whose result was cut; a kept log's id joins the
//!   result as `logArtifact`.
//! - `PreparedRun::invoke` (`invoke.rs`): one direct call of a catalog id or unique name through
//!   the run's runner, with the run's events, for `tools.invoke`; client tools are not invokable.
//! - `provider::select` (`provider.rs`): the agent's `model.primary` at its provider, or every
//!   provider pointed at the route's base URL (a stand-in `mock` provider when no model is
//!   configured, for the scripted mock).
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

pub mod changes;
pub mod engine;
pub mod host;
mod invoke;
pub mod provider;
pub mod questions;
pub mod surface;
mod tools;

pub use host::{Host, PreparedRun, RunSpec, ToolSpaceSpec};
pub use provider::ModelRoute;
pub use surface::{OpenCells, SurfaceParts, SurfacePlan};
pub use tools::{Local, RunTools, policy, servers};

/// Why a run cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// The config asks for something that cannot be (its message names the
    /// key).
    #[error("{0}")]
    Config(String),
    /// The sandbox a surface needs did not start.
    #[error("runtime_unavailable: {0}")]
    RuntimeUnavailable(String),
    /// A client tool of the run cannot be offered to the model (its
    /// message names the tool and why).
    #[error("{0}")]
    ClientTool(String),
}
