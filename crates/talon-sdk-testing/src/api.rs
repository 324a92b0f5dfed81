//! The method table, served from memory: `talon_protocol`'s [`Handler`]
//! for the fake gateway, so every method of the table is answered. Runs are
//! [`super::runs`]'; background tasks [`super::tasks`]'; fork and compaction [`super::sessions`]'; answers
//! to approvals and questions, environments and `tools.invoke` are
//! [`super::catalog`]'s; `tokens.*` are [`tokens`]'; the artifact, approval
//! and question lists are [`lists`]'.

mod lists;
mod tokens;

use std::sync::Arc;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::SessionKey;

use talon_protocol::gateway::page::page_after;
use talon_protocol::gateway::params::*;
use talon_protocol::gateway::*;

use super::state::{DEFAULT_AGENT, Shared, not_found};
use super::{runs, sessions};

/// The fake's methods (cheap to clone: the memory is shared).
#[derive(Debug, Clone)]
pub(crate) struct Api(pub Arc<Shared>);

impl std::ops::Deref for Api {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl Handler for Api {
    type Caller = ();

    async fn agents_list(&self, _: &(), p: AgentsListParams) -> Result<AgentsListResult, ApiError> {
        let (agents, next_cursor) = page_after(
            self.read(|s| s.agents.clone()),
            p.cursor.as_ref().map(|c| c.as_str()),
            p.limit,
            |a| a.id.as_str(),
        )?;
        Ok(AgentsListResult {
            agents,
            next_cursor,
        })
    }

    async fn agents_get(&self, _: &(), p: AgentRef) -> Result<Agent, ApiError> {
        self.read(|s| s.agent(p.agent_id.as_str()).cloned())
            .ok_or_else(|| not_found("agent", p.agent_id.as_str()))
    }

    async fn agents_create(&self, _: &(), p: AgentsCreateParams) -> Result<Agent, ApiError> {
        self.write(|s| {
            if let Some(found) = s.agent(p.id.as_str()) {
                return Err(if found.source == AgentSource::Config {
                    talon_protocol::gateway::refuse::agent_in_config(p.id.as_str())
                } else {
                    talon_protocol::gateway::refuse::already_exists("agent", p.id.as_str())
                });
            }
            let now = s.now_ms();
            let agent = Agent::created(&p, now);
            s.agents.push(agent.clone());
            Ok(agent)
        })
    }

    async fn agents_update(&self, _: &(), p: AgentsUpdateParams) -> Result<Agent, ApiError> {
        let now = self.now_ms();
        self.write(|s| {
            let agent = s
                .agents
                .iter_mut()
                .find(|a| a.id == p.agent_id)
                .ok_or_else(|| not_found("agent", p.agent_id.as_str()))?;
            if agent.source == AgentSource::Config {
                return Err(talon_protocol::gateway::refuse::agent_edit_in_config(
                    p.agent_id.as_str(),
                ));
            }
            agent.update(p, now);
            Ok(agent.clone())
        })
    }

    async fn sessions_list(
        &self,
        _: &(),
        p: SessionsListParams,
    ) -> Result<SessionsListResult, ApiError> {
        let mut sessions: Vec<Session> = self.read(|s| {
            s.sessions
                .iter()
                .filter(|x| p.agent_id.as_ref().is_none_or(|a| *a == x.agent_id))
                .cloned()
                .collect()
        });
        sessions.sort_by(|a, b| (b.updated_at, &b.id).cmp(&(a.updated_at, &a.id)));
        if let Some(cursor) = &p.cursor {
            let at = sessions
                .iter()
                .position(|x| x.id.as_str() == cursor.as_str());
            sessions.drain(..at.map_or(sessions.len(), |at| at + 1));
        }
        let limit = runs::limit(p.limit);
        let more = sessions.len() > limit;
        sessions.truncate(limit);
        let next_cursor = more
            .then(|| sessions.last().map(|x| x.id.clone().into()))
            .flatten();
        Ok(SessionsListResult {
            sessions,
            next_cursor,
        })
    }

    async fn sessions_create(&self, _: &(), p: SessionsCreateParams) -> Result<Session, ApiError> {
        let metadata =
            talon_protocol::gateway::resources::check_metadata(p.metadata.unwrap_or_default())?;
        self.write(|s| {
            s.create_session(
                p.agent_id.as_str(),
                p.key.map(SessionKey::into_string),
                metadata,
            )
        })
    }

