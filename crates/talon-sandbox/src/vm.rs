//! One QuickJS VM: evaluating scripts and cells, draining jobs, settling
//! asynchronous host calls, enforcing deadlines and classifying failures.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde_json::Value;
use talon_protocol::CodeModeOutput;
use wasmtime::Store;

use crate::abi::{self, Exports, PROP_HIDDEN};
use crate::config::VmOptions;
use crate::convert::{self, Strings};
use crate::error::{GuestError, Result, SandboxError};
use crate::functions::{HostCallError, HostFunctions, PendingCall};
use crate::host::HostState;
use crate::runtime::{NO_DEADLINE_TICKS, Sandbox};
use crate::snapshot;

/// Where a cell stands after the host drove it as far as it could.
#[derive(Debug, Clone, PartialEq)]
pub enum CellStatus {
    /// The cell's promise fulfilled; the value is JSON.
    Completed(Value),
    /// The cell awaits asynchronous host calls. These are the calls made
    /// since the last status; earlier ones may still be unsettled too.
    Waiting(Vec<PendingCall>),
}

/// A QuickJS VM in its own wasmtime store.
///
/// A VM is `Send` but not `Sync`: drive it from one thread at a time,
/// normally a worker of [`crate::Pool`]. After a hard stop or a trap it is
/// *poisoned*: every later call fails with [`SandboxError::Poisoned`].
pub struct Vm {
    sandbox: Sandbox,
    store: Store<HostState>,
    ex: Arc<Exports>,
    /// The running cell's promise (owned box).
    cell: Option<u32>,
    poisoned: bool,
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm")
            .field("cell", &self.cell)
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

impl Vm {
    pub(crate) fn create(
        sandbox: Sandbox,
        options: VmOptions,
        functions: Arc<HostFunctions>,
    ) -> Result<Self> {
        let names: Vec<String> = functions.names().into_iter().map(str::to_owned).collect();
        let state = HostState::new(options.limits, functions, options.clock)?;
        let (mut store, ex) = sandbox.instantiate(state)?;
        sandbox.inner.image.apply(&mut store, &ex)?;
        let mut vm = Self {
            sandbox,
            store,
            ex,
            cell: None,
            poisoned: false,
        };
        vm.apply_limits()?;
        for name in &names {
            install_function(&mut vm.store, &vm.ex, name)?;
        }
        Ok(vm)
    }

    pub(crate) fn restore(
        sandbox: Sandbox,
        bytes: &[u8],
        options: VmOptions,
        functions: Arc<HostFunctions>,
    ) -> Result<Self> {
        let image = &sandbox.inner.image;
        let decoded = snapshot::decode(bytes, image, &options.limits)?;
        let state = HostState::new(options.limits, functions, options.clock)?;
        let (mut store, ex) = sandbox.instantiate(state)?;
        image.apply(&mut store, &ex)?;
        let cell = (decoded.cell != 0).then_some(decoded.cell);
        decoded.apply(&mut store, &ex)?;
        let mut vm = Self {
            sandbox,
            store,
            ex,
            cell,
            poisoned: false,
        };
        vm.apply_limits()?;
        Ok(vm)
    }

    fn apply_limits(&mut self) -> Result<()> {
        let limits = self.store.data().limits;
        let heap = u32::try_from(limits.memory_limit_bytes).unwrap_or(u32::MAX);
        self.ex.qjs_set_memory_limit.call(&mut self.store, heap)?;
        self.ex
            .qjs_set_max_stack_size
            .call(&mut self.store, limits.max_stack_bytes)?;
        self.ex.qjs_set_interrupt_handler.call(&mut self.store, 1)?;
        // Route module loading to the host, which refuses it.
        self.ex.qjs_set_module_loader.call(&mut self.store, 1)?;
        Ok(())
    }

    /// Lets the host stop guest code at the next interrupt check.
    pub fn set_abort_signal(&mut self, signal: Arc<AtomicBool>) {
        self.store.data_mut().abort = Some(signal);
    }

