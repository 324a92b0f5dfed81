//! The host's side of a cell's asynchronous host calls: the calls running
//! as tokio tasks (at most a fixed number at once; the rest wait for a
//! permit), the ones the cell still waits for (with whatever the host keeps
//! about each, its tag), and the results ready to deliver.
//!
//! [`Calls`] outlives a driving step: a cell that suspends keeps its calls
//! running, and the next step picks their results up. Dropping it cancels
//! every call it still runs.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::{AbortHandle, Id, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::functions::HostCallError;

/// How a host call ended, as the guest will see it.
pub type CallResult = Result<Value, HostCallError>;

/// A host call's work: a boxed, sendable future that owns what it needs.
pub type CallFuture = Pin<Box<dyn Future<Output = CallResult> + Send + 'static>>;

/// A result ready for the guest, with the tag of the call it ends (none for
/// an answer given without a call).
pub type Ready<T> = (u64, CallResult, Option<T>);

/// What ended a wait for the next result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// A result is ready.
    Ready,
    /// The deadline passed first.
    Deadline,
    /// The run was cancelled first.
    Cancelled,
}

/// A cell's host calls. `T` is what the host keeps about each running call.
pub struct Calls<T> {
    tasks: JoinSet<(u64, CallResult)>,
    host_ids: HashMap<Id, u64>,
    aborts: HashMap<u64, AbortHandle>,
    permits: Arc<Semaphore>,
    in_flight: BTreeMap<u64, T>,
    ready: Vec<Ready<T>>,
    yielded: Option<u64>,
}

impl<T> std::fmt::Debug for Calls<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Calls")
            .field("running", &self.tasks.len())
            .field("in_flight", &self.in_flight.len())
            .field("ready", &self.ready.len())
            .field("yielded", &self.yielded)
            .finish_non_exhaustive()
    }
}

impl<T> Calls<T> {
    /// No calls; at most `max_concurrent` will run at once.
    pub fn new(max_concurrent: usize) -> Self {
        Self {
            tasks: JoinSet::new(),
            host_ids: HashMap::new(),
            aborts: HashMap::new(),
            permits: Arc::new(Semaphore::new(
                max_concurrent.clamp(1, Semaphore::MAX_PERMITS),
            )),
            in_flight: BTreeMap::new(),
            ready: Vec::new(),
            yielded: None,
        }
    }

    /// Starts host call `host_id` as a task; it waits for a permit first.
    /// Must be called within a tokio runtime.
    pub fn start(&mut self, host_id: u64, tag: T, call: CallFuture) {
        // The task runs inside the span of whoever started it (the cell's
        // `exec` call), so a nested call's trace span is that call's child.
        let call = tracing::Instrument::instrument(call, tracing::Span::current());
        let permits = self.permits.clone();
        let handle = self.tasks.spawn(async move {
            let Ok(_permit) = permits.acquire_owned().await else {
                return (
                    host_id,
                    Err(HostCallError::new("the call was cancelled").with_code("aborted")),
                );
            };
            (host_id, call.await)
        });
        self.host_ids.insert(handle.id(), host_id);
        self.aborts.insert(host_id, handle);
        self.in_flight.insert(host_id, tag);
    }

    /// Waits on host call `host_id` without running anything: its result
    /// comes from elsewhere (a task that is already running).
    pub fn expect(&mut self, host_id: u64, tag: T) {
        self.in_flight.insert(host_id, tag);
    }

    /// Answers host call `host_id` at once.
    pub fn answer(&mut self, host_id: u64, result: CallResult) {
        self.ready.push((host_id, result, None));
    }

    /// Notes that host call `host_id` asked to suspend the cell.
    pub fn set_yielded(&mut self, host_id: Option<u64>) {
        self.yielded = host_id;
    }

    /// The host call that asked to suspend the cell, if any.
    pub fn yielded(&self) -> Option<u64> {
        self.yielded
    }

    /// The calls the cell still waits for.
    pub fn in_flight(&self) -> &BTreeMap<u64, T> {
        &self.in_flight
    }

    /// Stops every call still running here and waits until each is
    /// dropped (so whatever a call reports as it stops is reported now).
    pub async fn shutdown(&mut self) {
        self.tasks.shutdown().await;
        self.host_ids.clear();
        self.aborts.clear();
    }

    /// Whether a call runs in this process (its result may still come
    /// here): false when the cell waits only for answers from outside.
    pub fn running(&self) -> bool {
        !self.tasks.is_empty()
    }

    /// Whether results wait to be delivered.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Takes the results waiting to be delivered.
    pub fn take_ready(&mut self) -> Vec<Ready<T>> {
        std::mem::take(&mut self.ready)
    }

    /// Forgets what the cell waits for (its tags, ready results, a yield)
    /// but keeps the tasks running: a stored cell rebuilds its bookkeeping
    /// from the store and picks up their results.
    pub fn reset(&mut self) {
        self.in_flight.clear();
        self.ready.clear();
        self.yielded = None;
    }

    /// Moves results of calls that already finished to the ready list,
    /// without waiting.
    pub fn collect(&mut self) {
        while let Some(joined) = self.tasks.try_join_next_with_id() {
            self.joined(joined);
        }
    }

    /// Waits until a result is ready, `deadline` passes or `cancel` fires.
    /// Never polls: it sleeps on all three at once.
    pub async fn next(&mut self, deadline: Instant, cancel: &CancellationToken) -> Next {
        loop {
            self.collect();
            if !self.ready.is_empty() {
                return Next::Ready;
            }
            if self.tasks.is_empty() {
                // Nothing runs: only the deadline or a cancel can end this.
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Next::Cancelled,
                    () = tokio::time::sleep_until(deadline.into()) => return Next::Deadline,
                }
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Next::Cancelled,
                joined = self.tasks.join_next_with_id() => {
                    if let Some(joined) = joined {
                        self.joined(joined);
                    }
                }
                () = tokio::time::sleep_until(deadline.into()) => return Next::Deadline,
            }
        }
    }

    /// Cancels every call: those waiting for a permit never start (the
    /// semaphore closes first, so a permit freed by an aborted call cannot
    /// let a queued one run), and running ones are aborted.
    pub fn abort_all(&mut self) {
        self.permits.close();
        self.tasks.abort_all();
    }

    fn joined(&mut self, joined: Result<(Id, (u64, CallResult)), tokio::task::JoinError>) {
        let (host_id, result) = match joined {
            Ok((task, done)) => {
                self.host_ids.remove(&task);
                done
            }
            // A call that panicked rejects its promise; the cell goes on.
            Err(error) => {
                let Some(host_id) = self.host_ids.remove(&error.id()) else {
                    return;
                };
                if error.is_cancelled() {
                    self.aborts.remove(&host_id);
                    return;
                }
                (
                    host_id,
                    Err(HostCallError::new("the host call failed").with_code("internal_error")),
                )
            }
        };
        self.aborts.remove(&host_id);
        // A result nobody waits for any more (delivered from the store, or
        // the cell moved on) is dropped.
        if let Some(tag) = self.in_flight.remove(&host_id) {
            self.ready.push((host_id, result, Some(tag)));
        }
    }
}

impl<T> Drop for Calls<T> {
    fn drop(&mut self) {
        self.abort_all();
    }
}
