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
//! model itself (the CLI's), and anything that prints.

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
