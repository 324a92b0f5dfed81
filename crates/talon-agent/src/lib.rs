//! The agent loop over a real provider wire format: the model's replies,
//! tool calls through the run's [`talon_tools::ToolSurface`] (which
//! surface, direct, Code Mode or Tool Search, is the caller's choice; this
//! crate depends on none of them) and the catalog's single execution path,
//! cancellation by the run's token, and App SDK events through an event
//! sink, with the observers that turn nested calls and approvals into
//! events.
//!
//! # The loop
//!
//! `AgentRun` (`run.rs`) takes the run's surface as an `Arc<dyn talon_tools::ToolSurface>` (its
//! model-visible tools, prompt text, `kind` for events, and a handler per model call); the caller
//! builds `DirectSurface`, a `CodeModeRun` or a `ToolSearch` and decides which wins.
//! `AgentRun::run` sends the system prompt, history and message, streams the reply
//! (`assistant.delta`), runs the tool calls it asks for (concurrently, in order for the transcript)
//! through the surface, and repeats until a reply without tool calls, the turn limit, cancellation
//! (`run.cancelled`) or the run's timeout (`run.timed_out`). The model's reasoning is shown as
//! `thinking.delta` only where `RunOptions::reasoning` (OpenClaw's `reasoningDefault`, `options.rs`)
//! allows it, and is kept on the assistant message either way, so a provider replays it unchanged
//! with the turn's tool results. Cancellation is the run context's
//! `CancellationToken`: the provider stops on it and the loop selects on it beside its turns, so a
//! cancelled run drops the model request or the tool calls it waits on at once and reports the
//! calls in flight as `tool.call.failed` with status `aborted`; a run that times out cancels its
//! token too.
//!
//! After each turn with tool calls the loop hands a `Checkpoint` (the messages so far, its counts)
//! to the sink, in order with the events, and as a turn's calls start, `turn_started`;
//! `AgentRun::resume` goes on from a checkpoint (making first the calls of a last, unanswered model
//! message). Calls of the names in `RunOptions::client_tools` are not run: the turn's other calls
//! are, then the run ends `completed` with them in `RunResult::pending`; `AgentRun::proceed` goes
//! on from a history that answers them.
//!
//! `events` holds the `EventSink` interface (the gateway persists events and checkpoints),
//! `RunEvents` (the versioned envelope, ids ordered within a run), `NestedCallEvents` (a
//! `CallObserver`: nested calls become `tool.call.*` events with their parent's id), `UpdateEvents`
//! (streamed partial results as `tool.call.delta`) and `ApprovalEvents` (wraps an `Approver` with
//! `approval.requested/resolved`; the CLI wraps its approvers in it, the gateway reports its own).
//! `payload`: `TALON_DEBUG_MODEL_PAYLOAD=tools|full-redacted` logs the model-visible tools or a
//! bounded, redacted request body. `trace`: a span per model call and per tool call (target
//! `talon::trace`, OpenTelemetry's GenAI conventions).
//!
//! Invariants: every tool call goes through the run's `ToolRunner` (the surface holds it); the loop
//! never exposes tools the surface did not choose. Deliberately absent: tool implementations, the
//! surfaces themselves, and the choice between them.

pub mod events;
mod options;
pub mod payload;
pub mod run;
mod settled;
mod telemetry;
mod trace;

pub use events::{
    ApprovalEvents, CollectSink, EventSink, NestedCallEvents, NoEvents, RunEvents, UpdateEvents,
    wire_tool_call,
};
pub use run::{AgentRun, Checkpoint, Reasoning, RunOptions, RunResult, RunStatus};
pub use settled::SettledCall;
