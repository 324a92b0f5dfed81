//! Client tool calls an earlier run left for the app, settled by this
//! run's input: the app answered them (the session's next input), or sent
//! a new turn without answering them. Each call's `tool.call.started` is
//! in the earlier run's log; its end is in the log of the run its answer
//! starts, right after `run.started`, so every started call ends in the
//! session's log. A Code Mode cell's client calls are nested calls of the
//! `exec` call that waits for them (`parentId`).

use serde_json::{Value, json};
use talon_protocol::EventData;
use talon_protocol::event_data::{ToolCallCompletedData, ToolCallFailedData};

use crate::RunEvents;

/// A client call an earlier run left pending, and how this run's input
/// settles it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettledCall {
    /// The call's id.
    pub call_id: String,
    /// The model's call it is nested in (a cell's `exec`), if any.
    pub parent_id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The app's answer (the tool message's content); `None` when it left
    /// the call unanswered.
    pub answer: Option<String>,
}

/// Emits each settled call's end: `tool.call.completed` with the app's
/// answer (its JSON value when it is JSON, else the text), or
/// `tool.call.failed` with status `unanswered`. The call waited between
/// runs: no duration is said.
pub(crate) fn announce(events: &RunEvents, settled: &[SettledCall]) {
    for call in settled {
        let data = match &call.answer {
            Some(content) => EventData::ToolCallCompleted(ToolCallCompletedData {
                call_id: call.call_id.clone(),
                parent_id: call.parent_id.clone(),
                name: call.name.clone(),
                duration_ms: 0,
                result: talon_tools::runner::cap(
                    answer_value(content),
                    crate::events::MAX_EVENT_RESULT,
                ),
            }),
            None => EventData::ToolCallFailed(ToolCallFailedData {
                call_id: call.call_id.clone(),
                parent_id: call.parent_id.clone(),
                name: call.name.clone(),
                duration_ms: None,
                status: Some("unanswered".into()),
                error: json!(talon_tools::UNANSWERED),
            }),
        };
        events.emit(data);
    }
}

/// The answer as its JSON value when it is JSON, else the text.
fn answer_value(content: &str) -> Value {
    serde_json::from_str(content).unwrap_or_else(|_| Value::String(content.to_owned()))
}
