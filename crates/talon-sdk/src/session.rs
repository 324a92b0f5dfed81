//! [`Session`]: a conversation with an agent. Sending a message starts a
//! [`Run`]; the session keeps the messages, forks, compacts and aborts.

use talon_protocol::gateway::bounded::EnvironmentId;
use talon_protocol::gateway::bounded::{IdempotencyKey, MessageId, RunId};
use talon_protocol::gateway::params::{
    ArtifactsListParams, RunInput, SessionActionParams, SessionsForkParams, SessionsMessagesParams,
    SessionsSendParams,
};
use talon_protocol::gateway::{self as proto};

use crate::client::Client;
use crate::error::Result;
use crate::handles::Artifact;
use crate::run::{Run, RunOptions};

/// One session.
#[derive(Debug, Clone)]
pub struct Session {
    client: Client,
    info: proto::Session,
}

impl Session {
    pub(crate) fn new(client: Client, info: proto::Session) -> Self {
        Self { client, info }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        self.info.id.as_str()
    }

    /// The app's key for it.
    pub fn key(&self) -> &str {
        self.info.key.as_str()
    }

    /// The session as the gateway last described it.
    pub fn info(&self) -> &proto::Session {
        &self.info
    }

    /// Sends a user message: a run on this session.
    pub async fn send(&self, input: impl Into<RunInput>) -> Result<Run> {
        self.send_with(input, RunOptions::default()).await
    }

    /// Sends a message with options (`session_key`/`session_id` are this
    /// session's and ignored).
    pub async fn send_with(&self, input: impl Into<RunInput>, options: RunOptions) -> Result<Run> {
        let accepted = self
            .client
            .sessions_send(SessionsSendParams {
                session_id: self.info.id.clone(),
                input: input.into(),
                tools: options.tools,
                multitask_strategy: options.multitask_strategy,
                timeout_ms: options.timeout_ms,
                environment_id: options.environment_id.map(EnvironmentId::new),
                idempotency_key: options.idempotency_key.map(IdempotencyKey::new),
            })
            .await?;
        Ok(Run::new(self.client.clone(), accepted.run))
    }

    /// Every message, oldest first (all pages).
    pub async fn messages(&self) -> Result<Vec<proto::Message>> {
        let mut out: Vec<proto::Message> = Vec::new();
        loop {
            let page = self
                .client
                .sessions_messages(SessionsMessagesParams {
                    session_id: self.info.id.clone(),
                    after: out.last().map(|m| m.id.clone()).map(Into::into),
                    limit: None,
                })
                .await?;
            let empty = page.messages.is_empty();
            out.extend(page.messages);
            if !page.has_more || empty {
                return Ok(out);
            }
        }
    }

    /// A new session with this one's messages up to `at_message_id` (all
    /// when `None`).
    pub async fn fork(&self, at_message_id: Option<&str>) -> Result<Session> {
        let info = self
            .client
            .sessions_fork(SessionsForkParams {
                session_id: self.info.id.clone(),
                at_message_id: at_message_id.map(str::to_owned).map(MessageId::new),
                key: None,
                idempotency_key: None,
            })
            .await?;
        Ok(Self::new(self.client.clone(), info))
    }

    /// Compacts its history; returns the session as it is after.
    pub async fn compact(&self) -> Result<Session> {
        let info = self
            .client
            .sessions_compact(SessionActionParams {
                session_id: self.info.id.clone(),
                idempotency_key: None,
            })
            .await?;
        Ok(Self::new(self.client.clone(), info))
    }

    /// Cancels its running runs; returns their ids.
    pub async fn abort(&self) -> Result<Vec<RunId>> {
        Ok(self
            .client
            .sessions_abort(SessionActionParams {
                session_id: self.info.id.clone(),
                idempotency_key: None,
            })
            .await?
            .cancelled_run_ids)
    }

    /// The artifacts of its runs (every page).
    pub async fn artifacts(&self) -> Result<Vec<Artifact>> {
        let filter = ArtifactsListParams {
            session_id: Some(self.info.id.clone()),
            run_id: None,
            limit: None,
            cursor: None,
        };
        crate::handles::all_artifacts(&self.client, filter).await
    }
}
