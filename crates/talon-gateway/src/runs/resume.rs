//! Resuming a run whose node died. After every turn with tool calls the
//! node executing a run stores a checkpoint ([`RunCheckpoint`]): the
//! transcript so far and the id of the last event committed before it.
//! When the node dies, the run is resumable if every tool call that started
//! after that event is replay-safe (a call whose effect is unknown is never
//! made twice; the runner puts a call's start on durable record before it
//! runs a tool that is not replay-safe), or waited on an approval the run
//! never acted on as approved (the tool did not run;
//! [`super::approvals`]): it goes back to the queue and a node resumes it
//! from the checkpoint (or from its input, when it had not completed a
//! turn), its model asked again for the turn that was lost; or, when the
//! run stored its state as a turn's calls started (it was about to wait
//! for an approval), it makes that turn's calls again. Otherwise, or after
//! [`MAX_RESUMES`], it ends `failed`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use talon_protocol::EventType;
use talon_protocol::gateway::Approval;
use talon_runtime::Turn;
use talon_store::{EventFilter, MAX_PAGE, PendingFilter, Store};

/// How many times a run is resumed before an interruption fails it (a
/// run that kills its node each time must not do it forever).
pub(crate) const MAX_RESUMES: u32 = 3;

/// What the store keeps of a run to resume it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunCheckpoint {
    /// Times the run was resumed.
    #[serde(default)]
    pub resumes: u32,
    /// The last event of the run committed before the turn ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through: Option<u64>,
    /// The run's state at the end of its last complete turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<Turn>,
}

impl RunCheckpoint {
    /// Reads a stored checkpoint (a missing or unreadable one is none).
    pub(crate) fn read(value: Option<Value>) -> Self {
        value
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    }

    /// The checkpoint as the store keeps it.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Records the run's checkpoint, taken once event `through` was
    /// durable.
    pub(crate) fn record(&mut self, turn: Turn, through: Option<u64>) {
        self.through = through.or(self.through);
        self.turn = Some(turn);
    }

    /// Where the loop goes on from, when a turn was recorded.
    pub(crate) fn resume_from(&self) -> Option<Turn> {
        self.turn.clone()
    }
}

/// Why an interrupted run cannot be resumed, if it cannot.
pub(crate) async fn blocker(
    store: &Store,
    run_id: &str,
    checkpoint: &RunCheckpoint,
) -> Option<String> {
    if checkpoint.resumes >= MAX_RESUMES {
        return Some(format!(
            "it was interrupted {} times; it is not resumed again",
            checkpoint.resumes + 1
        ));
    }
    let filter = EventFilter {
        run_id: Some(run_id.to_owned()),
        types: vec![EventType::ToolCallStarted],
        ..EventFilter::default()
    };
    // Calls that waited on an approval the run never acted on did not
    // run, whatever the tool.
    let (approvals, acted) = match waited(store, run_id, checkpoint.through).await {
        Ok(both) => both,
        Err(error) => return Some(format!("its approvals could not be read: {error}")),
    };
    let harmless = |event: &talon_protocol::Event| {
        replay_safe(event)
            || event
                .data
                .get("callId")
                .and_then(Value::as_str)
                .is_some_and(|call| never_acted_on(call, &approvals, &acted))
    };
    let mut after = checkpoint.through;
    for _ in 0..MAX_JUDGED_PAGES {
        let started = match store.after(after, &filter, MAX_PAGE).await {
            Ok(started) => started,
            Err(error) => return Some(format!("its events could not be read: {error}")),
        };
        if let Some(event) = started.iter().find(|e| !harmless(e)) {
            let name = event
                .data
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("a tool");
            return Some(format!(
                "a call of {name} started after its last checkpoint; it is not replay-safe, and its effect is unknown"
            ));
        }
        if (started.len() as u32) < MAX_PAGE {
            return None;
        }
        after = started.last().and_then(|e| e.id.as_str().parse().ok());
    }
    Some("too many calls started after its last checkpoint to judge them all".into())
}

