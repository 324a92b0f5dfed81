//! The one async driver every cell runs under, Code Mode's `exec`/`wait`
//! and Tool Search's `tool_search_code` alike: run guest code on a pool
//! worker, hand each host call the guest makes to the [`CellHost`], start
//! the calls it asks for as tasks ([`Calls`]), deliver results as they
//! arrive, and stop when the cell completes, fails, yields, the deadline
//! passes with calls still running, or the run is cancelled.
//!
//! [`CellEngine`] is the sandbox and its worker pool: one per process,
//! shared by every surface. What differs between surfaces (host functions,
//! limits, the guest API's set-up, what a deadline means) is the host's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use talon_protocol::ConsoleOutput;
use tokio_util::sync::CancellationToken;

use crate::calls::{CallFuture, CallResult, Calls, Next};
use crate::config::{SandboxConfig, VmOptions};
use crate::error::{Result, SandboxError};
use crate::functions::{HostFunctions, PendingCall};
use crate::pool::Pool;
use crate::runtime::Sandbox;
use crate::vm::{CellStatus, Vm};

/// The sandbox and its worker pool. Cheap to clone; one per process.
#[derive(Clone, Debug)]
pub struct CellEngine {
    sandbox: Sandbox,
    pool: Arc<Pool>,
}

impl CellEngine {
    /// Builds the sandbox (with every surface's preludes in `config`) and
    /// its pool. Fails with [`SandboxError::RuntimeUnavailable`]; callers
    /// report it, they never fall back to another surface.
    pub fn new(config: SandboxConfig) -> Result<Self> {
        let sandbox = Sandbox::new(config)?;
        let pool = Arc::new(Pool::new(&sandbox)?);
        Ok(Self { sandbox, pool })
    }

    /// The sandbox.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The worker pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

/// Where a cell's VM is.
pub enum Machine {
    /// Not created yet: the cell's JavaScript.
    Fresh(String),
    /// Running in this process.
    Live(Vm),
    /// A snapshot, restored when there is something to deliver.
    Stored(Vec<u8>),
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Fresh(code) => write!(f, "Fresh({} bytes)", code.len()),
            Self::Live(_) => f.write_str("Live"),
            Self::Stored(bytes) => write!(f, "Stored({} bytes)", bytes.len()),
        }
    }
}

/// What the host answers to one guest request.
pub enum Answer<T> {
    /// The result, at once (a refusal, a synchronous answer).
    Now(CallResult),
    /// Run `call` as a task; `tag` is what the host keeps about it.
    Start {
        /// What the host keeps about the call.
        tag: T,
        /// The call's work.
        call: CallFuture,
    },
    /// Suspend the cell (`yield_control`); the request is answered when it
    /// resumes.
    Yield,
    /// Nothing in this process answers the request: someone outside does
    /// (an app answers its client tool), so once nothing else runs the
    /// cell suspends at once ([`Suspend::Outside`]) rather than at its
    /// deadline. `tag` is what the host keeps about it.
    Outside {
        /// What the host keeps about the call.
        tag: T,
    },
}

/// What a surface decides about its cells.
pub trait CellHost {
    /// What the host keeps about each running call.
    type Tag: Send + 'static;

    /// The host functions of this cell's VMs.
    fn functions(&self) -> HostFunctions;

    /// The options of a step with `remaining` time.
    fn vm_options(&self, remaining: Duration) -> VmOptions;

    /// A script run in a fresh VM before the cell (installs the guest API).
    fn prologue(&self) -> Option<String> {
        None
    }

    /// A result as delivered to the guest (e.g. a value as JSON text).
    fn deliver(&self, result: CallResult) -> CallResult {
        result
    }

    /// Decides one guest request.
    fn accept(&mut self, call: PendingCall) -> Answer<Self::Tag>;

    /// What the guest printed in one step, as the step ends (the drive's
    /// [`Driven::output`] has all of it too): a host streams it.
    fn printed(&mut self, output: &[ConsoleOutput]) {
        let _ = output;
    }
}

