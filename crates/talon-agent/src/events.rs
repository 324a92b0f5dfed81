//! Events of the App SDK's contract, emitted through an [`EventSink`] (the
//! gateway will persist them; the CLI prints them; tests collect them).
//! Also the observers that turn nested tool calls and approvals into
//! events.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use talon_protocol::gateway::bounded::{
    AgentId, ApprovalId, EventId, RunId, SessionId, SessionKey,
};

use serde_json::Value;
use talon_protocol::event_data::{
    ApprovalResolvedData, ToolCallCompletedData, ToolCallDeltaData, ToolCallFailedData,
    ToolCallStartedData,
};
use talon_protocol::gateway::{
    Approval, ApprovalDecision as WireDecision, ApprovalKind, ApprovalStatus, MessageToolCall,
    RiskLevel,
};
use talon_protocol::{Event, EventData, ToolEffect};
use talon_tools::{
    ApprovalDecision, Approver, BoxFuture, CallObserver, CallOutcome, Caller, CatalogEntry,
    RunContext, ToolCall,
};

/// The wire form of a call the model asked for: its arguments as JSON when
/// they parse, else as the string the model sent (kept, never dropped).
pub fn wire_tool_call(call: &talon_provider::ToolCallRequest) -> MessageToolCall {
    MessageToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments: serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone())),
    }
}

/// Where events go.
pub trait EventSink: Send + Sync {
    /// Takes one event (in order; must not block for long).
    fn emit(&self, event: Event);

    /// Takes the run's state at the end of a turn, in order with the
    /// events (every event emitted before it belongs to the turns it
    /// holds). A sink that makes runs resumable keeps the last one; the
    /// default drops it. Must not block for long.
    fn checkpoint(&self, checkpoint: crate::Checkpoint) {
        let _ = checkpoint;
    }

    /// Takes the run's state as a turn's tool calls start (its last
    /// message is the model's, its calls not answered yet), in order with
    /// the events. A sink that makes runs resumable may keep it for a run
    /// that will wait inside the turn (for an approval); the default drops
    /// it. Must not block for long.
    fn turn_started(&self, checkpoint: crate::Checkpoint) {
        let _ = checkpoint;
    }

    /// Resolves once the start of a call that is not replay-safe, just
    /// taken, is on durable record, or once the start of an earlier such
    /// call since the last checkpoint is (which already keeps the run
    /// from being resumed past that checkpoint): `true`; `false` when it
    /// could not be recorded. A sink that makes runs resumable waits for
    /// its store; the default is `true` at once.
    fn call_recorded(&self) -> BoxFuture<'_, bool> {
        Box::pin(std::future::ready(true))
    }
}

/// Keeps every event (tests, transcripts).
#[derive(Debug, Default)]
pub struct CollectSink(Mutex<Vec<Event>>);

impl CollectSink {
    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl EventSink for CollectSink {
    fn emit(&self, event: Event) {
        if let Ok(mut events) = self.0.lock() {
            events.push(event);
        }
    }
}

/// Drops every event.
#[derive(Debug, Default)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _: Event) {}
}

/// Stamps events of one run with the envelope's fields.
pub struct RunEvents {
    sink: Arc<dyn EventSink>,
    run_id: RunId,
    session_id: SessionId,
    session_key: SessionKey,
    agent_id: AgentId,
    clock: talon_protocol::clock::Clock,
    seq: AtomicU64,
    /// The run's terminal event was emitted: nothing follows it. Held
    /// while an event is handed to the sink, so none slips in after it.
    ended: std::sync::Mutex<bool>,
}

impl std::fmt::Debug for RunEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEvents")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl RunEvents {
    /// Events of the run in `ctx`.
    pub fn new(sink: Arc<dyn EventSink>, ctx: &RunContext) -> Self {
        Self {
            sink,
            run_id: ctx.scope.run_id.clone(),
            session_id: ctx.scope.session_id.clone(),
            session_key: SessionKey::new(ctx.session_key.as_str()),
            agent_id: ctx.scope.agent_id.clone(),
            clock: ctx.clock.clone(),
            seq: AtomicU64::new(0),
            ended: std::sync::Mutex::new(false),
        }
    }

    /// Emits one event. Ids are `<runId>:<sequence>`, ordered in the run.
    pub fn emit(&self, data: EventData) {
        self.emit_raw(data, None);
    }

    /// Emits one event with the runtime's native payload (a model call's
    /// reply as the provider sent it), which the gateway stores redacted
    /// and shows to admin callers only. The run's terminal event is its
    /// last: what a run still stopping reports after it (a nested call
    /// dropped as its cell is released) is not emitted.
    pub fn emit_raw(&self, data: EventData, raw: Option<serde_json::Value>) {
        let (kind, data) = data.into_parts();
        let mut ended = self
            .ended
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *ended {
            tracing::debug!(run_id = %self.run_id, kind = kind.as_str(), "an event after the run's end; not emitted");
            return;
        }
        *ended = kind.is_terminal();
        let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let ts = self.clock.now_ms();
        self.sink.emit(Event {
            subject: None,
            version: 1,
            id: EventId::new(format!("{}:{seq:08}", self.run_id)),
            ts,
            kind,
            run_id: Some(self.run_id.clone()),
            session_id: Some(self.session_id.clone()),
            session_key: Some(self.session_key.clone()),
            task_id: None,
            agent_id: Some(self.agent_id.clone()),
            request_id: None,
            data,
            raw,
        });
    }
}

