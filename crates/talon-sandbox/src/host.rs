//! The store's host state and the module's imports: the `env.host_*`
//! callbacks and a hand-written shim of exactly the six WASI functions the
//! module imports. The guest gets no files, no environment, no arguments and
//! no clock beyond the host's choice.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

use rand_chacha::ChaCha12Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::Value;
use wasmtime::{Caller, Linker, ResourceLimiter};

use crate::abi::Exports;
use crate::config::{Clock, Limits};
use crate::convert;
use crate::error::{Result, SandboxError};
use crate::functions::{HostCallError, HostFunction, HostFunctions, PendingCall};
use crate::output::Output;

/// Names of the host functions every VM has, dispatched before the
/// registry. The prelude captures them and deletes the globals.
pub const PRINT_FN: &str = "__talon_print";
/// See [`PRINT_FN`].
pub const RANDOM_FN: &str = "__talon_random";
/// See [`PRINT_FN`].
pub const NOW_FN: &str = "__talon_now";
/// The host functions the base image installs before `js/base.js` runs
/// (a surface's prelude may list [`PRINT_FN`] again to capture it).
pub const BASE_HOST_FUNCTIONS: [&str; 3] = [PRINT_FN, RANDOM_FN, NOW_FN];

/// The streams of `__talon_print(stream, text)`, by the number a prelude
/// passes (any other number prints to stdout). Held to the host's
/// mapping and to the preludes' numbers by the contract tests.
pub const PRINT_STREAMS: [(u32, talon_protocol::OutputStream); 4] = [
    (1, talon_protocol::OutputStream::Stdout),
    (2, talon_protocol::OutputStream::Stderr),
    (3, talon_protocol::OutputStream::Text),
    (4, talon_protocol::OutputStream::Json),
];

/// Size of the scratch area, see [`GuestPointers::scratch`].
pub(crate) const SCRATCH_BYTES: u32 = 64;

/// Guest pointers a VM keeps for its whole life (and carries in snapshots).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GuestPointers {
    /// A 64-byte scratch area for out-parameters: +0..16 outputs,
    /// +16 an argv slot, +24..56 a `JSPropertyDescriptor`.
    pub scratch: u32,
    /// NUL-terminated property names, see [`Strings`].
    pub strings: u32,
    /// The engine's own `Error.prototype.stack` getter, captured before any
    /// guest code ran: the one accessor the host may call.
    pub stack_getter: u32,
}

/// The resolving functions of a promise handed to the guest by an
/// asynchronous host function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resolvers {
    pub resolve: u32,
    pub reject: u32,
}

/// A settlement waiting for the next `Vm::resume`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settlement {
    pub id: u64,
    pub result: Result<Value, HostCallError>,
}

/// Class ids of the engine, read when the base image is built: the only
/// object classes whose values may cross the bridge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClassIds {
    pub object: i32,
    pub array: i32,
    pub error: i32,
    pub arguments: i32,
    pub mapped_arguments: i32,
    /// The typed-array classes form one contiguous range.
    pub typed_arrays: (i32, i32),
}

/// Per-store state, reachable from every import.
pub(crate) struct HostState {
    pub exports: Option<Arc<Exports>>,
    pub ptrs: GuestPointers,
    /// The `JSContext*` (for the raw `JS_*` exports).
    pub context: u32,
    pub limiter: MemoryLimiter,
    pub limits: Limits,
    pub functions: Arc<HostFunctions>,
    pub next_call_id: u64,
    pub pending: Vec<PendingCall>,
    pub resolvers: BTreeMap<u64, Resolvers>,
    pub settled: Vec<Settlement>,
    pub classes: ClassIds,
    pub output: Output,
    pub soft_deadline: Option<Instant>,
    pub interrupted: bool,
    pub cancel: Option<CancellationToken>,
    pub aborted: bool,
    pub module_denied: Option<String>,
    pub clock: Clock,
    pub started: Instant,
    pub rng: ChaCha12Rng,
    pub host_calls: u64,
}

