//! Driving one cell through a step (`exec` or `wait`): run guest code on a
//! pool worker, start the nested calls it asked for (at most
//! `maxPendingToolCalls` at once), deliver results as they arrive, and
//! stop when the cell completes, fails, yields, or the step's time budget
//! ends with calls still running (then the VM is snapshotted into the
//! store and the step returns `waiting`).
//!
//! Durability: a nested call that finishes while its cell is suspended
//! records its result in the store, so a later `wait`, even in a new
//! process, delivers it without running the call again. Calls that were
//! still running when their process died are dispatched again if the tool
//! is replay-safe, and otherwise reach the guest as a catchable
//! `nested_tool_failed`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use talon_protocol::{
    CodeModeErrorCode, CodeModeOutput, CodeModePendingToolCall, CodeModeResult,
    CodeModeSnapshotEvent, CodeModeWaitReason, ConsoleOutput, OutputStream,
};
use talon_sandbox::{CellStatus, HostCallError, Limits, PendingCall, SandboxError, Vm, VmOptions};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::AbortHandle;

use crate::bridge::{Nested, Request};
use crate::runtime::{CodeModeRun, event};
use crate::store::{NestedError, NestedResult, PendingNestedCall, SuspendedCell};

/// Guest-side cap on unsettled host calls of one cell; calls beyond
/// `maxPendingToolCalls` queue on the host until a slot frees.
const MAX_OUTSTANDING: usize = 1024;

/// The in-process part of a cell: its running nested calls and the channel
/// their results arrive on. Dropping it cancels the calls.
pub(crate) struct Live {
    tx: mpsc::UnboundedSender<(u64, NestedResult)>,
    rx: mpsc::UnboundedReceiver<(u64, NestedResult)>,
    tasks: HashMap<u64, AbortHandle>,
    permits: Arc<Semaphore>,
}

impl Live {
    pub fn new(max_pending: usize) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            tx,
            rx,
            tasks: HashMap::new(),
            permits: Arc::new(Semaphore::new(max_pending.max(1))),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.abort();
        }
    }
}

/// What the host keeps with a stored cell besides its pending calls.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meta {
    /// The `exec` call that started the cell (parent of its nested calls).
    pub parent: String,
    /// Nested calls numbered so far.
    pub next_nested: u64,
    /// The host call of a pending `yield_control`.
    pub yield_call: Option<u64>,
}

impl Meta {
    pub fn from_json(value: &Value) -> Self {
        Self {
            parent: value["parent"].as_str().unwrap_or("exec").to_owned(),
            next_nested: value["nextNested"].as_u64().unwrap_or(0),
            yield_call: value["yieldCall"].as_u64(),
        }
    }

    fn to_json(&self) -> Value {
        json!({"parent": self.parent, "nextNested": self.next_nested, "yieldCall": self.yield_call})
    }
}

/// A nested call the cell waits for.
struct InFlight {
    call_id: String,
    nested: Nested,
}

/// The host's side of a cell during a step.
pub(crate) struct CellState {
    run_id: String,
    meta: Meta,
    in_flight: BTreeMap<u64, InFlight>,
    ready: Vec<(u64, NestedResult, Option<InFlight>)>,
    live: Live,
    /// Whether the cell was stored before this step (its end is a
    /// "deleted" snapshot event).
    was_stored: bool,
}

impl CellState {
    pub fn new(run_id: String, parent: String, live: Live) -> Self {
        Self {
            run_id,
            meta: Meta {
                parent,
                ..Meta::default()
            },
            in_flight: BTreeMap::new(),
            ready: Vec::new(),
            live,
            was_stored: false,
        }
    }
}

/// Where the cell's VM is.
pub(crate) enum Machine {
    /// Not created yet: the cell's JavaScript.
    Fresh(String),
    /// Running in this process.
    Live(Vm),
    /// A snapshot, restored when there is something to deliver.
    Stored(Vec<u8>),
}

/// What a guest step produced.
struct Stepped {
    vm: Option<Vm>,
    printed: Vec<ConsoleOutput>,
    status: Result<CellStatus, SandboxError>,
}

fn to_output(printed: Vec<ConsoleOutput>) -> impl Iterator<Item = CodeModeOutput> {
    printed.into_iter().map(|item| match item.stream {
        OutputStream::Json => CodeModeOutput::Json {
            value: serde_json::from_str(&item.text).unwrap_or(Value::String(item.text)),
        },
        _ => CodeModeOutput::Text { text: item.text },
    })
}