impl RunEvents {
    /// Hands the run's state at the end of a turn to the sink.
    pub fn checkpoint(&self, checkpoint: crate::Checkpoint) {
        self.sink.checkpoint(checkpoint);
    }

    /// Hands the run's state as a turn's calls start to the sink.
    pub fn turn_started(&self, checkpoint: crate::Checkpoint) {
        self.sink.turn_started(checkpoint);
    }

    /// Resolves once the start of a call that is not replay-safe, just
    /// emitted, is on record ([`EventSink::call_recorded`]).
    pub fn call_recorded(&self) -> BoxFuture<'_, bool> {
        self.sink.call_recorded()
    }
}

/// Largest result kept in a `tool.call.completed` event.
pub const MAX_EVENT_RESULT: usize = 16 * 1024;

/// Turns nested calls (made by a cell or a bridge on the model's behalf)
/// into `tool.call.*` events that carry their parent's id. Calls the model
/// made itself are reported by the loop.
pub struct NestedCallEvents(pub Arc<RunEvents>);

impl CallObserver for NestedCallEvents {
    fn recorded(&self) -> BoxFuture<'_, bool> {
        self.0.call_recorded()
    }

    fn started(&self, _: &RunContext, call: &ToolCall, entry: Option<&CatalogEntry>) {
        if let Caller::Parent(parent) = &call.caller {
            self.0.emit(EventData::ToolCallStarted(ToolCallStartedData {
                call_id: call.call_id.clone(),
                parent_id: Some(parent.clone()),
                name: entry.map_or(call.id.as_str(), |e| e.id.as_str()).to_owned(),
                source: entry.map(|e| e.tool.source),
                arguments: None,
                replay_safe: entry.is_some_and(|e| e.tool.replay_safe),
            }));
        }
    }

    fn finished(&self, _: &RunContext, call: &ToolCall, outcome: &CallOutcome, duration: Duration) {
        let Caller::Parent(parent) = &call.caller else {
            return;
        };
        let ms = duration.as_millis() as u64;
        match outcome {
            CallOutcome::Ok(value) => {
                self.0
                    .emit(EventData::ToolCallCompleted(ToolCallCompletedData {
                        call_id: call.call_id.clone(),
                        parent_id: Some(parent.clone()),
                        name: call.id.clone(),
                        duration_ms: ms,
                        result: talon_tools::runner::cap(value.clone(), MAX_EVENT_RESULT),
                    }))
            }
            other => self.0.emit(EventData::ToolCallFailed(ToolCallFailedData {
                call_id: call.call_id.clone(),
                parent_id: Some(parent.clone()),
                name: call.id.clone(),
                duration_ms: Some(ms),
                status: Some(other.status().to_string()),
                error: other.to_json(&call.id)["error"].clone(),
            })),
        }
    }

    fn dropped(&self, _: &RunContext, call: &ToolCall, duration: Duration) {
        let Caller::Parent(parent) = &call.caller else {
            return;
        };
        self.0.emit(EventData::ToolCallFailed(ToolCallFailedData {
            call_id: call.call_id.clone(),
            parent_id: Some(parent.clone()),
            name: call.id.clone(),
            duration_ms: Some(duration.as_millis() as u64),
            status: Some("cancelled".into()),
            error: serde_json::json!("the call was stopped: what made it stopped waiting for it"),
        }));
    }
}

/// Streams executors' partial updates as `tool.call.delta` events (set it
/// as the run context's `updates`).
pub struct UpdateEvents(pub Arc<RunEvents>);

impl talon_tools::UpdateSink for UpdateEvents {
    fn update(&self, call_id: &str, update: Value) {
        self.0.emit(EventData::ToolCallDelta(ToolCallDeltaData {
            call_id: call_id.to_owned(),
            parent_id: None,
            update: talon_tools::runner::cap(update, MAX_EVENT_RESULT),
        }));
    }

    fn nested_update(&self, call_id: &str, parent_id: &str, update: Value) {
        self.0.emit(EventData::ToolCallDelta(ToolCallDeltaData {
            call_id: call_id.to_owned(),
            parent_id: Some(parent_id.to_owned()),
            update: talon_tools::runner::cap(update, MAX_EVENT_RESULT),
        }));
    }
}

