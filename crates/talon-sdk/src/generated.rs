//! Generated from the protocol's method table by
//! `talon_protocol::codegen::rust_client`: do not edit. Regenerate with
//! `UPDATE_GENERATED=1 cargo nextest run -p talon-sdk generated`.
//!
//! One typed function per gateway method. Reads are retried on a
//! retryable error; writes that take an `idempotencyKey` get one when
//! the caller gave none and are retried with it; other writes are
//! sent once.

use talon_protocol::gateway::Method;
use talon_protocol::gateway::approvals::*;
use talon_protocol::gateway::catalog::*;
use talon_protocol::gateway::params::*;
use talon_protocol::gateway::resources::*;
use talon_protocol::gateway::run_list::*;
use talon_protocol::gateway::schedules::*;
use talon_protocol::gateway::tasks::*;
use talon_protocol::gateway::tokens::*;
use talon_protocol::gateway::usage::*;

use crate::client::{Client, Retry};
use crate::error::Result;

impl Client {
    /// The agents the token may see.
    ///
    /// `agents.list`: needs `agent.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `cursor_expired`, `internal`.
    pub async fn agents_list(&self, params: AgentsListParams) -> Result<AgentsListResult> {
        self.call(Method::AgentsList, &params, Retry::Safe).await
    }

