//! The method table's implementation: over the store, and over the
//! node's run engine for runs and session turns ([`runs`]), the host's
//! models ([`models`]), the ToolSpace ([`toolspace`], [`invoke`]),
//! managed environments ([`environments`]), artifacts ([`artifacts`]),
//! approvals and questions ([`answers`]), tasks and schedules.

mod agents;
pub(crate) mod answers;
mod artifacts;
mod deletes;
mod environments;
mod invoke;
mod models;
mod runs;
mod schedules;
mod sessions;
mod tasks;
mod tokens;
mod toolspace;

use talon_protocol::gateway::bounded::{AgentId, SessionId, SessionKey, Subject};
use talon_protocol::gateway::resources::check_metadata;

use talon_protocol::gateway::bounded::Cursor;
use talon_protocol::gateway::page::limit;
use talon_protocol::gateway::params::*;
use talon_protocol::gateway::run_views::EventCount;
use talon_protocol::gateway::*;

use crate::auth::identity::Caller;
use crate::error::api_error;
use crate::state::Api;

/// The agent every gateway has, even with no config file.
pub(crate) use talon_protocol::gateway::run_views::DEFAULT_AGENT_ID as DEFAULT_AGENT;

/// Cuts a page read with one item more than `limit` down to `limit`: the
/// next page's cursor (the last item's id) when there is more.
fn next_page<T>(items: &mut Vec<T>, limit: u32, id: impl Fn(&T) -> String) -> Option<Cursor> {
    let more = items.len() > limit as usize;
    items.truncate(limit as usize);
    more.then(|| items.last().map(|item| Cursor::new(id(item))))
        .flatten()
}

/// A unit enum's wire spelling (`"pending"`).
fn wire_name<T: serde::Serialize>(value: T) -> Option<String> {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
}

fn not_found(kind: &str, id: &str) -> ApiError {
    talon_protocol::gateway::refuse::not_found(kind, id)
}

use crate::runs::new_id;

impl Handler for Api {
    type Caller = Caller;

    async fn agents_list(
        &self,
        caller: &Caller,
        p: AgentsListParams,
    ) -> Result<AgentsListResult, ApiError> {
        self.list_agents(caller, p).await
    }

    async fn agents_get(&self, caller: &Caller, p: AgentRef) -> Result<Agent, ApiError> {
        self.get_agent(caller, p).await
    }

    async fn agents_create(
        &self,
        caller: &Caller,
        p: AgentsCreateParams,
    ) -> Result<Agent, ApiError> {
        self.create_agent(caller, p).await
    }

    async fn agents_update(
        &self,
        caller: &Caller,
        p: AgentsUpdateParams,
    ) -> Result<Agent, ApiError> {
        self.update_agent(caller, p).await
    }

    async fn sessions_list(
        &self,
        caller: &Caller,
        p: SessionsListParams,
    ) -> Result<SessionsListResult, ApiError> {
        let limit = limit(p.limit);
        let mut sessions = self
            .store
            .sessions(
                p.agent_id.as_ref(),
                &caller.owner(),
                p.cursor.as_ref().map(|c| c.as_str()),
                limit + 1,
            )
            .await
            .map_err(api_error)?;
        let more = sessions.len() > limit as usize;
        sessions.truncate(limit as usize);
        let next_cursor = more
            .then(|| sessions.last().map(|s| s.id.clone().into()))
            .flatten();
        Ok(SessionsListResult {
            sessions,
            next_cursor,
        })
    }

    async fn sessions_create(
        &self,
        caller: &Caller,
        p: SessionsCreateParams,
    ) -> Result<Session, ApiError> {
        if self.agent_for(caller, p.agent_id.as_str()).await?.is_none() {
            return Err(not_found("agent", p.agent_id.as_str()));
        }
        let now = self.store.now_ms();
        let id = new_id("sess")?;
        let session = Session {
            key: p
                .key
                .unwrap_or_else(|| SessionKey::new(format!("{}:{id}", p.agent_id))),
            id: SessionId::new(id),
            agent_id: p.agent_id,
            subject: caller.subject().map(Subject::new),
            parent_id: None,
            forked_at_message_id: None,
            metadata: check_metadata(p.metadata.unwrap_or_default())?,
            created_at: now,
            updated_at: now,
        };
        self.store
            .create_session_by(&session, Some(&caller.token_id))
            .await
            .map_err(api_error)?;
        self.announce_created(&session).await?;
        Ok(session)
    }

