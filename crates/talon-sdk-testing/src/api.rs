//! The method table, served from memory: `talon_protocol`'s [`Handler`]
//! for the fake gateway, so every method of the table is answered. Runs are
//! [`super::runs`]'; background tasks [`super::tasks`]'; fork and compaction [`super::sessions`]'; answers
//! to approvals and questions, environments and `tools.invoke` are
//! [`super::catalog`]'s.

use std::sync::Arc;
use talon_protocol::gateway::bounded::SessionKey;
use talon_protocol::gateway::bounded::{AgentId, Cursor, RunId, SessionId, TokenId};

use talon_protocol::gateway::page::page_after;
use talon_protocol::gateway::params::*;
use talon_protocol::gateway::*;

use super::state::{DEFAULT_AGENT, KeyedToken, Shared, not_found};
use super::{runs, sessions};

use talon_protocol::gateway::caps::TICKET_TTL_MS;

/// The fake's methods (cheap to clone: the memory is shared).
#[derive(Debug, Clone)]
pub(crate) struct Api(pub Arc<Shared>);

impl std::ops::Deref for Api {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// A unit enum's wire spelling.
fn wire<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_default()
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

    async fn runs_get(&self, _: &(), p: RunRef) -> Result<Run, ApiError> {
        self.read(|s| s.run(p.run_id.as_str()).map(|r| r.run.clone()))
    }

    async fn runs_events(&self, _: &(), p: RunsEventsParams) -> Result<RunsEventsResult, ApiError> {
        runs::events(
            self,
            p.run_id.as_str(),
            p.after.as_ref().map(|c| c.as_str()),
            p.limit,
        )
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
        let mut artifacts: Vec<ArtifactSummary> = self.read(|s| {
            s.artifacts
                .iter()
                .rev()
                .map(|a| &a.summary)
                .filter(|a| {
                    p.run_id.is_none()
                        || a.run_id.as_ref().map(RunId::as_str)
                            == p.run_id.as_ref().map(RunId::as_str)
                })
                .filter(|a| {
                    p.session_id.is_none()
                        || a.session_id.as_ref().map(SessionId::as_str)
                            == p.session_id.as_ref().map(SessionId::as_str)
                })
                .cloned()
                .collect()
        });
        if let Some(cursor) = &p.cursor {
            let at = artifacts
                .iter()
                .position(|a| a.id.as_str() == cursor.as_str());
            artifacts.drain(..at.map_or(artifacts.len(), |at| at + 1));
        }
        let limit = runs::limit(p.limit);
        let more = artifacts.len() > limit;
        artifacts.truncate(limit);
        let next_cursor = more
            .then(|| artifacts.last().map(|a| a.id.clone().into()))
            .flatten();
        Ok(ArtifactsListResult {
            artifacts,
            next_cursor,
        })
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
        let status = p.status.as_ref().map(wire);
        let approvals: Vec<Approval> = self.read(|s| {
            s.approvals
                .iter()
                .filter(|a| status.is_none() || status == Some(wire(&a.status)))
                .filter(|a| p.run_id.as_ref().is_none_or(|r| *r == a.run_id))
                .filter(|a| {
                    p.session_id.is_none()
                        || a.session_id.as_ref().map(SessionId::as_str)
                            == p.session_id.as_ref().map(SessionId::as_str)
                })
                .cloned()
                .collect()
        });
        let (approvals, next_cursor) = page(
            approvals,
            p.cursor.as_ref().map(|c| c.as_str()),
            p.limit,
            |a| a.id.as_str(),
        );
        Ok(ApprovalsListResult {
            approvals,
            next_cursor,
        })
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
        let status = p.status.as_ref().map(wire);
        let questions: Vec<Question> = self.read(|s| {
            s.questions
                .iter()
                .filter(|q| status.is_none() || status == Some(wire(&q.status)))
                .filter(|q| p.run_id.as_ref().is_none_or(|r| *r == q.run_id))
                .cloned()
                .collect()
        });
        let (questions, next_cursor) = page(
            questions,
            p.cursor.as_ref().map(|c| c.as_str()),
            p.limit,
            |q| q.id.as_str(),
        );
        Ok(QuestionsListResult {
            questions,
            next_cursor,
        })
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
        let now = self.now_ms();
        let (scopes, expires_at) = p.grant(now)?;
        // Bound tokens are checked and echoed; what they see is not
        // modelled (see "Deliberately absent").
        let binding = p.bind_under(&scopes, &talon_protocol::gateway::Binding::default())?;
        let name = p.name.to_string();
        let key = p.idempotency_key.as_ref().map(|k| k.to_string());
        let (id, token) = self.write(|s| {
            let token = format!("talon_{}", s.new_id("fake"));
            s.tokens.retain(|_, (expires, _)| *expires > now);
            let id = match key.as_ref().and_then(|k| s.keyed_tokens.get(k)) {
                // A retry: the same id, a new secret; the old one stops.
                Some(earlier)
                    if earlier.name == name
                        && earlier.scopes == scopes
                        && earlier.binding == binding =>
                {
                    s.tokens.remove(&earlier.token);
                    earlier.id.clone()
                }
                Some(earlier) => {
                    return Err(talon_protocol::gateway::refuse::token_key_reused(
                        key.as_deref().unwrap_or_default(),
                        earlier.id.as_str(),
                        "has another name, scopes or binding",
                    )
                    .with_details(talon_protocol::gateway::ErrorDetails {
                        token_id: Some(earlier.id.to_string()),
                        ..Default::default()
                    }));
                }
                None => s.new_id("tok"),
            };
            if let Some(key) = &key {
                let minted = KeyedToken {
                    id: id.clone(),
                    token: token.clone(),
                    name: name.clone(),
                    scopes: scopes.clone(),
                    binding: binding.clone(),
                };
                s.keyed_tokens.insert(key.clone(), minted);
            }
            s.tokens.insert(token.clone(), (expires_at, scopes.clone()));
            let info = talon_protocol::gateway::TokenInfo {
                subject: binding.subject.clone(),
                agents: binding.agents.clone(),
                id: TokenId::new(id.as_str()),
                name: Some(name.clone()),
                scopes: scopes.clone(),
                created_at: now,
                expires_at: Some(expires_at),
                revoked_at: None,
                parent_id: Some(TokenId::new(super::state::FAKE_TOKEN_ID)),
            };
            s.minted.insert(id.clone(), (info, token.clone()));
            Ok((id, token))
        })?;
        Ok(CreatedToken {
            subject: binding.subject,
            agents: binding.agents,
            token,
            id: TokenId::new(id),
            name,
            scopes,
            expires_at,
        })
    }