/// Why a cell stopped without finishing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suspend {
    /// The guest called `yield_control`.
    Yield,
    /// The deadline passed with calls still running or results undelivered.
    Deadline,
    /// The cell waits only for answers from outside the process
    /// ([`Answer::Outside`]): nothing here could settle them.
    Outside,
}

/// How a drive ended.
#[derive(Debug)]
pub enum Halt {
    /// The cell's promise fulfilled with this value.
    Completed(Value),
    /// The cell failed (the guest's error, a limit, a cancel, a stall).
    Failed(SandboxError),
    /// The cell can go on later from `machine`.
    Suspended {
        /// The VM, live (snapshot it to store it) or already stored.
        machine: Machine,
        /// Why.
        reason: Suspend,
    },
}

/// The end of a drive and what the guest printed on the way.
#[derive(Debug)]
pub struct Driven {
    /// How it ended.
    pub halt: Halt,
    /// `console`/`text`/`json` output, in order.
    pub output: Vec<ConsoleOutput>,
}

/// The limits of one drive.
#[derive(Debug, Clone)]
pub struct DriveLimits {
    /// When the drive stops (guest code and waiting alike).
    pub deadline: Instant,
    /// Cancelled when the run is: the VM stops at its next interrupt check
    /// and waits for results end at once.
    pub cancel: CancellationToken,
}

/// What a guest step produced.
struct Stepped {
    vm: Option<Vm>,
    printed: Vec<ConsoleOutput>,
    status: Result<CellStatus>,
}

/// How long after the deadline a step may take before the driver stops
/// waiting for its worker (the VM enforces the deadline itself; this bounds
/// a VM that could not be stopped and the wait for a worker).
const STEP_GRACE: Duration = Duration::from_secs(2);

impl CellEngine {
    /// Drives a cell until it completes, fails, or suspends. `calls` holds
    /// the cell's host calls across drives. When the run is cancelled the
    /// drive aborts every call in `calls` (none starts any more) and fails
    /// with [`SandboxError::Aborted`].
    pub async fn drive<H: CellHost>(
        &self,
        host: &mut H,
        calls: &mut Calls<H::Tag>,
        mut machine: Machine,
        limits: &DriveLimits,
    ) -> Driven {
        let mut output = Vec::new();
        let failed = |error, output| Driven {
            halt: Halt::Failed(error),
            output,
        };
        let mut run_now = matches!(machine, Machine::Fresh(_)) || calls.has_ready();
        loop {
            if run_now {
                if limits.cancel.is_cancelled() {
                    calls.abort_all();
                    return failed(SandboxError::Aborted, output);
                }
                let ready: Vec<(u64, CallResult)> = calls
                    .take_ready()
                    .into_iter()
                    .map(|(id, result, _)| (id, host.deliver(result)))
                    .collect();
                let stepped = self.step(host, machine, ready, limits).await;
                if !stepped.printed.is_empty() {
                    host.printed(&stepped.printed);
                }
                output.extend(stepped.printed);
                match stepped.status {
                    Err(error) => {
                        // A cell that ends stops the calls it left running,
                        // and waits until each is dropped, so what they
                        // report as they stop comes before the cell's end.
                        calls.abort_all();
                        calls.shutdown().await;
                        return failed(error, output);
                    }
                    Ok(CellStatus::Completed(value)) => {
                        calls.abort_all();
                        calls.shutdown().await;
                        return Driven {
                            halt: Halt::Completed(value),
                            output,
                        };
                    }
                    Ok(CellStatus::Waiting(requests)) => {
                        let Some(vm) = stepped.vm else {
                            return failed(
                                SandboxError::Internal("the VM was lost".into()),
                                output,
                            );
                        };
                        machine = Machine::Live(vm);
                        for request in requests {
                            let id = request.id;
                            match host.accept(request) {
                                Answer::Now(result) => calls.answer(id, result),
                                Answer::Start { tag, call } => calls.start(id, tag, call),
                                Answer::Yield => calls.set_yielded(Some(id)),
                                Answer::Outside { tag } => calls.expect(id, tag),
                            }
                        }
                    }
                }
            }
            // Every way round the loop from here delivers something.
            run_now = true;
            let suspended = |machine, reason, output| Driven {
                halt: Halt::Suspended { machine, reason },
                output,
            };
            if calls.yielded().is_some() {
                return suspended(machine, Suspend::Yield, output);
            }
            if calls.has_ready() {
                if Instant::now() < limits.deadline {
                    continue;
                }
                return suspended(machine, Suspend::Deadline, output);
            }
            if calls.in_flight().is_empty() {
                return failed(SandboxError::Stalled, output);
            }
            if !calls.running() {
                // What the cell waits for comes from outside the process.
                return suspended(machine, Suspend::Outside, output);
            }
            match calls.next(limits.deadline, &limits.cancel).await {
                Next::Ready => {}
                Next::Deadline => return suspended(machine, Suspend::Deadline, output),
                Next::Cancelled => {
                    // A cancelled run leaves nothing running.
                    calls.abort_all();
                    return failed(SandboxError::Aborted, output);
                }
            }
        }
    }

