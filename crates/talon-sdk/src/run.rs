//! [`Run`]: one run of an agent, as the app drives it. Its
//! [`events`](Run::events) are an [`Events`] stream that resumes by
//! itself after a dropped connection (from the last id it delivered: no
//! duplicate, no gap); [`wait`](Run::wait) waits for the result however
//! long the run takes; [`on_approval`](Run::on_approval) answers the run's
//! approval requests with an app's policy.

use futures::StreamExt as _;
use talon_protocol::EventType;
use talon_protocol::gateway::params::{
    ApprovalsListParams, ArtifactsListParams, ClientTool, MultitaskStrategy, QuestionsListParams,
    RunRef, RunsCancelParams, RunsWaitParams, SessionsResolveParams, ToolsListParams,
};
use talon_protocol::gateway::{self as proto, ErrorCode, RunResultStatus};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::events::Events;
use crate::handles::{Approval, Artifact, Question};
use crate::session::Session;

/// How long one `runs.wait` call waits before [`Run::wait`] asks again.
const WAIT_SLICE_MS: u64 = 30_000;

/// Options of a new run, beside its input.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The session's key: that session, created if absent (a new session
    /// when neither key nor id is given).
    pub session_key: Option<String>,
    /// The session's id.
    pub session_id: Option<String>,
    /// Client tools the model may call this run.
    pub tools: Vec<ClientTool>,
    /// What to do when the session already has an active run.
    pub multitask_strategy: Option<MultitaskStrategy>,
    /// The run's own time limit.
    pub timeout_ms: Option<u64>,
    /// The managed environment the run works in.
    pub environment_id: Option<String>,
    /// Makes a retried create safe (one is generated when absent).
    pub idempotency_key: Option<String>,
}

/// What an approval handler decides (see [`Run::on_approval`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalAction {
    /// Allow this one call, optionally saying why (kept on the approval).
    ApproveOnce {
        /// Why, for the record.
        reason: Option<String>,
    },
    /// Refuse it, saying why (the model reads the reason).
    Deny {
        /// Why.
        reason: String,
    },
    /// Leave it pending for a person (the seed's `askUser`): another
    /// client, a dashboard, or [`Approval::approve_once`] later.
    AskUser,
}

impl ApprovalAction {
    /// Allow this one call.
    pub fn approve_once() -> Self {
        Self::ApproveOnce { reason: None }
    }

    /// Allow this one call, saying why.
    pub fn approve_once_because(reason: impl Into<String>) -> Self {
        Self::ApproveOnce {
            reason: Some(reason.into()),
        }
    }

    /// Refuse, saying why.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }

    /// Leave it to a person.
    pub fn ask_user() -> Self {
        Self::AskUser
    }
}

/// One run.
#[derive(Debug)]
pub struct Run {
    client: Client,
    info: proto::Run,
    watchers: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Run {
    fn drop(&mut self) {
        for watcher in &self.watchers {
            watcher.abort();
        }
    }
}

impl Run {
    pub(crate) fn new(client: Client, info: proto::Run) -> Self {
        Self {
            client,
            info,
            watchers: Vec::new(),
        }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        self.info.id.as_str()
    }

    /// The run as the gateway described it when it was accepted (or
    /// attached); [`Run::refresh`] asks again.
    pub fn info(&self) -> &proto::Run {
        &self.info
    }

    /// The low-level client it uses.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The run as the gateway describes it now (`runs.get`).
    pub async fn refresh(&self) -> Result<proto::Run> {
        self.client
            .runs_get(RunRef {
                run_id: self.info.id.clone(),
            })
            .await
    }

    /// Its events from the first, ending after its terminal event.
    pub fn events(&self) -> Events {
        Events::of_run(self.client.clone(), self.info.id.to_string(), None)
    }

    /// Its events after the event with id `cursor` (a
    /// [`Events::cursor`] saved earlier, in this process or another).
    pub fn events_after(&self, cursor: u64) -> Events {
        Events::of_run(self.client.clone(), self.info.id.to_string(), Some(cursor))
    }

    /// Waits for the run to end, however long it takes, and returns the
    /// seed's result envelope.
    pub async fn wait(&self) -> Result<proto::RunResult> {
        loop {
            let result = self.wait_for(WAIT_SLICE_MS).await?;
            if result.status != RunResultStatus::Accepted {
                return Ok(result);
            }
        }
    }

    /// Waits at most `timeout_ms`; a run still going then gives a result
    /// with status `accepted`.
    pub async fn wait_for(&self, timeout_ms: u64) -> Result<proto::RunResult> {
        self.client
            .runs_wait(RunsWaitParams {
                run_id: self.info.id.clone(),
                timeout_ms: Some(timeout_ms),
            })
            .await
    }

    /// Cancels it (its pending approvals and questions are resolved
    /// `cancelled`); returns the run as cancelled.
    pub async fn cancel(&self) -> Result<proto::Run> {
        self.client
            .runs_cancel(RunsCancelParams {
                run_id: self.info.id.clone(),
                reason: None,
                idempotency_key: None,
            })
            .await
    }