impl HostState {
    pub fn new(limits: Limits, functions: Arc<HostFunctions>, clock: Clock) -> Result<Self> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| SandboxError::runtime_failed("no CSPRNG seed", e))?;
        Ok(Self {
            exports: None,
            ptrs: GuestPointers::default(),
            context: 0,
            limiter: MemoryLimiter {
                max_bytes: limits.store_memory_bytes(),
                denied: false,
            },
            output: Output::new(limits.max_output_bytes),
            limits,
            functions,
            next_call_id: 1,
            pending: Vec::new(),
            resolvers: BTreeMap::new(),
            settled: Vec::new(),
            classes: ClassIds::default(),
            soft_deadline: None,
            interrupted: false,
            cancel: None,
            aborted: false,
            module_denied: None,
            clock,
            started: Instant::now(),
            rng: ChaCha12Rng::from_seed(seed),
            host_calls: 0,
        })
    }

    /// Clears the per-cell flags.
    pub fn reset_flags(&mut self) {
        self.module_denied = None;
        self.limiter.denied = false;
        self.aborted = false;
        self.interrupted = false;
    }

    /// A stop the host decided (abort, deadline), if any.
    pub fn stop(&self) -> Option<SandboxError> {
        if self.aborted {
            Some(SandboxError::Aborted)
        } else if self.interrupted {
            Some(SandboxError::Timeout(self.limits.timeout.as_millis() as u64))
        } else {
            None
        }
    }

    /// State for building the base image: a frozen clock and a fixed
    /// random source, so that the image is the same in every process.
    pub fn deterministic(limits: Limits, functions: Arc<HostFunctions>) -> Result<Self> {
        let mut state = Self::new(limits, functions, Clock::Fixed { unix_ms: 0 })?;
        state.rng = ChaCha12Rng::from_seed([0; 32]);
        Ok(state)
    }

    pub fn exports(&self) -> Result<Arc<Exports>> {
        self.exports
            .clone()
            .ok_or_else(|| SandboxError::corrupt("exports not resolved"))
    }
}

/// The store's limiter: linear memory may not grow past the VM's cap.
/// A refused grow makes `memory.grow` return -1 (QuickJS then throws its
/// out-of-memory error) and is remembered so the failure gets its own code.
pub(crate) struct MemoryLimiter {
    pub max_bytes: usize,
    pub denied: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            self.denied = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 65_536)
    }
}

/// Defines every import of the module on `linker`.
pub(crate) fn define_imports(linker: &mut Linker<HostState>) -> Result<()> {
    let err = |e: wasmtime::Error| SandboxError::runtime_failed("linking imports", e);
    linker
        .func_wrap("env", "host_call", host_call)
        .map_err(err)?;
    linker
        .func_wrap(
            "env",
            "host_interrupt",
            |mut caller: Caller<'_, HostState>| -> i32 {
                let state = caller.data_mut();
                if state
                    .cancel
                    .as_ref()
                    .is_some_and(CancellationToken::is_cancelled)
                {
                    state.aborted = true;
                    return 1;
                }
                match state.soft_deadline {
                    Some(deadline) if Instant::now() >= deadline => {
                        state.interrupted = true;
                        1
                    }
                    _ => 0,
                }
            },
        )
        .map_err(err)?;
    linker
        .func_wrap(
            "env",
            "host_promise_rejection",
            |mut caller: Caller<'_, HostState>, promise: u32, reason: u32, _handled: i32| {
                // Never enabled; if the module calls it anyway, release the values.
                if let Ok(ex) = caller.data().exports() {
                    let _ = ex.qjs_free_value.call(&mut caller, promise);
                    let _ = ex.qjs_free_value.call(&mut caller, reason);
                }
            },
        )
        .map_err(err)?;
    linker
        .func_wrap(
            "env",
            "host_module_normalize",
            |caller: Caller<'_, HostState>, _base: u32, name: u32| deny_module(caller, name),
        )
        .map_err(err)?;
    linker
        .func_wrap(
            "env",
            "host_module_load",
            |caller: Caller<'_, HostState>, name: u32, _out: u32| deny_module(caller, name),
        )
        .map_err(err)?;
    linker
        .func_wrap(
            "env",
            "host_get_timezone_offset",
            |_: Caller<'_, HostState>, _hi: i32, _lo: i32| -> i32 {
                0 // The guest lives in UTC.
            },
        )
        .map_err(err)?;
    crate::wasi::define(linker).map_err(err)?;
    Ok(())
}

/// Why an import could not answer the guest.
pub(crate) enum ImportError {
    /// A plain error for the guest to catch.
    Guest(HostCallError),
    /// A trap in a nested call: the whole activation must unwind so the VM
    /// is classified and poisoned; the guest never sees it.
    Fatal(wasmtime::Error),
}

impl From<wasmtime::Error> for ImportError {
    fn from(error: wasmtime::Error) -> Self {
        Self::Fatal(error)
    }
}

