//! The method table: every gateway method declared once, with its params
//! and result types, the scope it requires, whether it changes state, its
//! stability and the error codes it may return. The server's dispatch, the
//! committed JSON Schema and OpenAPI documents and the SDK's low-level
//! client are all generated from [`Method`].

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use super::approvals::{Approval, Question};
use super::catalog::Environment;
use super::error::{ApiError, ErrorCode};
use super::params::*;
use super::resources::{Agent, ArtifactSummary, Run, RunAccepted, RunResult, Session};
use super::run_list::{RunsListParams, RunsListResult};
use super::schedules::{
    Schedule, ScheduleAction, ScheduleRef, SchedulesCreateParams, SchedulesListParams,
    SchedulesListResult, SchedulesUpdateParams,
};
use super::scope::Scope;
use super::tasks::{Task, TasksListParams, TasksListResult};
use super::tokens::{
    CreatedToken, TokensCreateParams, TokensListParams, TokensListResult, TokensRevokeParams,
    TokensRevokeResult,
};
use super::usage::{UsageSummary, UsageSummaryParams};

/// Whether a method changes state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads only; safe to retry.
    Read,
    /// Changes state; its params take an optional `idempotencyKey`.
    Write,
}

/// What a method does to the room the store has, which decides how the
/// stored-bytes quota applies to it ([`Method::room`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Room {
    /// Stores what it is given: every method that writes, and the reads
    /// that may store (`sessions.resolve` creates the session it names,
    /// `tokens.ticket` stores a ticket). Refused once the store holds its
    /// quota.
    Grows,
    /// Stops work or frees room: cancelling, aborting, answering an
    /// approval or a question, deleting an environment, revoking tokens,
    /// unsubscribing. Always passes the quota, so a full store can always
    /// be drained.
    Frees,
    /// Stores nothing.
    Neutral,
}

/// How settled a method's contract is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    /// Will not change incompatibly within protocol version 1.
    Stable,
    /// May change; served.
    Experimental,
    /// The seed's "future API": declared, answered with `unsupported`.
    Unsupported,
}

/// The errors every method may return, besides its own.
pub const COMMON_ERRORS: [ErrorCode; 6] = [
    ErrorCode::InvalidRequest,
    ErrorCode::Unauthenticated,
    ErrorCode::Forbidden,
    ErrorCode::RateLimited,
    ErrorCode::Unavailable,
    ErrorCode::Internal,
];

/// What the table says of one method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodSpec {
    /// The wire name, e.g. `runs.create`.
    pub name: &'static str,
    /// The scope a token needs.
    pub scope: Scope,
    /// Whether it changes state.
    pub effect: Effect,
    /// How settled it is.
    pub stability: Stability,
    /// Its own error codes (besides [`COMMON_ERRORS`]).
    pub errors: &'static [ErrorCode],
    /// The params type's name in the schema.
    pub params: &'static str,
    /// The result type's name in the schema.
    pub result: &'static str,
    /// What it does, in a line.
    pub doc: &'static str,
}

