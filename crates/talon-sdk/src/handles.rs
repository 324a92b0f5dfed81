//! Handles on the gateway's resources: [`Approval`], [`Question`],
//! [`Artifact`] and [`Environment`]. Each holds the resource as the
//! gateway last described it (reachable through `Deref`) and the client to
//! act on it.

use std::ops::Deref;

use talon_protocol::gateway as proto;
use talon_protocol::gateway::params::{
    AgentsListParams, ApprovalsListParams, ApprovalsRespondParams, ArtifactRef,
    ArtifactsListParams, EnvironmentRef, EnvironmentsDeleteParams, EnvironmentsListParams,
    ModelsListParams, QuestionsListParams, QuestionsRespondParams, ToolsListParams,
};

use crate::client::Client;
use crate::error::Result;

/// Defines a function that lists every item a list method's `filter`
/// names, page after page (its cursor is set here), wrapped as handles
/// (`$handle`), or as they come (`plain $item`).
macro_rules! every_page {
    ($(#[$doc:meta])* $fn:ident: $method:ident($params:ty) -> $field:ident: $handle:ident) => {
        every_page!($(#[$doc])* $fn: $method($params) -> $field: $handle, $handle::wrap_all);
    };
    ($(#[$doc:meta])* $fn:ident: $method:ident($params:ty) -> $field:ident: plain $item:ty) => {
        every_page!($(#[$doc])* $fn: $method($params) -> $field: $item, |_, items| items);
    };
    ($(#[$doc:meta])* $fn:ident: $method:ident($params:ty) -> $field:ident: $out:ty, $wrap:expr) => {
        $(#[$doc])*
        pub(crate) async fn $fn(client: &Client, mut filter: $params) -> Result<Vec<$out>> {
            let wrap: fn(&Client, Vec<_>) -> Vec<$out> = $wrap;
            let mut out = Vec::new();
            loop {
                let page = client.$method(filter.clone()).await?;
                out.extend(wrap(client, page.$field));
                match page.next_cursor {
                    Some(next) => filter.cursor = Some(next),
                    None => return Ok(out),
                }
            }
        }
    };
}

every_page!(
    /// Every artifact `filter` lists.
    all_artifacts: artifacts_list(ArtifactsListParams) -> artifacts: Artifact
);
every_page!(
    /// Every approval `filter` lists.
    all_approvals: approvals_list(ApprovalsListParams) -> approvals: Approval
);
every_page!(
    /// Every question `filter` lists.
    all_questions: questions_list(QuestionsListParams) -> questions: Question
);
every_page!(
    /// Every environment the token may see.
    all_environments: environments_list(EnvironmentsListParams) -> environments: Environment
);
every_page!(
    /// Every agent the token may see.
    all_agents: agents_list(AgentsListParams) -> agents: plain proto::Agent
);
every_page!(
    /// Every configured model.
    all_models: models_list(ModelsListParams) -> models: plain proto::Model
);
every_page!(
    /// Every tool of a ToolSpace `filter` names.
    all_tools: tools_list(ToolsListParams) -> tools: plain proto::ToolSummary
);

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident wraps $inner:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            client: Client,
            info: $inner,
        }

        impl $name {
            pub(crate) fn new(client: Client, info: $inner) -> Self {
                Self { client, info }
            }

            /// Handles on each of `infos`, acting through `client`.
            pub(crate) fn wrap_all(client: &Client, infos: Vec<$inner>) -> Vec<Self> {
                infos
                    .into_iter()
                    .map(|info| Self::new(client.clone(), info))
                    .collect()
            }

            /// A handle on `info` (e.g. decoded from an event's data) that
            /// acts through `client`.
            pub fn from_parts(client: Client, info: $inner) -> Self {
                Self { client, info }
            }

            /// The resource as the gateway last described it.
            pub fn info(&self) -> &$inner {
                &self.info
            }

            /// The resource, without the handle.
            pub fn into_inner(self) -> $inner {
                self.info
            }
        }

        impl Deref for $name {
            type Target = $inner;

            fn deref(&self) -> &$inner {
                &self.info
            }
        }
    };
}

handle! {
    /// A request for a decision: a tool call (or an environment action)
    /// waiting for `approvals.respond`. The first decision wins; a later
    /// one fails with `conflict`, the winner in its details. A tool call's
    /// tool is in [`tool_name`](proto::Approval::tool_name), the name the
    /// model calls it (`exec`), and [`tool_id`](proto::Approval::tool_id),
    /// its catalog id (`openclaw:core:exec`), which identifies it exactly
    /// ([`tool_key`](proto::Approval::tool_key) also for approvals stored
    /// before `tool_id`, which had the id in `tool_name`).
    Approval wraps proto::Approval
}

impl Approval {
    /// Decides it: one of [`proto::Approval::decisions`]. Returns the
    /// approval as resolved.
    pub async fn respond(
        &self,
        decision: proto::ApprovalDecision,
        reason: Option<String>,
    ) -> Result<Approval> {
        let info = self
            .client
            .approvals_respond(ApprovalsRespondParams {
                approval_id: self.info.id.clone(),
                decision,
                reason: reason.map(Into::into),
                idempotency_key: None,
            })
            .await?;
        Ok(Self::new(self.client.clone(), info))
    }

    /// Allows this call.
    pub async fn approve_once(&self) -> Result<Approval> {
        self.respond(proto::ApprovalDecision::ApproveOnce, None)
            .await
    }

    /// Allows matching calls for the rest of the session.
    pub async fn approve_session(&self) -> Result<Approval> {
        self.respond(proto::ApprovalDecision::ApproveSession, None)
            .await
    }

    /// Allows matching calls from now on.
    pub async fn approve_always(&self) -> Result<Approval> {
        self.respond(proto::ApprovalDecision::ApproveAlways, None)
            .await
    }

    /// Refuses, saying why (the model reads the reason).
    pub async fn deny(&self, reason: impl Into<String>) -> Result<Approval> {
        self.respond(proto::ApprovalDecision::Deny, Some(reason.into()))
            .await
    }
}

handle! {
    /// A question the agent asked the user (`ask_user`), waiting for
    /// `questions.respond`.
    Question wraps proto::Question
}

impl Question {
    /// Answers it; the gateway checks the answer against the question's
    /// choices and schema (`invalid_request` lists every reason, and the
    /// question stays open). Returns the question as answered.
    pub async fn answer(&self, answer: serde_json::Value) -> Result<Question> {
        let info = self
            .client
            .questions_respond(QuestionsRespondParams {
                question_id: self.info.id.clone(),
                answer,
                idempotency_key: None,
            })
            .await?;
        Ok(Self::new(self.client.clone(), info))
    }
}

handle! {
    /// Something a run produced: its trajectory, a file, a diff, a log.
    Artifact wraps proto::ArtifactSummary
}

impl Artifact {
    /// Streams its bytes into `writer`; returns how many. A download cut
    /// off before its announced length is [`crate::Error::Transport`].
    pub async fn download<W>(&self, writer: &mut W) -> Result<u64>
    where
        W: tokio::io::AsyncWrite + Unpin + ?Sized,
    {
        self.client
            .download_artifact(self.info.id.as_str(), writer)
            .await
    }

    /// Its bytes, in memory.
    pub async fn bytes(&self) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.download(&mut bytes).await?;
        Ok(bytes)
    }

    /// The artifact as the gateway describes it now.
    pub async fn refresh(&self) -> Result<Artifact> {
        let info = self
            .client
            .artifacts_get(ArtifactRef {
                artifact_id: self.info.id.clone(),
                run_id: self.info.run_id.clone(),
            })
            .await?;
        Ok(Self::new(self.client.clone(), info))
    }
}

handle! {
    /// A managed environment: a workspace, its secrets, its network
    /// policy, prepared by a provider.
    Environment wraps proto::Environment
}

impl Environment {
    /// Its id (what `RunOptions::environment_id` takes).
    pub fn id(&self) -> &str {
        self.info.id.as_str()
    }

    /// The environment as the gateway describes it now.
    pub async fn status(&self) -> Result<Environment> {
        let info = self
            .client
            .environments_status(EnvironmentRef {
                environment_id: self.info.id.clone(),
            })
            .await?;
        Ok(Self::new(self.client.clone(), info))
    }

    /// Deletes it; its workspace is removed unless its settings retain it.
    pub async fn delete(&self) -> Result<Environment> {
        let info = self
            .client
            .environments_delete(EnvironmentsDeleteParams {
                environment_id: self.info.id.clone(),
                idempotency_key: None,
            })
            .await?;
        Ok(Self::new(self.client.clone(), info))
    }
}