    /// `true` once a hard stop or trap has discarded this VM.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// `true` while a cell has neither completed nor failed.
    pub fn has_cell(&self) -> bool {
        self.cell.is_some()
    }

    /// Size of the VM's linear memory in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.ex.memory.data_size(&self.store)
    }

    /// Host calls the guest made so far.
    pub fn host_calls(&self) -> u64 {
        self.store.data().host_calls
    }

    /// Takes what the guest printed since the last take.
    pub fn take_output(&mut self) -> Vec<CodeModeOutput> {
        self.store.data_mut().output.take()
    }

    /// Evaluates a global script and returns its completion value as JSON,
    /// after draining pending jobs. For cells, use [`Vm::run_cell`].
    pub fn eval(&mut self, code: &str) -> Result<Value> {
        self.usable()?;
        self.begin();
        let result = self.eval_inner(code);
        self.end();
        self.finish(result)
    }

    fn eval_inner(&mut self, code: &str) -> Result<Value> {
        let value = match eval_raw(&mut self.store, &self.ex, code, "<eval>") {
            Ok(value) => value,
            Err(SandboxError::PendingException) => return Err(self.take_failure(true)),
            Err(e) => return Err(e),
        };
        let converted = self.convert(value);
        self.ex.qjs_free_value.call(&mut self.store, value)?;
        let converted = converted?;
        self.drain_jobs()?;
        self.post_checks()?;
        Ok(converted)
    }

    /// Starts a cell: `body` is the body of an async function, so `return`
    /// gives the value and `await` works at the top. Runs until the cell
    /// completes, fails, or waits on asynchronous host calls.
    pub fn run_cell(&mut self, body: &str) -> Result<CellStatus> {
        self.usable()?;
        if self.cell.is_some() {
            return Err(SandboxError::Internal(
                "a cell is already running in this VM".into(),
            ));
        }
        self.begin();
        let result = self.start_inner(body);
        self.end();
        self.finish(result)
    }

    fn start_inner(&mut self, body: &str) -> Result<CellStatus> {
        // One line of wrapper before the body keeps the body's line numbers.
        let source = format!("(async () => {{{body}\n}})()");
        match eval_raw(&mut self.store, &self.ex, &source, "<cell>") {
            Ok(promise) => self.cell = Some(promise),
            Err(SandboxError::PendingException) => return Err(self.take_failure(true)),
            Err(e) => return Err(e),
        }
        self.drive()
    }

    /// Settles a pending asynchronous host call: its promise in the guest
    /// fulfils with the value, or rejects with a plain `Error`. Guest code
    /// does not run until [`Vm::resume`].
    pub fn settle(&mut self, id: u64, result: Result<Value, HostCallError>) -> Result<()> {
        self.usable()?;
        let Some(resolvers) = self.store.data_mut().resolvers.remove(&id) else {
            return Err(SandboxError::Internal(format!(
                "no pending host call with id {id}"
            )));
        };
        self.begin();
        let outcome = self.settle_inner(resolvers, result);
        self.end();
        self.finish(outcome)
    }

    fn settle_inner(
        &mut self,
        r: crate::host::Resolvers,
        result: Result<Value, HostCallError>,
    ) -> Result<()> {
        let limits = self.store.data().limits.bridge;
        let (function, value) = match result {
            Ok(value) => match convert::from_json(&mut self.store, &self.ex, &value, &limits) {
                Ok(boxed) => (r.resolve, boxed),
                Err(e) => (
                    r.reject,
                    new_error(
                        &mut self.store,
                        &self.ex,
                        &HostCallError::new(e.to_string()),
                    )?,
                ),
            },
            Err(error) => (r.reject, new_error(&mut self.store, &self.ex, &error)?),
        };
        let scratch = self.store.data().ptrs.scratch;
        let argv = scratch + 16;
        let undefined = self.ex.qjs_get_undefined.call(&mut self.store, ())?;
        self.ex
            .memory
            .write(&mut self.store, argv as usize, &value.to_le_bytes())
            .map_err(|e| SandboxError::corrupt(e.to_string()))?;
        let returned = self
            .ex
            .qjs_call
            .call(&mut self.store, (function, undefined, 1, argv))?;
        for owned in [returned, undefined, value, r.resolve, r.reject] {
            self.ex.qjs_free_value.call(&mut self.store, owned)?;
        }
        Ok(())
    }

