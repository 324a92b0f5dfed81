//! Storing a cell that waits and resuming it: the VM's snapshot and the
//! state of its nested calls go into the [`SnapshotStore`]; the calls
//! themselves keep running in this process, and their results reach the
//! store whenever they finish. Resuming rebuilds the bookkeeping from the
//! stored record, so a `wait` in another process works the same way.
//!
//! [`SnapshotStore`]: crate::store::SnapshotStore

use serde_json::Value;
use talon_protocol::{CellId, CodeModePendingToolCall, CodeModeResult, CodeModeWaitReason};
use talon_sandbox::{Machine, SandboxError};
use talon_tools::AppCall;

use super::host::{InFlight, Meta};
use super::{CellState, Ending, Live};
use crate::bridge::Nested;
use crate::runtime::{CodeModeRun, event};
use crate::store::{NestedError, NestedResult, PendingNestedCall, SuspendedCell, off_thread};

fn restarted_failure(tool_id: &str) -> NestedResult {
    Err(NestedError {
        message: format!(
            "the runtime restarted while {tool_id} was running; it was not retried because the tool is not \
             marked replay-safe"
        ),
        code: Some("nested_tool_failed".into()),
    })
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

impl CodeModeRun {
    /// The host side of a stored cell, ready to be driven by `wait`.
    /// `live` is the cell's calls if this process suspended it.
    pub(crate) fn resume_cell(
        &self,
        cell_id: CellId,
        meta: Meta,
        pending: Vec<PendingNestedCall>,
        live: Option<Live>,
    ) -> CellState {
        let restarted = live.is_none();
        let mut calls = live.unwrap_or_else(|| Live::new(self.config.max_pending_tool_calls));
        calls.reset();
        let mut cell = CellState::new(cell_id, meta.parent.clone(), calls);
        cell.meta = meta;
        cell.was_stored = true;
        if let Some(id) = cell.meta.yield_call.take() {
            cell.calls.answer(id, Ok(Value::Null));
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
                Some(result) => cell.calls.answer(p.host_call_id, result),
                // Only the app answers it: the cell waits on.
                None if super::app::answered_by_app(&flight.nested.tool_id) => {
                    cell.calls.expect(p.host_call_id, flight);
                }
                // Still running in this process: its result comes from
                // the task.
                None if !restarted => cell.calls.expect(p.host_call_id, flight),
                None if flight.nested.replay_safe => {
                    let call =
                        self.nested_call(&cell.cell_id, &cell.meta.parent, p.host_call_id, &flight);
                    cell.calls.start(p.host_call_id, flight, call);
                }
                None => {
                    let failure = restarted_failure(&flight.nested.tool_id);
                    cell.calls.answer(p.host_call_id, failure);
                }
            }
        }
        cell.calls.collect();
        cell
    }

    /// Snapshots the VM and stores the cell; its running calls go on.
    pub(crate) async fn suspend(
        &self,
        mut cell: CellState,
        machine: Machine,
        reason: CodeModeWaitReason,
        mut end: Ending,
    ) -> CodeModeResult {
        let snapshot = match self.shared.engine.snapshot(machine).await {
            Ok(bytes) => bytes,
            Err(error) => {
                if matches!(error, SandboxError::SnapshotTooLarge { .. }) {
                    end.events.push(event("rejected", &cell.cell_id, None));
                }
                return self.end_failed(cell, end, error);
            }
        };
        let size = snapshot.len();
        let yielded = cell.calls.yielded();
        let mut pending: Vec<PendingNestedCall> = cell
            .calls
            .in_flight()
            .iter()
            .map(|(id, f)| pending_record(*id, f, None))
            .collect();
        for (id, result, flight) in cell.calls.take_ready() {
            if let Some(flight) = flight {
                pending.push(pending_record(id, &flight, Some(result)));
            } else if yielded != Some(id) {
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
        cell.meta.yield_call = yielded;
        let record = SuspendedCell {
            id: cell.cell_id.clone(),
            scope: self.scope.clone(),
            snapshot,
            pending,
            expires_at: self.shared.store.clock().now() + self.config.snapshot_ttl,
            meta: cell.meta.to_json(),
        };
        if let Err(error) = off_thread(&self.shared.store, move |s| s.put(record)).await {
            end.events
                .push(event("rejected", &cell.cell_id, Some(size)));
            let code = error.code();
            return self.end_failed_with(cell, end, error.to_string(), Some(code));
        }
        end.events.push(event("created", &cell.cell_id, Some(size)));
        // Results that arrived while the cell was being stored: record
        // them, since the task's own record may have come before the put.
        cell.calls.collect();
        for (id, result, flight) in cell.calls.take_ready() {
            if flight.is_none() {
                continue;
            }
            let cell_id = cell.cell_id.clone();
            let settled =
                off_thread(&self.shared.store, move |s| s.settle(&cell_id, id, result)).await;
            if let Err(error) = settled {
                tracing::warn!(%error, "recording a nested call's result");
            }
        }
        let pending_tool_calls = cell
            .calls
            .in_flight()
            .values()
            .map(|f| CodeModePendingToolCall {
                call_id: f.call_id.clone(),
                tool_id: f.nested.tool_id.clone(),
            })
            .collect();
        let cell_id = cell.cell_id.clone();
        let app_calls: Vec<AppCall> = cell
            .calls
            .in_flight()
            .values()
            .filter(|f| super::app::answered_by_app(&f.nested.tool_id))
            .map(|f| AppCall {
                call_id: f.call_id.clone(),
                name: self
                    .bridge
                    .runner
                    .catalog()
                    .get(&f.nested.tool_id)
                    .map_or_else(|| f.nested.tool_id.clone(), |e| e.tool.name.clone()),
                arguments: f.nested.args.clone(),
            })
            .collect();
        if !app_calls.is_empty()
            && let Ok(mut awaiting) = self.awaiting.lock()
        {
            awaiting.insert(cell_id.clone(), app_calls);
        }
        if cell.calls.running()
            && let Ok(mut suspended) = self.suspended.lock()
        {
            suspended.push(cell_id.clone());
        }
        if let Ok(mut live) = self.shared.live.lock() {
            live.insert(
                cell_id.clone(),
                std::mem::replace(&mut cell.calls, Live::new(1)),
            );
        }
        CodeModeResult::Waiting {
            cell_id,
            reason,
            pending_tool_calls,
            output: end.output,
            telemetry: self.bridge.telemetry.report(end.started, end.events),
        }
    }
}
