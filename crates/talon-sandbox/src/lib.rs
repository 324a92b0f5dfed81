//! The QuickJS-WASI sandbox: the `quickjs.wasm` of npm `quickjs-wasi`,
//! hosted by wasmtime and driven through its C ABI from Rust.
//!
//! - [`Sandbox`]: one per process. Compiles the module once (cached on disk
//!   by wasmtime's compatibility hash), builds the base image, runs the
//!   hard-stop clock.
//! - [`Vm`]: one guest. Scripts and cells (async function bodies), pending
//!   jobs, host functions by stable name (sync, or async with a promise the
//!   host settles later), snapshots and restore.
//! - [`Pool`]: worker threads so guest code never blocks an async runtime.
//!
//! Guest code is hostile: every limit (time, memory, stack, output, bridge
//! values, snapshot size) is enforced here, and every failure is a
//! [`SandboxError`] with a protocol code, never a panic.

mod abi;
mod bake;
mod config;
mod convert;
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

pub use config::{BridgeLimits, Clock, Limits, Prelude, SandboxConfig, VmOptions};
pub use error::{GuestError, Result, SandboxError};
pub use functions::{HostCallError, HostFunction, HostFunctions, PendingCall, SyncHostFn};
pub use pool::Pool;
pub use runtime::{ModuleLoad, QUICKJS_WASI_VERSION, QUICKJS_WASM_SHA256, Sandbox, host_secret};
pub use snapshot::SNAPSHOT_VERSION;
pub use vm::{CellStatus, Vm};
