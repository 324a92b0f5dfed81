//! One agent run: the system prompt and the user's message, the model's
//! replies streamed from the provider, the tool calls they ask for run
//! through the run's [`ToolSurface`] (every tool by name, Code Mode, Tool
//! Search: whatever the caller built) and the catalog's single execution
//! path, until the model answers without calling tools, the turn limit,
//! cancellation, or the run's timeout. Every step is an event.
//!
//! Cancellation wakes the loop wherever it waits: the provider stops on the
//! run's token, and the loop drops whatever it was waiting on (a model
//! reply, tool calls: their processes and requests stop on drop) and ends
//! with `run.cancelled`. The run's timeout cancels the token too, so
//! nothing the run started keeps going after `run.timed_out`.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_protocol::EventData;
use talon_protocol::event_data::{
    AssistantMessageData, RunEndedData, RunStartedData, TextDelta, ToolCallCompletedData,
    ToolCallFailedData, ToolCallStartedData,
};
use talon_protocol::gateway::{ApiError, ErrorCode};
use talon_protocol::{ToolSource, ToolTelemetry};
use talon_provider::{ChatRequest, Message, ModelProvider, StreamDelta, ToolCallRequest, Usage};
use talon_tools::{AppCall, RunContext, SurfaceReply, ToolSurface};
use tracing::Instrument as _;

use crate::events::{MAX_EVENT_RESULT, RunEvents, wire_tool_call};
pub use crate::options::{Reasoning, RunOptions};
use crate::telemetry::{Sent, event_usage};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// The model answered.
    Completed,
    /// An error ended it.
    Failed,
    /// It was cancelled (the run's token).
    Cancelled,
    /// It ran out of time.
    TimedOut,
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// How it ended.
    pub status: RunStatus,
    /// The final answer (or the last text).
    pub text: String,
    /// Model requests made.
    pub turns: u32,
    /// Tool calls the model made (not counting nested ones).
    pub tool_calls: u32,
    /// Tokens used.
    pub usage: Usage,
    /// What they cost in US dollars, by the model's prices: `None` without
    /// prices, for tokens of a kind it has no price for, or for a run
    /// resumed after its process died (what its earlier turns cost is not
    /// kept).
    pub cost_usd: Option<f64>,
    /// Wall time.
    pub duration: Duration,
    /// The error, when it did not complete: the protocol's error, whose
    /// code says what kind (a provider that is down is `unavailable`, an
    /// unknown model `not_found`, the run's time limit `timeout`).
    pub error: Option<ApiError>,
    /// The messages this run added to the conversation, in order: the
    /// user's, then the model's and the tools'. Every tool call the model
    /// made has its answer (an `aborted` one when the run ended first), so
    /// the transcript is a valid history for the next run, except the
    /// client tool calls left [`RunResult::pending`].
    pub messages: Vec<Message>,
    /// Client tool calls of the last turn, left for the app to answer
    /// (the run completed with them open): the model's own, and those a
    /// Code Mode cell made (ids `<exec call id>/<n>`).
    pub pending: Vec<ToolCallRequest>,
    /// The model calls left open because they wait for those answers (an
    /// `exec` whose cell called client tools); the app's answers resume
    /// them ([`AgentRun::proceed`]).
    pub held: Vec<String>,
    /// The run's tool telemetry, as its end event carries it.
    pub telemetry: ToolTelemetry,
}

/// A run's state at the end of a turn (every tool call of the turn
/// answered), or as a turn's calls start (its last message is the model's,
/// with calls not answered yet): what a run resumes from after its process
/// died ([`AgentRun::resume`]; from the second kind it makes the open
/// turn's calls first). The loop hands the first kind to its event sink
/// after each turn with tool calls ([`crate::EventSink::checkpoint`]), the
/// second as the calls start ([`crate::EventSink::turn_started`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The messages the run added so far: the user's, then the model's
    /// and the tools'.
    pub messages: Vec<Message>,
    /// Model requests made.
    pub turns: u32,
    /// Tool calls the model made.
    pub tool_calls: u32,
    /// Tokens used.
    pub usage: Usage,
}

