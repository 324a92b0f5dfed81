//! [`Talon`], the entry point of the high-level layer, and [`Agent`].

use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::{
    ArtifactId, EnvironmentId, IdempotencyKey, ProviderId, RunId, SessionId, SessionKey, ToolRef,
};
use talon_protocol::gateway::params::{
    AgentRef, AgentsListParams, ApprovalsListParams, ArtifactRef, EnvironmentRef,
    EnvironmentsCreateParams, EnvironmentsListParams, ModelsListParams, QuestionsListParams,
    RunInput, RunRef, RunsCreateParams, SessionsCreateParams, SessionsResolveParams,
    ToolsInvokeParams, ToolsListParams,
};
use talon_protocol::gateway::{self as proto, ApprovalStatus, QuestionStatus};

use crate::client::{Client, ClientConfig, StreamQuery};
use crate::error::Result;
use crate::events::Events;
use crate::handles::{Approval, Artifact, Environment, Question};
use crate::run::{Run, RunOptions};
use crate::session::Session;

/// A connection to a gateway: agents, runs, sessions, approvals,
/// questions, artifacts, environments and background tasks. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Talon {
    client: Client,
}

impl Talon {
    /// Connects over HTTP with the default retries, and checks that the
    /// gateway answers (`/healthz`).
    pub async fn connect(url: impl Into<String>, token: impl Into<String>) -> Result<Self> {
        Self::connect_with(ClientConfig::new(url, token)).await
    }

    /// Connects with a configuration of your own (the WebSocket
    /// transport, another retry policy).
    pub async fn connect_with(config: ClientConfig) -> Result<Self> {
        let client = Client::new(config)?;
        client.health().await?;
        Ok(Self { client })
    }

    /// Wraps a low-level client (no check is made).
    pub fn from_client(client: Client) -> Self {
        Self { client }
    }

    /// The low-level client: every method of the protocol.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The agent `id` (no call is made until it is used).
    pub fn agent(&self, id: impl Into<String>) -> Agent {
        Agent {
            client: self.client.clone(),
            id: AgentId::new(id),
        }
    }

    /// The background tasks the token may see: `talon.tasks().list(filter)`
    /// (every page), `talon.tasks().get(id)`.
    pub fn tasks(&self) -> crate::task::Tasks {
        crate::task::Tasks::new(self.client.clone())
    }

    /// The agents the token may see.
    pub async fn agents(&self) -> Result<Vec<proto::Agent>> {
        let all = AgentsListParams {
            limit: None,
            cursor: None,
        };
        crate::handles::all_agents(&self.client, all).await
    }

    /// Every event the token may see, filtered by `query` (all when
    /// default), after the event with id `after` (from the oldest kept
    /// when `None`): the gateway's durable log, replayed then followed
    /// live, resuming by itself after a dropped connection. It never ends
    /// by itself.
    pub fn events(&self, query: StreamQuery, after: Option<u64>) -> Events {
        Events::of_log(self.client.clone(), query, after)
    }

    /// The configured models.
    pub async fn models(&self) -> Result<Vec<proto::Model>> {
        let all = ModelsListParams {
            limit: None,
            cursor: None,
        };
        crate::handles::all_models(&self.client, all).await
    }

    /// An existing run, by id (to follow, wait for or cancel a run
    /// started elsewhere).
    pub async fn run(&self, run_id: &str) -> Result<Run> {
        let info = self
            .client
            .runs_get(RunRef {
                run_id: RunId::new(run_id.to_owned()),
            })
            .await?;
        Ok(Run::new(self.client.clone(), info))
    }

    /// The session with `key` for the `main` agent, created if absent.
    pub async fn session(&self, key: &str) -> Result<Session> {
        self.agent("main").session(key).await
    }

    /// The approvals waiting for a decision (every page).
    pub async fn pending_approvals(&self) -> Result<Vec<Approval>> {
        let filter = ApprovalsListParams {
            status: Some(ApprovalStatus::Pending),
            run_id: None,
            session_id: None,
            limit: None,
            cursor: None,
        };
        crate::handles::all_approvals(&self.client, filter).await
    }

    /// The questions waiting for an answer (every page).
    pub async fn pending_questions(&self) -> Result<Vec<Question>> {
        let filter = QuestionsListParams {
            status: Some(QuestionStatus::Pending),
            run_id: None,
            limit: None,
            cursor: None,
        };
        crate::handles::all_questions(&self.client, filter).await
    }