fn restarted_failure(tool_id: &str) -> NestedResult {
    Err(NestedError {
        message: format!(
            "the runtime restarted while {tool_id} was running; it was not retried because the tool is not \
             marked replay-safe"
        ),
        code: Some("nested_tool_failed".into()),
    })
}

impl CodeModeRun {
    /// The host side of a stored cell, ready to be driven by `wait`.
    pub(crate) fn resume_cell(
        &self,
        run_id: String,
        meta: Meta,
        pending: Vec<PendingNestedCall>,
        live: Option<Live>,
    ) -> CellState {
        let restarted = live.is_none();
        let live = live.unwrap_or_else(|| Live::new(self.config.max_pending_tool_calls));
        let mut cell = CellState::new(run_id, meta.parent.clone(), live);
        cell.meta = meta;
        cell.was_stored = true;
        if let Some(id) = cell.meta.yield_call.take() {
            cell.ready.push((id, Ok(Value::Null), None));
        }
        for p in pending {
            let flight = InFlight {
                call_id: p.call_id,
                nested: Nested {
                    tool_id: p.tool_id,
                    args: p.args,
                    replay_safe: p.replay_safe,
                },
            };
            match p.result {
                Some(result) => cell.ready.push((p.host_call_id, result, None)),
                None if !restarted => {
                    cell.in_flight.insert(p.host_call_id, flight);
                }
                None if flight.nested.replay_safe => {
                    self.spawn(&mut cell, p.host_call_id, flight);
                }
                None => {
                    let failure = restarted_failure(&flight.nested.tool_id);
                    cell.ready.push((p.host_call_id, failure, None));
                }
            }
        }
        self.collect(&mut cell);
        cell
    }

    /// Drives the cell until it completes, fails, or suspends.
    pub(crate) async fn drive(
        &self,
        mut cell: CellState,
        mut machine: Machine,
        started: Instant,
        events: Vec<CodeModeSnapshotEvent>,
    ) -> CodeModeResult {
        let deadline = started + self.config.timeout;
        let mut output: Vec<CodeModeOutput> = Vec::new();
        let mut run_now = matches!(machine, Machine::Fresh(_)) || !cell.ready.is_empty();
        loop {
            if run_now {
                if self.ctx.abort.load(Ordering::Relaxed) {
                    return self.end_failed(cell, started, events, output, aborted());
                }
                let ready: Vec<(u64, NestedResult)> = cell
                    .ready
                    .drain(..)
                    .map(|(id, result, _)| (id, result))
                    .collect();
                let stepped = self.step(machine, ready, deadline).await;
                output.extend(to_output(stepped.printed));
                let vm = stepped.vm;
                match stepped.status {
                    Err(error) => return self.end_failed(cell, started, events, output, error),
                    Ok(CellStatus::Completed(value)) => {
                        return self.end_completed(cell, started, events, output, value);
                    }
                    Ok(CellStatus::Waiting(calls)) => {
                        let Some(vm) = vm else {
                            return self.end_failed(
                                cell,
                                started,
                                events,
                                output,
                                SandboxError::Internal("the VM was lost".into()),
                            );
                        };
                        machine = Machine::Live(vm);
                        for call in calls {
                            self.accept(&mut cell, call);
                        }
                    }
                }
            }
            // Every way round the loop from here delivers something.
            run_now = true;
            if cell.meta.yield_call.is_some() {
                return self
                    .suspend(
                        cell,
                        machine,
                        CodeModeWaitReason::Yield,
                        started,
                        events,
                        output,
                    )
                    .await;
            }
            if !cell.ready.is_empty() {
                if Instant::now() < deadline {
                    continue;
                }
                return self
                    .suspend(
                        cell,
                        machine,
                        CodeModeWaitReason::PendingTools,
                        started,
                        events,
                        output,
                    )
                    .await;
            }
            if cell.in_flight.is_empty() {
                return self.end_failed(cell, started, events, output, SandboxError::Stalled);
            }
            match self.next_result(&mut cell, deadline).await {
                Next::Ready => {}
                Next::Deadline => {
                    return self
                        .suspend(
                            cell,
                            machine,
                            CodeModeWaitReason::PendingTools,
                            started,
                            events,
                            output,
                        )
                        .await;
                }
                Next::Aborted => return self.end_failed(cell, started, events, output, aborted()),
            }
        }
    }

