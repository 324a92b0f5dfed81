//! The one front for running a run. A host (the gateway, `talon agent`)
//! hands [`Host::start`] a [`RunSpec`] (the run's ids, where its events go,
//! what it plugs in, where it starts from) and gets a [`RunHandle`] back;
//! it never builds the loop's context, its event stamping or its
//! checkpoints. What comes out is in the protocol's terms: events
//! ([`RunSink`]), checkpoints as a session stores messages ([`Turn`], from
//! the [`TurnState`] the sink is handed), and
//! the [`RunOutcome`].
//!
//! The run executes in the task that awaits [`RunHandle::finish`], so the
//! caller's span and task-locals (the gateway's request id) are the run's.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use talon_agent::{ApprovalEvents, Checkpoint, EventSink, RunEvents, RunResult};
use talon_protocol::clock::Clock;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey};
use talon_protocol::gateway::{ApiError, ErrorCode, Message, MessageToolCall, RunStatus, Usage};
use talon_protocol::{Event, EventData, ToolDefinition};
use talon_tools::{
    Approvals, Approver, BoxFuture, CallOutcome, CancellationToken, NoUpdates, PolicyGate,
    RunContext, RunScope, ToolExecutor,
};

use crate::changes::ToolOutputs;
use crate::conversation::Conversation;
use crate::surface::OpenCells;
use crate::{Host, PreparedRun, RuntimeError};

/// Whose run it is: the envelope every event of the run carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunIds {
    /// The agent.
    pub agent: AgentId,
    /// The session (empty for a run without one).
    pub session: SessionId,
    /// The run.
    pub run: RunId,
    /// The session key (empty for none).
    pub session_key: SessionKey,
    /// Where the run came from (`gateway`, `cli`).
    pub channel: Option<String>,
}

/// Where a run's events and checkpoints go. Every method must return
/// quickly: the loop waits for none of them but
/// [`RunSink::call_recorded`].
pub trait RunSink: Send + Sync {
    /// Takes one event of the run, in order.
    fn emit(&self, event: Event);

    /// Takes the run's state at the end of a turn with tool calls, in
    /// order with the events (every event emitted before it belongs to
    /// the turns it holds). A host that makes runs resumable keeps the
    /// last one ([`TurnState::into_turn`]) and hands it back as
    /// [`Start::Resume`].
    fn checkpoint(&self, turn: TurnState) {
        let _ = turn;
    }

    /// Takes the run's state as a turn's tool calls start (its last
    /// message is the model's, its calls not answered yet): a run about to
    /// wait inside the turn (for an approval) resumes from it by making
    /// the turn's calls again.
    fn turn_started(&self, turn: TurnState) {
        let _ = turn;
    }

    /// Resolves once the start of a call that is not replay-safe, just
    /// emitted, is on durable record (`true`), or could not be (`false`).
    fn call_recorded(&self) -> BoxFuture<'_, bool> {
        Box::pin(std::future::ready(true))
    }
}

/// A run's state at a turn's edge, in the form a session stores messages:
/// what a run resumes from after its process died.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// Model requests made.
    pub turns: u32,
    /// Tool calls the model made.
    pub tool_calls: u32,
    /// Prompt tokens used.
    pub input_tokens: u64,
    /// Completion tokens used.
    pub output_tokens: u64,
    /// The messages the run added so far, as a session stores them.
    pub messages: Vec<Message>,
}

/// A run's state at a turn's edge as the loop holds it, handed to the
/// [`RunSink`]. Turning it into the stored form ([`TurnState::into_turn`])
/// copies the conversation so far, so it is left to the host, off the
/// loop's path, and only for the states it keeps.
#[derive(Debug, Clone)]
pub struct TurnState {
    checkpoint: Checkpoint,
    run_id: RunId,
}