    async fn sessions_resolve(
        &self,
        caller: &Caller,
        p: SessionsResolveParams,
    ) -> Result<Session, ApiError> {
        self.sessions_resolve_inner(caller, p.key.as_str(), p.agent_id.map(AgentId::into_string))
            .await
    }

    async fn sessions_send(
        &self,
        caller: &Caller,
        p: SessionsSendParams,
    ) -> Result<RunAccepted, ApiError> {
        self.start_run(caller, RunsCreateParams::from(p))
            .await
            .map(RunAccepted::from)
    }

    async fn sessions_messages(
        &self,
        caller: &Caller,
        p: SessionsMessagesParams,
    ) -> Result<SessionsMessagesResult, ApiError> {
        self.session_of(caller, p.session_id.as_str()).await?;
        let limit = limit(p.limit);
        let mut page = self
            .store
            .messages(
                &p.session_id,
                p.after.as_ref().map(|c| c.as_str()),
                limit + 1,
            )
            .await
            .map_err(api_error)?;
        let has_more = page.len() > limit as usize;
        page.truncate(limit as usize);
        Ok(SessionsMessagesResult {
            messages: page.into_iter().map(|m| m.message).collect(),
            has_more,
        })
    }

    async fn sessions_fork(
        &self,
        caller: &Caller,
        p: SessionsForkParams,
    ) -> Result<Session, ApiError> {
        let parent = self.session_of(caller, p.session_id.as_str()).await?;
        let now = self.store.now_ms();
        let id = new_id("sess")?;
        let session = Session {
            key: p
                .key
                .unwrap_or_else(|| SessionKey::new(format!("{}:{id}", parent.agent_id))),
            id: SessionId::new(id),
            agent_id: parent.agent_id.clone(),
            // The fork is the caller's (its key is in the caller's
            // namespace), as any session it makes.
            subject: caller.subject().map(Subject::new),
            parent_id: Some(parent.id.clone()),
            forked_at_message_id: p.at_message_id,
            metadata: parent.metadata.clone(),
            created_at: now,
            updated_at: now,
        };
        self.store
            .fork_session_by(&session, Some(&caller.token_id))
            .await
            .map_err(api_error)?;
        self.announce_created(&session).await?;
        Ok(session)
    }

    async fn sessions_update(
        &self,
        caller: &Caller,
        p: SessionsUpdateParams,
    ) -> Result<Session, ApiError> {
        self.update_metadata(caller, p).await
    }

    async fn sessions_compact(
        &self,
        caller: &Caller,
        p: SessionActionParams,
    ) -> Result<Session, ApiError> {
        self.compact(caller, p.session_id.as_str()).await
    }

    async fn sessions_abort(
        &self,
        caller: &Caller,
        p: SessionActionParams,
    ) -> Result<SessionsAbortResult, ApiError> {
        self.session_of(caller, p.session_id.as_str()).await?;
        self.abort(p.session_id.as_str()).await
    }

    async fn sessions_delete(
        &self,
        caller: &Caller,
        p: SessionActionParams,
    ) -> Result<SessionsDeleteResult, ApiError> {
        self.delete_session(caller, p).await
    }

    async fn runs_create(
        &self,
        caller: &Caller,
        p: RunsCreateParams,
    ) -> Result<RunAccepted, ApiError> {
        self.start_run(caller, p).await.map(RunAccepted::from)
    }

    async fn runs_list(
        &self,
        caller: &Caller,
        p: RunsListParams,
    ) -> Result<RunsListResult, ApiError> {
        self.list(caller, p).await
    }

    async fn usage_summary(
        &self,
        caller: &Caller,
        p: UsageSummaryParams,
    ) -> Result<UsageSummary, ApiError> {
        self.usage(caller, p).await
    }

    async fn runs_get(&self, caller: &Caller, p: RunRef) -> Result<Run, ApiError> {
        crate::auth::owned::run_for(&self.store, caller, p.run_id.as_str()).await
    }