    /// One guest step on a pool worker: create and start, or restore (if
    /// needed), deliver results and resume.
    async fn step(
        &self,
        machine: Machine,
        ready: Vec<(u64, NestedResult)>,
        deadline: Instant,
    ) -> Stepped {
        let functions = self.bridge.functions();
        let options = VmOptions {
            limits: Limits {
                timeout: deadline.saturating_duration_since(Instant::now()),
                memory_limit_bytes: self.config.memory_limit_bytes,
                max_output_bytes: self.config.max_output_bytes,
                max_snapshot_bytes: self.config.max_snapshot_bytes,
                max_pending_calls: MAX_OUTSTANDING,
                ..Limits::default()
            }
            .clamped(),
            ..VmOptions::default()
        };
        let abort = self.ctx.abort.clone();
        let globals: Vec<String> = self
            .bridge
            .namespaces
            .visible
            .iter()
            .map(|ns| ns.registration.global_name.clone())
            .collect();
        let job = move |sandbox: &talon_sandbox::Sandbox| -> Stepped {
            let fail = |error| Stepped {
                vm: None,
                printed: Vec::new(),
                status: Err(error),
            };
            let (mut vm, fresh) = match machine {
                Machine::Fresh(code) => match sandbox.create_vm(options, functions) {
                    Ok(vm) => (vm, Some(code)),
                    Err(e) => return fail(e),
                },
                Machine::Live(vm) => (vm, None),
                Machine::Stored(bytes) => match sandbox.restore_vm(&bytes, options, functions) {
                    Ok(vm) => (vm, None),
                    Err(e) => return fail(restore_error(e)),
                },
            };
            vm.set_abort_signal(abort);
            vm.set_timeout(deadline.saturating_duration_since(Instant::now()));
            let status = match fresh {
                Some(code) => {
                    let setup = format!(
                        "__openclaw_setup({});",
                        serde_json::to_string(&globals).unwrap_or_else(|_| "[]".into())
                    );
                    match vm.eval(&setup) {
                        Ok(_) => vm.run_cell(&code),
                        Err(e) => Err(e),
                    }
                }
                None => {
                    let mut settled = Ok(());
                    for (id, result) in ready {
                        // Values cross as JSON text; the prelude parses it.
                        let result = result.map(crate::bridge::json_text).map_err(|e| {
                            let error = HostCallError::new(e.message);
                            match e.code {
                                Some(code) => error.with_code(code),
                                None => error,
                            }
                        });
                        settled = settled.and_then(|()| vm.settle(id, result));
                    }
                    settled.and_then(|()| vm.resume())
                }
            };
            let printed = vm.take_output();
            Stepped {
                vm: Some(vm),
                printed,
                status,
            }
        };
        // The VM enforces the deadline itself; this bounds the wait for a
        // worker and a VM that could not be stopped.
        let grace = deadline + Duration::from_secs(2);
        match tokio::time::timeout_at(grace.into(), self.shared.pool.run(job)).await {
            Ok(Ok(stepped)) => stepped,
            Ok(Err(e)) => Stepped {
                vm: None,
                printed: Vec::new(),
                status: Err(e),
            },
            Err(_) => Stepped {
                vm: None,
                printed: Vec::new(),
                status: Err(SandboxError::Timeout(self.config.timeout.as_millis() as u64)),
            },
        }
    }

    /// Takes one guest request: starts a nested call, answers at once, or
    /// notes a yield.
    fn accept(&self, cell: &mut CellState, call: PendingCall) {
        match self.bridge.request(&call.name, &call.args) {
            Request::Ready(result) => cell.ready.push((call.id, result, None)),
            Request::Yield(reason) => {
                if self.shared.debug {
                    tracing::info!(target: "talon::code_mode", run_id = %cell.run_id, ?reason, "bridge: yield_control");
                }
                cell.meta.yield_call = Some(call.id);
            }
            Request::Call(nested) => {
                cell.meta.next_nested += 1;
                let call_id = format!("{}/{}", cell.meta.parent, cell.meta.next_nested);
                self.bridge.telemetry.nested_call(&nested.tool_id);
                self.spawn(cell, call.id, InFlight { call_id, nested });
            }
        }
    }

    /// Starts a nested call as a task; at most `maxPendingToolCalls` run
    /// at once. Its result goes to the cell's channel and, when the cell
    /// is stored, into the store.
    fn spawn(&self, cell: &mut CellState, host_id: u64, flight: InFlight) {
        let bridge = self.bridge.clone();
        let ctx = self.ctx.clone();
        let parent = cell.meta.parent.clone();
        let tx = cell.live.tx.clone();
        let permits = cell.live.permits.clone();
        let store = self.shared.store.clone();
        let run_id = cell.run_id.clone();
        let call_id = flight.call_id.clone();
        let nested = flight.nested.clone();
        let handle = tokio::spawn(async move {
            let Ok(_permit) = permits.acquire_owned().await else {
                return;
            };
            let result = bridge.run(&ctx, &parent, call_id, &nested).await;
            let _ = tx.send((host_id, result.clone()));
            if let Err(error) = store.settle(&run_id, host_id, result) {
                tracing::warn!(%error, run_id = %run_id, "recording a nested call's result");
            }
        });
        cell.live.tasks.insert(host_id, handle.abort_handle());
        cell.in_flight.insert(host_id, flight);
    }

