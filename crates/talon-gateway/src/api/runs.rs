//! `runs.create` and `sessions.send` (one path: resolve the agent and the
//! session, honour the idempotency key, hand the run to the engine),
//! `sessions.abort`, and `sessions.compact` (the model summarises the
//! session; a compaction record then stands for what it replaced).

use crate::auth::identity::Caller;
use std::time::Duration;
use talon_protocol::gateway::bounded::{AgentId, MessageId, SessionId, SessionKey, Subject};

use sha2::{Digest, Sha256};
use talon_protocol::EventData;
use talon_protocol::event_data::SessionCompactedData;
use talon_protocol::gateway::params::*;
use talon_protocol::gateway::*;
use talon_runtime::SummaryError;

use super::{Api, DEFAULT_AGENT, new_id, not_found};
use crate::error::api_error;
use crate::runs::{RunRequest, Submit};

/// How long `runs.cancel` waits for a running run to end before it
/// answers with the run as it then is.
pub(crate) const CANCEL_SETTLE: Duration = Duration::from_secs(5);

/// What a compaction asks of the model.
const COMPACTION_PROMPT: &str = "Summarise the conversation so far for your own later use: the user's goals, facts established, decisions taken, and open tasks. Be concise; keep names, numbers and identifiers exact.";

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message)
}

/// The hash that tells a retried `runs.create` from another call with the
/// same key: its params (key aside) as canonical JSON.
fn request_hash(p: &RunsCreateParams) -> Result<String, ApiError> {
    let mut params = p.clone();
    params.idempotency_key = None;
    let canonical =
        serde_json::to_vec(&serde_json::to_value(&params).map_err(|e| invalid(e.to_string()))?)
            .map_err(|e| invalid(e.to_string()))?;
    Ok(hex::encode(Sha256::digest(&canonical)))
}

impl Api {
    /// Accepts a run: `runs.create` and `sessions.send`.
    pub(super) async fn start_run(
        &self,
        caller: &Caller,
        p: RunsCreateParams,
    ) -> Result<Run, ApiError> {
        p.check()?;
        let idempotency = match &p.idempotency_key {
            Some(key) => {
                let hash = request_hash(&p)?;
                let scoped = caller.scoped_key("run", key.as_str());
                if let Some((run, first)) = self
                    .store
                    .run_by_idempotency_key(&scoped)
                    .await
                    .map_err(api_error)?
                {
                    return if first == hash {
                        Ok(run)
                    } else {
                        Err(talon_protocol::gateway::refuse::idempotency_reused(
                            key.as_str(),
                        ))
                    };
                }
                Some((scoped, hash))
            }
            None => None,
        };
        let environment_id = match &p.environment_id {
            Some(id) => Some(self.ready_environment(caller, id.as_str()).await?.id),
            None => None,
        };
        let session = self.session_for(caller, &p).await?;
        let request = RunRequest {
            input: p.input,
            timeout_ms: p.timeout_ms,
            tools: p.tools,
            invoke: None,
            environment_id,
            // The engine sets it as it accepts the run.
            traceparent: None,
            request_id: None,
            task_id: None,
        };
        self.engine
            .submit(Submit {
                agent_id: session.agent_id.clone(),
                session,
                request,
                strategy: p.multitask_strategy.unwrap_or_default(),
                idempotency,
            })
            .await
    }

    /// The run's session: by id, by key (created if absent), or new.
    async fn session_for(
        &self,
        caller: &Caller,
        p: &RunsCreateParams,
    ) -> Result<Session, ApiError> {
        let agent: Option<String> = p.agent_id.clone().map(AgentId::into_string);
        if let Some(agent) = &agent
            && self.agent_for(caller, agent).await?.is_none()
        {
            return Err(not_found("agent", agent));
        }
        let session = if let Some(id) = &p.session_id {
            let session = self.session_of(caller, id.as_str()).await?;
            if p.session_key.as_ref().is_some_and(|k| *k != session.key) {
                return Err(talon_protocol::gateway::refuse::session_id_and_key_differ());
            }
            session
        } else if let Some(key) = &p.session_key {
            self.sessions_resolve_inner(caller, key.as_str(), agent.clone())
                .await?
        } else {
            let agent_id = agent.clone().unwrap_or_else(|| DEFAULT_AGENT.into());
            if self.agent_for(caller, &agent_id).await?.is_none() {
                return Err(not_found("agent", &agent_id));
            }
            let now = self.store.now_ms();
            let id = new_id("sess")?;
            let session = Session {
                subject: caller.subject().map(Subject::new),
                key: SessionKey::new(format!("{agent_id}:{id}")),
                id: SessionId::new(id),
                agent_id: AgentId::new(agent_id),
                parent_id: None,
                forked_at_message_id: None,
                metadata: Default::default(),
                created_at: now,
                updated_at: now,
            };
            self.store
                .create_session_by(&session, Some(&caller.token_id))
                .await
                .map_err(api_error)?;
            self.announce_created(&session).await?;
            session
        };
        if let Some(agent) = &agent
            && *agent != *session.agent_id.as_str()
        {
            return Err(talon_protocol::gateway::refuse::session_of_other_agent(
                session.key.as_str(),
                session.agent_id.as_str(),
                agent,
            ));
        }
        Ok(session)
    }