/// Wraps an approver with `approval.requested` / `approval.resolved`.
pub struct ApprovalEvents {
    /// Decides.
    pub inner: Arc<dyn Approver>,
    /// Reports.
    pub events: Arc<RunEvents>,
    next: AtomicU64,
}

impl ApprovalEvents {
    /// Reports `inner`'s decisions.
    pub fn new(inner: Arc<dyn Approver>, events: Arc<RunEvents>) -> Self {
        Self {
            inner,
            events,
            next: AtomicU64::new(0),
        }
    }
}

impl Approver for ApprovalEvents {
    fn needs(&self, entry: &CatalogEntry) -> bool {
        self.inner.needs(entry)
    }

    fn decide<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move {
            let args = &call.args;
            let id = format!(
                "{}:approval:{}",
                ctx.scope.run_id,
                self.next.fetch_add(1, Ordering::SeqCst) + 1
            );
            let summary: String = format!("{} {}", entry.id, args).chars().take(200).collect();
            self.events.emit(EventData::ApprovalRequested(Approval {
                id: ApprovalId::new(id.clone()),
                run_id: ctx.scope.run_id.clone(),
                session_id: Some(ctx.scope.session_id.clone()),
                kind: ApprovalKind::Tool,
                summary,
                tool_name: Some(entry.tool.name.clone()),
                tool_id: Some(entry.id.clone()),
                tool_call_id: Some(call.call_id.clone()),
                arguments: Some(call.args.clone()),
                environment_action: None,
                risk: match entry.tool.effect {
                    ToolEffect::ReadOnly => RiskLevel::Low,
                    ToolEffect::Writes => RiskLevel::Medium,
                    _ => RiskLevel::High,
                },
                decisions: vec![WireDecision::ApproveOnce, WireDecision::Deny],
                expires_at: None,
                reusable: false,
                status: ApprovalStatus::Pending,
                decision: None,
                reason: None,
                created_at: ctx.clock.now_ms(),
                resolved_at: None,
            }));
            let decision = self.inner.decide(ctx, entry, call).await;
            let (status, wire, reason) = match &decision {
                ApprovalDecision::Approved => {
                    (ApprovalStatus::Approved, WireDecision::ApproveOnce, None)
                }
                ApprovalDecision::Denied(reason) => (
                    ApprovalStatus::Denied,
                    WireDecision::Deny,
                    Some(reason.clone()),
                ),
            };
            self.events
                .emit(EventData::ApprovalResolved(ApprovalResolvedData {
                    approval_id: ApprovalId::new(id),
                    status,
                    decision: Some(wire),
                    reason,
                    reused: false,
                }));
            decision
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]
    use serde_json::json;
    use talon_protocol::EventType;
    use talon_protocol::event_data::TextDelta;
    use talon_tools::UpdateSink;

    use super::*;

    #[test]
    fn streamed_updates_become_tool_call_deltas_in_the_envelope() {
        let sink = Arc::new(CollectSink::default());
        let ctx = RunContext {
            scope: talon_tools::RunScope {
                agent_id: AgentId::new("a"),
                session_id: SessionId::new("s"),
                run_id: RunId::new("r"),
            },
            session_key: "k".into(),
            sender: None,
            channel: None,
            cancel: Default::default(),
            updates: Arc::new(talon_tools::NoUpdates),
            clock: talon_protocol::clock::Clock::system(),
        };
        let events = Arc::new(RunEvents::new(sink.clone(), &ctx));
        UpdateEvents(events.clone()).update("call_1", json!({"progress": 0.5}));
        events.emit(EventData::AssistantDelta(TextDelta { text: "hi".into() }));
        let got = sink.events();
        assert_eq!(got[0].kind, EventType::ToolCallDelta);
        assert_eq!(got[1].kind, EventType::AssistantDelta);
        assert_eq!(got[1].data, json!({"text": "hi"}));
        assert_eq!(
            got[0].data,
            json!({"callId": "call_1", "update": {"progress": 0.5}})
        );
        assert_eq!(
            (got[0].id.as_str(), got[1].id.as_str()),
            ("r:00000001", "r:00000002")
        );
        assert_eq!(
            (
                got[0].version,
                got[0].agent_id.as_ref().map(AgentId::as_str),
                got[0].session_key.as_ref().map(SessionKey::as_str)
            ),
            (1, Some("a"), Some("k"))
        );
    }

    #[test]
    fn a_model_call_keeps_its_arguments_as_json_or_as_the_text_sent() {
        let call = |arguments: &str| talon_provider::ToolCallRequest {
            id: "c1".into(),
            name: "read".into(),
            arguments: arguments.into(),
        };
        assert_eq!(
            wire_tool_call(&call(r#"{"path":"a"}"#)),
            MessageToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
            }
        );
        assert_eq!(
            wire_tool_call(&call("{not json")).arguments,
            json!("{not json")
        );
    }
}
