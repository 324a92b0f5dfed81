//! Every method's params and result types. Params of a method that changes
//! state carry an `idempotencyKey`: a retried call with the same key and
//! the same params returns the first call's result; with other params it
//! fails with `conflict`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::approvals::{Approval, ApprovalDecision, ApprovalStatus, Question, QuestionStatus};
use super::catalog::{Environment, Model, ProviderStatus, Task, ToolSummary};
use super::resources::{Agent, ArtifactSummary, Message, Metadata, Session};
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
        agent_id: String,
    }
    /// `agents.create`.
    AgentsCreateParams {
        /// The new agent's id.
        id: String,
        /// A display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// What it is for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its model, `provider/model`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Its system instructions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `agents.update`: the fields given replace the agent's.
    AgentsUpdateParams {
        /// The agent (created through the API).
        agent_id: String,
        /// A display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// What it is for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its model, `provider/model`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Its system instructions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `sessions.list`.
    SessionsListParams {
        /// Only this agent's sessions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    }
    /// `sessions.create`.
    SessionsCreateParams {
        /// The agent.
        agent_id: String,
        /// The app's key (generated when absent); unique per agent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        /// The app's metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `sessions.resolve`: the session with this key, created if absent.
    SessionsResolveParams {
        /// The key.
        key: String,
        /// The agent (`main` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
    }
    /// `sessions.send`: a user message that starts a run.
    SessionsSendParams {
        /// The session.
        session_id: String,
        /// The message.
        input: String,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `sessions.messages`.
    SessionsMessagesParams {
        /// The session.
        session_id: String,
        /// Only messages after this one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
        /// At most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    }
    /// `sessions.fork`.
    SessionsForkParams {
        /// The session to fork.
        session_id: String,
        /// Keep messages up to this one (all when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_message_id: Option<String>,
        /// The fork's key (generated when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `sessions.compact` and `sessions.abort`.
    SessionActionParams {
        /// The session.
        session_id: String,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `runs.create`.
    RunsCreateParams {
        /// The agent.
        agent_id: String,
        /// The user's message.
        input: String,
        /// The session's key (a new session when absent and no id given).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_key: Option<String>,
        /// The session's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        /// The run's own time limit; `run.timed_out` past it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `runs.get`.
    RunRef {
        /// The run.
        run_id: String,
    }
    /// `runs.events`.
    RunsEventsParams {
        /// The run.
        run_id: String,
        /// Only events after this id (the replay cursor).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
        /// At most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    }
    /// `runs.wait`.
    RunsWaitParams {
        /// The run.
        run_id: String,
        /// Wait at most this long; past it the result is `accepted`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    }
    /// `runs.cancel`.
    RunsCancelParams {
        /// The run.
        run_id: String,
        /// Why, for the record.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `tasks.get`.
    TaskRef {
        /// The task.
        task_id: String,
    }
    /// `tasks.cancel`.
    TasksCancelParams {
        /// The task.
        task_id: String,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `tasks.events`.
    TasksEventsParams {
        /// The task.
        task_id: String,
        /// Only events after this id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
    }
    /// `tools.list`: the ToolSpace of an agent (and session).
    ToolsListParams {
        /// The agent (`main` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        /// The session whose policy applies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_key: Option<String>,
    }
    /// `tools.invoke`: one direct, scoped call.
    ToolsInvokeParams {
        /// The tool's catalog id or name.
        tool: String,
        /// Its arguments.
        #[serde(default)]
        arguments: serde_json::Value,
        /// The session whose policy and approvals apply.
        session_key: String,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `artifacts.list`.
    ArtifactsListParams {
        /// Only this run's artifacts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        /// Only this session's artifacts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        /// At most this many (the gateway's default and cap apply).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// The previous page's `nextCursor`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    }
    /// `artifacts.get` and `artifacts.download`.
    ArtifactRef {
        /// The artifact.
        artifact_id: String,
    }
    /// `approvals.list`.
    ApprovalsListParams {
        /// Only approvals in this state (`pending` for the open ones).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<ApprovalStatus>,
        /// Only this run's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        /// Only this session's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
    }
    /// `approvals.respond`: the first decision wins.
    ApprovalsRespondParams {
        /// The approval.
        approval_id: String,
        /// The decision (one of the approval's `decisions`).
        decision: ApprovalDecision,
        /// Why, for the record.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `questions.list`.
    QuestionsListParams {
        /// Only questions in this state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<QuestionStatus>,
        /// Only this run's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
    }
    /// `questions.respond`: the answer is checked against the question's
    /// schema or choices.
    QuestionsRespondParams {
        /// The question.
        question_id: String,
        /// The answer.
        answer: serde_json::Value,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `environments.create`.
    EnvironmentsCreateParams {
        /// The provider.
        provider: String,
        /// Provider-specific settings.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        settings: Option<serde_json::Value>,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `environments.status`.
    EnvironmentRef {
        /// The environment.
        environment_id: String,
    }
    /// `environments.delete`.
    EnvironmentsDeleteParams {
        /// The environment.
        environment_id: String,
        /// Makes a retried call safe.
        idempotency_key: String,
    }
    /// `events.subscribe`: live events (after a replay from `after`) on
    /// this connection.
    EventsSubscribeParams {
        /// Replay every event after this id first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
        /// Only this session's events.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_key: Option<String>,
        /// Only this agent's events.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        /// Only these types.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        types: Option<Vec<EventType>>,
    }
    /// `events.unsubscribe`.
    EventsUnsubscribeParams {
        /// The subscription.
        subscription_id: String,
    }
}

results! {
    /// `agents.list`.
    AgentsListResult {
        /// Config agents first, then API agents by id.
        agents: Vec<Agent>,
    }
    /// `sessions.list`.
    SessionsListResult {
        /// Most recently updated first.
        sessions: Vec<Session>,
        /// The next page's cursor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
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
        cancelled_run_ids: Vec<String>,
    }
    /// `runs.events`.
    RunsEventsResult {
        /// In order.
        events: Vec<Event>,
        /// Whether the run has ended and this page holds its terminal event.
        done: bool,
    }
    /// `tasks.list`.
    TasksListResult {
        /// The tasks.
        tasks: Vec<Task>,
    }
    /// `tasks.events`.
    TasksEventsResult {
        /// In order.
        events: Vec<Event>,
    }
    /// `models.list`.
    ModelsListResult {
        /// The configured models.
        models: Vec<Model>,
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
        next_cursor: Option<String>,
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
    }
    /// `questions.list`.
    QuestionsListResult {
        /// Oldest first.
        questions: Vec<Question>,
    }
    /// `environments.list`.
    EnvironmentsListResult {
        /// The environments.
        environments: Vec<Environment>,
    }
    /// `events.subscribe`.
    EventsSubscribeResult {
        /// Names the subscription in `events.unsubscribe`.
        subscription_id: String,
    }
}