    async fn sessions_resolve(
        &self,
        _: &(),
        p: SessionsResolveParams,
    ) -> Result<Session, ApiError> {
        self.write(|s| s.resolve_session(p.key.as_str(), p.agent_id.as_ref().map(AgentId::as_str)))
    }

    async fn sessions_send(&self, _: &(), p: SessionsSendParams) -> Result<RunAccepted, ApiError> {
        runs::start_run(&self.0, RunsCreateParams::from(p)).map(RunAccepted::from)
    }

    async fn sessions_messages(
        &self,
        _: &(),
        p: SessionsMessagesParams,
    ) -> Result<SessionsMessagesResult, ApiError> {
        let mut messages = self.read(|s| {
            s.session(p.session_id.as_str())?;
            Ok::<_, ApiError>(
                s.messages
                    .get(p.session_id.as_str())
                    .cloned()
                    .unwrap_or_default(),
            )
        })?;
        if let Some(after) = &p.after {
            let at = messages
                .iter()
                .position(|m| m.id.as_str() == after.as_str());
            messages.drain(..at.map_or(0, |at| at + 1));
        }
        let limit = runs::limit(p.limit);
        let has_more = messages.len() > limit;
        messages.truncate(limit);
        Ok(SessionsMessagesResult { messages, has_more })
    }

    async fn sessions_fork(&self, _: &(), p: SessionsForkParams) -> Result<Session, ApiError> {
        sessions::fork(self, p)
    }

    async fn sessions_update(&self, _: &(), p: SessionsUpdateParams) -> Result<Session, ApiError> {
        sessions::update(self, p)
    }

    async fn sessions_compact(&self, _: &(), p: SessionActionParams) -> Result<Session, ApiError> {
        sessions::compact(self, p.session_id.as_str())
    }

    async fn sessions_abort(
        &self,
        _: &(),
        p: SessionActionParams,
    ) -> Result<SessionsAbortResult, ApiError> {
        Ok(SessionsAbortResult {
            cancelled_run_ids: runs::abort(self, p.session_id.as_str()).await?,
        })
    }

    async fn sessions_delete(
        &self,
        _: &(),
        p: SessionActionParams,
    ) -> Result<SessionsDeleteResult, ApiError> {
        let deleted_run_ids = self.write(|s| crate::deletes::session(s, p.session_id.as_str()))?;
        Ok(SessionsDeleteResult {
            session_id: p.session_id,
            deleted_run_ids,
        })
    }

    async fn runs_delete(&self, _: &(), p: RunsDeleteParams) -> Result<Run, ApiError> {
        self.write(|s| crate::deletes::run(s, p.run_id.as_str()))
    }

    async fn runs_create(&self, _: &(), p: RunsCreateParams) -> Result<RunAccepted, ApiError> {
        runs::start_run(&self.0, p).map(RunAccepted::from)
    }

    async fn runs_list(&self, _: &(), p: RunsListParams) -> Result<RunsListResult, ApiError> {
        runs::list(self, &p)
    }

    async fn usage_summary(&self, _: &(), p: UsageSummaryParams) -> Result<UsageSummary, ApiError> {
        runs::usage(self, &p)
    }

    async fn runs_get(&self, _: &(), p: RunRef) -> Result<Run, ApiError> {
        self.read(|s| s.run(p.run_id.as_str()).map(|r| r.run.clone()))
    }

    async fn runs_events(&self, _: &(), p: RunsEventsParams) -> Result<RunsEventsResult, ApiError> {
        runs::events(self, &p)
    }

    async fn runs_wait(&self, _: &(), p: RunsWaitParams) -> Result<RunResult, ApiError> {
        runs::wait(
            self,
            p.run_id.as_str(),
            p.timeout_ms.map(std::time::Duration::from_millis),
        )
        .await
    }

    async fn runs_cancel(&self, _: &(), p: RunsCancelParams) -> Result<Run, ApiError> {
        runs::cancel(self, p.run_id.as_str(), false).await
    }

    async fn tasks_list(&self, _: &(), p: TasksListParams) -> Result<TasksListResult, ApiError> {
        super::tasks::list(self, p)
    }

    async fn tasks_get(&self, _: &(), p: TaskRef) -> Result<Task, ApiError> {
        super::tasks::get(self, p)
    }