impl From<SandboxError> for ImportError {
    fn from(error: SandboxError) -> Self {
        match error {
            SandboxError::Trap {
                trap: Some(trap), ..
            } => Self::Fatal(wasmtime::Error::new(trap)),
            SandboxError::Trap { message, .. } => Self::Fatal(wasmtime::Error::msg(message)),
            SandboxError::MemoryLimit => Self::Guest(HostCallError::new("out of memory")),
            other => {
                tracing::debug!(error = %other, "internal error in a host import");
                Self::Guest(
                    HostCallError::new("internal sandbox error").with_code("internal_error"),
                )
            }
        }
    }
}

impl From<HostCallError> for ImportError {
    fn from(error: HostCallError) -> Self {
        Self::Guest(error)
    }
}

/// Answers an import: a value, or a thrown guest error (`Ok(0)`), or a
/// trap that unwinds the guest.
fn answer(
    caller: &mut Caller<'_, HostState>,
    result: Result<u32, ImportError>,
) -> wasmtime::Result<u32> {
    match result {
        Ok(value) => Ok(value),
        Err(ImportError::Guest(error)) => {
            throw_error(caller, &error)?;
            Ok(0)
        }
        Err(ImportError::Fatal(error)) => Err(error),
    }
}

/// Records a module-loading attempt and throws in the guest.
fn deny_module(mut caller: Caller<'_, HostState>, name: u32) -> wasmtime::Result<u32> {
    let specifier = read_cstr(&mut caller, name).unwrap_or_else(|| "<unreadable>".into());
    let message = format!("module access denied: cannot load '{specifier}'");
    caller.data_mut().module_denied = Some(specifier);
    let error = HostCallError::new(message).with_code("module_access_denied");
    answer(&mut caller, Err(ImportError::Guest(error)))
}

fn read_cstr(caller: &mut Caller<'_, HostState>, ptr: u32) -> Option<String> {
    let memory = caller.data().exports.as_ref()?.memory;
    let data = memory.data(&caller);
    let tail = data.get(ptr as usize..)?;
    let end = tail.iter().take(4096).position(|b| *b == 0)?;
    Some(String::from_utf8_lossy(&tail[..end]).into_owned())
}

/// `env.host_call`: the guest called a host function by name.
fn host_call(
    mut caller: Caller<'_, HostState>,
    name_ptr: u32,
    name_len: u32,
    _this: u32,
    argc: u32,
    argv: u32,
) -> wasmtime::Result<u32> {
    let result = dispatch(&mut caller, name_ptr, name_len, argc, argv);
    answer(&mut caller, result)
}

fn dispatch(
    caller: &mut Caller<'_, HostState>,
    name_ptr: u32,
    name_len: u32,
    argc: u32,
    argv: u32,
) -> Result<u32, ImportError> {
    let ex = caller.data().exports()?;
    caller.data_mut().host_calls += 1;
    let name_bytes = ex.read_bytes(&caller, name_ptr, name_len.min(1024))?;
    let name = String::from_utf8_lossy(&name_bytes);
    if argc > 64 {
        return Err(HostCallError::new(format!("{name}: too many arguments ({argc})")).into());
    }
    let mut args = Vec::with_capacity(argc as usize);
    for i in 0..argc {
        args.push(ex.read_u32(&caller, argv + 4 * i)?);
    }
    match name.as_ref() {
        RANDOM_FN => {
            let bits = caller.data_mut().rng.next_u64() >> 11;
            let value = bits as f64 / (1u64 << 53) as f64;
            return Ok(ex.qjs_new_number.call(&mut *caller, value)?);
        }
        PRINT_FN => return print(caller, &ex, &args),
        NOW_FN => {
            let ms = match caller.data().clock {
                Clock::System => caller.data().started.elapsed().as_secs_f64() * 1000.0,
                Clock::Fixed { .. } => 0.0,
            };
            return Ok(ex.qjs_new_number.call(&mut *caller, ms)?);
        }
        _ => {}
    }
    let function = caller.data().functions.get(&name).cloned();
    let Some(function) = function else {
        return Err(HostCallError::new(format!("host function '{name}' is not available")).into());
    };
    let limits = caller.data().limits.bridge;
    let mut values = Vec::with_capacity(args.len());
    for (i, arg) in args.into_iter().enumerate() {
        match convert::to_json(&mut *caller, &ex, arg, &limits) {
            Ok(value) => values.push(value),
            Err(e @ (SandboxError::Unconvertible(_) | SandboxError::ValueTooLarge(_))) => {
                return Err(HostCallError::new(format!("{name}: argument {i}: {e}")).into());
            }
            Err(other) => return Err(other.into()),
        }
    }
    match function {
        HostFunction::Sync(f) => {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&values)))
                .unwrap_or_else(|_| {
                    Err(HostCallError::new(format!("host function '{name}' failed")))
                })?;
            match convert::from_json(&mut *caller, &ex, &result, &limits) {
                Ok(value) => Ok(value),
                Err(e @ (SandboxError::Unconvertible(_) | SandboxError::ValueTooLarge(_))) => {
                    Err(HostCallError::new(format!("{name}: result: {e}")).into())
                }
                Err(other) => Err(other.into()),
            }
        }
        HostFunction::Async => start_async_call(caller, &ex, name.into_owned(), values),
    }
}