/// Runs one user message through the loop.
pub struct AgentRun<'a> {
    /// The model.
    pub provider: &'a dyn ModelProvider,
    /// What the model sees of the run's tools, and their handlers (every
    /// call reaches the run's `ToolRunner` through it).
    pub surface: Arc<dyn ToolSurface>,
    /// The run's context.
    pub ctx: RunContext,
    /// Where events go.
    pub events: Arc<RunEvents>,
    /// Settings.
    pub options: RunOptions,
}

/// The model's tool calls in flight, by their number in the run: those
/// left when the run is cancelled or times out are reported as aborted.
#[derive(Default)]
struct InFlight(Mutex<BTreeMap<u32, (String, String, Instant)>>);

impl InFlight {
    fn start(&self, number: u32, call: &ToolCallRequest) {
        if let Ok(mut calls) = self.0.lock() {
            calls.insert(number, (call.id.clone(), call.name.clone(), Instant::now()));
        }
    }

    fn finish(&self, number: u32) {
        if let Ok(mut calls) = self.0.lock() {
            calls.remove(&number);
        }
    }

    fn take(&self) -> Vec<(String, String, Instant)> {
        self.0
            .lock()
            .map(|mut calls| std::mem::take(&mut *calls).into_values().collect())
            .unwrap_or_default()
    }
}

/// How the loop stopped.
enum Stop {
    /// The run's token was cancelled.
    Cancelled,
    /// The run's time limit passed.
    TimedOut,
    /// The turns ended by themselves.
    Returned(Result<(), ApiError>),
}

impl Checkpoint {
    /// Where a run of `message` starts: no turn made yet. A run whose node
    /// died before its first turn ended resumes from here
    /// ([`AgentRun::resume`]), and its `run.started` says
    /// `resumedAfterTurn: 0`.
    pub fn input(message: Option<&str>) -> Self {
        Self {
            messages: message
                .map(|m| vec![Message::User(m.to_owned())])
                .unwrap_or_default(),
            turns: 0,
            tool_calls: 0,
            usage: Usage::default(),
        }
    }
}