/// The run's approvals, and the data of the `approval.resolved` events
/// it emitted after `through` (the resolutions it acted on).
async fn waited(
    store: &Store,
    run_id: &str,
    through: Option<u64>,
) -> Result<(Vec<Approval>, Vec<Value>), talon_store::StoreError> {
    let approvals = store
        .approvals(&PendingFilter {
            run_id: Some(run_id.to_owned()),
            ..PendingFilter::default()
        })
        .await?;
    if approvals.is_empty() {
        return Ok((approvals, Vec::new()));
    }
    let filter = EventFilter {
        run_id: Some(run_id.to_owned()),
        types: vec![EventType::ApprovalResolved],
        ..EventFilter::default()
    };
    let mut acted = Vec::new();
    let mut after = through;
    loop {
        let page = store.after(after, &filter, MAX_PAGE).await?;
        acted.extend(page.iter().map(|e| e.data.clone()));
        if (page.len() as u32) < MAX_PAGE {
            return Ok((approvals, acted));
        }
        after = page.last().and_then(|e| e.id.as_str().parse().ok());
    }
}

/// Pages of calls [`blocker`] reads before it gives up on a run.
const MAX_JUDGED_PAGES: u32 = 16;

/// Whether a started call may be made again (its event says so; events
/// written before the flag existed say nothing, and are not).
fn replay_safe(event: &talon_protocol::Event) -> bool {
    event.data.get("replaySafe").and_then(Value::as_bool) == Some(true)
}

/// Whether a `tool.call.started` event's call waited on an approval that
/// the run never acted on as approved (the tool did not run).
fn never_acted_on(call_id: &str, approvals: &[Approval], acted: &[Value]) -> bool {
    approvals
        .iter()
        .filter(|a| a.tool_call_id.as_deref() == Some(call_id))
        .any(|a| {
            !acted.iter().any(|data| {
                data.get("approvalId").and_then(Value::as_str) == Some(a.id.as_str())
                    && data.get("status").and_then(Value::as_str) == Some("approved")
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_round_trips_through_the_store_form() {
        // The form a store of an earlier version wrote: it still reads.
        let value = serde_json::json!({
            "resumes": 2,
            "through": 41,
            "turn": {
                "turns": 1, "toolCalls": 1, "inputTokens": 120, "outputTokens": 12,
                "messages": [
                    {"id": "msg_run_1_0000", "sessionId": "", "runId": "run_1",
                     "role": "user", "text": "list it", "createdAt": 5},
                    {"id": "msg_run_1_0001", "sessionId": "", "runId": "run_1",
                     "role": "assistant",
                     "toolCalls": [{"id": "call_1", "name": "list", "arguments": {"path": "."}}],
                     "createdAt": 5},
                    {"id": "msg_run_1_0002", "sessionId": "", "runId": "run_1",
                     "role": "tool", "text": "{\"entries\":[]}", "toolCallId": "call_1",
                     "createdAt": 5}
                ]
            }
        });
        let read = RunCheckpoint::read(Some(value.clone()));
        assert_eq!((read.resumes, read.through), (2, Some(41)));
        let turn = read.resume_from().unwrap();
        assert_eq!(
            (
                turn.turns,
                turn.tool_calls,
                turn.input_tokens,
                turn.output_tokens,
                turn.messages.len()
            ),
            (1, 1, 120, 12, 3)
        );
        assert_eq!(read.to_value(), value);
        // A later turn whose events all failed to commit keeps the cursor.
        let mut later = read.clone();
        later.record(turn, None);
        assert_eq!(later.through, Some(41));
    }

    #[test]
    fn a_missing_or_unreadable_checkpoint_starts_from_the_input() {
        for stored in [
            None,
            Some(serde_json::json!("junk")),
            Some(serde_json::json!({"resumes": 1})),
        ] {
            let read = RunCheckpoint::read(stored);
            assert_eq!(read.resume_from(), None);
        }
        assert_eq!(
            RunCheckpoint::read(Some(serde_json::json!({"resumes": 1}))).resumes,
            1
        );
    }
}
