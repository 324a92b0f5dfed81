//! The process's one sandbox: a [`CellEngine`] with every surface's guest
//! API (Code Mode's and `tool_search_code`'s, an image each, built the
//! first time a cell of that surface runs), so both run their cells on one
//! engine and one worker pool, and every command shares the cached
//! artifacts.

use talon_sandbox::{CellEngine, SandboxConfig, SandboxError};

/// Starts the shared sandbox. A failure is the caller's to report: no
/// surface falls back to another when it cannot start.
pub fn start() -> Result<CellEngine, SandboxError> {
    CellEngine::new(SandboxConfig {
        preludes: vec![talon_codemode::prelude(), talon_toolsearch::prelude()],
        ..SandboxConfig::default()
    })
}