    /// One agent.
    ///
    /// `agents.get`: needs `agent.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn agents_get(&self, params: AgentRef) -> Result<Agent> {
        self.call(Method::AgentsGet, &params, Retry::Safe).await
    }

    /// Creates an agent (beside the config file's).
    ///
    /// `agents.create`: needs `admin`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn agents_create(&self, mut params: AgentsCreateParams) -> Result<Agent> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::AgentsCreate, &params, Retry::Safe).await
    }

    /// Changes an agent created through the API.
    ///
    /// `agents.update`: needs `admin`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn agents_update(&self, mut params: AgentsUpdateParams) -> Result<Agent> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::AgentsUpdate, &params, Retry::Safe).await
    }

    /// Sessions, most recently updated first.
    ///
    /// `sessions.list`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `cursor_expired`, `internal`.
    pub async fn sessions_list(&self, params: SessionsListParams) -> Result<SessionsListResult> {
        self.call(Method::SessionsList, &params, Retry::Safe).await
    }

    /// Creates a session.
    ///
    /// `sessions.create`: needs `session.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn sessions_create(&self, mut params: SessionsCreateParams) -> Result<Session> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SessionsCreate, &params, Retry::Safe).await
    }

    /// The session with a key (created if absent).
    ///
    /// `sessions.resolve`: needs `session.write`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn sessions_resolve(&self, params: SessionsResolveParams) -> Result<Session> {
        self.call(Method::SessionsResolve, &params, Retry::Safe).await
    }

    /// Changes a session's metadata (`session.updated` on the log).
    ///
    /// `sessions.update`: needs `session.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn sessions_update(&self, mut params: SessionsUpdateParams) -> Result<Session> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SessionsUpdate, &params, Retry::Safe).await
    }

    /// Sends a user message, starting a run.
    ///
    /// `sessions.send`: needs `session.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn sessions_send(&self, mut params: SessionsSendParams) -> Result<RunAccepted> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SessionsSend, &params, Retry::Safe).await
    }

    /// A session's messages, oldest first.
    ///
    /// `sessions.messages`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn sessions_messages(&self, params: SessionsMessagesParams) -> Result<SessionsMessagesResult> {
        self.call(Method::SessionsMessages, &params, Retry::Safe).await
    }

    /// Forks a session at a message.
    ///
    /// `sessions.fork`: needs `session.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn sessions_fork(&self, mut params: SessionsForkParams) -> Result<Session> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SessionsFork, &params, Retry::Safe).await
    }

    /// Compacts a session's history.
    ///
    /// `sessions.compact`: needs `session.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn sessions_compact(&self, mut params: SessionActionParams) -> Result<Session> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SessionsCompact, &params, Retry::Safe).await
    }

    /// Cancels a session's running runs.
    ///
    /// `sessions.abort`: needs `session.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn sessions_abort(&self, mut params: SessionActionParams) -> Result<SessionsAbortResult> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SessionsAbort, &params, Retry::Safe).await
    }

    /// Deletes a session: its messages, its runs and everything they made (events, approvals, questions, artifacts, cells), so that the store's quota recovers. `conflict` while one of its runs has not ended.
    ///
    /// `sessions.delete`: needs `session.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn sessions_delete(&self, mut params: SessionActionParams) -> Result<SessionsDeleteResult> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SessionsDelete, &params, Retry::Safe).await
    }

    /// Starts a run.
    ///
    /// `runs.create`: needs `agent.run`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn runs_create(&self, mut params: RunsCreateParams) -> Result<RunAccepted> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::RunsCreate, &params, Retry::Safe).await
    }

    /// Runs, newest first, filtered by status, agent, session and creation time, a page at a time.
    ///
    /// `runs.list`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn runs_list(&self, params: RunsListParams) -> Result<RunsListResult> {
        self.call(Method::RunsList, &params, Retry::Safe).await
    }

    /// The tokens and cost of the runs the caller may read, by UTC day, agent and model, over a window of at most 366 days.
    ///
    /// `usage.summary`: needs `session.read`; reads; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn usage_summary(&self, params: UsageSummaryParams) -> Result<UsageSummary> {
        self.call(Method::UsageSummary, &params, Retry::Safe).await
    }

    /// One run.
    ///
    /// `runs.get`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn runs_get(&self, params: RunRef) -> Result<Run> {
        self.call(Method::RunsGet, &params, Retry::Safe).await
    }

    /// A run's events after a cursor.
    ///
    /// `runs.events`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `cursor_expired`, `internal`.
    pub async fn runs_events(&self, params: RunsEventsParams) -> Result<RunsEventsResult> {
        self.call(Method::RunsEvents, &params, Retry::Safe).await
    }

    /// Waits for a run to end (or for the deadline: `accepted`).
    ///
    /// `runs.wait`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn runs_wait(&self, params: RunsWaitParams) -> Result<RunResult> {
        self.call(Method::RunsWait, &params, Retry::Safe).await
    }

    /// Cancels a run.
    ///
    /// `runs.cancel`: needs `agent.run`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn runs_cancel(&self, mut params: RunsCancelParams) -> Result<Run> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::RunsCancel, &params, Retry::Safe).await
    }

    /// Deletes an ended run with its events, approvals, questions, artifacts and cells (its messages stay in its session's conversation); answers the run as it was. `conflict` while it has not ended.
    ///
    /// `runs.delete`: needs `session.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn runs_delete(&self, mut params: RunsDeleteParams) -> Result<Run> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::RunsDelete, &params, Retry::Safe).await
    }

    /// Background tasks, newest first: sub-agents a run spawned and the firings of schedules. A bound token sees its subject's.
    ///
    /// `tasks.list`: needs `task.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn tasks_list(&self, params: TasksListParams) -> Result<TasksListResult> {
        self.call(Method::TasksList, &params, Retry::Safe).await
    }

    /// One task.
    ///
    /// `tasks.get`: needs `task.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn tasks_get(&self, params: TaskRef) -> Result<Task> {
        self.call(Method::TasksGet, &params, Retry::Safe).await
    }

    /// Cancels a task that has not ended (and the run it tracks); answers it `cancelled`. `conflict` once it has ended.
    ///
    /// `tasks.cancel`: needs `task.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn tasks_cancel(&self, mut params: TasksCancelParams) -> Result<Task> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::TasksCancel, &params, Retry::Safe).await
    }

    /// Changes how a task's result reaches the session that started it. `conflict` once it has ended.
    ///
    /// `tasks.notify`: needs `task.write`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn tasks_notify(&self, mut params: TasksNotifyParams) -> Result<Task> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::TasksNotify, &params, Retry::Safe).await
    }

    /// A task's events after a cursor: its `task.updated` events and the events of the run it tracks.
    ///
    /// `tasks.events`: needs `task.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `cursor_expired`, `internal`.
    pub async fn tasks_events(&self, params: TasksEventsParams) -> Result<TasksEventsResult> {
        self.call(Method::TasksEvents, &params, Retry::Safe).await
    }

    /// Schedules, oldest first: runs of an agent the clock starts. A bound token sees the schedules its subject made.
    ///
    /// `schedules.list`: needs `schedule.read`; reads; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn schedules_list(&self, params: SchedulesListParams) -> Result<SchedulesListResult> {
        self.call(Method::SchedulesList, &params, Retry::Safe).await
    }

    /// One schedule.
    ///
    /// `schedules.get`: needs `schedule.read`; reads; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn schedules_get(&self, params: ScheduleRef) -> Result<Schedule> {
        self.call(Method::SchedulesGet, &params, Retry::Safe).await
    }

    /// Makes a schedule (OpenClaw's `cron.add` job): its firings run the agent as the calling token's subject.
    ///
    /// `schedules.create`: needs `schedule.write`; writes; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`, `quota_exceeded`.
    pub async fn schedules_create(&self, mut params: SchedulesCreateParams) -> Result<Schedule> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SchedulesCreate, &params, Retry::Safe).await
    }

    /// Changes a schedule: pauses it (`enabled: false`), resumes it, or replaces its time, payload, name or catch-up policy.
    ///
    /// `schedules.update`: needs `schedule.write`; writes; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn schedules_update(&self, mut params: SchedulesUpdateParams) -> Result<Schedule> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SchedulesUpdate, &params, Retry::Safe).await
    }

    /// Fires a schedule now, paused or not; answers the firing's task. `conflict` while its last firing is still live.
    ///
    /// `schedules.run`: needs `schedule.write`; writes; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn schedules_run(&self, mut params: ScheduleAction) -> Result<Task> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SchedulesRun, &params, Retry::Safe).await
    }

    /// Deletes a schedule (its firings' tasks and runs stay); answers it as it was.
    ///
    /// `schedules.delete`: needs `schedule.write`; writes; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn schedules_delete(&self, mut params: ScheduleAction) -> Result<Schedule> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::SchedulesDelete, &params, Retry::Safe).await
    }

    /// The configured models.
    ///
    /// `models.list`: needs `agent.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `cursor_expired`, `internal`.
    pub async fn models_list(&self, params: ModelsListParams) -> Result<ModelsListResult> {
        self.call(Method::ModelsList, &params, Retry::Safe).await
    }

    /// Providers' credentials (the gateway's `models.authStatus`).
    ///
    /// `models.status`: needs `agent.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn models_status(&self) -> Result<ModelsStatusResult> {
        self.call(Method::ModelsStatus, &Empty {}, Retry::Safe).await
    }

    /// The ToolSpace of an agent.
    ///
    /// `tools.list`: needs `agent.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `cursor_expired`, `internal`.
    pub async fn tools_list(&self, params: ToolsListParams) -> Result<ToolsListResult> {
        self.call(Method::ToolsList, &params, Retry::Safe).await
    }

    /// Calls one tool directly, through policy and approvals.
    ///
    /// `tools.invoke`: needs `tools.invoke`; writes; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `timeout`, `internal`.
    pub async fn tools_invoke(&self, mut params: ToolsInvokeParams) -> Result<ToolsInvokeResult> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::ToolsInvoke, &params, Retry::Safe).await
    }

    /// Artifacts of a run or session.
    ///
    /// `artifacts.list`: needs `artifacts.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `cursor_expired`, `internal`.
    pub async fn artifacts_list(&self, params: ArtifactsListParams) -> Result<ArtifactsListResult> {
        self.call(Method::ArtifactsList, &params, Retry::Safe).await
    }

    /// One artifact's summary.
    ///
    /// `artifacts.get`: needs `artifacts.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn artifacts_get(&self, params: ArtifactRef) -> Result<ArtifactSummary> {
        self.call(Method::ArtifactsGet, &params, Retry::Safe).await
    }

    /// Where to download an artifact's bytes.
    ///
    /// `artifacts.download`: needs `artifacts.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn artifacts_download(&self, params: ArtifactRef) -> Result<ArtifactsDownloadResult> {
        self.call(Method::ArtifactsDownload, &params, Retry::Safe).await
    }

    /// Approvals, filtered.
    ///
    /// `approvals.list`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn approvals_list(&self, params: ApprovalsListParams) -> Result<ApprovalsListResult> {
        self.call(Method::ApprovalsList, &params, Retry::Safe).await
    }

    /// One approval, pending or resolved (what the dashboard's `/approve/{id}` page shows).
    ///
    /// `approvals.get`: needs `session.read`; reads; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn approvals_get(&self, params: ApprovalRef) -> Result<Approval> {
        self.call(Method::ApprovalsGet, &params, Retry::Safe).await
    }

    /// Decides an approval (the first decision wins).
    ///
    /// `approvals.respond`: needs `approval.respond`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn approvals_respond(&self, mut params: ApprovalsRespondParams) -> Result<Approval> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::ApprovalsRespond, &params, Retry::Safe).await
    }

    /// Questions, filtered.
    ///
    /// `questions.list`: needs `session.read`; reads; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn questions_list(&self, params: QuestionsListParams) -> Result<QuestionsListResult> {
        self.call(Method::QuestionsList, &params, Retry::Safe).await
    }

    /// Answers a question.
    ///
    /// `questions.respond`: needs `approval.respond`; writes; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn questions_respond(&self, mut params: QuestionsRespondParams) -> Result<Question> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::QuestionsRespond, &params, Retry::Safe).await
    }

    /// Managed environments.
    ///
    /// `environments.list`: needs `agent.read`; reads; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `cursor_expired`, `internal`.
    pub async fn environments_list(&self, params: EnvironmentsListParams) -> Result<EnvironmentsListResult> {
        self.call(Method::EnvironmentsList, &params, Retry::Safe).await
    }

    /// Creates an environment: its provider prepares the workspace.
    ///
    /// `environments.create`: needs `environment.write`; writes; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `conflict`, `rate_limited`, `unavailable`, `internal`.
    pub async fn environments_create(&self, mut params: EnvironmentsCreateParams) -> Result<Environment> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::EnvironmentsCreate, &params, Retry::Safe).await
    }

    /// One environment's state.
    ///
    /// `environments.status`: needs `agent.read`; reads; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn environments_status(&self, params: EnvironmentRef) -> Result<Environment> {
        self.call(Method::EnvironmentsStatus, &params, Retry::Safe).await
    }

    /// Deletes an environment, its workspace removed or kept by policy.
    ///
    /// `environments.delete`: needs `environment.write`; writes; experimental.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn environments_delete(&self, mut params: EnvironmentsDeleteParams) -> Result<Environment> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::EnvironmentsDelete, &params, Retry::Safe).await
    }

    /// Live events on this connection (WebSocket), after a replay.
    ///
    /// `events.subscribe`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `cursor_expired`, `internal`.
    pub async fn events_subscribe(&self, params: EventsSubscribeParams) -> Result<EventsSubscribeResult> {
        self.call(Method::EventsSubscribe, &params, Retry::Safe).await
    }

    /// Ends a subscription.
    ///
    /// `events.unsubscribe`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn events_unsubscribe(&self, params: EventsUnsubscribeParams) -> Result<Empty> {
        self.call(Method::EventsUnsubscribe, &params, Retry::Safe).await
    }

    /// Mints a short-lived, single-use ticket that opens one event stream or WebSocket in place of the bearer token (`?ticket=`), for browsers, which cannot set headers on `EventSource` or `WebSocket`. Each call mints a new one, so a retry is safe.
    ///
    /// `tokens.ticket`: needs `session.read`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn tokens_ticket(&self, params: TokensTicketParams) -> Result<StreamTicket> {
        self.call(Method::TokensTicket, &params, Retry::Safe).await
    }

    /// Mints a token with a name, scopes (or a preset) and a lifetime of at most 30 days: an app's backend makes one for its browser. The secret is in the answer only.
    ///
    /// `tokens.create`: needs `admin`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn tokens_create(&self, mut params: TokensCreateParams) -> Result<CreatedToken> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::TokensCreate, &params, Retry::Safe).await
    }

    /// Tokens by id, a page at a time: never a secret or its hash; each with the token that minted it (`parentId`). Revoked ones only when asked.
    ///
    /// `tokens.list`: needs `admin`; reads; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `rate_limited`, `unavailable`, `internal`.
    pub async fn tokens_list(&self, params: TokensListParams) -> Result<TokensListResult> {
        self.call(Method::TokensList, &params, Retry::Safe).await
    }

    /// Revokes a token and every token minted under it (theirs too): each stops working at once, and its streams and sockets end within a second on every node. A retry answers the same tokens.
    ///
    /// `tokens.revoke`: needs `admin`; writes; stable.
    /// Errors: `invalid_request`, `unauthenticated`, `forbidden`, `not_found`, `rate_limited`, `unavailable`, `internal`.
    pub async fn tokens_revoke(&self, mut params: TokensRevokeParams) -> Result<TokensRevokeResult> {
        if params.idempotency_key.is_none() {
            params.idempotency_key = Some(crate::client::idempotency_key());
        }
        self.call(Method::TokensRevoke, &params, Retry::Safe).await
    }
}
