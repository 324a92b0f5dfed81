//! Agents and sessions as the methods find and make them: an agent by id
//! (the config's, then the store's), a session by key (made on first
//! use), and the caps on a session's metadata.

use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::{SessionId, SessionKey, Subject};
use talon_protocol::gateway::params::SessionsUpdateParams;
use talon_protocol::gateway::*;

use super::{Api, DEFAULT_AGENT, new_id, not_found};
use crate::auth::identity::Caller;
use crate::error::api_error;
use talon_protocol::gateway::resources::check_metadata;

impl Api {
    /// Announces a session just made (by `sessions.create`, `resolve`,
    /// `fork`, or a run that needed one): `session.created` on the log,
    /// the session its data.
    pub(super) async fn announce_created(&self, session: &Session) -> Result<(), ApiError> {
        let created = talon_protocol::EventData::SessionCreated(session.clone());
        self.announce(session, session.created_at, created).await
    }

    /// Appends `data` to the log as an event of `session` at `at`, with
    /// the calling request's id.
    async fn announce(
        &self,
        session: &Session,
        at: u64,
        data: talon_protocol::EventData,
    ) -> Result<(), ApiError> {
        let mut event = talon_protocol::Event::of_session(session, at, data);
        event.request_id = crate::observe::request_id();
        self.store.append(vec![event]).await.map_err(api_error)?;
        Ok(())
    }

    /// `sessions.update`: the caller's session with `metadata` merged in
    /// (`null` removes a key), stored and announced as `session.updated`.
    pub(super) async fn update_metadata(
        &self,
        caller: &Caller,
        p: SessionsUpdateParams,
    ) -> Result<Session, ApiError> {
        let mut session = self.session_of(caller, p.session_id.as_str()).await?;
        let mut metadata = session.metadata.clone();
        for (key, value) in p.metadata {
            if value.is_null() {
                metadata.remove(&key);
            } else {
                metadata.insert(key, value);
            }
        }
        session.metadata = check_metadata(metadata)?;
        session.updated_at = self.store.now_ms().max(session.updated_at);
        if !self
            .store
            .update_session(&session)
            .await
            .map_err(api_error)?
        {
            return Err(not_found("session", p.session_id.as_str()));
        }
        let updated = talon_protocol::EventData::SessionUpdated(session.clone());
        self.announce(&session, session.updated_at, updated).await?;
        Ok(session)
    }

    pub(super) async fn find_agent(&self, id: &str) -> Result<Option<Agent>, ApiError> {
        if let Some(agent) = self.config_agents.iter().find(|a| a.id == AgentId::new(id)) {
            return Ok(Some(agent.clone()));
        }
        self.store.agent(&AgentId::new(id)).await.map_err(api_error)
    }

    /// The agent `id`, if the caller may use it (`None` also when it may
    /// not: no existence oracle).
    pub(super) async fn agent_for(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Option<Agent>, ApiError> {
        if !caller.may_use_agent(id) {
            return Ok(None);
        }
        self.find_agent(id).await
    }

    /// The session with `key` among the caller's subject's, created for
    /// `agent` (`main` when absent) if there is none; a new session's
    /// agent must exist and be one the caller may use, and an existing
    /// one's too.
    pub(super) async fn sessions_resolve_inner(
        &self,
        caller: &Caller,
        key: &str,
        agent: Option<String>,
    ) -> Result<Session, ApiError> {
        let subject = caller.subject();
        let visible = |s: Session| {
            if caller.may_use_agent(s.agent_id.as_str()) {
                Ok(s)
            } else {
                Err(not_found("session", key))
            }
        };
        if let Some(session) = self
            .store
            .session_by_key(subject, key)
            .await
            .map_err(api_error)?
        {
            return visible(session);
        }
        let agent_id = agent.unwrap_or_else(|| DEFAULT_AGENT.into());
        if self.agent_for(caller, &agent_id).await?.is_none() {
            return Err(not_found("agent", &agent_id));
        }
        let now = self.store.now_ms();
        let session = Session {
            id: SessionId::new(new_id("sess")?),
            key: SessionKey::new(key.to_owned()),
            agent_id: AgentId::new(agent_id),
            subject: subject.map(Subject::new),
            parent_id: None,
            forked_at_message_id: None,
            metadata: Default::default(),
            created_at: now,
            updated_at: now,
        };
        match self
            .store
            .create_session_by(&session, Some(&caller.token_id))
            .await
        {
            Ok(()) => {
                self.announce_created(&session).await?;
                Ok(session)
            }
            // Another caller created it first: theirs is the session.
            Err(talon_store::StoreError::Exists { .. }) => self
                .store
                .session_by_key(subject, key)
                .await
                .map_err(api_error)?
                .ok_or_else(|| not_found("session", key))
                .and_then(visible),
            Err(error) => Err(api_error(error)),
        }
    }

    /// The session `id`, if the caller may see it.
    pub(super) async fn session_of(&self, caller: &Caller, id: &str) -> Result<Session, ApiError> {
        crate::auth::owned::session_for(&self.store, caller, id).await
    }
}