/// Creates the promise the guest awaits and queues the call for the host.
fn start_async_call(
    caller: &mut Caller<'_, HostState>,
    ex: &Exports,
    name: String,
    args: Vec<Value>,
) -> Result<u32, ImportError> {
    let max = caller.data().limits.max_pending_calls;
    if caller.data().resolvers.len() >= max {
        return Err(HostCallError::new(format!(
            "{name}: too many pending host calls (limit {max})"
        ))
        .with_code("too_many_pending_tool_calls")
        .into());
    }
    let Some(id) = caller
        .data()
        .next_call_id
        .checked_add(1)
        .map(|next| next - 1)
    else {
        return Err(HostCallError::new("host call ids exhausted").into());
    };
    let out = caller.data().ptrs.scratch;
    let promise = ex.qjs_new_promise.call(&mut *caller, (out, out + 4))?;
    let promise = ex.check_value(&mut *caller, promise)?;
    let resolve = ex.read_u32(&caller, out)?;
    let reject = ex.read_u32(&caller, out + 4)?;
    let state = caller.data_mut();
    state.next_call_id = id + 1;
    state.resolvers.insert(id, Resolvers { resolve, reject });
    state.pending.push(PendingCall { id, name, args });
    Ok(promise)
}

/// `__talon_print(stream, text)`: appends to the bounded output buffer.
/// Streams: 1 stdout, 2 stderr, 3 a `text()` item, 4 a `json()` item
/// (its JSON text).
fn print(
    caller: &mut Caller<'_, HostState>,
    ex: &Exports,
    args: &[u32],
) -> Result<u32, ImportError> {
    let (Some(&stream), Some(&text)) = (args.first(), args.get(1)) else {
        return Err(HostCallError::new("print: expected (stream, text)").into());
    };
    let stream = ex.qjs_get_float64.call(&mut *caller, stream)?;
    if ex.qjs_is_string.call(&mut *caller, text)? == 0 {
        return Err(HostCallError::new("print: text must be a string").into());
    }
    let scratch = caller.data().ptrs.scratch;
    let room = caller.data().output.room() + 1;
    let text = ex.read_string_capped(&mut *caller, text, scratch, room)?;
    let stream = match stream {
        2.0 => talon_protocol::OutputStream::Stderr,
        3.0 => talon_protocol::OutputStream::Text,
        4.0 => talon_protocol::OutputStream::Json,
        _ => talon_protocol::OutputStream::Stdout,
    };
    if let Err(limit) = caller.data_mut().output.push(stream, &text) {
        return Err(
            HostCallError::new(format!("output limit of {limit} bytes exceeded"))
                .with_code("output_limit_exceeded")
                .into(),
        );
    }
    Ok(ex.qjs_get_undefined.call(&mut *caller, ())?)
}

/// Throws a plain guest `Error` carrying `message` and, if set, `code`.
/// Host error objects never cross: only these two strings do.
pub(crate) fn throw_error(
    caller: &mut Caller<'_, HostState>,
    error: &HostCallError,
) -> wasmtime::Result<()> {
    let Ok(ex) = caller.data().exports() else {
        return Ok(());
    };
    let err = match crate::guest::new_error(&mut *caller, &ex, error) {
        Ok(err) => err,
        Err(SandboxError::Trap {
            trap: Some(trap), ..
        }) => return Err(wasmtime::Error::new(trap)),
        Err(SandboxError::Trap { message, .. }) => return Err(wasmtime::Error::msg(message)),
        // Out of memory while building the error: QuickJS has its own
        // exception pending already.
        Err(_) => return Ok(()),
    };
    let thrown = ex.qjs_throw.call(&mut *caller, err)?;
    ex.qjs_free_value.call(&mut *caller, thrown)?;
    ex.qjs_free_value.call(&mut *caller, err)?;
    Ok(())
}
