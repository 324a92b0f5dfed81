//! Code Mode (`tools.codeMode`): the model sees `exec` and `wait`; cells of
//! model-written JavaScript or TypeScript run in the QuickJS-WASI sandbox
//! and reach the run's hidden, policy-filtered catalog through the guest
//! API (`ALL_TOOLS`, `tools`, `MCP`, `API`, `namespaces`, `text`, `json`,
//! `yield_control`). Nested calls take the catalog's single execution
//! path; cells with unfinished work are snapshotted into a durable store
//! (`talon-cells`) and resumed by `wait`.

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

pub use view::ApiError;

pub use config::{CodeModeConfig, ConfigError, Language};
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
    CellScope, FileStore, MemoryStore, NestedError, NestedResult, PendingNestedCall, SnapshotStore,
    StoreError, StoreLimits, SuspendedCell, open_file_store,
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