    async fn tokens_list(&self, _: &(), p: TokensListParams) -> Result<TokensListResult, ApiError> {
        let limit = p.limit.unwrap_or(100).clamp(1, 500) as usize;
        let include_revoked = p.include_revoked.unwrap_or(false);
        Ok(self.read(|s| {
            let mut tokens: Vec<TokenInfo> = s
                .minted
                .values()
                .map(|(info, _)| info)
                .filter(|info| {
                    p.cursor
                        .as_ref()
                        .is_none_or(|c| info.id.as_str() > c.as_str())
                })
                .filter(|info| include_revoked || info.revoked_at.is_none())
                .take(limit + 1)
                .cloned()
                .collect();
            let more = tokens.len() > limit;
            tokens.truncate(limit);
            let next_cursor = more.then(|| tokens.last().map(|t| t.id.clone())).flatten();
            TokensListResult {
                tokens,
                next_cursor,
            }
        }))
    }

    async fn tokens_revoke(
        &self,
        _: &(),
        p: TokensRevokeParams,
    ) -> Result<TokensRevokeResult, ApiError> {
        let now = self.now_ms();
        self.write(|s| {
            let Some((info, secret)) = s.minted.get_mut(p.token_id.as_str()) else {
                return Err(talon_protocol::gateway::refuse::not_found(
                    "token",
                    p.token_id.as_str(),
                ));
            };
            // Every token here is minted by the fake's own: none has
            // descendants.
            let revoked = if info.revoked_at.is_none() {
                info.revoked_at = Some(now);
                let secret = secret.clone();
                s.tokens.remove(&secret);
                vec![p.token_id.clone()]
            } else {
                Vec::new()
            };
            Ok(TokensRevokeResult {
                token_id: p.token_id.clone(),
                revoked,
            })
        })
    }

    async fn tokens_ticket(&self, _: &(), p: TokensTicketParams) -> Result<StreamTicket, ApiError> {
        let (scopes, stream) = p.grant()?;
        if let talon_protocol::gateway::TicketStream::Run(run) = &stream {
            self.read(|s| s.run(run.run_id.as_str()).map(|_| ()))?;
        }
        let now = self.now_ms();
        let expires_at = now + TICKET_TTL_MS;
        let ticket = self.write(|s| {
            let ticket: String = s.new_id("tkt");
            s.tickets.retain(|_, (expires, _)| *expires > now);
            s.tickets
                .insert(ticket.clone(), (expires_at, stream.clone()));
            ticket
        });
        Ok(StreamTicket {
            ticket,
            expires_at,
            scopes,
            stream,
        })
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

/// One page of `items` (in their order) after the item whose id is
/// `cursor` (none when it is unknown), as the gateway pages in creation
/// order: the page and the next page's cursor.
fn page<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    limit: Option<u32>,
    id: impl Fn(&T) -> &str,
) -> (Vec<T>, Option<talon_protocol::gateway::bounded::Cursor>) {
    let mut items = items;
    if let Some(cursor) = cursor {
        let at = items.iter().position(|x| id(x) == cursor);
        items.drain(..at.map_or(items.len(), |at| at + 1));
    }
    let limit = runs::limit(limit);
    let more = items.len() > limit;
    items.truncate(limit);
    let next = more
        .then(|| items.last().map(|x| Cursor::new(id(x).to_owned())))
        .flatten();
    (items, next)
}