    /// `runs.list`: a page of runs, newest first, from the store. The
    /// cursor is the last run of the previous page.
    pub(super) async fn list(
        &self,
        caller: &Caller,
        p: RunsListParams,
    ) -> Result<RunsListResult, ApiError> {
        p.check()?;
        let cursor = match p.cursor.as_ref().map(|c| c.as_str()) {
            None => None,
            Some(id) => {
                let run = crate::auth::owned::run_for(&self.store, caller, id)
                    .await
                    .ok();
                let run = run.ok_or_else(|| RunsListParams::unknown_cursor(id))?;
                Some((run.id, run.created_at))
            }
        };
        let filter = talon_store::RunFilter {
            statuses: p.status.unwrap_or_default(),
            agent_id: p.agent_id.map(AgentId::into_string),
            session_id: p.session_id.map(SessionId::into_string),
            created_after: p.created_after,
            created_before: p.created_before,
            text: p.text.map(String::from),
            owner: caller.owner(),
        };
        let limit = super::limit(p.limit);
        let after = cursor
            .as_ref()
            .map(|(id, created_at)| talon_store::RunCursor {
                id: id.as_str(),
                created_at: *created_at,
            });
        let runs = self
            .store
            .list_runs(&filter, after, limit + 1)
            .await
            .map_err(api_error)?;
        let (runs, next_cursor) = page_of(runs, limit, |r| r.id.clone().into());
        Ok(RunsListResult { runs, next_cursor })
    }

    /// `usage.summary`: the caller's runs of the window, streamed from
    /// the store through the protocol's tally.
    pub(super) async fn usage(
        &self,
        caller: &Caller,
        p: UsageSummaryParams,
    ) -> Result<UsageSummary, ApiError> {
        let window = p.window(self.store.now_ms())?;
        let filter = talon_store::UsageFilter {
            created_after: window.0,
            created_before: window.1,
            agent_id: p.agent_id.map(AgentId::into_string),
            owner: caller.owner(),
        };
        let mut tally = UsageTally::default();
        self.store
            .tally_usage(&filter, &mut tally)
            .await
            .map_err(api_error)?;
        Ok(tally.finish(window))
    }

    /// Cancels every run of a session that has not ended.
    /// The caller may see the session (the method checked).
    pub(super) async fn abort(&self, session_id: &str) -> Result<SessionsAbortResult, ApiError> {
        let mut live: Vec<Run> = self
            .store
            .session_runs(&SessionId::new(session_id))
            .await
            .map_err(api_error)?
            .into_iter()
            .filter(|r| !r.status.is_terminal())
            .collect();
        // Queued runs first: cancelling the running one frees the session's
        // lane, and a queued run still waiting then would be claimed and
        // started in the gap before its own cancel.
        live.sort_by_key(|r| r.status != RunStatus::Queued);
        let mut cancelled_run_ids = Vec::new();
        for run in live {
            let run = self
                .engine
                .cancel(
                    run.id.as_str(),
                    talon_store::CancelMode::Cancel,
                    CANCEL_SETTLE,
                )
                .await?;
            cancelled_run_ids.push(run.id);
        }
        Ok(SessionsAbortResult { cancelled_run_ids })
    }

    /// Summarises a session with its agent's model and stores the summary
    /// as a compaction record (`session.compacted`). A session with a run
    /// in progress is `conflict`.
    pub(super) async fn compact(
        &self,
        caller: &Caller,
        session_id: &str,
    ) -> Result<Session, ApiError> {
        let mut session = self.session_of(caller, session_id).await?;
        let busy = self
            .store
            .session_runs(&SessionId::new(session_id))
            .await
            .map_err(api_error)?
            .iter()
            .any(|r| !r.status.is_terminal());
        if busy {
            return Err(talon_protocol::gateway::refuse::compact_busy());
        }
        let history = self.engine.session_history(session_id).await?;
        let replaced = history.said();
        if replaced == 0 {
            return Ok(session);
        }
        let summary = self
            .engine
            .host()
            .summarize(
                session.agent_id.as_str(),
                &history,
                COMPACTION_PROMPT,
                "Summarise the conversation above.",
            )
            .await
            .map_err(|error| match error {
                SummaryError::Model(error) => {
                    ApiError::new(ErrorCode::Unavailable, error.to_string())
                }
                SummaryError::Provider(_) => {
                    ApiError::new(ErrorCode::Unavailable, error.to_string())
                        .with_retry_after_ms(1_000)
                }
            })?;
        let now = self.store.now_ms();
        let record = Message {
            id: MessageId::new(new_id("msg")?),
            session_id: session.id.clone(),
            run_id: None,
            role: MessageRole::Compaction,
            text: Some(summary),
            tool_calls: Vec::new(),
            tool_call_id: None,
            created_at: now,
        };
        self.store
            .append_messages(&session.id, std::slice::from_ref(&record))
            .await
            .map_err(api_error)?;
        session.updated_at = now;
        self.store
            .update_session(&session)
            .await
            .map_err(api_error)?;
        let mut event = talon_protocol::Event::of_session(
            &session,
            now,
            EventData::SessionCompacted(SessionCompactedData {
                session_id: session.id.clone(),
                replaced_messages: replaced as u32,
                summary_message_id: record.id.clone(),
            }),
        );
        event.request_id = crate::observe::request_id();
        self.store.append(vec![event]).await.map_err(api_error)?;
        Ok(session)
    }
}

/// A page of `limit` from `items`, read `limit + 1` at a time so that a
/// next page is known to exist: the items and the next page's cursor (the
/// last item's id).
pub(super) fn page_of<T>(
    mut items: Vec<T>,
    limit: u32,
    id: impl Fn(&T) -> talon_protocol::gateway::bounded::Cursor,
) -> (Vec<T>, Option<talon_protocol::gateway::bounded::Cursor>) {
    let more = items.len() > limit as usize;
    items.truncate(limit as usize);
    let next = more.then(|| items.last().map(id)).flatten();
    (items, next)
}