impl TurnState {
    /// The state as a session stores it at `now`: what [`Start::Resume`]
    /// takes.
    pub fn into_turn(self, now: u64) -> Turn {
        let Self { checkpoint, run_id } = self;
        Turn {
            turns: checkpoint.turns,
            tool_calls: checkpoint.tool_calls,
            input_tokens: checkpoint.usage.input_tokens,
            output_tokens: checkpoint.usage.output_tokens,
            messages: Conversation(checkpoint.messages).to_stored(
                &SessionId::default(),
                &run_id,
                now,
            ),
        }
    }
}

/// A stored turn as the loop holds it, for a sink's own tests.
impl From<Turn> for TurnState {
    fn from(turn: Turn) -> Self {
        let run_id = turn
            .messages
            .iter()
            .find_map(|m| m.run_id.clone())
            .unwrap_or_default();
        Self {
            checkpoint: turn.checkpoint(),
            run_id,
        }
    }
}

impl Turn {
    fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            messages: Conversation::of_session(&self.messages).0,
            turns: self.turns,
            tool_calls: self.tool_calls,
            usage: talon_provider::Usage {
                input_tokens: self.input_tokens,
                output_tokens: self.output_tokens,
                ..talon_provider::Usage::default()
            },
        }
    }
}

/// The loop's sink in front of the host's.
struct Forward {
    sink: Arc<dyn RunSink>,
    run_id: RunId,
}

impl EventSink for Forward {
    fn emit(&self, event: Event) {
        self.sink.emit(event);
    }

    fn checkpoint(&self, checkpoint: Checkpoint) {
        self.sink.checkpoint(TurnState {
            checkpoint,
            run_id: self.run_id.clone(),
        });
    }

    fn turn_started(&self, checkpoint: Checkpoint) {
        self.sink.turn_started(TurnState {
            checkpoint,
            run_id: self.run_id.clone(),
        });
    }

    fn call_recorded(&self) -> BoxFuture<'_, bool> {
        self.sink.call_recorded()
    }
}

/// A run's events, stamped with its ids and numbered in order: what a
/// host's plug-ins report through.
#[derive(Clone)]
pub struct RunEmitter(Arc<RunEvents>);

impl std::fmt::Debug for RunEmitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl RunEmitter {
    /// The events of the run `ids` into `sink`. A host needs its own only
    /// to end a run that never started ([`Host::start`] refused it).
    pub fn new(ids: &RunIds, clock: &Clock, sink: Arc<dyn RunSink>) -> Self {
        let forward = Arc::new(Forward {
            sink,
            run_id: ids.run.clone(),
        });
        Self(Arc::new(RunEvents::new(
            forward,
            &context(ids, &CancellationToken::new(), clock),
        )))
    }

    /// Emits one event of the run.
    pub fn emit(&self, data: EventData) {
        self.0.emit(data);
    }

    /// `approver`, its questions and answers reported as
    /// `approval.requested` and `approval.resolved`.
    pub fn reporting(&self, approver: Arc<dyn Approver>) -> Arc<dyn Approver> {
        Arc::new(ApprovalEvents::new(approver, self.0.clone()))
    }
}

/// Where a run's core tools and commands work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Workspace {
    /// The agent's (`agents.list[].workspace`, else
    /// `agents.defaults.workspace`, else `<state dir>/workspace`), as its
    /// sandbox policy's `workspaceAccess` gives it.
    #[default]
    Agent,
    /// The agent's workspace at another place (`talon agent --workspace`),
    /// as its sandbox policy gives it.
    At(PathBuf),
    /// An environment's workspace, writable, whatever the agent's policy
    /// says of its own.
    Environment(PathBuf),
}

/// What a host plugs into each run it starts, each built with the run's
/// events.
pub trait RunHooks: Send + Sync {
    /// Who is asked about a call [`RunSpec::approvals`] sends to a person.
    /// It reports its own `approval.*` events (wrap one that does not in
    /// [`RunEmitter::reporting`]).
    fn asker(&self, events: &RunEmitter) -> Arc<dyn Approver>;

