//! The gateway's state, a leaf as axum's state is: what every route and
//! every method shares ([`Shared`]), and the method table's own part of it
//! ([`Api`]: the store, the config's agents, the run engine). It names the
//! services it holds (store, engine, tail, limits, revocations, metrics,
//! policies) and imports no handler, router or transport module: those
//! import it.

use std::sync::Arc;

use axum::body::Bytes;
use talon_protocol::gateway::Agent;
use talon_protocol::gateway::bounded::AgentId;
use talon_store::Store;

use crate::runs::Engine;

/// What every request handler shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub store: Store,
    pub api: Api,
    /// The served OpenAPI document, encoded on its first request (it is
    /// some 120 KB, built through a `serde_json::Value` tree: a start-up
    /// that never serves it should not pay for it).
    pub openapi: std::sync::OnceLock<Result<Bytes, String>>,
    pub limiter: crate::limits::Limiter,
    /// Turns `true` when the gateway shuts down: open streams and
    /// WebSocket connections end (clients resume by cursor elsewhere).
    pub closing: tokio::sync::watch::Receiver<bool>,
    /// The node's live tail of the event log.
    pub tail: crate::tail::Tail,
    /// Which hosts and origins are served.
    pub browsers: talon_wire::browsers::BrowserPolicy,
    /// Where the gateway listens (its own address is a served host).
    pub listen: std::net::SocketAddr,
    /// Revoked tokens, for the connections they opened.
    pub revocations: Arc<crate::auth::revocation::Revocations>,
    /// How many bytes the store holds (database and artifact files),
    /// measured now and then, against `max_stored_bytes`.
    pub stored: crate::limits::stored::StoredBytes,
    /// What each subject and token holds, against their quotas.
    pub quotas: crate::limits::quota::Quotas,
    /// The node's run engine.
    pub engine: Engine,
    /// What the node counts (`GET /metrics`).
    pub metrics: Arc<crate::observe::metrics::Metrics>,
    /// The OpenAI-compatible surface's policy.
    pub openai: crate::openai::policy::OpenAiPolicy,
    /// When the node started (epoch milliseconds).
    pub started_at: u64,
    /// How commands are isolated (the default agents'; `/healthz`).
    pub sandbox: talon_jail::Status,
    /// The dashboard's page, for its base path.
    pub page: crate::transport::dashboard::Page,
}

/// The gateway's methods.
#[derive(Debug, Clone)]
pub struct Api {
    pub(crate) store: Store,
    pub(crate) config_agents: Vec<Agent>,
    pub(crate) engine: Engine,
    /// How long a stream ticket may wait to be used.
    pub(crate) ticket_ttl: std::time::Duration,
    /// The node's live tail, told to forget what a delete removed.
    pub(crate) tail: Option<crate::tail::Tail>,
    /// The store's size against its quota: an environment may take what
    /// is left of it.
    pub(crate) stored: Option<crate::limits::stored::StoredBytes>,
    /// The node's scheduler, woken when a schedule changes.
    pub(crate) schedules: crate::schedules::Schedules,
}

/// The agent every gateway has, even with no config file.
use talon_protocol::gateway::run_views::DEFAULT_AGENT_ID as DEFAULT_AGENT;

fn default_agent() -> Agent {
    Agent::default_agent()
}

impl Api {
    /// The methods over `store`, with the agents the config file declares
    /// (and `main`, always), runs executed by `engine`.
    pub(crate) fn new(
        store: Store,
        mut config_agents: Vec<Agent>,
        engine: Engine,
        schedules: crate::schedules::Schedules,
    ) -> Self {
        if !config_agents
            .iter()
            .any(|a| a.id == AgentId::new(DEFAULT_AGENT))
        {
            config_agents.insert(0, default_agent());
        }
        Self {
            store,
            config_agents,
            engine,
            ticket_ttl: crate::auth::tokens::TICKET_TTL,
            tail: None,
            stored: None,
            schedules,
        }
    }

    /// Environments take what is left of `stored`'s quota, and count in it.
    pub(crate) fn with_stored(mut self, stored: crate::limits::stored::StoredBytes) -> Self {
        self.stored = Some(stored);
        self
    }

    /// Deletes make `tail` forget what it held.
    pub(crate) fn with_tail(mut self, tail: crate::tail::Tail) -> Self {
        self.tail = Some(tail);
        self
    }

    /// Stream tickets last `ttl`.
    pub(crate) fn with_ticket_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.ticket_ttl = ttl;
        self
    }
}
