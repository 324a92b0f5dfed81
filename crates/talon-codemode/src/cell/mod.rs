//! A cell's lifecycle across `exec` and `wait`: drive it with the shared
//! cell driver until it completes, fails or suspends, and turn how it
//! ended into the seed's `CodeModeResult` (`completed`, `failed`, or
//! `waiting` once [`suspend`] stored it). [`host`] schedules its nested
//! calls; [`suspend`] stores and resumes it.
//!
//! Durability: a nested call that finishes while its cell is suspended
//! records its result in the store, so a later `wait`, even in a new
//! process, delivers it without running the call again. Calls that were
//! still running when their process died are dispatched again if the tool
//! is replay-safe, and otherwise reach the guest as a catchable
//! `nested_tool_failed`.

pub(crate) mod app;
pub(crate) mod host;
pub use host::SETUP_FN;
pub(crate) mod suspend;

use std::time::Instant;

use serde_json::{Value, json};
use talon_protocol::{
    CellId, CodeModeErrorCode, CodeModeOutput, CodeModeResult, CodeModeSnapshotEvent,
    CodeModeWaitReason, ConsoleOutput, OutputStream,
};
use talon_sandbox::{Calls, DriveLimits, Halt, Machine, SandboxError, Suspend};

use crate::runtime::{CodeModeRun, event};
use host::{InFlight, Meta, NestedHost};

/// A cell's nested calls; kept in the process while the cell is stored
/// (dropping them cancels the calls).
pub(crate) type Live = Calls<InFlight>;

/// The host's side of a cell during a step.
pub(crate) struct CellState {
    pub cell_id: CellId,
    pub meta: Meta,
    pub calls: Live,
    /// Whether the cell was stored before this step (its end is a
    /// "deleted" snapshot event).
    pub was_stored: bool,
}

impl CellState {
    pub fn new(cell_id: CellId, parent: String, calls: Live) -> Self {
        Self {
            cell_id,
            meta: Meta {
                parent,
                ..Meta::default()
            },
            calls,
            was_stored: false,
        }
    }
}

/// What a drive has gathered so far, carried to how it ends.
pub(crate) struct Ending {
    pub started: Instant,
    pub events: Vec<CodeModeSnapshotEvent>,
    pub output: Vec<CodeModeOutput>,
}

fn to_output(printed: Vec<ConsoleOutput>) -> impl Iterator<Item = CodeModeOutput> {
    printed.into_iter().map(|item| match item.stream {
        OutputStream::Json => CodeModeOutput::Json {
            value: serde_json::from_str(&item.text).unwrap_or(Value::String(item.text)),
        },
        _ => CodeModeOutput::Text { text: item.text },
    })
}

impl CodeModeRun {
    /// Drives the cell until it completes, fails, or suspends.
    pub(crate) async fn drive(
        &self,
        mut cell: CellState,
        machine: Machine,
        started: Instant,
        events: Vec<CodeModeSnapshotEvent>,
    ) -> CodeModeResult {
        let limits = DriveLimits {
            deadline: started + self.config.timeout,
            cancel: self.ctx.cancel.clone(),
        };
        let mut host = NestedHost {
            run: self,
            cell_id: &cell.cell_id,
            meta: &mut cell.meta,
        };
        let driven = self
            .shared
            .engine
            .drive(&mut host, &mut cell.calls, machine, &limits)
            .await;
        let end = Ending {
            started,
            events,
            output: to_output(driven.output).collect(),
        };
        match driven.halt {
            Halt::Completed(value) => self.end_completed(cell, end, value),
            Halt::Failed(error) => self.end_failed(cell, end, error),
            Halt::Suspended { machine, reason } => {
                let reason = match reason {
                    Suspend::Yield => CodeModeWaitReason::Yield,
                    Suspend::Deadline | Suspend::Outside => CodeModeWaitReason::PendingTools,
                };
                self.suspend(cell, machine, reason, end).await
            }
        }
    }

    fn end_completed(&self, cell: CellState, mut end: Ending, value: Value) -> CodeModeResult {
        let bytes = serde_json::to_vec(&value).map_or(0, |v| v.len());
        if bytes > self.config.max_output_bytes {
            let error = format!(
                "the returned value is {bytes} bytes as JSON, over maxOutputBytes ({})",
                self.config.max_output_bytes
            );
            return self.end_failed_with(
                cell,
                end,
                error,
                Some(CodeModeErrorCode::OutputLimitExceeded),
            );
        }
        if cell.was_stored {
            end.events.push(event("deleted", &cell.cell_id, None));
        }
        // Dropping the cell cancels the nested calls it abandoned.
        drop(cell);
        CodeModeResult::Completed {
            value,
            output: end.output,
            telemetry: self.bridge.telemetry.report(end.started, end.events),
        }
    }

    pub(crate) fn end_failed(
        &self,
        cell: CellState,
        end: Ending,
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
        let mut result = self.end_failed_with(cell, end, message, code);
        if let CodeModeResult::Failed { stack: s, .. } = &mut result {
            *s = stack;
        }
        result
    }

    pub(crate) fn end_failed_with(
        &self,
        cell: CellState,
        mut end: Ending,
        error: String,
        code: Option<CodeModeErrorCode>,
    ) -> CodeModeResult {
        if cell.was_stored {
            end.events.push(event("deleted", &cell.cell_id, None));
        }
        // Dropping the cell cancels the nested calls it abandoned.
        drop(cell);
        self.bridge.telemetry.failure(code);
        CodeModeResult::Failed {
            error,
            code,
            stack: None,
            output: end.output,
            telemetry: self.bridge.telemetry.report(end.started, end.events),
        }
    }
}