    async fn runs_events(
        &self,
        caller: &Caller,
        p: RunsEventsParams,
    ) -> Result<RunsEventsResult, ApiError> {
        let run = self
            .runs_get(
                caller,
                RunRef {
                    run_id: p.run_id.clone(),
                },
            )
            .await?;
        let window = p.window()?;
        // The runtime's native payloads, for admin callers only.
        let filter = talon_store::EventFilter {
            run_id: Some(run.id.clone().into_string()),
            raw: caller.is_admin(),
            before: window.before,
            ..Default::default()
        };
        let events = match window.count {
            EventCount::First(count) => self
                .store
                .after(window.after, &filter, limit(count))
                .await
                .map_err(api_error)?,
            EventCount::Last(last) => self
                .store
                .last_before(window.after, &filter, limit(Some(last)))
                .await
                .map_err(api_error)?,
        };
        let done = events.last().is_some_and(|e| e.kind.is_terminal());
        Ok(RunsEventsResult { events, done })
    }

    async fn runs_wait(&self, caller: &Caller, p: RunsWaitParams) -> Result<RunResult, ApiError> {
        crate::auth::owned::run_for(&self.store, caller, p.run_id.as_str()).await?;
        self.engine
            .wait(
                &p.run_id,
                p.timeout_ms.map(std::time::Duration::from_millis),
            )
            .await
    }

    async fn runs_cancel(&self, caller: &Caller, p: RunsCancelParams) -> Result<Run, ApiError> {
        crate::auth::owned::run_for(&self.store, caller, p.run_id.as_str()).await?;
        self.engine
            .cancel(
                p.run_id.as_str(),
                talon_store::CancelMode::Cancel,
                runs::CANCEL_SETTLE,
            )
            .await
    }

    async fn runs_delete(&self, caller: &Caller, p: RunsDeleteParams) -> Result<Run, ApiError> {
        self.delete_run(caller, p).await
    }

    async fn tasks_list(
        &self,
        caller: &Caller,
        p: TasksListParams,
    ) -> Result<TasksListResult, ApiError> {
        self.list_tasks(caller, p).await
    }

    async fn tasks_get(&self, caller: &Caller, p: TaskRef) -> Result<Task, ApiError> {
        self.get_task(caller, p).await
    }

    async fn tasks_cancel(&self, caller: &Caller, p: TasksCancelParams) -> Result<Task, ApiError> {
        self.cancel_task(caller, p).await
    }

    async fn tasks_notify(&self, caller: &Caller, p: TasksNotifyParams) -> Result<Task, ApiError> {
        self.notify_task(caller, p).await
    }

    async fn tasks_events(
        &self,
        caller: &Caller,
        p: TasksEventsParams,
    ) -> Result<TasksEventsResult, ApiError> {
        self.task_events(caller, p).await
    }

    async fn schedules_list(
        &self,
        caller: &Caller,
        p: talon_protocol::gateway::schedules::SchedulesListParams,
    ) -> Result<talon_protocol::gateway::schedules::SchedulesListResult, ApiError> {
        self.list_schedules(caller, p).await
    }

    async fn schedules_get(
        &self,
        caller: &Caller,
        p: talon_protocol::gateway::schedules::ScheduleRef,
    ) -> Result<talon_protocol::gateway::schedules::Schedule, ApiError> {
        self.get_schedule(caller, p).await
    }

    async fn schedules_create(
        &self,
        caller: &Caller,
        p: talon_protocol::gateway::schedules::SchedulesCreateParams,
    ) -> Result<talon_protocol::gateway::schedules::Schedule, ApiError> {
        self.create_schedule(caller, p).await
    }

    async fn schedules_update(
        &self,
        caller: &Caller,
        p: talon_protocol::gateway::schedules::SchedulesUpdateParams,
    ) -> Result<talon_protocol::gateway::schedules::Schedule, ApiError> {
        self.update_schedule(caller, p).await
    }

    async fn schedules_run(
        &self,
        caller: &Caller,
        p: talon_protocol::gateway::schedules::ScheduleAction,
    ) -> Result<Task, ApiError> {
        self.run_schedule(caller, p).await
    }

    async fn schedules_delete(
        &self,
        caller: &Caller,
        p: talon_protocol::gateway::schedules::ScheduleAction,
    ) -> Result<talon_protocol::gateway::schedules::Schedule, ApiError> {
        self.delete_schedule(caller, p).await
    }

    async fn models_list(
        &self,
        _: &Caller,
        p: ModelsListParams,
    ) -> Result<ModelsListResult, ApiError> {
        models::list(self.engine.host(), p)
    }

    async fn models_status(&self, _: &Caller, _: Empty) -> Result<ModelsStatusResult, ApiError> {
        models::status(self.engine.host()).await
    }