    /// One guest step on a pool worker: create and start, or restore (if
    /// needed), deliver results and resume.
    async fn step<H: CellHost>(
        &self,
        host: &H,
        machine: Machine,
        ready: Vec<(u64, CallResult)>,
        limits: &DriveLimits,
    ) -> Stepped {
        let deadline = limits.deadline;
        let functions = host.functions();
        let options = host.vm_options(deadline.saturating_duration_since(Instant::now()));
        let prologue = host.prologue();
        let cancel = limits.cancel.clone();
        let job = move |sandbox: &Sandbox| -> Stepped {
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
            vm.set_cancel(cancel);
            vm.set_timeout(deadline.saturating_duration_since(Instant::now()));
            let status = match fresh {
                Some(code) => match prologue {
                    Some(script) => vm.eval(&script).and_then(|_| vm.run_cell(&code)),
                    None => vm.run_cell(&code),
                },
                None => ready
                    .into_iter()
                    .try_for_each(|(id, result)| vm.settle(id, result))
                    .and_then(|()| vm.resume()),
            };
            let printed = vm.take_output();
            Stepped {
                vm: Some(vm),
                printed,
                status,
            }
        };
        let budget = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout_at((deadline + STEP_GRACE).into(), self.pool.run(job)).await {
            Ok(Ok(stepped)) => stepped,
            Ok(Err(e)) => Stepped {
                vm: None,
                printed: Vec::new(),
                status: Err(e),
            },
            Err(_) => Stepped {
                vm: None,
                printed: Vec::new(),
                status: Err(SandboxError::Timeout(budget.as_millis() as u64)),
            },
        }
    }

    /// Snapshots a live VM on a worker (a stored one is returned as is).
    pub async fn snapshot(&self, machine: Machine) -> Result<Vec<u8>> {
        match machine {
            Machine::Stored(bytes) => Ok(bytes),
            Machine::Live(mut vm) => self.pool.run(move |_| vm.snapshot()).await?,
            Machine::Fresh(_) => Err(SandboxError::Internal(
                "suspending a cell that never ran".into(),
            )),
        }
    }
}

/// A snapshot that cannot be restored is `snapshot_restore_failed`; one
/// over the limits stays `snapshot_limit_exceeded`.
fn restore_error(error: SandboxError) -> SandboxError {
    match error {
        e @ (SandboxError::SnapshotTooLarge { .. }
        | SandboxError::SnapshotInvalid(_)
        | SandboxError::SnapshotRejected { .. }) => e,
        other => SandboxError::snapshot_rejected("", other),
    }
}
