//! What a run of an agent is built from, from the config, for every host
//! of runs (`talon agent`, `talon exec`, the gateway):
//!
//! - [`RunTools`]: the run's catalog (core tools, the config's MCP servers,
//!   `tools.allow`/`tools.deny`) and the executor behind it;
//! - [`SurfacePlan`] and [`surface::build`]: the surface the model sees
//!   (Code Mode, Tool Search or the tools directly);
//! - [`engine::start`]: the process's one sandbox.
//!
//! Deliberately absent: the model provider (each host picks its own, the
//! CLI's mock included), approvals (each host asks its own way), where
//! suspended cells live (the caller's `SnapshotStore`), and anything that
//! prints.

pub mod engine;
pub mod surface;
mod tools;

pub use surface::{SurfaceParts, SurfacePlan};
pub use tools::{RunTools, policy};

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
}
