//! Code Mode (`tools.codeMode`): the config and the checks on `exec` input.
//! The exec/wait runtime over the hidden catalog builds on these.

pub mod config;
pub mod dts;
pub mod input;
pub mod store;
pub mod typescript;

pub use config::{CodeModeConfig, ConfigError, Language};
pub use input::{ExecInput, InputError, ModuleAccess, module_access, shell_command};
pub use store::{
    CellScope, FileStore, MemoryStore, PendingNestedCall, SnapshotStore, StoreError, StoreLimits,
    SuspendedCell,
};