    /// Moves results that already arrived to `ready`.
    fn collect(&self, cell: &mut CellState) {
        while let Ok((id, result)) = cell.live.rx.try_recv() {
            take_result(cell, id, result);
        }
    }

    /// Waits for the next result, the deadline, or an abort.
    async fn next_result(&self, cell: &mut CellState, deadline: Instant) -> Next {
        loop {
            if self.ctx.abort.load(Ordering::Relaxed) {
                return Next::Aborted;
            }
            let now = Instant::now();
            if now >= deadline {
                return Next::Deadline;
            }
            let tick = (now + Duration::from_millis(50)).min(deadline);
            // The cell holds a sender, so the channel never closes.
            if let Ok(Some((id, result))) =
                tokio::time::timeout_at(tick.into(), cell.live.rx.recv()).await
            {
                take_result(cell, id, result);
                self.collect(cell);
                if !cell.ready.is_empty() {
                    return Next::Ready;
                }
            }
        }
    }

    /// Snapshots the VM and stores the cell; its running calls go on.
    async fn suspend(
        &self,
        mut cell: CellState,
        machine: Machine,
        reason: CodeModeWaitReason,
        started: Instant,
        mut events: Vec<CodeModeSnapshotEvent>,
        output: Vec<CodeModeOutput>,
    ) -> CodeModeResult {
        let snapshot = match machine {
            Machine::Stored(bytes) => Ok(bytes),
            Machine::Live(mut vm) => match self.shared.pool.run(move |_| vm.snapshot()).await {
                Ok(result) => result,
                Err(e) => Err(e),
            },
            Machine::Fresh(_) => Err(SandboxError::Internal(
                "suspending a cell that never ran".into(),
            )),
        };
        let snapshot = match snapshot {
            Ok(bytes) => bytes,
            Err(error) => {
                if matches!(error, SandboxError::SnapshotTooLarge { .. }) {
                    events.push(event("rejected", &cell.run_id, None));
                }
                return self.end_failed(cell, started, events, output, error);
            }
        };
        let size = snapshot.len();
        let mut pending: Vec<PendingNestedCall> = cell
            .in_flight
            .iter()
            .map(|(id, f)| pending_record(*id, f, None))
            .collect();
        for (id, result, flight) in cell.ready.drain(..) {
            if let Some(flight) = flight {
                pending.push(pending_record(id, &flight, Some(result)));
            } else if cell.meta.yield_call != Some(id) {
                // An answer given without a call (a refusal, a restart
                // failure): keep it as a finished pseudo-call.
                pending.push(PendingNestedCall {
                    host_call_id: id,
                    call_id: format!("{}/answer-{id}", cell.meta.parent),
                    tool_id: String::new(),
                    args: Value::Null,
                    replay_safe: false,
                    result: Some(result),
                });
            }
        }
        let record = SuspendedCell {
            id: cell.run_id.clone(),
            scope: self.scope.clone(),
            snapshot,
            pending,
            expires_at: SystemTime::now() + self.config.snapshot_ttl,
            meta: cell.meta.to_json(),
        };
        if let Err(error) = self.shared.store.put(record) {
            events.push(event("rejected", &cell.run_id, Some(size)));
            let code = error.code();
            return self.end_failed_with(
                cell,
                started,
                events,
                output,
                error.to_string(),
                Some(code),
            );
        }
        events.push(event("created", &cell.run_id, Some(size)));
        // Results that arrived while the cell was being stored: record
        // them, since the channel alone would not survive the process.
        while let Ok((id, result)) = cell.live.rx.try_recv() {
            if cell.in_flight.remove(&id).is_some() {
                cell.live.tasks.remove(&id);
                if let Err(error) = self.shared.store.settle(&cell.run_id, id, result) {
                    tracing::warn!(%error, "recording a nested call's result");
                }
            }
        }
        let pending_tool_calls = cell
            .in_flight
            .values()
            .map(|f| CodeModePendingToolCall {
                call_id: f.call_id.clone(),
                tool_id: f.nested.tool_id.clone(),
            })
            .collect();
        let run_id = cell.run_id.clone();
        if let Ok(mut live) = self.shared.live.lock() {
            live.insert(
                run_id.clone(),
                std::mem::replace(&mut cell.live, Live::new(1)),
            );
        }
        CodeModeResult::Waiting {
            run_id,
            reason,
            pending_tool_calls,
            output,
            telemetry: self.bridge.telemetry.report(started, events),
        }
    }

