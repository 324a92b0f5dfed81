//! `agents.*`: the agents the config file declares (and `main`, always),
//! then those stored, as the caller may use them; the config's agents are
//! edited in the config file, never through the methods.

use talon_protocol::gateway::page::page_after;
use talon_protocol::gateway::params::*;
use talon_protocol::gateway::*;

use super::{Api, not_found};
use crate::auth::identity::Caller;
use crate::error::api_error;

impl Api {
    /// `agents.list`: the config's agents, then the stored ones, as the
    /// caller may use them.
    pub(super) async fn list_agents(
        &self,
        caller: &Caller,
        p: AgentsListParams,
    ) -> Result<AgentsListResult, ApiError> {
        let mut agents = self.config_agents.clone();
        agents.extend(self.store.agents().await.map_err(api_error)?);
        agents.retain(|a| caller.may_use_agent(a.id.as_str()));
        let (agents, next_cursor) = page_after(
            agents,
            p.cursor.as_ref().map(|c| c.as_str()),
            p.limit,
            |a| a.id.as_str(),
        )?;
        Ok(AgentsListResult {
            agents,
            next_cursor,
        })
    }

    /// `agents.get`.
    pub(super) async fn get_agent(&self, caller: &Caller, p: AgentRef) -> Result<Agent, ApiError> {
        self.agent_for(caller, p.agent_id.as_str())
            .await?
            .ok_or_else(|| not_found("agent", p.agent_id.as_str()))
    }

    /// `agents.create`: never over an agent the config file declares.
    pub(super) async fn create_agent(
        &self,
        _: &Caller,
        p: AgentsCreateParams,
    ) -> Result<Agent, ApiError> {
        if self.config_agents.iter().any(|a| a.id == p.id) {
            return Err(talon_protocol::gateway::refuse::agent_in_config(
                p.id.as_str(),
            ));
        }
        let now = self.store.now_ms();
        let agent = Agent::created(&p, now);
        match self.store.create_agent(&agent).await {
            Ok(()) => Ok(agent),
            Err(error) => Err(api_error(error)),
        }
    }

    /// `agents.update`: only a stored agent; a declared one is edited in
    /// the config file.
    pub(super) async fn update_agent(
        &self,
        _: &Caller,
        p: AgentsUpdateParams,
    ) -> Result<Agent, ApiError> {
        if self.config_agents.iter().any(|a| a.id == p.agent_id) {
            return Err(talon_protocol::gateway::refuse::agent_edit_in_config(
                p.agent_id.as_str(),
            ));
        }
        let mut agent = self
            .store
            .agent(&p.agent_id)
            .await
            .map_err(api_error)?
            .ok_or_else(|| not_found("agent", p.agent_id.as_str()))?;
        agent.update(p, self.store.now_ms());
        self.store.update_agent(&agent).await.map_err(api_error)?;
        Ok(agent)
    }
}