macro_rules! method_table {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident => $name:literal as $func:ident ($params:ident -> $result:ident) {
            scope: $scope:ident, effect: $effect:ident, stability: $stability:ident,
            errors: [$($error:ident),* $(,)?] $(,)?
        }
    )*) => {
        /// Every gateway method.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Method {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Method {
            /// Every method, in table order.
            pub const ALL: &'static [Method] = &[$(Method::$variant,)*];

            /// The wire name.
            pub fn name(self) -> &'static str {
                match self { $(Method::$variant => $name,)* }
            }

            /// The method called `name`.
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($name => Some(Method::$variant),)* _ => None }
            }

            /// What the table says of it.
            pub fn spec(self) -> MethodSpec {
                match self {
                    $(Method::$variant => MethodSpec {
                        name: $name,
                        scope: Scope::$scope,
                        effect: Effect::$effect,
                        stability: Stability::$stability,
                        errors: &[$(ErrorCode::$error,)*],
                        params: stringify!($params),
                        result: stringify!($result),
                        doc: concat!($($doc,)*),
                    },)*
                }
            }

            /// The JSON Schema of its params (definitions land in
            /// `generator`).
            pub fn params_schema(self, generator: &mut SchemaGenerator) -> Schema {
                match self { $(Method::$variant => generator.subschema_for::<$params>(),)* }
            }

            /// The JSON Schema of its result.
            pub fn result_schema(self, generator: &mut SchemaGenerator) -> Schema {
                match self { $(Method::$variant => generator.subschema_for::<$result>(),)* }
            }
        }

        /// A call, decoded: the method and its typed params.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Request {
            $($(#[doc = $doc])* $variant($params),)*
        }

        impl Request {
            /// Decodes `params` for the method called `method`:
            /// `not_found` for a name outside the table, `invalid_request`
            /// (naming the problem) for params of the wrong shape.
            pub fn decode(method: &str, params: serde_json::Value) -> Result<Self, ApiError> {
                match method {
                    $($name => decode_params(method, params).map(Request::$variant),)*
                    _ => Err(crate::gateway::refuse::no_method(method)),
                }
            }

            /// The method it calls.
            pub fn method(&self) -> Method {
                match self { $(Request::$variant(_) => Method::$variant,)* }
            }
        }

        /// A gateway's implementation of the table: one async function per
        /// method, taking its typed params. The dispatch calls it; methods
        /// the table marks `unsupported` never reach it.
        pub trait Handler: Send + Sync {
            /// Who is calling (the token's identity and scopes), as the
            /// server passes it.
            type Caller: Send + Sync;
            $(
                $(#[doc = $doc])*
                fn $func(
                    &self,
                    caller: &Self::Caller,
                    params: $params,
                ) -> impl std::future::Future<Output = Result<$result, ApiError>> + Send;
            )*
        }

        /// Runs `request` on `handler`: the result as JSON, or the error.
        /// `unsupported` methods are answered here without the handler.
        pub async fn dispatch<H: Handler>(
            handler: &H,
            caller: &H::Caller,
            request: Request,
        ) -> Result<serde_json::Value, ApiError> {
            let method = request.method();
            if method.spec().stability == Stability::Unsupported {
                return Err(ApiError::unsupported(method.name()));
            }
            let internal = |e: serde_json::Error| {
                ApiError::new(ErrorCode::Internal, format!("{}: result not serialisable: {e}", method.name()))
            };
            match request {
                $(Request::$variant(params) => {
                    let result = handler.$func(caller, params).await?;
                    serde_json::to_value(result).map_err(internal)
                })*
            }
        }
    };
}