    fn end_completed(
        &self,
        cell: CellState,
        started: Instant,
        mut events: Vec<CodeModeSnapshotEvent>,
        output: Vec<CodeModeOutput>,
        value: Value,
    ) -> CodeModeResult {
        let bytes = serde_json::to_vec(&value).map_or(0, |v| v.len());
        if bytes > self.config.max_output_bytes {
            let error = format!(
                "the returned value is {bytes} bytes as JSON, over maxOutputBytes ({})",
                self.config.max_output_bytes
            );
            return self.end_failed_with(
                cell,
                started,
                events,
                output,
                error,
                Some(CodeModeErrorCode::OutputLimitExceeded),
            );
        }
        if cell.was_stored {
            events.push(event("deleted", &cell.run_id, None));
        }
        drop(cell);
        CodeModeResult::Completed {
            value,
            output,
            telemetry: self.bridge.telemetry.report(started, events),
        }
    }

    fn end_failed(
        &self,
        cell: CellState,
        started: Instant,
        events: Vec<CodeModeSnapshotEvent>,
        output: Vec<CodeModeOutput>,
        error: SandboxError,
    ) -> CodeModeResult {
        let (message, code, stack) = match error {
            SandboxError::Guest(guest) => {
                // A host error the guest did not catch keeps its code.
                let code = guest
                    .code
                    .as_deref()
                    .and_then(|c| serde_json::from_value(json!(c)).ok())
                    .filter(|c| *c != CodeModeErrorCode::Unknown);
                (guest.to_string(), code, guest.stack)
            }
            // The VM reports what was left of the step; the model set the
            // whole budget.
            SandboxError::Timeout(_) => (
                format!(
                    "the cell exceeded its time limit of {} ms",
                    self.config.timeout.as_millis()
                ),
                Some(CodeModeErrorCode::Timeout),
                None,
            ),
            SandboxError::Stalled => (
                "the cell waits for a promise that nothing will ever settle".into(),
                SandboxError::Stalled.code(),
                None,
            ),
            other => {
                let code = other.code();
                (other.to_string(), code, None)
            }
        };
        let mut result = self.end_failed_with(cell, started, events, output, message, code);
        if let CodeModeResult::Failed { stack: s, .. } = &mut result {
            *s = stack;
        }
        result
    }

    fn end_failed_with(
        &self,
        cell: CellState,
        started: Instant,
        mut events: Vec<CodeModeSnapshotEvent>,
        output: Vec<CodeModeOutput>,
        error: String,
        code: Option<CodeModeErrorCode>,
    ) -> CodeModeResult {
        if cell.was_stored {
            events.push(event("deleted", &cell.run_id, None));
        }
        // Dropping the cell cancels the nested calls it abandoned.
        drop(cell);
        self.bridge.telemetry.failure(code);
        CodeModeResult::Failed {
            error,
            code,
            stack: None,
            output,
            telemetry: self.bridge.telemetry.report(started, events),
        }
    }
}

enum Next {
    Ready,
    Deadline,
    Aborted,
}

fn aborted() -> SandboxError {
    SandboxError::Aborted
}

fn take_result(cell: &mut CellState, id: u64, result: NestedResult) {
    if let Some(flight) = cell.in_flight.remove(&id) {
        cell.live.tasks.remove(&id);
        cell.ready.push((id, result, Some(flight)));
    }
}

fn pending_record(id: u64, flight: &InFlight, result: Option<NestedResult>) -> PendingNestedCall {
    PendingNestedCall {
        host_call_id: id,
        call_id: flight.call_id.clone(),
        tool_id: flight.nested.tool_id.clone(),
        args: flight.nested.args.clone(),
        replay_safe: flight.nested.replay_safe,
        result,
    }
}

/// A snapshot that cannot be restored is `snapshot_restore_failed`; one
/// over the limits stays `snapshot_limit_exceeded`.
fn restore_error(error: SandboxError) -> SandboxError {
    match error {
        e @ (SandboxError::SnapshotTooLarge { .. } | SandboxError::SnapshotInvalid(_)) => e,
        other => SandboxError::SnapshotInvalid(other.to_string()),
    }
}
