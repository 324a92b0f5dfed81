//! One QuickJS VM: evaluating scripts and cells, draining jobs, settling
//! asynchronous host calls, enforcing deadlines and classifying failures.

use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

use serde_json::Value;
use talon_protocol::ConsoleOutput;
use wasmtime::Store;

use crate::abi::{self, Exports};
use crate::config::VmOptions;
use crate::convert;
use crate::error::{GuestError, Result, SandboxError};
use crate::functions::{HostCallError, HostFunctions, PendingCall};
use crate::guest::{eval_raw, install_function, new_error};
use crate::host::{HostState, Settlement};
use crate::image::Image;
use crate::runtime::{NO_DEADLINE_TICKS, Sandbox};
use crate::snapshot;

/// Where a cell stands after the host drove it as far as it could.
#[derive(Debug, Clone, PartialEq)]
pub enum CellStatus {
    /// The cell's promise fulfilled; the value is JSON. Host calls it
    /// started but never awaited are abandoned.
    Completed(Value),
    /// The cell awaits asynchronous host calls. These are the calls made
    /// since the last status; earlier ones may still be unsettled too.
    Waiting(Vec<PendingCall>),
}

/// A QuickJS VM in its own wasmtime store.
///
/// A VM is `Send` but not `Sync`: drive it from one thread at a time,
/// normally a worker of [`crate::Pool`]. After a hard stop, a trap, or a
/// stop that left jobs queued it is *poisoned*: every later call fails with
/// [`SandboxError::Poisoned`].
pub struct Vm {
    sandbox: Sandbox,
    /// The image it started from.
    image: Arc<Image>,
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

/// Whether a failed operation concerns the running cell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Cell,
    Script,
}