    async fn tools_list(
        &self,
        caller: &Caller,
        p: ToolsListParams,
    ) -> Result<ToolsListResult, ApiError> {
        self.tool_space(caller, p).await
    }

    async fn tools_invoke(
        &self,
        caller: &Caller,
        p: ToolsInvokeParams,
    ) -> Result<ToolsInvokeResult, ApiError> {
        self.invoke(caller, p).await
    }

    async fn artifacts_list(
        &self,
        caller: &Caller,
        p: ArtifactsListParams,
    ) -> Result<ArtifactsListResult, ApiError> {
        self.list_artifacts(caller, p).await
    }

    async fn artifacts_get(
        &self,
        caller: &Caller,
        p: ArtifactRef,
    ) -> Result<ArtifactSummary, ApiError> {
        self.artifact(caller, p).await
    }

    async fn artifacts_download(
        &self,
        caller: &Caller,
        p: ArtifactRef,
    ) -> Result<ArtifactsDownloadResult, ApiError> {
        let artifact = self.artifacts_get(caller, p).await?;
        Ok(ArtifactsDownloadResult::of(artifact))
    }

    async fn approvals_list(
        &self,
        caller: &Caller,
        p: ApprovalsListParams,
    ) -> Result<ApprovalsListResult, ApiError> {
        self.list_approvals(caller, p).await
    }

    async fn approvals_get(&self, caller: &Caller, p: ApprovalRef) -> Result<Approval, ApiError> {
        self.get_approval(caller, p).await
    }

    async fn approvals_respond(
        &self,
        caller: &Caller,
        p: ApprovalsRespondParams,
    ) -> Result<Approval, ApiError> {
        self.respond_approval(caller, p).await
    }

    async fn questions_list(
        &self,
        caller: &Caller,
        p: QuestionsListParams,
    ) -> Result<QuestionsListResult, ApiError> {
        self.list_questions(caller, p).await
    }

    async fn questions_respond(
        &self,
        caller: &Caller,
        p: QuestionsRespondParams,
    ) -> Result<Question, ApiError> {
        self.answer_question(caller, p).await
    }

    async fn environments_list(
        &self,
        caller: &Caller,
        p: EnvironmentsListParams,
    ) -> Result<EnvironmentsListResult, ApiError> {
        self.list_environments(caller, p).await
    }

    async fn environments_create(
        &self,
        caller: &Caller,
        p: EnvironmentsCreateParams,
    ) -> Result<Environment, ApiError> {
        self.create_environment(caller, p).await
    }

    async fn environments_status(
        &self,
        caller: &Caller,
        p: EnvironmentRef,
    ) -> Result<Environment, ApiError> {
        crate::auth::owned::environment_for(&self.store, caller, p.environment_id.as_str()).await
    }

    async fn environments_delete(
        &self,
        caller: &Caller,
        p: EnvironmentsDeleteParams,
    ) -> Result<Environment, ApiError> {
        self.delete_environment(caller, p).await
    }

    async fn events_subscribe(
        &self,
        _: &Caller,
        _: EventsSubscribeParams,
    ) -> Result<EventsSubscribeResult, ApiError> {
        Err(talon_protocol::gateway::refuse::websocket_only(
            "events.subscribe",
        ))
    }

    async fn events_unsubscribe(
        &self,
        _: &Caller,
        _: EventsUnsubscribeParams,
    ) -> Result<Empty, ApiError> {
        Err(talon_protocol::gateway::refuse::websocket_only(
            "events.unsubscribe",
        ))
    }

    async fn tokens_create(
        &self,
        caller: &Caller,
        p: TokensCreateParams,
    ) -> Result<CreatedToken, ApiError> {
        crate::auth::tokens::create_for(&self.store, caller, p, self.store.now_ms()).await
    }

    async fn tokens_list(
        &self,
        _: &Caller,
        p: TokensListParams,
    ) -> Result<TokensListResult, ApiError> {
        self.list_tokens(p).await
    }

    async fn tokens_revoke(
        &self,
        caller: &Caller,
        p: TokensRevokeParams,
    ) -> Result<TokensRevokeResult, ApiError> {
        self.revoke_tokens(caller, p).await
    }

    async fn tokens_ticket(
        &self,
        caller: &Caller,
        p: TokensTicketParams,
    ) -> Result<StreamTicket, ApiError> {
        let now = self.store.now_ms();
        crate::auth::tokens::mint_ticket(&self.store, caller, &p, self.ticket_ttl, now).await
    }
}
