//! A run's end, as the gateway's engine writes it: what it waited on
//! cancelled (`approval.resolved` `cancelled`, the open call
//! `tool.call.failed` `aborted`), its terminal event with `RunEndedData`,
//! its messages in the session (unless rolled back), its trajectory
//! artifact (announced on the session just before the terminal event, and
//! holding it last without its id, as the gateway stores a run's end with
//! its row) and its `RunResult`.

use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::{MessageId, RunId};

use serde_json::json;
use talon_protocol::event_data::{ApprovalResolvedData, RunEndedData, ToolCallFailedData};
use talon_protocol::gateway::{
    ApiError, ApprovalStatus, ArtifactType, Message, MessageRole, QuestionStatus, RunStatus, Usage,
};
use talon_protocol::{EventData, ToolTelemetry};

use super::play::{Progress, Stop};
use super::runs::result_of;
use super::script::FakeRun;
use super::state::State;

pub(crate) fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// Ends the run: what it was waiting on cancelled, its terminal event,
/// its messages, its trajectory and its result.
pub(crate) fn end(
    s: &mut State,
    run_id: &str,
    script: &FakeRun,
    stopped: Result<(), Stop>,
    progress: Progress,
    started: Instant,
    timeout: Option<Duration>,
) {
    let Some(record) = s.runs.get(run_id).cloned() else {
        return;
    };
    if record.run.status.is_terminal() {
        return;
    }
    let mut run = record.run.clone();
    let (status, error_text, error): (RunStatus, Option<String>, Option<ApiError>) = match stopped {
        Ok(()) => match &script.failure {
            Some(failure) => (
                RunStatus::Failed,
                Some(failure.message.clone()),
                Some(failure.clone()),
            ),
            None => (RunStatus::Completed, None, None),
        },
        Err(Stop::TimedOut) => {
            let error = talon_protocol::gateway::refuse::run_timed_out(
                u64::try_from(timeout.unwrap_or_default().as_millis()).unwrap_or(u64::MAX),
            );
            (
                RunStatus::TimedOut,
                Some(error.message.clone()),
                Some(error),
            )
        }
        Err(_) => (
            RunStatus::Cancelled,
            Some("the run was aborted".into()),
            None,
        ),
    };
    // What the run waited on stops waiting.
    let mut cut: Vec<EventData> = Vec::new();
    for approval in s
        .approvals
        .iter_mut()
        .filter(|a| a.run_id == RunId::new(run_id) && a.status == ApprovalStatus::Pending)
    {
        approval.status = ApprovalStatus::Cancelled;
        approval.resolved_at = Some(s.clock.now_ms());
        cut.push(EventData::ApprovalResolved(ApprovalResolvedData {
            approval_id: approval.id.clone(),
            status: ApprovalStatus::Cancelled,
            decision: None,
            reason: Some("the run stopped waiting".into()),
            reused: false,
        }));
    }
    for question in s
        .questions
        .iter_mut()
        .filter(|q| q.run_id == RunId::new(run_id) && q.status == QuestionStatus::Pending)
    {
        question.status = QuestionStatus::Cancelled;
        question.answered_at = Some(s.clock.now_ms());
    }
    if let Some((call_id, name)) = &record.open_call {
        let message = error_text.clone().unwrap_or_default();
        cut.push(EventData::ToolCallFailed(ToolCallFailedData {
            call_id: call_id.clone(),
            parent_id: None,
            name: name.clone(),
            duration_ms: Some(started.elapsed().as_millis() as u64),
            status: Some("aborted".into()),
            error: json!({"error": message, "status": "aborted"}),
        }));
    }
    for data in cut {
        s.push_run_event(&run, data);
    }
    let text = if status == RunStatus::Completed {
        progress.text.clone()
    } else {
        None
    };
    let usage = Usage {
        input_tokens: Some(words(&record.input).max(1)),
        output_tokens: Some(progress.text.as_deref().map_or(0, words)),
        total_tokens: Some(words(&record.input).max(1) + progress.text.as_deref().map_or(0, words)),
        cost_usd: None,
        ..Usage::default()
    };
    run.status = status;
    run.ended_at = Some(s.now_ms());
    run.usage = Some(usage.clone());
    run.error = error;
    let ended = RunEndedData {
        text: text.clone(),
        error: error_text,
        turns: progress.turns,
        tool_calls: progress.tool_calls,
        usage,
        duration_ms: started.elapsed().as_millis() as u64,
        pending_tool_calls: Vec::new(),
        telemetry: Some(ToolTelemetry {
            surface: "direct".into(),
            visible_tools: s.tools.len() as u64,
            catalog_size: s.tools.len() as u64,
            model_calls: u64::from(progress.turns),
            ..ToolTelemetry::default()
        }),
    };
    // Stored last, with the run's end.
    let terminal = s.run_event(&run, EventData::run_ended(status, ended));
    // Its messages, unless rolled back.
    if record.cancel != Some(true)
        && let Some(session_id) = &run.session_id
    {
        let now = s.now_ms();
        let message = |i: usize, role: MessageRole, text: &str| Message {
            id: MessageId::new(format!("msg_{run_id}_{i:04}")),
            session_id: session_id.clone(),
            run_id: Some(RunId::new(run_id)),
            role,
            text: Some(text.to_owned()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            created_at: now,
        };
        let mut added = vec![message(0, MessageRole::User, &record.input)];
        if let Some(text) = &text {
            added.push(message(1, MessageRole::Assistant, text));
        }
        s.messages
            .entry(session_id.clone())
            .or_default()
            .extend(added);
        if let Some(session) = s.sessions.iter_mut().find(|x| &x.id == session_id) {
            session.updated_at = now;
        }
    }
    // The trajectory, announced on the session just before the terminal
    // event, which it holds last without its id.
    let mut events: Vec<serde_json::Value> = s
        .log
        .iter()
        .filter(|e| e.run_id.as_ref().map(RunId::as_str) == Some(run_id))
        .map(|e| serde_json::to_value(e).unwrap_or_default())
        .collect();
    let mut last = serde_json::to_value(&terminal).unwrap_or_default();
    if let Some(fields) = last.as_object_mut() {
        fields.remove("id");
    }
    events.push(last);
    let document = json!({
        "runId": run.id,
        "sessionId": run.session_id,
        "agentId": run.agent_id,
        "status": run.status,
        "truncated": false,
        "events": events,
    });
    let trajectory = s.put_artifact(
        &run,
        ArtifactType::Trajectory,
        format!("Trajectory of run {}", run.id),
        "application/json",
        document.to_string().into_bytes(),
    );
    let mut announced = s.run_event(&run, EventData::ArtifactCreated(trajectory.clone()));
    announced.run_id = None;
    s.push(announced);
    s.push(terminal);
    let mut artifacts = record.artifacts.clone();
    artifacts.push(trajectory);
    let result = result_of(&run, text, Some(artifacts));
    if let Some(record) = s.runs.get_mut(run_id) {
        record.run = run;
        record.result = Some(result);
        record.open_call = None;
    }
}