method_table! {
    /// The agents the token may see.
    AgentsList => "agents.list" as agents_list (AgentsListParams -> AgentsListResult) {
        scope: AgentRead, effect: Read, stability: Stable, errors: [CursorExpired],
    }
    /// One agent.
    AgentsGet => "agents.get" as agents_get (AgentRef -> Agent) {
        scope: AgentRead, effect: Read, stability: Stable, errors: [NotFound],
    }
    /// Creates an agent (beside the config file's).
    AgentsCreate => "agents.create" as agents_create (AgentsCreateParams -> Agent) {
        scope: Admin, effect: Write, stability: Stable, errors: [Conflict],
    }
    /// Changes an agent created through the API.
    AgentsUpdate => "agents.update" as agents_update (AgentsUpdateParams -> Agent) {
        scope: Admin, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Sessions, most recently updated first.
    SessionsList => "sessions.list" as sessions_list (SessionsListParams -> SessionsListResult) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [CursorExpired],
    }
    /// Creates a session.
    SessionsCreate => "sessions.create" as sessions_create (SessionsCreateParams -> Session) {
        scope: SessionWrite, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// The session with a key (created if absent).
    SessionsResolve => "sessions.resolve" as sessions_resolve (SessionsResolveParams -> Session) {
        scope: SessionWrite, effect: Read, stability: Stable, errors: [NotFound],
    }
    /// Changes a session's metadata (`session.updated` on the log).
    SessionsUpdate => "sessions.update" as sessions_update (SessionsUpdateParams -> Session) {
        scope: SessionWrite, effect: Write, stability: Stable, errors: [NotFound],
    }
    /// Sends a user message, starting a run.
    SessionsSend => "sessions.send" as sessions_send (SessionsSendParams -> RunAccepted) {
        scope: SessionWrite, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// A session's messages, oldest first.
    SessionsMessages => "sessions.messages" as sessions_messages (SessionsMessagesParams -> SessionsMessagesResult) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [NotFound],
    }
    /// Forks a session at a message.
    SessionsFork => "sessions.fork" as sessions_fork (SessionsForkParams -> Session) {
        scope: SessionWrite, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Compacts a session's history.
    SessionsCompact => "sessions.compact" as sessions_compact (SessionActionParams -> Session) {
        scope: SessionWrite, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Cancels a session's running runs.
    SessionsAbort => "sessions.abort" as sessions_abort (SessionActionParams -> SessionsAbortResult) {
        scope: SessionWrite, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Deletes a session: its messages, its runs and everything they made
    /// (events, approvals, questions, artifacts, cells), so that the
    /// store's quota recovers. `conflict` while one of its runs has not
    /// ended.
    SessionsDelete => "sessions.delete" as sessions_delete (SessionActionParams -> SessionsDeleteResult) {
        scope: SessionWrite, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Starts a run.
    RunsCreate => "runs.create" as runs_create (RunsCreateParams -> RunAccepted) {
        scope: AgentRun, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Runs, newest first, filtered by status, agent, session and creation
    /// time, a page at a time.
    RunsList => "runs.list" as runs_list (RunsListParams -> RunsListResult) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [],
    }
    /// The tokens and cost of the runs the caller may read, by UTC day,
    /// agent and model, over a window of at most 366 days.
    UsageSummary => "usage.summary" as usage_summary (UsageSummaryParams -> UsageSummary) {
        scope: SessionRead, effect: Read, stability: Experimental, errors: [],
    }
    /// One run.
    RunsGet => "runs.get" as runs_get (RunRef -> Run) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [NotFound],
    }
    /// A run's events after a cursor.
    RunsEvents => "runs.events" as runs_events (RunsEventsParams -> RunsEventsResult) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [NotFound, CursorExpired],
    }
    /// Waits for a run to end (or for the deadline: `accepted`).
    RunsWait => "runs.wait" as runs_wait (RunsWaitParams -> RunResult) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [NotFound],
    }
    /// Cancels a run.
    RunsCancel => "runs.cancel" as runs_cancel (RunsCancelParams -> Run) {
        scope: AgentRun, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Deletes an ended run with its events, approvals, questions,
    /// artifacts and cells (its messages stay in its session's
    /// conversation); answers the run as it was. `conflict` while it has
    /// not ended.
    RunsDelete => "runs.delete" as runs_delete (RunsDeleteParams -> Run) {
        scope: SessionWrite, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Background tasks, newest first: sub-agents a run spawned and the
    /// firings of schedules. A bound token sees its subject's.
    TasksList => "tasks.list" as tasks_list (TasksListParams -> TasksListResult) {
        scope: TaskRead, effect: Read, stability: Stable, errors: [],
    }
    /// One task.
    TasksGet => "tasks.get" as tasks_get (TaskRef -> Task) {
        scope: TaskRead, effect: Read, stability: Stable, errors: [NotFound],
    }
    /// Cancels a task that has not ended (and the run it tracks);
    /// answers it `cancelled`. `conflict` once it has ended.
    TasksCancel => "tasks.cancel" as tasks_cancel (TasksCancelParams -> Task) {
        scope: TaskWrite, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Changes how a task's result reaches the session that started it.
    /// `conflict` once it has ended.
    TasksNotify => "tasks.notify" as tasks_notify (TasksNotifyParams -> Task) {
        scope: TaskWrite, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// A task's events after a cursor: its `task.updated` events and the
    /// events of the run it tracks.
    TasksEvents => "tasks.events" as tasks_events (TasksEventsParams -> TasksEventsResult) {
        scope: TaskRead, effect: Read, stability: Stable, errors: [NotFound, CursorExpired],
    }
    /// Schedules, oldest first: runs of an agent the clock starts. A bound
    /// token sees the schedules its subject made.
    SchedulesList => "schedules.list" as schedules_list (SchedulesListParams -> SchedulesListResult) {
        scope: ScheduleRead, effect: Read, stability: Experimental, errors: [],
    }
    /// One schedule.
    SchedulesGet => "schedules.get" as schedules_get (ScheduleRef -> Schedule) {
        scope: ScheduleRead, effect: Read, stability: Experimental, errors: [NotFound],
    }
    /// Makes a schedule (OpenClaw's `cron.add` job): its firings run the
    /// agent as the calling token's subject.
    SchedulesCreate => "schedules.create" as schedules_create (SchedulesCreateParams -> Schedule) {
        scope: ScheduleWrite, effect: Write, stability: Experimental, errors: [NotFound, QuotaExceeded],
    }
    /// Changes a schedule: pauses it (`enabled: false`), resumes it, or
    /// replaces its time, payload, name or catch-up policy.
    SchedulesUpdate => "schedules.update" as schedules_update (SchedulesUpdateParams -> Schedule) {
        scope: ScheduleWrite, effect: Write, stability: Experimental, errors: [NotFound, Conflict],
    }
    /// Fires a schedule now, paused or not; answers the firing's task.
    /// `conflict` while its last firing is still live.
    SchedulesRun => "schedules.run" as schedules_run (ScheduleAction -> Task) {
        scope: ScheduleWrite, effect: Write, stability: Experimental, errors: [NotFound, Conflict],
    }
    /// Deletes a schedule (its firings' tasks and runs stay); answers it
    /// as it was.
    SchedulesDelete => "schedules.delete" as schedules_delete (ScheduleAction -> Schedule) {
        scope: ScheduleWrite, effect: Write, stability: Experimental, errors: [NotFound],
    }
    /// The configured models.
    ModelsList => "models.list" as models_list (ModelsListParams -> ModelsListResult) {
        scope: AgentRead, effect: Read, stability: Stable, errors: [CursorExpired],
    }
    /// Providers' credentials (the gateway's `models.authStatus`).
    ModelsStatus => "models.status" as models_status (Empty -> ModelsStatusResult) {
        scope: AgentRead, effect: Read, stability: Stable, errors: [],
    }
    /// The ToolSpace of an agent.
    ToolsList => "tools.list" as tools_list (ToolsListParams -> ToolsListResult) {
        scope: AgentRead, effect: Read, stability: Stable, errors: [NotFound, CursorExpired],
    }
    /// Calls one tool directly, through policy and approvals.
    ToolsInvoke => "tools.invoke" as tools_invoke (ToolsInvokeParams -> ToolsInvokeResult) {
        scope: ToolsInvoke, effect: Write, stability: Experimental, errors: [NotFound, Conflict, Timeout],
    }
    /// Artifacts of a run or session.
    ArtifactsList => "artifacts.list" as artifacts_list (ArtifactsListParams -> ArtifactsListResult) {
        scope: ArtifactsRead, effect: Read, stability: Stable, errors: [CursorExpired],
    }
    /// One artifact's summary.
    ArtifactsGet => "artifacts.get" as artifacts_get (ArtifactRef -> ArtifactSummary) {
        scope: ArtifactsRead, effect: Read, stability: Stable, errors: [NotFound],
    }
    /// Where to download an artifact's bytes.
    ArtifactsDownload => "artifacts.download" as artifacts_download (ArtifactRef -> ArtifactsDownloadResult) {
        scope: ArtifactsRead, effect: Read, stability: Stable, errors: [NotFound],
    }
    /// Approvals, filtered.
    ApprovalsList => "approvals.list" as approvals_list (ApprovalsListParams -> ApprovalsListResult) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [],
    }
    /// One approval, pending or resolved (what the dashboard's
    /// `/approve/{id}` page shows).
    ApprovalsGet => "approvals.get" as approvals_get (ApprovalRef -> Approval) {
        scope: SessionRead, effect: Read, stability: Experimental, errors: [NotFound],
    }
    /// Decides an approval (the first decision wins).
    ApprovalsRespond => "approvals.respond" as approvals_respond (ApprovalsRespondParams -> Approval) {
        scope: ApprovalRespond, effect: Write, stability: Stable, errors: [NotFound, Conflict],
    }
    /// Questions, filtered.
    QuestionsList => "questions.list" as questions_list (QuestionsListParams -> QuestionsListResult) {
        scope: SessionRead, effect: Read, stability: Experimental, errors: [],
    }
    /// Answers a question.
    QuestionsRespond => "questions.respond" as questions_respond (QuestionsRespondParams -> Question) {
        scope: ApprovalRespond, effect: Write, stability: Experimental, errors: [NotFound, Conflict],
    }
    /// Managed environments.
    EnvironmentsList => "environments.list" as environments_list (EnvironmentsListParams -> EnvironmentsListResult) {
        scope: AgentRead, effect: Read, stability: Experimental, errors: [CursorExpired],
    }
    /// Creates an environment: its provider prepares the workspace.
    EnvironmentsCreate => "environments.create" as environments_create (EnvironmentsCreateParams -> Environment) {
        scope: EnvironmentWrite, effect: Write, stability: Experimental, errors: [NotFound, Conflict],
    }
    /// One environment's state.
    EnvironmentsStatus => "environments.status" as environments_status (EnvironmentRef -> Environment) {
        scope: AgentRead, effect: Read, stability: Experimental, errors: [NotFound],
    }
    /// Deletes an environment, its workspace removed or kept by policy.
    EnvironmentsDelete => "environments.delete" as environments_delete (EnvironmentsDeleteParams -> Environment) {
        scope: EnvironmentWrite, effect: Write, stability: Experimental, errors: [NotFound],
    }
    /// Live events on this connection (WebSocket), after a replay.
    EventsSubscribe => "events.subscribe" as events_subscribe (EventsSubscribeParams -> EventsSubscribeResult) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [CursorExpired],
    }
    /// Ends a subscription.
    EventsUnsubscribe => "events.unsubscribe" as events_unsubscribe (EventsUnsubscribeParams -> Empty) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [NotFound],
    }
    /// Mints a short-lived, single-use ticket that opens one event stream
    /// or WebSocket in place of the bearer token (`?ticket=`), for
    /// browsers, which cannot set headers on `EventSource` or `WebSocket`.
    /// Each call mints a new one, so a retry is safe.
    TokensTicket => "tokens.ticket" as tokens_ticket (TokensTicketParams -> StreamTicket) {
        scope: SessionRead, effect: Read, stability: Stable, errors: [],
    }
    /// Mints a token with a name, scopes (or a preset) and a lifetime of
    /// at most 30 days: an app's backend makes one for its browser. The
    /// secret is in the answer only.
    TokensCreate => "tokens.create" as tokens_create (TokensCreateParams -> CreatedToken) {
        scope: Admin, effect: Write, stability: Stable, errors: [],
    }
    /// Tokens by id, a page at a time: never a secret or its hash; each
    /// with the token that minted it (`parentId`). Revoked ones only when
    /// asked.
    TokensList => "tokens.list" as tokens_list (TokensListParams -> TokensListResult) {
        scope: Admin, effect: Read, stability: Stable, errors: [],
    }
    /// Revokes a token and every token minted under it (theirs too): each
    /// stops working at once, and its streams and sockets end within a
    /// second on every node. A retry answers the same tokens.
    TokensRevoke => "tokens.revoke" as tokens_revoke (TokensRevokeParams -> TokensRevokeResult) {
        scope: Admin, effect: Write, stability: Stable, errors: [NotFound],
    }
}

impl Method {
    /// How the stored-bytes quota applies to the method (the one place
    /// this is decided).
    pub fn room(self) -> Room {
        match self {
            Self::RunsCancel
            | Self::SessionsAbort
            | Self::ApprovalsRespond
            | Self::QuestionsRespond
            | Self::EnvironmentsDelete
            | Self::TokensRevoke
            | Self::SessionsDelete
            | Self::RunsDelete
            | Self::TasksCancel
            | Self::SchedulesDelete
            | Self::EventsUnsubscribe => Room::Frees,
            Self::SessionsResolve | Self::TokensTicket => Room::Grows,
            other if other.spec().effect == Effect::Write => Room::Grows,
            _ => Room::Neutral,
        }
    }
}

impl MethodSpec {
    /// Every error code the method may return, common ones included, in
    /// [`ErrorCode::ALL`] order.
    pub fn all_errors(&self) -> Vec<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .filter(|c| {
                (self.stability != Stability::Unsupported && COMMON_ERRORS.contains(c))
                    || self.errors.contains(c)
                    || (self.stability == Stability::Unsupported
                        && matches!(c, ErrorCode::Unauthenticated | ErrorCode::Forbidden))
            })
            .collect()
    }
}

/// Decodes `method`'s params (`null` as `{}`): `invalid_request` naming
/// the field at fault (`details.field`, a path like
/// `input.messages[0].toolCallId`) and what is wrong with it.
pub fn decode_params<T: serde::de::DeserializeOwned>(
    method: &str,
    params: serde_json::Value,
) -> Result<T, ApiError> {
    let params = if params.is_null() {
        serde_json::json!({})
    } else {
        params
    };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        let problem = inner.to_string();
        if field == "." {
            crate::gateway::refuse::bad_params(method, &problem)
        } else {
            crate::gateway::refuse::bad_param(method, &field, &problem)
        }
    })
}