    /// Runs the guest's pending jobs after settlements, under a fresh time
    /// budget, and reports where the cell stands.
    pub fn resume(&mut self) -> Result<CellStatus> {
        self.usable()?;
        if self.cell.is_none() {
            return Err(SandboxError::Internal("no cell to resume".into()));
        }
        self.begin();
        let result = self.drive();
        self.end();
        self.finish(result)
    }

    /// Serialises the VM (between calls) into a versioned, compressed,
    /// checksummed snapshot no larger than `max_snapshot_bytes`.
    pub fn snapshot(&mut self) -> Result<Vec<u8>> {
        self.usable()?;
        let image = &self.sandbox.inner.image;
        snapshot::encode(&mut self.store, &self.ex, image, self.cell.unwrap_or(0))
    }

    fn drive(&mut self) -> Result<CellStatus> {
        self.drain_jobs()?;
        let Some(cell) = self.cell else {
            return Err(SandboxError::Internal("no cell".into()));
        };
        match self.ex.qjs_promise_state.call(&mut self.store, cell)? {
            abi::PROMISE_PENDING => {
                let calls = std::mem::take(&mut self.store.data_mut().pending);
                self.post_checks()?;
                if self.store.data().resolvers.is_empty() {
                    return Err(SandboxError::Stalled);
                }
                Ok(CellStatus::Waiting(calls))
            }
            abi::PROMISE_FULFILLED => {
                let result = self.ex.qjs_promise_result.call(&mut self.store, cell)?;
                let value = self.convert(result);
                self.ex.qjs_free_value.call(&mut self.store, result)?;
                self.drop_cell()?;
                let value = value?;
                self.post_checks()?;
                Ok(CellStatus::Completed(value))
            }
            abi::PROMISE_REJECTED => {
                let reason = self.ex.qjs_promise_result.call(&mut self.store, cell)?;
                let failure = self.classify(reason, false);
                self.ex.qjs_free_value.call(&mut self.store, reason)?;
                self.drop_cell()?;
                Err(failure?)
            }
            other => Err(SandboxError::corrupt(format!("promise state {other}"))),
        }
    }

    fn drain_jobs(&mut self) -> Result<()> {
        loop {
            self.check_clock()?;
            if self.ex.qjs_is_job_pending.call(&mut self.store, ())? == 0 {
                return Ok(());
            }
            if self.ex.qjs_execute_pending_job.call(&mut self.store, ())? < 0 {
                return Err(self.take_failure(false));
            }
        }
    }

    fn check_clock(&mut self) -> Result<()> {
        let state = self.store.data_mut();
        if state
            .abort
            .as_ref()
            .is_some_and(|a| a.load(std::sync::atomic::Ordering::Relaxed))
        {
            state.aborted = true;
            return Err(SandboxError::Aborted);
        }
        if state.soft_deadline.is_some_and(|d| Instant::now() >= d) {
            state.interrupted = true;
            return Err(SandboxError::Timeout(
                state.limits.timeout.as_millis() as u64
            ));
        }
        Ok(())
    }

    /// Failures that outrank the cell's own outcome.
    fn post_checks(&mut self) -> Result<()> {
        let state = self.store.data();
        if let Some(specifier) = &state.module_denied {
            return Err(SandboxError::ModuleAccessDenied(format!(
                "cannot load '{specifier}'"
            )));
        }
        if state.output.exceeded() {
            return Err(SandboxError::OutputLimit(state.output.cap()));
        }
        Ok(())
    }

