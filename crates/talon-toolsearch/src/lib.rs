//! Tool Search (`tools.toolSearch`): the config, the model-facing surfaces
//! (direct, `code`, `tools`, `directory`) and the handlers behind them, all
//! over one catalog and the catalog's single execution path.
//!
//! # Parts
//!
//! - `config`: `tools.toolSearch` is `true`, `false` or an object, with the seed's (004) defaults
//!   and clamps (`ToolSearchConfig::from_setting`, over the typed section the config declares).
//! - `surface`: `build_surface`: catalog plus config in; model-visible tools, directory prompt and
//!   name dispatch out, for direct, `code`, `tools` and `directory`.
//! - `runtime`: `ToolSearch`, the handlers (`tool_search`, `tool_describe`, `tool_call` over the
//!   run's `ToolRunner`, exact hidden names in directory mode); it implements `ToolSurface`.
//!   Telemetry counts searches, describes, calls and code runs, and lists the tools called.
//! - `code`: `tool_search_code`, run under the shared cell driver (`CellEngine::drive`) in the
//!   process's sandbox (`CodeSandbox::with_engine`), in the image of its prelude
//!   (`src/js/openclaw_tools.js`, named `openclaw-tools`), which exposes only
//!   `openclaw.tools.search/describe/call` and `console`. Bridge calls run concurrently as tasks
//!   (at most 64 at once); calls the body did not await are cancelled when it returns; one deadline
//!   covers guest code and tool calls; cancelling the run stops both. `code::guest_result` maps a
//!   call's outcome for the guest.
//!
//! # Invariants
//!
//! Direct-only tools are visible in every mode; `code` mode without the sandbox fails closed (no
//! fallback surface); every real call goes through `ToolRunner::call` with the bridge call as
//! parent.

pub mod code;
pub mod config;
pub mod runtime;
pub mod surface;

pub use code::{CodeSandbox, MAX_CODE_BYTES, PRELUDE_NAME, prelude};
pub use config::{Mode, ToolSearchConfig};
pub use runtime::ToolSearch;
pub use surface::{Control, Surface, SurfaceError, Target, build_surface};
