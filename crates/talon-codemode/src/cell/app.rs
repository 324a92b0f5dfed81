//! Client tools called from a cell. An app's tools are in the hidden
//! catalog (source `client`) like any other, but only the app can answer
//! them, and only between runs. A cell that calls one suspends as soon as
//! nothing of its own is left running (the driver's `Answer::Outside`);
//! its `exec` stays open, and the run ends `completed` with the nested
//! calls pending for the app ([`talon_tools::AppCall`]). The session's
//! next run finds the cell by those calls' ids ([`awaiting_cells`]),
//! records the app's answers in the store ([`answer_cell`]), and makes the
//! `exec` call again, which resumes the cell instead of running the code
//! afresh (`RunSetup::resume`). Everything it needs is in the durable
//! store, so this works across a restart.

use serde_json::Value;
use talon_cells::{CellError, CellScope, NestedError, NestedResult, SnapshotStore};
use talon_protocol::CellId;
use talon_protocol::gateway::bounded::SessionId;

use super::host::Meta;

/// Catalog ids are `<source>:<owner>:<name>`; only client tools have the
/// source `client`.
const CLIENT_PREFIX: &str = "client:";

/// Whether the catalog entry `tool_id` is a client tool (answered by the
/// app, never in this process).
pub fn answered_by_app(tool_id: &str) -> bool {
    tool_id.starts_with(CLIENT_PREFIX)
}

/// A client tool's name: its catalog id after `client:<owner>:`.
fn client_name(tool_id: &str) -> &str {
    tool_id.splitn(3, ':').nth(2).unwrap_or(tool_id)
}

/// A stored cell that waits for its app's answers.
#[derive(Debug, Clone, PartialEq)]
pub struct AwaitingCell {
    /// The cell.
    pub cell_id: CellId,
    /// The scope it was stored under (the run that left it).
    pub scope: CellScope,
    /// The model's `exec` call it belongs to, which stays open.
    pub parent: String,
    /// Its calls of client tools, in order.
    pub calls: Vec<CellCall>,
}

/// A client tool call a stored cell waits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellCall {
    /// The guest-side id of the host call (settles the guest's promise).
    pub host_call_id: u64,
    /// The nested call's id (`<exec call>/<n>`), the one the app answers.
    pub call_id: String,
    /// The tool's name as the app declared it.
    pub name: String,
}

/// The cells of `session` that wait for client tool answers.
pub fn awaiting_cells(
    store: &dyn SnapshotStore,
    session: &SessionId,
) -> Result<Vec<AwaitingCell>, CellError> {
    Ok(store
        .session_cells(session)?
        .into_iter()
        .filter_map(|cell| {
            let calls: Vec<CellCall> = cell
                .pending
                .iter()
                .filter(|p| p.result.is_none() && answered_by_app(&p.tool_id))
                .map(|p| CellCall {
                    host_call_id: p.host_call_id,
                    call_id: p.call_id.clone(),
                    name: client_name(&p.tool_id).to_owned(),
                })
                .collect();
            (!calls.is_empty()).then(|| AwaitingCell {
                cell_id: cell.id,
                scope: cell.scope,
                parent: Meta::from_json(&cell.meta).parent,
                calls,
            })
        })
        .collect())
}

/// What a call the app left unanswered reads as in the cell: a catchable
/// error.
fn unanswered() -> NestedResult {
    Err(NestedError {
        message: talon_tools::UNANSWERED.into(),
        code: Some("unanswered".into()),
    })
}

/// What the app's answer reads as in the cell: its JSON value when the
/// text is JSON, else the text.
fn answer_value(content: &str) -> Value {
    serde_json::from_str(content).unwrap_or_else(|_| Value::String(content.to_owned()))
}

/// Records the app's `answers` (nested call id, content) to `cell`'s
/// client calls in the store; a call without an answer gets an
/// `unanswered` error, as a model's client call does.
pub fn answer_cell(
    store: &dyn SnapshotStore,
    cell: &AwaitingCell,
    answers: &[(String, String)],
) -> Result<(), CellError> {
    for call in &cell.calls {
        let result = answers
            .iter()
            .find(|(id, _)| id == &call.call_id)
            .map_or_else(unanswered, |(_, content)| Ok(answer_value(content)));
        store.settle(&cell.cell_id, call.host_call_id, result)?;
    }
    Ok(())
}