    /// Who answers the model's questions (`ask_user`, see
    /// [`crate::questions`]); without one the run does not offer it.
    fn questions(&self, events: &RunEmitter) -> Option<Arc<dyn ToolExecutor>> {
        let _ = events;
        None
    }

    /// Who takes the files the core tools change (see [`crate::changes`]).
    fn changes(&self, events: &RunEmitter) -> Option<Arc<dyn ToolOutputs>> {
        let _ = events;
        None
    }

    /// Tools the host adds to this run, a group per owner (an
    /// environment's `pull_request`, the ledger's `sessions_spawn`).
    fn host_tools(&self, events: &RunEmitter) -> Vec<HostTools> {
        let _ = events;
        Vec::new()
    }
}

/// Tools a host adds to a run, run by its own executor: their definitions
/// share one `owner`, by which the run's calls reach `executor`.
#[derive(Clone)]
pub struct HostTools {
    /// Their owner (`environment`).
    pub owner: &'static str,
    /// Their definitions (source `openclaw`, owner [`HostTools::owner`]).
    pub definitions: Vec<talon_protocol::ToolDefinition>,
    /// Who runs them.
    pub executor: Arc<dyn ToolExecutor>,
}

impl std::fmt::Debug for HostTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostTools")
            .field("owner", &self.owner)
            .field(
                "tools",
                &self.definitions.iter().map(|d| &d.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Where a run starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// A new turn: the user's message after the history.
    Message(String),
    /// Its last complete turn (its node died after it), after the history.
    Resume(Turn),
    /// Its input again (its node died before a turn ended): its
    /// `run.started` says `resumedAfterTurn: 0`.
    Again(Option<String>),
    /// The history alone, whose last messages answer client tool calls an
    /// earlier run left pending: the model goes on from the answers. The
    /// cells in `resume` (their answers recorded with
    /// [`talon_codemode::answer_cell`]) go on first, each by its `exec`
    /// call, which the earlier run held open.
    Proceed {
        /// Cells waiting for the answers the input gave.
        resume: Vec<talon_codemode::AwaitingCell>,
    },
    /// One direct call of a catalog id or unique name (`tools.invoke`);
    /// the history is not read.
    Invoke {
        /// The catalog id or tool name.
        tool: String,
        /// Its arguments.
        arguments: Value,
    },
}

/// One run to start.
pub struct RunSpec {
    /// The wall clock the run reads (its events' times, its records').
    pub clock: Clock,
    /// Its ids.
    pub ids: RunIds,
    /// Cancels it.
    pub cancel: CancellationToken,
    /// Where its events and checkpoints go.
    pub sink: Arc<dyn RunSink>,
    /// The approval policy (`tools.approvals`) every call goes through.
    pub approvals: Arc<Approvals>,
    /// What the host plugs in.
    pub hooks: Arc<dyn RunHooks>,
    /// Where its suspended Code Mode cells go.
    pub cells: OpenCells,
    /// The workspace its core tools and commands work in.
    pub workspace: Workspace,
    /// Its own time limit (else the loop's default).
    pub timeout: Option<Duration>,
    /// The app's tools for this run, offered to the model by name beside
    /// the agent's; a clash fails [`Host::start`].
    pub client_tools: Vec<ToolDefinition>,
    /// How its shell runs commands (bound secrets, network).
    pub shell: talon_core_tools::ShellOptions,
    /// Values redacted from every tool result before the model or any sink
    /// sees them.
    pub redact: Vec<String>,
    /// The conversation before the run.
    pub history: Conversation,
    /// Where it starts.
    pub start: Start,
    /// Client calls earlier runs left pending that this run's input
    /// settles ([`crate::conversation::Prepared::settled`]): their ends
    /// are emitted after `run.started`. Empty for a run that resumes
    /// after its node died (the first attempt announced them).
    pub settled: Vec<talon_agent::SettledCall>,
}

/// How a run ended, in the protocol's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// `completed`, `failed`, `cancelled` or `timed_out`.
    pub status: RunStatus,
    /// The final answer (or the last text).
    pub text: String,
    /// Model requests made.
    pub turns: u32,
    /// Tool calls the model made.
    pub tool_calls: u32,
    /// Tokens used.
    pub usage: Usage,
    /// Wall time.
    pub duration: Duration,
    /// What ended it, when it did not complete (a direct call's failure
    /// included), with its code; none for a cancelled run.
    pub error: Option<ApiError>,
    /// The messages it added: the user's, the model's, the tools'.
    pub messages: Conversation,
    /// Client tool calls of its last turn, left for the app to answer.
    pub pending: Vec<MessageToolCall>,
    /// The model calls it left open for those answers (an `exec` whose
    /// cell called client tools): their cells outlive the run.
    pub held: Vec<String>,
}