    /// Takes the pending exception and classifies it.
    fn take_failure(&mut self, at_compile: bool) -> SandboxError {
        let result = (|| {
            let exc = self.ex.qjs_get_exception.call(&mut self.store, ())?;
            let failure = self.classify(exc, at_compile);
            self.ex.qjs_free_value.call(&mut self.store, exc)?;
            failure
        })();
        result.unwrap_or_else(|e| e)
    }

    /// Classifies a thrown value (borrowed box): the host's flags first
    /// (abort, deadline, module, output, memory), then the guest's error.
    fn classify(&mut self, thrown: u32, at_compile: bool) -> Result<SandboxError> {
        let state = self.store.data();
        if state.aborted {
            return Ok(SandboxError::Aborted);
        }
        if state.interrupted {
            return Ok(SandboxError::Timeout(
                state.limits.timeout.as_millis() as u64
            ));
        }
        if let Some(specifier) = &state.module_denied {
            return Ok(SandboxError::ModuleAccessDenied(format!(
                "cannot load '{specifier}'"
            )));
        }
        if state.output.exceeded() {
            return Ok(SandboxError::OutputLimit(state.output.cap()));
        }
        let limiter_denied = state.limiter.denied;
        let error = convert::read_error_fields(&mut self.store, &self.ex, thrown)?;
        tracing::debug!(limiter_denied, ?error, "classifying a guest failure");
        if limiter_denied || (error.name == "InternalError" && error.message == "out of memory") {
            return Ok(SandboxError::MemoryLimit);
        }
        if at_compile && error.name == "SyntaxError" {
            return Ok(SandboxError::Syntax(error));
        }
        Ok(SandboxError::Guest(error))
    }

    fn convert(&mut self, value: u32) -> Result<Value> {
        let limits = self.store.data().limits.bridge;
        match convert::to_json(&mut self.store, &self.ex, value, &limits) {
            // The heap may be full of garbage the cell left behind (say,
            // after catching its own out-of-memory error): collect, retry.
            Err(SandboxError::MemoryLimit) => {
                self.ex.qjs_run_gc.call(&mut self.store, ())?;
                convert::to_json(&mut self.store, &self.ex, value, &limits)
            }
            other => other,
        }
    }

    fn drop_cell(&mut self) -> Result<()> {
        if let Some(cell) = self.cell.take() {
            self.ex.qjs_free_value.call(&mut self.store, cell)?;
        }
        Ok(())
    }

    fn usable(&self) -> Result<()> {
        if self.poisoned {
            Err(SandboxError::Poisoned)
        } else {
            Ok(())
        }
    }

    fn begin(&mut self) {
        let limits = self.store.data().limits;
        let state = self.store.data_mut();
        state.soft_deadline = Some(Instant::now() + limits.timeout);
        state.interrupted = false;
        let ticks = self
            .sandbox
            .ticks_for(limits.timeout + limits.hard_stop_grace);
        self.store.set_epoch_deadline(ticks);
    }

    fn end(&mut self) {
        self.store.data_mut().soft_deadline = None;
        self.store.set_epoch_deadline(NO_DEADLINE_TICKS);
    }