    /// One artifact, by id.
    pub async fn artifact(&self, artifact_id: &str) -> Result<Artifact> {
        let info = self
            .client
            .artifacts_get(ArtifactRef {
                artifact_id: ArtifactId::new(artifact_id.to_owned()),
                run_id: None,
            })
            .await?;
        Ok(Artifact::new(self.client.clone(), info))
    }

    /// The managed environments.
    pub async fn environments(&self) -> Result<Vec<Environment>> {
        let all = EnvironmentsListParams {
            limit: None,
            cursor: None,
        };
        crate::handles::all_environments(&self.client, all).await
    }

    /// One environment, by id.
    pub async fn environment(&self, environment_id: &str) -> Result<Environment> {
        let info = self
            .client
            .environments_status(EnvironmentRef {
                environment_id: EnvironmentId::new(environment_id.to_owned()),
            })
            .await?;
        Ok(Environment::new(self.client.clone(), info))
    }

    /// Creates an environment with `provider` (e.g. `local`) and its
    /// settings; its status says when it is `ready`.
    pub async fn create_environment(
        &self,
        provider: &str,
        settings: serde_json::Value,
    ) -> Result<Environment> {
        let info = self
            .client
            .environments_create(EnvironmentsCreateParams {
                provider: ProviderId::new(provider.to_owned()),
                settings: Some(settings),
                idempotency_key: None,
            })
            .await?;
        Ok(Environment::new(self.client.clone(), info))
    }

    /// Calls one tool directly, through the session's policy and
    /// approvals (`tools.invoke`); returns the tool's result.
    pub async fn invoke(
        &self,
        session_key: &str,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<serde_json::Value> {
        Ok(self
            .client
            .tools_invoke(ToolsInvokeParams {
                tool: ToolRef::new(tool.to_owned()),
                arguments,
                session_key: SessionKey::new(session_key.to_owned()),
                idempotency_key: None,
            })
            .await?
            .result)
    }
}

/// One agent.
#[derive(Debug, Clone)]
pub struct Agent {
    client: Client,
    id: AgentId,
}

impl Agent {
    /// Its id.
    pub fn id(&self) -> &str {
        self.id.as_str()
    }

    /// The agent as the gateway describes it.
    pub async fn info(&self) -> Result<proto::Agent> {
        self.client
            .agents_get(AgentRef {
                agent_id: self.id.clone(),
            })
            .await
    }

    /// Starts a run on a new session.
    pub async fn run(&self, input: impl Into<RunInput>) -> Result<Run> {
        self.run_with(input, RunOptions::default()).await
    }

    /// Starts a run with options.
    pub async fn run_with(&self, input: impl Into<RunInput>, options: RunOptions) -> Result<Run> {
        let accepted = self
            .client
            .runs_create(RunsCreateParams {
                agent_id: Some(self.id.clone()),
                input: input.into(),
                session_key: options.session_key.map(SessionKey::new),
                session_id: options.session_id.map(SessionId::new),
                tools: options.tools,
                multitask_strategy: options.multitask_strategy,
                timeout_ms: options.timeout_ms,
                environment_id: options.environment_id.map(EnvironmentId::new),
                idempotency_key: options.idempotency_key.map(IdempotencyKey::new),
            })
            .await?;
        Ok(Run::new(self.client.clone(), accepted.run))
    }

    /// Its session with `key`, created if absent.
    pub async fn session(&self, key: &str) -> Result<Session> {
        let info = self
            .client
            .sessions_resolve(SessionsResolveParams {
                key: SessionKey::new(key.to_owned()),
                agent_id: Some(self.id.clone()),
            })
            .await?;
        Ok(Session::new(self.client.clone(), info))
    }

    /// A new session with a generated key.
    pub async fn create_session(&self) -> Result<Session> {
        let info = self
            .client
            .sessions_create(SessionsCreateParams {
                agent_id: self.id.clone(),
                key: None,
                metadata: None,
                idempotency_key: None,
            })
            .await?;
        Ok(Session::new(self.client.clone(), info))
    }

    /// Its ToolSpace: the tools a run of it gets, with their approval
    /// policy and reach.
    pub async fn tool_space(&self) -> Result<Vec<proto::ToolSummary>> {
        let filter = ToolsListParams {
            agent_id: Some(self.id.clone()),
            session_key: None,
            limit: None,
            cursor: None,
        };
        crate::handles::all_tools(&self.client, filter).await
    }
}
