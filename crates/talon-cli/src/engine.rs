//! The process's one sandbox: a [`CellEngine`] whose base image carries
//! every surface's guest API (Code Mode's and `tool_search_code`'s), so
//! both run their cells on one engine, one compiled module and one worker
//! pool, and every command shares one cached artifact.

use talon_sandbox::{CellEngine, SandboxConfig, SandboxError};

/// Starts the shared sandbox. A failure is the caller's to report: no
/// surface falls back to another when it cannot start.
pub fn start() -> Result<CellEngine, SandboxError> {
    CellEngine::new(SandboxConfig {
        preludes: vec![talon_codemode::prelude(), talon_toolsearch::prelude()],
        ..SandboxConfig::default()
    })
}
