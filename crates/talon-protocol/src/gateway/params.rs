//! Every method's params and result types. Params of a method that changes
//! state carry an `idempotencyKey`: a retried call with the same key and
//! the same params returns the first call's result; with other params it
//! fails with `conflict`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::approvals::{Approval, ApprovalDecision, ApprovalStatus, Question, QuestionStatus};
use super::bounded::*;
use super::catalog::{Environment, Model, ProviderStatus, ToolSummary};
pub use super::input::{InputMessage, InputRole, RunInput};
use super::resources::{Agent, ArtifactSummary, Message, Metadata, Session};
use super::scope::Scope;
use crate::{Event, EventType};

/// Nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

macro_rules! params {
    ($($(#[$sattr:meta])* $name:ident { $($(#[$attr:meta])* $field:ident : $ty:ty),* $(,)? })*) => {
        $(
            $(#[$sattr])*
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
            #[serde(rename_all = "camelCase", deny_unknown_fields)]
            pub struct $name {
                $($(#[$attr])* pub $field: $ty,)*
            }
        )*
    };
}

/// A tool the client app implements, for one run. The model sees it by
/// name beside the agent's tools (in Code Mode, beside `exec` and `wait`).
/// A turn that calls it ends the run `completed` with the call pending
/// (`RunEndedData.pendingToolCalls`, `RunResult.output.messages`); the
/// app answers with `tool` messages as the input of its next run on the
/// session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientTool {
    /// Its name, as the model calls it (1 to 64 ASCII letters, digits,
    /// `_` or `-`).
    pub name: Text<64>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Text<TEXT_MAX>>,
    /// JSON Schema of its arguments.
    #[serde(default = "empty_object")]
    pub parameters: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::json!({"type": "object"})
}

/// What a new run does when its session already has an active run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MultitaskStrategy {
    /// Refuse the new run with `conflict`.
    Reject,
    /// Queue it (`run.queued`) until the session's lane is free.
    #[default]
    Enqueue,
    /// Cancel the active run (its messages stay), then start.
    Interrupt,
    /// Cancel the active run and drop its messages, then start.
    Rollback,
}

macro_rules! results {
    ($($(#[$sattr:meta])* $name:ident { $($(#[$attr:meta])* $field:ident : $ty:ty),* $(,)? })*) => {
        $(
            $(#[$sattr])*
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
            #[serde(rename_all = "camelCase")]
            pub struct $name {
                $($(#[$attr])* pub $field: $ty,)*
            }
        )*
    };
}

params! {
    /// `agents.get`.
    AgentRef {
        /// The agent.
        agent_id: AgentId,
    }
    /// `agents.create`.
    AgentsCreateParams {
        /// The new agent's id.
        id: AgentId,
        /// A display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<Name>,
        /// What it is for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<Reason>,
        /// Its model, `provider/model`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<ModelRef>,
        /// Its system instructions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<Text<INSTRUCTIONS_MAX>>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `agents.update`: the fields given replace the agent's.
    AgentsUpdateParams {
        /// The agent (created through the API).
        agent_id: AgentId,
        /// A display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<Name>,
        /// What it is for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<Reason>,
        /// Its model, `provider/model`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<ModelRef>,
        /// Its system instructions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<Text<INSTRUCTIONS_MAX>>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `sessions.list`.
    SessionsListParams {
        /// Only this agent's sessions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<AgentId>,
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<Cursor>,
    }
    /// `sessions.create`.
    SessionsCreateParams {
        /// The agent.
        agent_id: AgentId,
        /// The app's key (generated when absent); unique per agent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<SessionKey>,
        /// The app's metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `sessions.resolve`: the session with this key, created if absent.
    SessionsResolveParams {
        /// The key.
        key: SessionKey,
        /// The agent (`main` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<AgentId>,
    }
    /// `sessions.update`: merges `metadata` into the session's (a key
    /// whose value is `null` is removed); the result is within the same
    /// caps as `sessions.create`'s.
    SessionsUpdateParams {
        /// The session.
        session_id: SessionId,
        /// The keys to set, or to remove (`null`).
        metadata: Metadata,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `sessions.send`: a user message that starts a run on the session.
    SessionsSendParams {
        /// The session.
        session_id: SessionId,
        /// The user's message, or the messages to add.
        input: RunInput,
        /// Client tools the model may call this run.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<ClientTool>,
        /// What to do when the session already has an active run
        /// (`enqueue` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        multitask_strategy: Option<MultitaskStrategy>,
        /// The run's own time limit; `run.timed_out` past it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
        /// The managed environment the run works in (its workspace, its
        /// secrets, its network policy); it must be `ready`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        environment_id: Option<EnvironmentId>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's run and never starts a second.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `sessions.messages`.
    SessionsMessagesParams {
        /// The session.
        session_id: SessionId,
        /// Only messages after this one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<Cursor>,
        /// At most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    }
    /// `sessions.fork`.
    SessionsForkParams {
        /// The session to fork.
        session_id: SessionId,
        /// Keep messages up to this one (all when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_message_id: Option<MessageId>,
        /// The fork's key (generated when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<SessionKey>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `sessions.compact`, `sessions.abort` and `sessions.delete`.
    SessionActionParams {
        /// The session.
        session_id: SessionId,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `runs.create`.
    RunsCreateParams {
        /// The agent (`main` when absent, or the session's agent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<AgentId>,
        /// The user's message, or the messages to add.
        input: RunInput,
        /// The session's key: that session, created if absent (a new
        /// session when neither a key nor an id is given).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_key: Option<SessionKey>,
        /// The session's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        /// Client tools the model may call this run.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<ClientTool>,
        /// What to do when the session already has an active run
        /// (`enqueue` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        multitask_strategy: Option<MultitaskStrategy>,
        /// The run's own time limit; `run.timed_out` past it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
        /// The managed environment the run works in (its workspace, its
        /// secrets, its network policy); it must be `ready`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        environment_id: Option<EnvironmentId>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's run and never starts a second.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `runs.get`.
    RunRef {
        /// The run.
        run_id: RunId,
    }
    /// `runs.events`: the events of the window between `after` and
    /// `before`, the first `limit` of them or the last `last` (a long
    /// run's tail first, then the pages before it), oldest first.
    RunsEventsParams {
        /// The run.
        run_id: RunId,
        /// Only events after this id (the replay cursor).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<Cursor>,
        /// Only events before this id (the first event of a page read
        /// before).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<Cursor>,
        /// At most this many, from the window's start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The last this many of the window instead (not with `limit`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last: Option<u32>,
    }
    /// `runs.wait`.
    RunsWaitParams {
        /// The run.
        run_id: RunId,
        /// Wait at most this long; past it the result is `accepted`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    }
    /// `runs.cancel`.
    RunsCancelParams {
        /// The run.
        run_id: RunId,
        /// Why, for the record.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<Reason>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `runs.delete`.
    RunsDeleteParams {
        /// The run (it must have ended).
        run_id: RunId,
        /// Accepted for a retry's sake: a retry of a delete that went
        /// through is `not_found`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `tasks.get`.
    TaskRef {
        /// The task.
        task_id: TaskId,
    }
    /// `tasks.cancel`.
    TasksCancelParams {
        /// The task.
        task_id: TaskId,
        /// Why, for the record (the task's error says it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<Reason>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `tasks.notify`.
    TasksNotifyParams {
        /// The task.
        task_id: TaskId,
        /// How its result reaches the session that started it from now on.
        notify_policy: super::tasks::NotifyPolicy,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `tasks.events`.
    TasksEventsParams {
        /// The task.
        task_id: TaskId,
        /// Only events after this id (the replay cursor).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<Cursor>,
        /// At most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    }
    /// `agents.list`.
    AgentsListParams {
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<Cursor>,
    }
    /// `models.list`.
    ModelsListParams {
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<Cursor>,
    }
    /// `environments.list`.
    EnvironmentsListParams {
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<Cursor>,
    }
    /// `tools.list`: the ToolSpace of an agent (and session).
    ToolsListParams {
        /// The agent (`main` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<AgentId>,
        /// The session whose policy applies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_key: Option<SessionKey>,
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<Cursor>,
    }
    /// `tools.invoke`: one direct, scoped call.
    ToolsInvokeParams {
        /// The tool's catalog id or name.
        tool: ToolRef,
        /// Its arguments.
        #[serde(default)]
        arguments: serde_json::Value,
        /// The session whose policy and approvals apply.
        session_key: SessionKey,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `artifacts.list`.
    ArtifactsListParams {
        /// Only this run's artifacts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<RunId>,
        /// Only this session's artifacts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<Cursor>,
    }
    /// `artifacts.get` and `artifacts.download` (the seed's
    /// `artifacts.get(artifactId, { runId })`).
    ArtifactRef {
        /// The artifact.
        artifact_id: ArtifactId,
        /// The run it belongs to: an artifact of another run (or of none)
        /// is `not_found`, as a missing one is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<RunId>,
    }
    /// `approvals.list`.
    ApprovalsListParams {
        /// Only approvals in this state (`pending` for the open ones).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<ApprovalStatus>,
        /// Only this run's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<RunId>,
        /// Only this session's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<Cursor>,
    }
    /// `approvals.get`.
    ApprovalRef {
        /// The approval.
        approval_id: ApprovalId,
    }
    /// `approvals.respond`: the first decision wins.
    ApprovalsRespondParams {
        /// The approval.
        approval_id: ApprovalId,
        /// The decision (one of the approval's `decisions`).
        decision: ApprovalDecision,
        /// Why, for the record.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<Reason>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `questions.list`.
    QuestionsListParams {
        /// Only questions in this state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<QuestionStatus>,
        /// Only this run's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<RunId>,
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<Cursor>,
    }
    /// `questions.respond`: the answer is checked against the question's
    /// schema or choices.
    QuestionsRespondParams {
        /// The question.
        question_id: QuestionId,
        /// The answer.
        answer: serde_json::Value,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `environments.create`.
    EnvironmentsCreateParams {
        /// The provider.
        provider: ProviderId,
        /// Provider-specific settings.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        settings: Option<serde_json::Value>,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `environments.status`.
    EnvironmentRef {
        /// The environment.
        environment_id: EnvironmentId,
    }
    /// `environments.delete`.
    EnvironmentsDeleteParams {
        /// The environment.
        environment_id: EnvironmentId,
        /// Makes a retried call safe: the same key with the same params
        /// returns the first call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<IdempotencyKey>,
    }
    /// `events.subscribe`: live events (after a replay from `after`) on
    /// this connection.
    EventsSubscribeParams {
        /// Replay every event after this id first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<Cursor>,
        /// Only this session's events.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_key: Option<SessionKey>,
        /// Only this agent's events.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<AgentId>,
        /// Only these types.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        types: Option<Vec<EventType>>,
    }
    /// `events.unsubscribe`.
    EventsUnsubscribeParams {
        /// The subscription.
        subscription_id: SubscriptionId,
    }
    /// `tokens.ticket`.
    TokensTicketParams {
        /// What the ticket may do: `session.read`, the one scope a stream
        /// needs (absent: that one; another is `invalid_request`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scopes: Option<Vec<Scope>>,
        /// The one stream it opens (absent: the event log's SSE stream,
        /// `{"events": {}}`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stream: Option<super::tokens::TicketStream>,
    }
}

results! {
    /// `agents.list`.
    AgentsListResult {
        /// Config agents first, then API agents by id.
        agents: Vec<Agent>,
        /// The next page's cursor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<Cursor>,
    }
    /// `sessions.list`.
    SessionsListResult {
        /// Most recently updated first.
        sessions: Vec<Session>,
        /// The next page's cursor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<Cursor>,
    }
    /// `sessions.messages`.
    SessionsMessagesResult {
        /// Oldest first.
        messages: Vec<Message>,
        /// Whether more follow.
        has_more: bool,
    }
    /// `sessions.abort`.
    SessionsAbortResult {
        /// The runs it cancelled.
        cancelled_run_ids: Vec<RunId>,
    }
    /// `sessions.delete`.
    SessionsDeleteResult {
        /// The session deleted.
        session_id: SessionId,
        /// Its runs, deleted with it, by id.
        deleted_run_ids: Vec<RunId>,
    }
    /// `runs.events`.
    RunsEventsResult {
        /// In order.
        events: Vec<Event>,
        /// Whether the run has ended and this page holds its terminal event.
        done: bool,
    }
    /// `tasks.events`.
    TasksEventsResult {
        /// In order: the task's `task.updated` events and the events of
        /// the run it tracks.
        events: Vec<Event>,
        /// Whether the task has ended and this page holds its last
        /// `task.updated`.
        done: bool,
    }
    /// `models.list`.
    ModelsListResult {
        /// The configured models.
        models: Vec<Model>,
        /// The next page's cursor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<Cursor>,
    }
    /// `models.status`.
    ModelsStatusResult {
        /// Per provider.
        providers: Vec<ProviderStatus>,
    }
    /// `tools.list`.
    ToolsListResult {
        /// The ToolSpace, by id.
        tools: Vec<ToolSummary>,
        /// The next page's cursor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<Cursor>,
    }
    /// `tools.invoke`.
    ToolsInvokeResult {
        /// The tool's result.
        result: serde_json::Value,
    }
    /// `artifacts.list`.
    ArtifactsListResult {
        /// Newest first.
        artifacts: Vec<ArtifactSummary>,
        /// The next page's cursor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<Cursor>,
    }
    /// `artifacts.download`.
    ArtifactsDownloadResult {
        /// The artifact.
        artifact: ArtifactSummary,
        /// Where to GET its bytes (relative to the gateway, with the same
        /// token), e.g. `/v1/artifacts/{id}/content`.
        url: String,
    }
    /// `approvals.list`.
    ApprovalsListResult {
        /// Oldest first.
        approvals: Vec<Approval>,
        /// The next page's cursor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<Cursor>,
    }
    /// `questions.list`.
    QuestionsListResult {
        /// Oldest first.
        questions: Vec<Question>,
        /// The next page's cursor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<Cursor>,
    }
    /// `environments.list`.
    EnvironmentsListResult {
        /// The environments.
        environments: Vec<Environment>,
        /// The next page's cursor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<Cursor>,
    }
    /// `tokens.ticket`: a credential for one stream, shown once.
    StreamTicket {
        /// The ticket (`tkt_` and 64 hex digits): `?ticket=` on the route
        /// of its `stream`. It opens that stream, once, before `expiresAt`,
        /// read-only; the stream ends when the token that minted it is
        /// revoked or expires.
        ticket: String,
        /// When it expires (epoch milliseconds).
        expires_at: u64,
        /// What it may do: `session.read`.
        scopes: Vec<Scope>,
        /// The one stream it opens.
        stream: super::tokens::TicketStream,
    }
    /// `events.subscribe`.
    EventsSubscribeResult {
        /// Names the subscription in `events.unsubscribe`.
        subscription_id: SubscriptionId,
    }
}