impl Vm {
    pub(crate) fn create(
        sandbox: Sandbox,
        options: VmOptions,
        functions: Arc<HostFunctions>,
    ) -> Result<Self> {
        let image = sandbox.image(options.prelude.as_deref())?;
        let hosted = &image.base.hosted;
        let names: Vec<String> = functions
            .names()
            .into_iter()
            .filter(|n| !hosted.contains(*n))
            .map(str::to_owned)
            .collect();
        let state = HostState::new(options.limits.clamped(), functions, options.clock)?;
        let (mut store, ex) = sandbox.instantiate(&image, state)?;
        image.base.apply(&mut store, &ex)?;
        let mut vm = Self {
            sandbox,
            image,
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
        let limits = options.limits.clamped();
        let image = sandbox.image(options.prelude.as_deref())?;
        let decoded = snapshot::decode(
            bytes,
            &image.base,
            &sandbox.inner.snapshot_key,
            &limits,
            &functions,
        )?;
        let state = HostState::new(limits, functions, options.clock)?;
        let (mut store, ex) = sandbox.instantiate(&image, state)?;
        image.base.apply(&mut store, &ex)?;
        let cell = (decoded.cell != 0).then_some(decoded.cell);
        decoded.apply(&mut store, &ex)?;
        let mut vm = Self {
            sandbox,
            image,
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

    /// Sets the time budget of later operations (clamped like
    /// [`crate::Limits::clamped`]); for callers that share one deadline
    /// across several steps.
    pub fn set_timeout(&mut self, timeout: std::time::Duration) {
        let limits = crate::Limits {
            timeout,
            ..self.store.data().limits
        }
        .clamped();
        self.store.data_mut().limits.timeout = limits.timeout;
    }

    /// Stops guest code at the next interrupt check once `cancel` is
    /// cancelled (the step fails with [`SandboxError::Aborted`]).
    pub fn set_cancel(&mut self, cancel: CancellationToken) {
        self.store.data_mut().cancel = Some(cancel);
    }

    /// `true` once this VM was discarded (see [`Vm`]).
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
    pub fn take_output(&mut self) -> Vec<ConsoleOutput> {
        self.store.data_mut().output.take()
    }

    /// Evaluates a global script and returns its completion value as JSON,
    /// after draining pending jobs. For cells, use [`Vm::run_cell`].
    pub fn eval(&mut self, code: &str) -> Result<Value> {
        self.usable()?;
        self.store.data_mut().reset_flags();
        self.begin();
        let result = self.eval_inner(code);
        self.end();
        self.finish(result, Scope::Script)
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
        self.store.data_mut().reset_flags();
        self.begin();
        let result = self.start_inner(body);
        self.end();
        self.finish(result, Scope::Cell)
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

    /// Settles a pending asynchronous host call: on the next
    /// [`Vm::resume`], its promise fulfils with the value or rejects with a
    /// plain `Error`. No guest code runs here.
    pub fn settle(&mut self, id: u64, result: Result<Value, HostCallError>) -> Result<()> {
        self.usable()?;
        let state = self.store.data_mut();
        if !state.resolvers.contains_key(&id) || state.settled.iter().any(|s| s.id == id) {
            return Err(SandboxError::Internal(format!(
                "no pending host call with id {id}"
            )));
        }
        state.settled.push(Settlement { id, result });
        Ok(())
    }

    /// Delivers the settlements and runs the guest's jobs, under a fresh
    /// time budget; reports where the cell stands.
    pub fn resume(&mut self) -> Result<CellStatus> {
        self.usable()?;
        if self.cell.is_none() {
            return Err(SandboxError::Internal("no cell to resume".into()));
        }
        self.store.data_mut().aborted = false;
        self.begin();
        let result = self.deliver().and_then(|()| self.drive());
        self.end();
        self.finish(result, Scope::Cell)
    }

    fn deliver(&mut self) -> Result<()> {
        let settled = std::mem::take(&mut self.store.data_mut().settled);
        for Settlement { id, result } in settled {
            let Some(r) = self.store.data_mut().resolvers.remove(&id) else {
                continue;
            };
            let limits = self.store.data().limits.bridge;
            let outcome = match result {
                Ok(value) => match convert::from_json(&mut self.store, &self.ex, &value, &limits) {
                    Ok(boxed) => Ok((r.resolve, boxed)),
                    Err(e @ (SandboxError::Unconvertible(_) | SandboxError::ValueTooLarge(_))) => {
                        new_error(
                            &mut self.store,
                            &self.ex,
                            &HostCallError::new(e.to_string()),
                        )
                        .map(|b| (r.reject, b))
                    }
                    Err(e) => Err(e),
                },
                Err(error) => new_error(&mut self.store, &self.ex, &error).map(|b| (r.reject, b)),
            };
            let called = outcome.and_then(|(function, value)| {
                let argv = self.store.data().ptrs.scratch + 16;
                self.ex
                    .memory
                    .write(&mut self.store, argv as usize, &value.to_le_bytes())
                    .map_err(|e| SandboxError::internal_failed("", e))?;
                let undefined = self.ex.qjs_get_undefined.call(&mut self.store, ())?;
                let returned = self
                    .ex
                    .qjs_call
                    .call(&mut self.store, (function, undefined, 1, argv));
                self.ex.qjs_free_value.call(&mut self.store, undefined)?;
                self.ex.qjs_free_value.call(&mut self.store, value)?;
                let returned = returned?;
                let threw = self.ex.qjs_is_exception.call(&mut self.store, returned)? != 0;
                self.ex.qjs_free_value.call(&mut self.store, returned)?;
                if threw {
                    return Err(self.take_failure(false));
                }
                Ok(())
            });
            self.ex.qjs_free_value.call(&mut self.store, r.resolve)?;
            self.ex.qjs_free_value.call(&mut self.store, r.reject)?;
            called?;
        }
        Ok(())
    }

    /// Serialises the VM (between calls) into a versioned, compressed,
    /// authenticated snapshot no larger than `max_snapshot_bytes`.
    pub fn snapshot(&mut self) -> Result<Vec<u8>> {
        self.usable()?;
        let inner = &self.sandbox.inner;
        snapshot::encode(
            &mut self.store,
            &self.ex,
            &self.image.base,
            &inner.snapshot_key,
            self.cell.unwrap_or(0),
        )
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
                self.abandon_cell()?;
                let value = value?;
                self.post_checks()?;
                Ok(CellStatus::Completed(value))
            }
            abi::PROMISE_REJECTED => {
                let reason = self.ex.qjs_promise_result.call(&mut self.store, cell)?;
                let failure = self.classify(reason, false);
                self.ex.qjs_free_value.call(&mut self.store, reason)?;
                self.abandon_cell()?;
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
            .cancel
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
        {
            state.aborted = true;
        }
        if state.soft_deadline.is_some_and(|d| Instant::now() >= d) {
            state.interrupted = true;
        }
        match state.stop() {
            Some(stop) => Err(stop),
            None => Ok(()),
        }
    }

    /// Failures that outrank the cell's own outcome.
    fn post_checks(&mut self) -> Result<()> {
        let state = self.store.data();
        if let Some(stop) = state.stop() {
            return Err(stop);
        }
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
        self.post_checks()?;
        let state = self.store.data();
        let limiter_denied = state.limiter.denied;
        // QuickJS's out-of-memory error is uncatchable; a guest can throw
        // an InternalError of its own, but not an uncatchable one.
        let uncatchable = self
            .ex
            .qjs_is_uncatchable_error
            .call(&mut self.store, thrown)?
            != 0;
        let error = crate::props::read_error_fields(&mut self.store, &self.ex, thrown)?;
        if limiter_denied
            || (uncatchable && error.name == "InternalError" && error.message == "out of memory")
        {
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
            // The heap may be full of garbage the cell left behind: collect
            // and retry once.
            Err(SandboxError::MemoryLimit) => {
                self.ex.qjs_run_gc.call(&mut self.store, ())?;
                convert::to_json(&mut self.store, &self.ex, value, &limits)
            }
            other => other,
        }
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
        state.soft_deadline = Instant::now().checked_add(limits.timeout);
        state.interrupted = false;
        let ticks = self
            .sandbox
            .ticks_for(limits.timeout.saturating_add(limits.hard_stop_grace));
        self.store.set_epoch_deadline(ticks);
    }

    fn end(&mut self) {
        self.store.data_mut().soft_deadline = None;
        self.store.set_epoch_deadline(NO_DEADLINE_TICKS);
    }

    /// Turns traps into their meaning and poisons the VM after one (or
    /// after a stop that left jobs queued, which no export can clear); a
    /// failed cell is dropped with its pending host calls.
    fn finish<T>(&mut self, result: Result<T>, scope: Scope) -> Result<T> {
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
                        code: None,
                    })
                } else {
                    tracing::warn!(%message, "guest trapped");
                    SandboxError::Internal("the guest trapped".into())
                }
            }
            other => other,
        };
        if !self.poisoned && matches!(error, SandboxError::Timeout(_) | SandboxError::Aborted) {
            let queued = self
                .ex
                .qjs_is_job_pending
                .call(&mut self.store, ())
                .map(|n| n != 0);
            if !matches!(queued, Ok(false)) {
                self.poisoned = true;
            }
        }
        if !self.poisoned && scope == Scope::Cell && self.abandon_cell().is_err() {
            self.poisoned = true;
        }
        Err(error)
    }

    /// Drops the cell and every host call it still had open.
    fn abandon_cell(&mut self) -> Result<()> {
        if let Some(cell) = self.cell.take() {
            self.ex.qjs_free_value.call(&mut self.store, cell)?;
        }
        let state = self.store.data_mut();
        let resolvers = std::mem::take(&mut state.resolvers);
        state.pending.clear();
        state.settled.clear();
        if !resolvers.is_empty() {
            tracing::debug!(
                count = resolvers.len(),
                "abandoning host calls of a finished cell"
            );
        }
        for r in resolvers.values() {
            self.ex.qjs_free_value.call(&mut self.store, r.resolve)?;
            self.ex.qjs_free_value.call(&mut self.store, r.reject)?;
        }
        Ok(())
    }
}