    async fn tasks_cancel(&self, _: &(), p: TasksCancelParams) -> Result<Task, ApiError> {
        super::tasks::cancel(self, p)
    }

    async fn tasks_notify(&self, _: &(), p: TasksNotifyParams) -> Result<Task, ApiError> {
        super::tasks::notify(self, p)
    }

    async fn tasks_events(
        &self,
        _: &(),
        p: TasksEventsParams,
    ) -> Result<TasksEventsResult, ApiError> {
        super::tasks::events(self, p)
    }

    async fn schedules_list(
        &self,
        _: &(),
        p: schedules::SchedulesListParams,
    ) -> Result<schedules::SchedulesListResult, ApiError> {
        if let Some(cursor) = &p.cursor {
            return Err(refuse::cursor_not_a_schedule(cursor.as_str()));
        }
        Ok(schedules::SchedulesListResult {
            schedules: Vec::new(),
            next_cursor: None,
        })
    }

    async fn schedules_get(
        &self,
        _: &(),
        p: schedules::ScheduleRef,
    ) -> Result<schedules::Schedule, ApiError> {
        Err(refuse::not_found("schedule", p.schedule_id.as_str()))
    }

    async fn schedules_create(
        &self,
        _: &(),
        p: schedules::SchedulesCreateParams,
    ) -> Result<schedules::Schedule, ApiError> {
        let agent = p.agent_id.as_ref().map_or(DEFAULT_AGENT, |a| a.as_str());
        if self.read(|s| s.agent(agent).is_none()) {
            return Err(not_found("agent", agent));
        }
        // The fake has no clock that fires (see the contract's
        // `unmodelled`): it holds no schedule.
        Err(ApiError::unsupported("schedules.create"))
    }

    async fn schedules_update(
        &self,
        _: &(),
        p: schedules::SchedulesUpdateParams,
    ) -> Result<schedules::Schedule, ApiError> {
        Err(refuse::not_found("schedule", p.schedule_id.as_str()))
    }

    async fn schedules_run(&self, _: &(), p: schedules::ScheduleAction) -> Result<Task, ApiError> {
        Err(refuse::not_found("schedule", p.schedule_id.as_str()))
    }

    async fn schedules_delete(
        &self,
        _: &(),
        p: schedules::ScheduleAction,
    ) -> Result<schedules::Schedule, ApiError> {
        Err(refuse::not_found("schedule", p.schedule_id.as_str()))
    }

    async fn models_list(&self, _: &(), p: ModelsListParams) -> Result<ModelsListResult, ApiError> {
        let models = vec![Model {
            id: super::state::MODEL.into(),
            provider: "mock".into(),
            name: "mock-model".into(),
            context_window: None,
        }];
        let (models, next_cursor) = page_after(
            models,
            p.cursor.as_ref().map(|c| c.as_str()),
            p.limit,
            |m| m.id.as_str(),
        )?;
        Ok(ModelsListResult {
            models,
            next_cursor,
        })
    }

    async fn models_status(&self, _: &(), _: Empty) -> Result<ModelsStatusResult, ApiError> {
        Ok(ModelsStatusResult {
            providers: vec![ProviderStatus {
                provider: "mock".into(),
                authenticated: true,
                detail: None,
            }],
        })
    }

    async fn tools_list(&self, _: &(), p: ToolsListParams) -> Result<ToolsListResult, ApiError> {
        let agent = p
            .agent_id
            .as_ref()
            .map(AgentId::as_str)
            .unwrap_or(DEFAULT_AGENT);
        self.read(|s| {
            if s.agent(agent).is_none() {
                return Err(not_found("agent", agent));
            }
            let (tools, next_cursor) = page_after(
                s.tools.clone(),
                p.cursor.as_ref().map(|c| c.as_str()),
                p.limit,
                |t| t.id.as_str(),
            )?;
            Ok(ToolsListResult { tools, next_cursor })
        })
    }

    async fn tools_invoke(
        &self,
        _: &(),
        p: ToolsInvokeParams,
    ) -> Result<ToolsInvokeResult, ApiError> {
        super::catalog::invoke(self, p)
    }

    async fn artifacts_list(
        &self,
        _: &(),
        p: ArtifactsListParams,
    ) -> Result<ArtifactsListResult, ApiError> {
        lists::artifacts(self, p)
    }