/// A started run.
pub struct RunHandle {
    prepared: PreparedRun,
    events: RunEmitter,
    cancel: CancellationToken,
    history: Conversation,
    start: Start,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle")
            .field("run", &self.prepared)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

impl RunHandle {
    /// The run's events, for the host to report through.
    pub fn events(&self) -> &RunEmitter {
        &self.events
    }

    /// What cancels the run (its end is then `run.cancelled`), to keep
    /// while [`RunHandle::finish`] runs it: the spec's token.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Runs it to its end (its terminal event included) in this task, and
    /// releases what it held.
    pub async fn finish(self) -> RunOutcome {
        let Self {
            prepared,
            history,
            start,
            ..
        } = self;
        let history = history.0;
        match start {
            Start::Message(message) => outcome(prepared.run(history, &message).await, None),
            Start::Resume(turn) => outcome(prepared.resume(history, turn.checkpoint()).await, None),
            Start::Again(message) => {
                let from = Checkpoint::input(message.as_deref());
                outcome(prepared.resume(history, from).await, None)
            }
            Start::Proceed { resume } => {
                let reopen = Conversation(history.clone()).reopened(&resume);
                outcome(prepared.proceed(history, reopen).await, None)
            }
            Start::Invoke { tool, arguments } => {
                let (result, called) = prepared.invoke(&tool, arguments).await;
                let failed = invocation_error(&tool, &called);
                outcome(result, failed)
            }
        }
    }
}

impl Host {
    /// Builds the run `spec` describes (its model, tools, policy and
    /// surface) and hands it back ready to [`RunHandle::finish`]. A run
    /// that cannot be built (an unknown agent, a clashing client tool, a
    /// sandbox that did not start) is refused here, before any event.
    pub async fn start(&self, spec: RunSpec) -> Result<RunHandle, RuntimeError> {
        let RunSpec {
            ids,
            cancel,
            sink,
            approvals,
            hooks,
            cells,
            workspace,
            timeout,
            client_tools,
            shell,
            redact,
            history,
            start,
            settled,
            clock,
        } = spec;
        let resume = match &start {
            Start::Proceed { resume } => resume.clone(),
            _ => Vec::new(),
        };
        let ctx = context(&ids, &cancel, &clock);
        let forward = Arc::new(Forward {
            sink,
            run_id: ids.run.clone(),
        });
        let events = RunEmitter(Arc::new(RunEvents::new(forward, &ctx)));
        let approver: Arc<dyn Approver> =
            Arc::new(PolicyGate::new(approvals, hooks.asker(&events)));
        let mut prepared = self
            .prepare(crate::host::Parts {
                agent: ids.agent.clone(),
                ctx,
                events: events.0.clone(),
                approver,
                cells,
                workspace,
                timeout,
                client_tools,
                questions: hooks.questions(&events),
                changes: hooks.changes(&events),
                host_tools: hooks.host_tools(&events),
                shell,
                redact,
                resume,
            })
            .await?;
        prepared.options.settled = settled;
        Ok(RunHandle {
            prepared,
            events,
            cancel,
            history,
            start,
        })
    }
}

/// The loop's context of the run `ids`.
fn context(ids: &RunIds, cancel: &CancellationToken, clock: &Clock) -> RunContext {
    RunContext {
        scope: RunScope {
            agent_id: ids.agent.clone(),
            session_id: ids.session.clone(),
            run_id: ids.run.clone(),
        },
        session_key: ids.session_key.clone().into_string(),
        sender: None,
        channel: ids.channel.clone(),
        cancel: cancel.clone(),
        updates: Arc::new(NoUpdates),
        clock: clock.clone(),
    }
}

/// The loop's result in the protocol's terms; `failed` is a direct call's
/// error, which ends the run with it.
fn outcome(result: RunResult, failed: Option<ApiError>) -> RunOutcome {
    let status = match result.status {
        talon_agent::RunStatus::Completed => RunStatus::Completed,
        talon_agent::RunStatus::Failed => RunStatus::Failed,
        talon_agent::RunStatus::Cancelled => RunStatus::Cancelled,
        talon_agent::RunStatus::TimedOut => RunStatus::TimedOut,
    };
    // A cancelled run's status says it all; anything else that ended it
    // is the loop's error, with its code: the run's time limit
    // (`timeout`), the provider's (`unavailable` for one that is down,
    // `not_found` for an unknown model), the turn limit.
    let error = match (failed, result.status, result.error) {
        (Some(failed), _, _) => Some(failed),
        (None, talon_agent::RunStatus::Cancelled, _) => None,
        (None, _, error) => error,
    };
    RunOutcome {
        status,
        text: result.text,
        turns: result.turns,
        tool_calls: result.tool_calls,
        usage: usage(&result.usage, result.cost_usd),
        duration: result.duration,
        error,
        messages: Conversation(result.messages),
        pending: result
            .pending
            .iter()
            .map(talon_agent::wire_tool_call)
            .collect(),
        held: result.held,
    }
}

/// Usage as the protocol reports it, with its cost when it is known.
pub(crate) fn usage(usage: &talon_provider::Usage, cost_usd: Option<f64>) -> Usage {
    Usage {
        input_tokens: Some(usage.input_tokens),
        output_tokens: Some(usage.output_tokens),
        total_tokens: Some(usage.input_tokens + usage.output_tokens),
        cache_read_tokens: Some(usage.cache_read_tokens).filter(|n| *n > 0),
        cache_write_tokens: Some(usage.cache_write_tokens).filter(|n| *n > 0),
        cost_usd,
    }
}

/// The error a failed direct call ends its run with, by what failed.
fn invocation_error(tool: &str, outcome: &CallOutcome) -> Option<ApiError> {
    use talon_protocol::ToolErrorCode;
    let (code, message) = match outcome {
        CallOutcome::Ok(_) | CallOutcome::Aborted => return None,
        CallOutcome::NotFound => (
            ErrorCode::NotFound,
            format!("no tool {tool:?} this agent may call directly"),
        ),
        CallOutcome::Blocked(reason) => (ErrorCode::Forbidden, reason.clone()),
        CallOutcome::Failed(error) => (
            match error.code {
                ToolErrorCode::InvalidArgument => ErrorCode::InvalidRequest,
                ToolErrorCode::Timeout => ErrorCode::Timeout,
                ToolErrorCode::NotFound => ErrorCode::NotFound,
                ToolErrorCode::PermissionDenied | ToolErrorCode::OutsideWorkspace => {
                    ErrorCode::Forbidden
                }
                _ => ErrorCode::Unavailable,
            },
            error.message.clone(),
        ),
    };
    let details = match outcome {
        CallOutcome::Failed(error) => talon_protocol::gateway::ErrorDetails {
            tool_error: Some(error.code.as_str().to_owned()),
            ..Default::default()
        },
        _ => talon_protocol::gateway::ErrorDetails {
            outcome: Some(outcome.status().to_string()),
            ..Default::default()
        },
    };
    Some(ApiError::new(code, message).with_details(details))
}