    /// Answers this run's approval requests with `handler`, on a task of
    /// its own that follows the run's events until it ends (or this `Run`
    /// is dropped). Requests made before the call are seen too. A request
    /// someone else decided first is left alone.
    ///
    /// A handler reads the tool as the seed's example does, by the name
    /// the model calls it (`tool_name`: `write`, `exec`), and by
    /// `tool_id` (`openclaw:core:write`) where it must tell apart tools
    /// of the same name:
    ///
    /// ```no_run
    /// # use talon_sdk::{ApprovalAction, Run};
    /// # use talon_sdk::protocol::gateway::ApprovalKind;
    /// # fn demo(run: &mut Run) {
    /// run.on_approval(|request| {
    ///     if request.kind == ApprovalKind::Tool && request.tool_name.as_deref() == Some("exec") {
    ///         return ApprovalAction::approve_once_because("CI command allowed by policy");
    ///     }
    ///     ApprovalAction::AskUser
    /// });
    /// # }
    /// ```
    pub fn on_approval<F>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(&Approval) -> ApprovalAction + Send + Sync + 'static,
    {
        self.on_approval_async(move |approval| std::future::ready(handler(&approval)))
    }

    /// [`Run::on_approval`] with an async handler (one that asks a service
    /// of the app's own before it decides). Requests are handled one at a
    /// time, in order.
    pub fn on_approval_async<F, Fut>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(Approval) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ApprovalAction> + Send + 'static,
    {
        let client = self.client.clone();
        let events = self.events();
        self.watchers
            .push(tokio::spawn(answer_approvals(client, events, handler)));
        self
    }

    /// This run's approvals, pending or decided (every page).
    pub async fn approvals(&self) -> Result<Vec<Approval>> {
        let filter = ApprovalsListParams {
            status: None,
            run_id: Some(self.info.id.clone()),
            session_id: None,
            limit: None,
            cursor: None,
        };
        crate::handles::all_approvals(&self.client, filter).await
    }

    /// This run's questions, pending or answered (every page).
    pub async fn questions(&self) -> Result<Vec<Question>> {
        let filter = QuestionsListParams {
            status: None,
            run_id: Some(self.info.id.clone()),
            limit: None,
            cursor: None,
        };
        crate::handles::all_questions(&self.client, filter).await
    }

    /// The artifacts it produced (every page).
    pub async fn artifacts(&self) -> Result<Vec<Artifact>> {
        let filter = ArtifactsListParams {
            run_id: Some(self.info.id.clone()),
            session_id: None,
            limit: None,
            cursor: None,
        };
        crate::handles::all_artifacts(&self.client, filter).await
    }

    /// The background tasks it started (sub-agents it spawned), newest
    /// first (`tasks.list` with its `runId`, every page).
    pub async fn tasks(&self) -> Result<Vec<crate::task::Task>> {
        let filter = talon_protocol::gateway::tasks::TasksListParams {
            run_id: Some(self.info.id.clone()),
            ..Default::default()
        };
        crate::task::all_tasks(&self.client, filter).await
    }

    /// Its session.
    pub async fn session(&self) -> Result<Session> {
        let key = match &self.info.session_key {
            Some(key) => key.clone(),
            None => self.refresh().await?.session_key.ok_or_else(|| {
                Error::Api(proto::ApiError::new(
                    ErrorCode::NotFound,
                    format!("run {} has no session", self.info.id),
                ))
            })?,
        };
        let info = self
            .client
            .sessions_resolve(SessionsResolveParams {
                key,
                agent_id: Some(self.info.agent_id.clone()),
            })
            .await?;
        Ok(Session::new(self.client.clone(), info))
    }

    /// The tools this run's agent has, in its session (the ToolSpace).
    pub async fn tool_space(&self) -> Result<Vec<proto::ToolSummary>> {
        let filter = ToolsListParams {
            agent_id: Some(self.info.agent_id.clone()),
            session_key: self.info.session_key.clone(),
            limit: None,
            cursor: None,
        };
        crate::handles::all_tools(&self.client, filter).await
    }
}

async fn answer_approvals<F, Fut>(client: Client, mut events: Events, handler: F)
where
    F: Fn(Approval) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ApprovalAction> + Send + 'static,
{
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(%error, "approval handler: the run's events ended");
                return;
            }
        };
        if event.kind != EventType::ApprovalRequested {
            continue;
        }
        let Ok(info) = serde_json::from_value::<proto::Approval>(event.data) else {
            tracing::warn!("approval handler: an approval.requested event that does not decode");
            continue;
        };
        if info.status != proto::ApprovalStatus::Pending {
            continue;
        }
        let approval = Approval::new(client.clone(), info);
        let outcome = match handler(approval.clone()).await {
            ApprovalAction::ApproveOnce { reason } => {
                approval
                    .respond(proto::ApprovalDecision::ApproveOnce, reason)
                    .await
            }
            ApprovalAction::Deny { reason } => approval.deny(reason).await,
            ApprovalAction::AskUser => continue,
        };
        match outcome {
            Ok(_) => {}
            Err(error) if error.code() == Some(ErrorCode::Conflict) => {
                tracing::debug!(approval = %approval.id, "decided elsewhere first");
            }
            Err(error) => tracing::warn!(approval = %approval.id, %error, "approval handler"),
        }
    }
}
