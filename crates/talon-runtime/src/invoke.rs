//! A run whose only work is one tool call the app asked for
//! (`tools.invoke`), made through the run's one runner: the policy, the
//! approver, the events and the limits are those of a model's call, and
//! no model is asked. The call is `direct`, by catalog id or by name;
//! the app's own (client) tools are not its to invoke.

use std::time::{Duration, Instant};

use serde_json::Value;
use talon_agent::{RunResult, RunStatus};
use talon_protocol::event_data::{
    RunEndedData, RunStartedData, ToolCallCompletedData, ToolCallFailedData, ToolCallStartedData,
};
use talon_protocol::gateway::Usage as EventUsage;
use talon_protocol::{CatalogMode, EventData};
use talon_tools::{CallOutcome, Caller, ToolCall};

use crate::PreparedRun;

/// The call's id in its run's events.
pub const INVOKE_CALL_ID: &str = "invoke_1";

impl PreparedRun {
    /// Makes one call of `tool` (a catalog id, or a name the catalog has
    /// once) with `args`, to the run's end (its terminal event included);
    /// the run's result (its text the result as JSON) and the call's
    /// outcome.
    pub(crate) async fn invoke(self, tool: &str, args: Value) -> (RunResult, CallOutcome) {
        let started = Instant::now();
        let catalog = &self.tools.catalog;
        let entry = catalog.get(tool).or_else(|| {
            let mut named = catalog.entries().iter().filter(|e| e.tool.name == tool);
            match (named.next(), named.next()) {
                (Some(one), None) => Some(one),
                _ => None,
            }
        });
        let entry = entry.filter(|e| e.tool.catalog_mode != CatalogMode::DirectOnly);
        self.events.emit(EventData::RunStarted(RunStartedData {
            model: self.options.model.clone(),
            surface: "invoke".into(),
            tools: entry.map(|e| e.id.clone()).into_iter().collect(),
            resumed_after_turn: None,
        }));
        let outcome = match entry {
            None => CallOutcome::NotFound,
            Some(entry) => {
                let call = ToolCall {
                    call_id: INVOKE_CALL_ID.into(),
                    id: entry.id.clone(),
                    args: args.clone(),
                    caller: Caller::Direct,
                };
                self.events
                    .emit(EventData::ToolCallStarted(ToolCallStartedData {
                        call_id: call.call_id.clone(),
                        parent_id: None,
                        name: entry.id.clone(),
                        source: Some(entry.tool.source),
                        arguments: Some(args),
                        replay_safe: entry.tool.replay_safe,
                    }));
                let timeout = self.options.timeout;
                let outcome = tokio::select! {
                    biased;
                    () = self.ctx.cancel.cancelled() => CallOutcome::Aborted,
                    outcome = tokio::time::timeout(timeout, self.runner.call(&self.ctx, call.clone())) => {
                        outcome.unwrap_or_else(|_| {
                            self.ctx.cancel.cancel();
                            CallOutcome::Failed(talon_tools::ToolError::new(
                                talon_protocol::ToolErrorCode::Timeout,
                                format!("the call exceeded the run's time limit of {} ms", timeout.as_millis()),
                            ))
                        })
                    }
                };
                let ms = started.elapsed().as_millis() as u64;
                self.events.emit(match &outcome {
                    CallOutcome::Ok(value) => EventData::ToolCallCompleted(ToolCallCompletedData {
                        call_id: call.call_id.clone(),
                        parent_id: None,
                        name: entry.id.clone(),
                        duration_ms: ms,
                        result: talon_tools::runner::cap(
                            value.clone(),
                            talon_agent::events::MAX_EVENT_RESULT,
                        ),
                    }),
                    other => EventData::ToolCallFailed(ToolCallFailedData {
                        call_id: call.call_id.clone(),
                        parent_id: None,
                        name: entry.id.clone(),
                        duration_ms: Some(ms),
                        status: Some(other.status().to_string()),
                        error: other.to_json(&entry.id)["error"].clone(),
                    }),
                });
                outcome
            }
        };
        use talon_protocol::gateway::{ApiError, ErrorCode};
        let (status, text, error) = match &outcome {
            CallOutcome::Ok(value) => (RunStatus::Completed, value.to_string(), None),
            CallOutcome::Aborted => (
                RunStatus::Cancelled,
                String::new(),
                Some(ApiError::new(
                    ErrorCode::Unavailable,
                    "the call was aborted",
                )),
            ),
            CallOutcome::NotFound => (
                RunStatus::Failed,
                String::new(),
                Some(ApiError::new(
                    ErrorCode::NotFound,
                    format!("no tool {tool:?} in this agent's catalog"),
                )),
            ),
            CallOutcome::Blocked(reason) => (
                RunStatus::Failed,
                String::new(),
                Some(ApiError::new(ErrorCode::Forbidden, reason.clone())),
            ),
            CallOutcome::Failed(e) if e.code == talon_protocol::ToolErrorCode::Timeout => (
                RunStatus::TimedOut,
                String::new(),
                Some(ApiError::new(ErrorCode::Timeout, e.message.clone())),
            ),
            CallOutcome::Failed(e) => (
                RunStatus::Failed,
                String::new(),
                Some(ApiError::new(ErrorCode::InvalidRequest, e.message.clone())),
            ),
        };
        let duration = started.elapsed();
        // The app's call, by id: no model, no surface; the catalog and
        // the call still count.
        let telemetry = talon_tools::runner_telemetry("direct", &self.runner);
        let ended = RunEndedData {
            text: (!text.is_empty()).then(|| text.clone()),
            error: error.as_ref().map(|e| e.message.clone()),
            turns: 0,
            tool_calls: 1,
            usage: EventUsage::default(),
            duration_ms: duration.as_millis() as u64,
            pending_tool_calls: Vec::new(),
            telemetry: Some(telemetry.clone()),
        };
        self.events.emit(match status {
            RunStatus::Completed => EventData::RunCompleted(ended),
            RunStatus::Cancelled => EventData::RunCancelled(ended),
            RunStatus::TimedOut => EventData::RunTimedOut(ended),
            RunStatus::Failed => EventData::RunFailed(ended),
        });
        self.tools.shutdown().await;
        let result = RunResult {
            status,
            text,
            turns: 0,
            tool_calls: 1,
            usage: Default::default(),
            // A direct call asks no model.
            cost_usd: None,
            duration: duration.max(Duration::ZERO),
            error,
            messages: Vec::new(),
            pending: Vec::new(),
            held: Vec::new(),
            telemetry,
        };
        (result, outcome)
    }
}
