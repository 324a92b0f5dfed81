//! Code Mode (`tools.codeMode`): the model sees `exec` and `wait`; cells of
//! model-written JavaScript or TypeScript run in the QuickJS-WASI sandbox
//! and reach the run's hidden, policy-filtered catalog through the guest
//! API (`ALL_TOOLS`, `tools`, `MCP`, `API`, `namespaces`, `text`, `json`,
//! `yield_control`). Nested calls take the catalog's single execution
//! path; cells with unfinished work are snapshotted into a durable store
//! (`talon-cells`) and resumed by `wait`.
//!
//! # Modules
//!
//! - `config`: `true` or an object whose `enabled: true` is the only gate; the seed's defaults and
//!   clamps; agent overrides merged field by field; `invalid_config` naming the field.
//!   `runtime::applies` says whether Code Mode takes a run's surface (enabled and the run has
//!   tools).
//! - `input`, `scan`, `typescript`: the checks before any guest code runs (the size cap
//!   `maxSourceBytes`, then `code` or its alias `command`, `language`, shell input, module loading
//!   found in code only) and SWC type stripping that keeps positions; JavaScript cells never touch
//!   the transformer. `scan` is one iterative byte scanner shared by the module check and the
//!   TypeScript nesting estimate, an upper bound on the syntax tree's depth: a cell estimated past
//!   `MAX_NESTING` (1,000) levels is refused (`typescript_transform_failed`) before SWC sees it,
//!   and SWC runs on its own thread with a `STRIP_STACK_BYTES` (128 MiB) stack, at most two strips
//!   at a time per process.
//! - `surface`: the `exec` and `wait` definitions; the `exec` description teaches the guest API in
//!   a few lines (its size does not grow with the catalog).
//! - `view`, `dts`: the guest's view of the catalog: compact `ALL_TOOLS` entries (no MCP entries,
//!   no schemas), `tools.<safe_name>` shortcuts (unambiguous names only, never
//!   `search`/`describe`/`call`), `MCP.<server>` tables (built lazily in the guest), and the
//!   virtual `API` files rendered on first read.
//! - `namespaces`: the plugin namespace registry (`register_code_mode_namespace_for_plugin`,
//!   `create_code_mode_namespace_tool`, `clear_code_mode_namespaces_for_plugin`,
//!   `clear_code_mode_namespaces_for_test`); visibility by required tools owned by the plugin;
//!   scopes serialized to plain descriptors (`namespaces/serialize.rs`: raw functions, cycles,
//!   unsafe keys and undeclared tools refused before any guest code).
//! - `src/js/code_mode.js`: the guest prelude (`prelude()`, named `code-mode`), baked into Code
//!   Mode's own image. It captures the host functions and `JSON.parse` and hides their globals,
//!   defines the seed's globals, and `__openclaw_setup` (`contract::SETUP_FN`), which the cell's
//!   prologue calls and which removes itself; `ALL_TOOLS`, `tools`, `MCP` and `namespaces` are
//!   built lazily from run data. Values cross from host to guest as JSON text parsed in the guest.
//! - `bridge`: the host functions (sync: data, search, describe, `API`; async: `tools.call`,
//!   `MCP.*`, namespace calls, `yield_control`) and the mapping of guest requests to nested calls
//!   through `ToolRunner`; `Bridge::guest_result` is the one place a nested `CallOutcome` becomes
//!   what the guest sees (`nested_tool_failed`, or `aborted` when the run was cancelled).
//! - `cell`: a cell's lifecycle over the shared driver: `cell/mod.rs` drives it; `cell/host.rs` is
//!   Code Mode's `CellHost` (nested calls as tasks, at most `maxPendingToolCalls` at once, up to
//!   1,024 outstanding, each recording its result in the store); `cell/suspend.rs` snapshots and
//!   stores a cell that yielded or whose calls outlive the step (`waiting`), and rebuilds it on
//!   `wait`; `cell/app.rs`: client tools called from a cell (the cell is stored as soon as only
//!   the app can answer, its `exec` stays open, and the session's next run resumes it with the
//!   answers: `awaiting_cells`, `answer_cell`, `RunSetup::resume`).
//! - `store`: re-exports `talon-cells`' stores and adds `default_store_key` (`StoreKey::derive`
//!   over `talon_sandbox::host_secret`, kept in the cache directory, not the state directory) and
//!   `open_file_store`. The record format and what holds against a writable state directory are in
//!   `talon-cells`.
//! - `runtime`: `CodeMode` (process-wide: the shared `CellEngine`, given with
//!   `CodeMode::with_engine` or started by `CodeMode::new`, the store, the registry) and
//!   `CodeModeRun` (per run: view, namespaces, surface, telemetry, `exec`, `wait`, hooks on the
//!   outer `exec` with `toolKind: "code_mode_exec"`; it implements `ToolSurface`, running
//!   direct-only tools itself).
//!
//! # Invariants
//!
//! Code Mode's own `exec` and `wait` are never in the catalog, so no guest can reach them; MCP
//! entries are reachable only through `MCP.*`; every nested call goes through `ToolRunner::call`
//! with the outer `exec` as parent; errors reach the guest as plain `Error`s with `message` and
//! `code`; terminal states delete the snapshot and cancel abandoned calls; a nested call that
//! finished while its cell was suspended is recorded and never run again, while one in flight when
//! its process died fails catchably (`nested_tool_failed`) unless its tool is `replaySafe`.
//! Deliberately absent: module loading, files, network, environment and host objects in the guest;
//! any fallback to direct tool exposure when the sandbox cannot start (`runtime_unavailable`).

mod bridge;
mod cell;
pub mod config;
pub mod dts;
pub mod input;
pub mod namespaces;
mod runtime;
mod scan;
pub mod store;
pub mod surface;
mod telemetry;
pub mod typescript;
pub mod view;

pub use view::{ApiPathError, McpApiForm};

pub use cell::app::{AwaitingCell, CellCall, answer_cell, answered_by_app, awaiting_cells};
pub use config::{CodeModeConfig, Language};
pub use input::{ExecInput, InputError, ModuleAccess, module_access, shell_command};
pub use namespaces::{
    NamespaceContext, NamespaceError, NamespaceRegistration, NamespaceRegistry, ScopeValue,
    clear_code_mode_namespaces_for_plugin, clear_code_mode_namespaces_for_test,
    create_code_mode_namespace_tool, register_code_mode_namespace_for_plugin,
};
pub use runtime::{
    CodeMode, CodeModeOptions, CodeModeRun, ExecHook, ExecHookEvent, PRELUDE_NAME, RunSetup,
    RunTools, RuntimeUnavailable, applies, prelude,
};
pub use store::{
    CellError, CellHeader, CellScope, FileStore, MemoryStore, NestedError, NestedResult,
    PendingNestedCall, SnapshotStore, StoreLimits, SuspendedCell, open_file_store,
};
pub use surface::CodeModeSurface;

/// What `js/code_mode.js` and the host must agree on, exposed so that
/// tests hold both sides to it: the prelude (its name, source and host
/// functions), the host functions a run's VMs get (with their sync/async
/// kinds), the data parts, `API` operations and MCP kinds the host
/// answers, the separator of namespace paths and the set-up function of a
/// fresh cell.
pub mod contract {
    pub use crate::bridge::{API_OPS, DATA_PARTS, MCP_KINDS, host_functions};
    pub use crate::cell::SETUP_FN;
    pub use crate::namespaces::PATH_SEPARATOR;
    pub use crate::runtime::{PRELUDE_NAME, prelude};
}
