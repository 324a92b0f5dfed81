//! The QuickJS-WASI sandbox: the `quickjs.wasm` of npm `quickjs-wasi`,
//! hosted by wasmtime and driven through its C ABI from Rust.
//!
//! - [`Sandbox`]: one per process. Compiles the module once (cached on disk
//!   by wasmtime's compatibility hash), builds the base images (the bare
//!   one and one per surface prelude, each baked into its own module), runs
//!   the hard-stop clock.
//! - [`Vm`]: one guest. Scripts and cells (async function bodies), pending
//!   jobs, host functions by stable name (sync, or async with a promise the
//!   host settles later), snapshots and restore.
//! - [`Pool`]: worker threads so guest code never blocks an async runtime.
//! - [`CellEngine`]: the sandbox and its pool, one per process, and the one
//!   async driver every cell runs under ([`CellEngine::drive`], with the
//!   cell's host calls in [`Calls`]).
//!
//! Guest code is hostile: every limit (time, memory, stack, output, bridge
//! values, snapshot size) is enforced here, and every failure is a
//! [`SandboxError`] with a protocol code, never a panic.

mod abi;
mod bake;
mod calls;
mod config;
mod convert;
mod driver;
mod error;
mod functions;
mod guest;
mod host;
mod image;
mod output;
mod pool;
mod props;
mod runtime;
mod snapshot;
mod vm;
mod wasi;

pub use calls::{CallFuture, CallResult, Calls, Next, Ready};
pub use config::{BridgeLimits, Clock, Limits, Prelude, SandboxConfig, VmOptions};
pub use driver::{Answer, CellEngine, CellHost, DriveLimits, Driven, Halt, Machine, Suspend};
pub use error::{GuestError, Result, SandboxError};
pub use functions::{HostCallError, HostFunction, HostFunctions, PendingCall, SyncHostFn};
pub use pool::Pool;
pub use runtime::{ModuleLoad, QUICKJS_WASI_VERSION, QUICKJS_WASM_SHA256, Sandbox, host_secret};
pub use snapshot::SNAPSHOT_VERSION;
pub use vm::{CellStatus, Vm};

/// The names and numbers the sandbox's JavaScript (`js/base.js`) and the
/// surfaces' preludes share with the host: the host functions every VM
/// has and the print streams. Exposed so that tests hold both sides to
/// them.
pub mod contract {
    pub use crate::host::{BASE_HOST_FUNCTIONS, NOW_FN, PRINT_FN, PRINT_STREAMS, RANDOM_FN};
}