    /// Turns traps into their meaning and poisons the VM after one; a
    /// failed cell is dropped along with its pending host calls.
    fn finish<T>(&mut self, result: Result<T>) -> Result<T> {
        let error = match result {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let error = match error {
            SandboxError::Trap { trap, message } => {
                self.poisoned = true;
                let state = self.store.data();
                if state.aborted {
                    SandboxError::Aborted
                } else if trap == Some(wasmtime::Trap::Interrupt) {
                    SandboxError::Timeout(state.limits.timeout.as_millis() as u64)
                } else if state.limiter.denied {
                    SandboxError::MemoryLimit
                } else if trap == Some(wasmtime::Trap::StackOverflow) {
                    SandboxError::Guest(GuestError {
                        name: "RangeError".into(),
                        message: "Maximum call stack size exceeded".into(),
                        stack: None,
                    })
                } else {
                    tracing::warn!(%message, "guest trapped");
                    SandboxError::Internal(format!("the guest trapped: {message}"))
                }
            }
            other => other,
        };
        if !self.poisoned && self.cell.is_some() {
            let _ = self.abandon_cell();
        }
        Err(error)
    }

    fn abandon_cell(&mut self) -> Result<()> {
        self.drop_cell()?;
        let resolvers = std::mem::take(&mut self.store.data_mut().resolvers);
        self.store.data_mut().pending.clear();
        for r in resolvers.values() {
            self.ex.qjs_free_value.call(&mut self.store, r.resolve)?;
            self.ex.qjs_free_value.call(&mut self.store, r.reject)?;
        }
        Ok(())
    }
}

/// Evaluates `code` as a global script; returns the completion value box,
/// or `PendingException` with the exception left in the context.
pub(crate) fn eval_raw(
    store: &mut Store<HostState>,
    ex: &Exports,
    code: &str,
    filename: &str,
) -> Result<u32> {
    let code_ptr = ex.alloc_bytes(&mut *store, code.as_bytes())?;
    let name_ptr = match ex.alloc_bytes(&mut *store, filename.as_bytes()) {
        Ok(ptr) => ptr,
        Err(e) => {
            ex.wasm_free.call(&mut *store, code_ptr)?;
            return Err(e);
        }
    };
    let result = ex
        .qjs_eval
        .call(&mut *store, (code_ptr, code.len() as u32, name_ptr, 0));
    ex.wasm_free.call(&mut *store, code_ptr)?;
    ex.wasm_free.call(&mut *store, name_ptr)?;
    ex.check_value(&mut *store, result?)
}

/// Creates a host function object named `name` and defines it as a
/// configurable, non-enumerable global.
pub(crate) fn install_function(
    store: &mut Store<HostState>,
    ex: &Exports,
    name: &str,
) -> Result<()> {
    let name_ptr = ex.alloc_bytes(&mut *store, name.as_bytes())?;
    let function = ex
        .qjs_new_host_function
        .call(&mut *store, (name_ptr, name.len() as u32, 0));
    let function = match function
        .map_err(SandboxError::from)
        .and_then(|f| ex.check_value(&mut *store, f))
    {
        Ok(f) => f,
        Err(e) => {
            ex.wasm_free.call(&mut *store, name_ptr)?;
            return Err(e);
        }
    };
    let global = ex.qjs_get_global.call(&mut *store, ())?;
    let status = ex
        .qjs_define_prop_string
        .call(&mut *store, (global, name_ptr, function, PROP_HIDDEN))?;
    for owned in [function, global] {
        ex.qjs_free_value.call(&mut *store, owned)?;
    }
    ex.wasm_free.call(&mut *store, name_ptr)?;
    if status < 0 {
        convert::clear_exception(store, ex)?;
        return Err(SandboxError::Internal(format!(
            "could not define global {name}"
        )));
    }
    Ok(())
}

/// Builds a plain guest `Error` (owned box) from a host error.
fn new_error(store: &mut Store<HostState>, ex: &Exports, error: &HostCallError) -> Result<u32> {
    let strings = Strings::at(store.data().ptrs.strings);
    let err = ex.qjs_new_error.call(&mut *store, ())?;
    let err = ex.check_value(&mut *store, err)?;
    let mut set = |key: u32, text: &str| -> Result<()> {
        let value = ex.new_string(&mut *store, text)?;
        ex.qjs_define_prop_string
            .call(&mut *store, (err, key, value, PROP_HIDDEN))?;
        ex.qjs_free_value.call(&mut *store, value)?;
        Ok(())
    };
    set(strings.message, &error.message)?;
    if let Some(code) = &error.code {
        set(strings.code, code)?;
    }
    Ok(err)
}
