//! Agents created through the API (those in the config file are not
//! stored; the gateway lists both).

use talon_protocol::gateway::Agent;

use crate::Store;
use crate::error::{Result, StoreError};
use crate::records::{doc_of, json_text, ms};

impl Store {
    /// Stores a new agent; [`StoreError::Exists`] when its id is taken.
    pub async fn create_agent(&self, agent: &Agent) -> Result<()> {
        let inserted = sqlx::query(
            "INSERT INTO agents (id, created_at, doc) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(agent.id.to_string())
        .bind(ms(agent.created_at.unwrap_or(0))?)
        .bind(json_text(agent)?)
        .execute(self.writes())
        .await?
        .rows_affected();
        if inserted == 1 {
            Ok(())
        } else {
            Err(StoreError::Exists {
                kind: "agent",
                id: agent.id.clone().into_string(),
            })
        }
    }

    /// One stored agent.
    pub async fn agent(
        &self,
        id: &talon_protocol::gateway::bounded::AgentId,
    ) -> Result<Option<Agent>> {
        let row = sqlx::query("SELECT doc FROM agents WHERE id = $1")
            .bind(id.as_str().to_owned())
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(doc_of).transpose()
    }

    /// Every stored agent, oldest first.
    pub async fn agents(&self) -> Result<Vec<Agent>> {
        let rows = sqlx::query("SELECT doc FROM agents ORDER BY created_at, id")
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(doc_of).collect()
    }

    /// Replaces a stored agent; `false` when there is none with its id.
    pub async fn update_agent(&self, agent: &Agent) -> Result<bool> {
        let changed = sqlx::query("UPDATE agents SET doc = $2 WHERE id = $1")
            .bind(agent.id.to_string())
            .bind(json_text(agent)?)
            .execute(self.writes())
            .await?
            .rows_affected();
        Ok(changed == 1)
    }
}