    async fn artifacts_get(&self, _: &(), p: ArtifactRef) -> Result<ArtifactSummary, ApiError> {
        self.read(|s| {
            s.artifacts
                .iter()
                .find(|a| {
                    a.summary.id == p.artifact_id
                        && (p.run_id.is_none() || a.summary.run_id == p.run_id)
                })
                .map(|a| a.summary.clone())
        })
        .ok_or_else(|| not_found("artifact", p.artifact_id.as_str()))
    }

    async fn artifacts_download(
        &self,
        caller: &(),
        p: ArtifactRef,
    ) -> Result<ArtifactsDownloadResult, ApiError> {
        let artifact = self.artifacts_get(caller, p).await?;
        Ok(ArtifactsDownloadResult::of(artifact))
    }

    async fn approvals_list(
        &self,
        _: &(),
        p: ApprovalsListParams,
    ) -> Result<ApprovalsListResult, ApiError> {
        lists::approvals(self, p)
    }

    async fn approvals_get(&self, _: &(), p: ApprovalRef) -> Result<Approval, ApiError> {
        self.read(|s| s.approvals.iter().find(|a| a.id == p.approval_id).cloned())
            .ok_or_else(|| refuse::not_found("approval", p.approval_id.as_str()))
    }

    async fn approvals_respond(
        &self,
        _: &(),
        p: ApprovalsRespondParams,
    ) -> Result<Approval, ApiError> {
        super::catalog::respond_approval(self, p)
    }

    async fn questions_list(
        &self,
        _: &(),
        p: QuestionsListParams,
    ) -> Result<QuestionsListResult, ApiError> {
        lists::questions(self, p)
    }

    async fn questions_respond(
        &self,
        _: &(),
        p: QuestionsRespondParams,
    ) -> Result<Question, ApiError> {
        super::catalog::answer_question(self, p)
    }

    async fn environments_list(
        &self,
        _: &(),
        p: EnvironmentsListParams,
    ) -> Result<EnvironmentsListResult, ApiError> {
        let (environments, next_cursor) = page_after(
            self.read(|s| s.environments.clone()),
            p.cursor.as_ref().map(|c| c.as_str()),
            p.limit,
            |e| e.id.as_str(),
        )?;
        Ok(EnvironmentsListResult {
            environments,
            next_cursor,
        })
    }

    async fn environments_create(
        &self,
        _: &(),
        p: EnvironmentsCreateParams,
    ) -> Result<Environment, ApiError> {
        super::catalog::create_environment(self, p)
    }

    async fn environments_status(
        &self,
        _: &(),
        p: EnvironmentRef,
    ) -> Result<Environment, ApiError> {
        self.read(|s| {
            s.environments
                .iter()
                .find(|e| e.id == p.environment_id)
                .cloned()
        })
        .ok_or_else(|| not_found("environment", p.environment_id.as_str()))
    }

    async fn environments_delete(
        &self,
        _: &(),
        p: EnvironmentsDeleteParams,
    ) -> Result<Environment, ApiError> {
        super::catalog::delete_environment(self, p)
    }

    async fn events_subscribe(
        &self,
        _: &(),
        _: EventsSubscribeParams,
    ) -> Result<EventsSubscribeResult, ApiError> {
        Err(talon_protocol::gateway::refuse::websocket_only(
            "events.subscribe",
        ))
    }

    async fn tokens_create(&self, _: &(), p: TokensCreateParams) -> Result<CreatedToken, ApiError> {
        tokens::create(self, p)
    }

    async fn tokens_list(&self, _: &(), p: TokensListParams) -> Result<TokensListResult, ApiError> {
        tokens::list(self, p)
    }

    async fn tokens_revoke(
        &self,
        _: &(),
        p: TokensRevokeParams,
    ) -> Result<TokensRevokeResult, ApiError> {
        tokens::revoke(self, p)
    }

    async fn tokens_ticket(&self, _: &(), p: TokensTicketParams) -> Result<StreamTicket, ApiError> {
        tokens::ticket(self, p)
    }

    async fn events_unsubscribe(
        &self,
        _: &(),
        _: EventsUnsubscribeParams,
    ) -> Result<Empty, ApiError> {
        Err(talon_protocol::gateway::refuse::websocket_only(
            "events.unsubscribe",
        ))
    }
}