impl AgentRun<'_> {
    /// Runs `message`; the conversation so far is `history`.
    pub async fn run(&self, history: Vec<Message>, message: &str) -> RunResult {
        self.go(history, Checkpoint::input(Some(message)), false)
            .await
    }

    /// Asks the model to go on from `history` alone, whose last messages
    /// answer tool calls (the app answered client tool calls a previous
    /// run left pending). The calls in `reopen` (model calls of the last
    /// assistant message a previous run held open, [`RunResult::held`])
    /// are made again first: the surface resumes what waited for the
    /// app's answers.
    pub async fn proceed(&self, history: Vec<Message>, reopen: Vec<ToolCallRequest>) -> RunResult {
        self.go_from(history, Checkpoint::input(None), false, reopen)
            .await
    }

    /// Goes on with a run from its last checkpoint (its process died
    /// while the model was answering the next turn); the conversation
    /// before the run is `history`. Its `run.started` says where it
    /// resumed; the turn limit counts the turns before it, the time limit
    /// starts again.
    pub async fn resume(&self, history: Vec<Message>, from: Checkpoint) -> RunResult {
        self.go(history, from, true).await
    }

    async fn go(&self, history: Vec<Message>, from: Checkpoint, resumed: bool) -> RunResult {
        self.go_from(history, from, resumed, Vec::new()).await
    }

    async fn go_from(
        &self,
        history: Vec<Message>,
        from: Checkpoint,
        resumed: bool,
        reopen: Vec<ToolCallRequest>,
    ) -> RunResult {
        let started = Instant::now();
        self.events.emit(EventData::RunStarted(RunStartedData {
            model: self.options.model.clone(),
            surface: self.surface.kind().to_string(),
            tools: self
                .surface
                .tools()
                .iter()
                .map(|t| t.name.clone())
                .collect(),
            resumed_after_turn: resumed.then_some(from.turns),
        }));
        crate::settled::announce(&self.events, &self.options.settled);
        let mut result = RunResult {
            status: RunStatus::Completed,
            text: String::new(),
            turns: from.turns,
            tool_calls: from.tool_calls,
            cost_usd: self
                .options
                .cost
                .filter(|_| !resumed || from.usage == Usage::default())
                .map(|_| 0.0),
            usage: from.usage,
            duration: Duration::ZERO,
            error: None,
            messages: Vec::new(),
            pending: Vec::new(),
            held: Vec::new(),
            telemetry: ToolTelemetry::default(),
        };
        let sent = Mutex::new(Sent::default());
        let in_flight = InFlight::default();
        let transcript = Mutex::new(from.messages);
        // Whichever comes first drops the turns (and the model request or
        // tool calls they wait on) at once.
        let stop = tokio::select! {
            biased;
            () = self.ctx.cancel.cancelled() => Stop::Cancelled,
            turns = tokio::time::timeout(
                self.options.timeout,
                self.turns(history, &transcript, &mut result, &in_flight, reopen, &sent),
            ) => turns.map_or(Stop::TimedOut, Stop::Returned),
        };
        result.duration = started.elapsed();
        let (kind, status) = match stop {
            Stop::TimedOut => {
                // Nothing the run started outlives it.
                self.ctx.cancel.cancel();
                result.error = Some(talon_protocol::gateway::refuse::run_timed_out(
                    u64::try_from(self.options.timeout.as_millis()).unwrap_or(u64::MAX),
                ));
                (
                    EventData::RunTimedOut as fn(RunEndedData) -> EventData,
                    RunStatus::TimedOut,
                )
            }
            Stop::Cancelled => {
                result.error = Some(aborted());
                (
                    EventData::RunCancelled as fn(RunEndedData) -> EventData,
                    RunStatus::Cancelled,
                )
            }
            Stop::Returned(Ok(())) => (
                EventData::RunCompleted as fn(RunEndedData) -> EventData,
                RunStatus::Completed,
            ),
            Stop::Returned(Err(error)) if self.ctx.is_cancelled() => {
                result.error = Some(error);
                (
                    EventData::RunCancelled as fn(RunEndedData) -> EventData,
                    RunStatus::Cancelled,
                )
            }
            Stop::Returned(Err(error)) => {
                result.error = Some(error);
                (
                    EventData::RunFailed as fn(RunEndedData) -> EventData,
                    RunStatus::Failed,
                )
            }
        };
        for (call_id, name, since) in in_flight.take() {
            let error = result
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_default();
            self.events
                .emit(EventData::ToolCallFailed(ToolCallFailedData {
                    call_id,
                    parent_id: None,
                    name,
                    duration_ms: Some(since.elapsed().as_millis() as u64),
                    status: Some("aborted".into()),
                    error: json!({"error": error, "status": "aborted"}),
                }));
        }
        result.status = status;
        result.messages = transcript.into_inner().unwrap_or_default();
        if status != RunStatus::Completed {
            // Only a completed run leaves calls for the app to answer.
            result.pending.clear();
            result.held.clear();
        }
        let open: HashSet<&str> = result
            .pending
            .iter()
            .map(|c| c.id.as_str())
            .chain(result.held.iter().map(String::as_str))
            .collect();
        let message = result.error.as_ref().map(|e| e.message.as_str());
        answer_dangling(&mut result.messages, &open, message);
        // What the surface still runs for the run stops before its end,
        // and reports first (bounded: the end is never held for long).
        let _ = tokio::time::timeout(SETTLE, self.surface.settle()).await;
        result.telemetry = lock(&sent).complete(
            self.surface.telemetry(),
            &result.pending,
            &result.held,
            |name| self.surface.client_id(name),
        );
        self.events.emit(kind(RunEndedData {
            text: (!result.text.is_empty()).then(|| result.text.clone()),
            error: result.error.as_ref().map(|e| e.message.clone()),
            turns: result.turns,
            tool_calls: result.tool_calls,
            usage: event_usage(&result.usage, result.cost_usd),
            duration_ms: result.duration.as_millis() as u64,
            pending_tool_calls: result.pending.iter().map(wire_tool_call).collect(),
            telemetry: Some(result.telemetry.clone()),
        }));
        result
    }

    async fn turns(
        &self,
        history: Vec<Message>,
        transcript: &Mutex<Vec<Message>>,
        result: &mut RunResult,
        in_flight: &InFlight,
        reopen: Vec<ToolCallRequest>,
        sent: &Mutex<Sent>,
    ) -> Result<(), ApiError> {
        let mut system = self.options.system_prompt.clone();
        if let Some(prompt) = self.surface.prompt() {
            system.push_str("\n\n");
            system.push_str(&prompt);
        }
        let tools = self.surface.tools();
        *lock(sent) = Sent::measure(&tools, &system);
        let mut messages = vec![Message::System(system)];
        messages.extend(history);
        messages.extend(lock(transcript).iter().cloned());
        // A run resumed inside a turn (its checkpoint taken as the turn's
        // calls started) makes that turn's calls before asking the model.
        // So does a run that resumes calls an earlier run held open.
        let mut open = match lock(transcript).last() {
            _ if !reopen.is_empty() => Some(reopen),
            Some(Message::Assistant { tool_calls, .. }) if !tool_calls.is_empty() => {
                Some(tool_calls.clone())
            }
            _ => None,
        };
        loop {
            let calls = match open.take() {
                Some(calls) => calls,
                None => match self
                    .ask(&mut messages, &tools, transcript, result, sent)
                    .await?
                {
                    Some(calls) => calls,
                    None => return Ok(()),
                },
            };
            let first = result.tool_calls.saturating_sub(calls.len() as u32);
            let (client, own): (Vec<&ToolCallRequest>, Vec<&ToolCallRequest>) = calls
                .iter()
                .partition(|c| self.options.client_tools.contains(&c.name));
            for call in &client {
                self.events
                    .emit(EventData::ToolCallStarted(ToolCallStartedData {
                        call_id: call.id.clone(),
                        parent_id: None,
                        name: call.name.clone(),
                        source: Some(ToolSource::Client),
                        arguments: serde_json::from_str(&call.arguments).ok(),
                        // The app answers it: nothing here to repeat.
                        replay_safe: true,
                    }));
            }
            let outputs = futures::future::join_all(
                (first..)
                    .zip(&own)
                    .map(|(number, call)| self.call(call, number, in_flight)),
            )
            .await;
            let mut awaited = Vec::new();
            for (call, (content, awaiting)) in own.iter().zip(outputs) {
                if !awaiting.is_empty() {
                    // Left open: the app's answers resume it next run.
                    result.held.push(call.id.clone());
                    awaited.extend(awaiting.into_iter().map(|app| self.app_call(call, app)));
                    continue;
                }
                let answer = Message::Tool {
                    call_id: call.id.clone(),
                    content,
                };
                lock(transcript).push(answer.clone());
                messages.push(answer);
            }
            if !client.is_empty() || !awaited.is_empty() {
                // The app answers these on its next run.
                result.pending = client.into_iter().cloned().chain(awaited).collect();
                return Ok(());
            }
            self.events.checkpoint(Checkpoint {
                messages: lock(transcript).clone(),
                turns: result.turns,
                tool_calls: result.tool_calls,
                usage: result.usage,
            });
        }
    }

    /// One model turn: asks the model, adds its answer to `messages` and
    /// the transcript, and returns its tool calls (none: the run is done).
    /// A turn with calls is handed to the sink as it starts
    /// ([`RunEvents::turn_started`]), so a run waiting inside it (for an
    /// approval) can resume there.
    async fn ask(
        &self,
        messages: &mut Vec<Message>,
        tools: &Arc<Vec<talon_protocol::ModelTool>>,
        transcript: &Mutex<Vec<Message>>,
        result: &mut RunResult,
        sent: &Mutex<Sent>,
    ) -> Result<Option<Vec<ToolCallRequest>>, ApiError> {
        if self.ctx.is_cancelled() {
            return Err(aborted());
        }
        if result.turns >= self.options.max_turns {
            return Err(ApiError::new(
                ErrorCode::Timeout,
                format!("the turn limit of {} was reached", self.options.max_turns),
            )
            .with_details(talon_protocol::gateway::ErrorDetails {
                limit: Some("maxTurns".to_string()),
                value: Some(u64::from(self.options.max_turns)),
                ..Default::default()
            }));
        }
        result.turns += 1;
        let request = ChatRequest {
            model: self.options.model.clone(),
            messages: messages.clone(),
            tools: tools.clone(),
            max_tokens: self.options.max_tokens,
            stream: self.options.stream,
            thinking: self.options.thinking,
            cache: self.options.cache,
        };
        if let Err(reason) = self.surface.check_offered(&request.tools) {
            // Fail closed: the request is never sent.
            return Err(ApiError::new(
                ErrorCode::Internal,
                format!("the model request was not sent: {reason}"),
            )
            .with_details(talon_protocol::gateway::ErrorDetails {
                check: Some("offeredTools".to_string()),
                ..Default::default()
            }));
        }
        crate::payload::debug_payload(&request);
        lock(sent).model_calls += 1;
        let events = self.events.clone();
        let expose = self.options.reasoning != Reasoning::Off;
        let sink = move |delta: StreamDelta| match delta {
            StreamDelta::Text(text) => events.emit(EventData::AssistantDelta(TextDelta { text })),
            StreamDelta::Thinking(text) if expose => {
                events.emit(EventData::ThinkingDelta(TextDelta { text }));
            }
            _ => {}
        };
        let span = crate::trace::model(&self.options.model, result.turns);
        let reply = self
            .provider
            .complete(&request, &sink, &self.ctx.cancel)
            .instrument(span.clone())
            .await
            .map_err(|e| e.api_error());
        crate::trace::model_done(&span, &reply);
        let reply = reply?;
        drop(span);
        lock(sent).replied(reply.tool_bytes);
        result.usage += reply.usage;
        let priced = self.options.cost.and_then(|c| c.usd(&reply.usage));
        result.cost_usd = result.cost_usd.zip(priced).map(|(run, reply)| run + reply);
        if !reply.text.is_empty() {
            result.text = reply.text.clone();
        }
        // One per model call, with what it cost and (for admins) the
        // provider's native reply.
        self.events.emit_raw(
            EventData::AssistantMessage(AssistantMessageData {
                text: (!reply.text.is_empty()).then(|| reply.text.clone()),
                tool_calls: reply.tool_calls.len() as u32,
                finish_reason: (!reply.finish_reason.is_empty())
                    .then(|| reply.finish_reason.clone()),
                usage: Some(event_usage(&reply.usage, priced)),
            }),
            (!reply.raw.is_empty()).then(|| reply.raw.to_json()),
        );
        // The reasoning stays on the message: the provider replays it with
        // the turn's tool results (Anthropic requires its signed blocks).
        let assistant = Message::Assistant {
            text: (!reply.text.is_empty()).then(|| reply.text.clone()),
            tool_calls: reply.tool_calls.clone(),
            reasoning: reply.reasoning.clone(),
        };
        lock(transcript).push(assistant.clone());
        messages.push(assistant);
        if reply.tool_calls.is_empty() {
            return Ok(None);
        }
        result.tool_calls += reply.tool_calls.len() as u32;
        self.events.turn_started(Checkpoint {
            messages: lock(transcript).clone(),
            turns: result.turns,
            tool_calls: result.tool_calls,
            usage: result.usage,
        });
        Ok(Some(reply.tool_calls))
    }

    /// One tool call the model made (the run's `number`th); returns the
    /// tool message content.
    /// A client tool call a model call made inside it, announced as a
    /// nested call of `parent` and left for the app.
    fn app_call(&self, parent: &ToolCallRequest, app: AppCall) -> ToolCallRequest {
        self.events
            .emit(EventData::ToolCallStarted(ToolCallStartedData {
                call_id: app.call_id.clone(),
                parent_id: Some(parent.id.clone()),
                name: app.name.clone(),
                source: Some(ToolSource::Client),
                arguments: Some(app.arguments.clone()),
                // The app answers it: nothing here to repeat.
                replay_safe: true,
            }));
        ToolCallRequest {
            id: app.call_id,
            name: app.name,
            arguments: app.arguments.to_string(),
        }
    }

    /// Makes one model call: what the model is told, and the app's calls
    /// it waits for (none: it has its answer).
    async fn call(
        &self,
        call: &ToolCallRequest,
        number: u32,
        in_flight: &InFlight,
    ) -> (String, Vec<AppCall>) {
        let started = Instant::now();
        let args: Value = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(e) => {
                let error = format!("the arguments are not JSON: {e}");
                self.events
                    .emit(EventData::ToolCallStarted(ToolCallStartedData {
                        call_id: call.id.clone(),
                        parent_id: None,
                        name: call.name.clone(),
                        source: None,
                        arguments: None,
                        // Its arguments were unreadable: it never ran.
                        replay_safe: true,
                    }));
                self.events
                    .emit(EventData::ToolCallFailed(ToolCallFailedData {
                        call_id: call.id.clone(),
                        parent_id: None,
                        name: call.name.clone(),
                        duration_ms: None,
                        status: Some("invalid_input".into()),
                        error: json!(error),
                    }));
                return (
                    json!({"error": error, "status": "invalid_input"}).to_string(),
                    Vec::new(),
                );
            }
        };
        self.events
            .emit(EventData::ToolCallStarted(ToolCallStartedData {
                call_id: call.id.clone(),
                parent_id: None,
                name: call.name.clone(),
                source: None,
                arguments: Some(args.clone()),
                replay_safe: self.surface.replay_safe(&call.name),
            }));
        in_flight.start(number, call);
        let span = crate::trace::tool(&call.name, &call.id);
        let SurfaceReply {
            value,
            ok,
            awaiting,
        } = self
            .surface
            .handle(&self.ctx, &call.id, &call.name, args)
            .instrument(span.clone())
            .await;
        if !ok {
            span.record("otel.status_code", "error");
        }
        drop(span);
        in_flight.finish(number);
        let ms = started.elapsed().as_millis() as u64;
        if !awaiting.is_empty() {
            // Neither completed nor failed: it goes on when the app answers.
            return (value.to_string(), awaiting);
        }
        if ok {
            self.events
                .emit(EventData::ToolCallCompleted(ToolCallCompletedData {
                    call_id: call.id.clone(),
                    parent_id: None,
                    name: call.name.clone(),
                    duration_ms: ms,
                    result: talon_tools::runner::cap(value.clone(), MAX_EVENT_RESULT),
                }));
        } else {
            self.events
                .emit(EventData::ToolCallFailed(ToolCallFailedData {
                    call_id: call.id.clone(),
                    parent_id: None,
                    name: call.name.clone(),
                    duration_ms: Some(ms),
                    status: value
                        .get("status")
                        .and_then(|s| s.as_str())
                        .map(str::to_owned),
                    error: value.clone(),
                }));
        }
        (value.to_string(), Vec::new())
    }
}

/// The transcript, even if a panicking holder poisoned it.
/// How long a run's end waits for its surface to stop what it runs.
const SETTLE: Duration = Duration::from_secs(5);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Answers every tool call of `messages` that has no answer (the run ended
/// while it was in flight), so that the transcript is a valid history;
/// the client calls in `open` stay for the app to answer.
/// The error of a run stopped by its cancellation.
fn aborted() -> ApiError {
    let mut error = ApiError::new(ErrorCode::Unavailable, "the run was aborted");
    error.retryable = false;
    error
}

fn answer_dangling(messages: &mut Vec<Message>, open: &HashSet<&str>, error: Option<&str>) {
    let answered: std::collections::HashSet<String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    let dangling: Vec<String> = messages
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|c| c.id.clone()).collect()
            }
            _ => Vec::new(),
        })
        .filter(|id| !answered.contains(id) && !open.contains(id.as_str()))
        .collect();
    for call_id in dangling {
        messages.push(Message::Tool {
            call_id,
            content: json!({"status": "aborted", "error": error.unwrap_or("the run ended before this call returned")}).to_string(),
        });
    }
}
