//! [`Run`]: one run of an agent, as the app drives it. Its
//! [`events`](Run::events) are a [`RunEvents`] stream that resumes by
//! itself after a dropped connection (from the last id it delivered: no
//! duplicate, no gap); [`wait`](Run::wait) waits for the result however
//! long the run takes; [`on_approval`](Run::on_approval) answers the run's
//! approval requests with an app's policy.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt as _};
use talon_protocol::gateway::params::{
    ApprovalsListParams, ArtifactsListParams, ClientTool, MultitaskStrategy, QuestionsListParams,
    RunRef, RunsCancelParams, RunsWaitParams, SessionsResolveParams, ToolsListParams,
};
use talon_protocol::gateway::{self as proto, ErrorCode, RunResultStatus};
use talon_protocol::{Event, EventType};

use crate::client::{Client, EventStream};
use crate::error::{Error, Result};
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
    /// Allow this one call.
    ApproveOnce,
    /// Refuse it, saying why (the model reads the reason).
    Deny {
        /// Why.
        reason: String,
    },
    /// Leave it pending for a person (the seed's `ask_user`): another
    /// client, a dashboard, or [`Approval::approve_once`] later.
    AskUser,
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
        &self.info.id
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
    pub fn events(&self) -> RunEvents {
        RunEvents::new(self.client.clone(), self.info.id.clone(), None)
    }

    /// Its events after the event with id `cursor` (a
    /// [`RunEvents::cursor`] saved earlier, in this process or another).
    pub fn events_after(&self, cursor: u64) -> RunEvents {
        RunEvents::new(self.client.clone(), self.info.id.clone(), Some(cursor))
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
    pub fn on_approval<F>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(&Approval) -> ApprovalAction + Send + Sync + 'static,
    {
        let client = self.client.clone();
        let events = self.events();
        self.watchers
            .push(tokio::spawn(answer_approvals(client, events, handler)));
        self
    }

    /// This run's approvals, pending or decided.
    pub async fn approvals(&self) -> Result<Vec<Approval>> {
        let list = self
            .client
            .approvals_list(ApprovalsListParams {
                status: None,
                run_id: Some(self.info.id.clone()),
                session_id: None,
            })
            .await?;
        Ok(list
            .approvals
            .into_iter()
            .map(|a| Approval::new(self.client.clone(), a))
            .collect())
    }

    /// This run's questions, pending or answered.
    pub async fn questions(&self) -> Result<Vec<Question>> {
        let list = self
            .client
            .questions_list(QuestionsListParams {
                status: None,
                run_id: Some(self.info.id.clone()),
            })
            .await?;
        Ok(list
            .questions
            .into_iter()
            .map(|q| Question::new(self.client.clone(), q))
            .collect())
    }

    /// The artifacts it produced (every page).
    pub async fn artifacts(&self) -> Result<Vec<Artifact>> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .client
                .artifacts_list(ArtifactsListParams {
                    run_id: Some(self.info.id.clone()),
                    session_id: None,
                    limit: None,
                    cursor: cursor.take(),
                })
                .await?;
            out.extend(
                page.artifacts
                    .into_iter()
                    .map(|a| Artifact::new(self.client.clone(), a)),
            );
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
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
        Ok(self
            .client
            .tools_list(ToolsListParams {
                agent_id: Some(self.info.agent_id.clone()),
                session_key: self.info.session_key.clone(),
            })
            .await?
            .tools)
    }
}

async fn answer_approvals<F>(client: Client, mut events: RunEvents, handler: F)
where
    F: Fn(&Approval) -> ApprovalAction + Send + Sync + 'static,
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
        let outcome = match handler(&approval) {
            ApprovalAction::ApproveOnce => approval.approve_once().await,
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

/// A run's events, in order, ending after its terminal event. A connection
/// that drops is reopened at once with the last id delivered as the cursor
/// (then with the client's backoff while the gateway cannot be reached), so
/// the stream has no gap and no duplicate. `cursor_expired` (the events
/// after the cursor are gone) ends the stream with that error, never with
/// silence; so does a failure the retry policy gives up on.
pub struct RunEvents {
    inner: BoxStream<'static, Result<Event>>,
    cursor: Arc<AtomicU64>,
}

impl std::fmt::Debug for RunEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEvents")
            .field("cursor", &self.cursor())
            .finish_non_exhaustive()
    }
}

struct Follow {
    client: Client,
    run_id: String,
    cursor: Arc<AtomicU64>,
    stream: Option<EventStream>,
    /// Failed opens (and cuts before any event) in a row.
    failures: u32,
    /// Whether the open stream has delivered nothing yet.
    fresh: bool,
    done: bool,
}

impl RunEvents {
    pub(crate) fn new(client: Client, run_id: String, after: Option<u64>) -> Self {
        let cursor = Arc::new(AtomicU64::new(after.unwrap_or(0)));
        let follow = Follow {
            client,
            run_id,
            cursor: cursor.clone(),
            stream: None,
            failures: 0,
            fresh: true,
            done: false,
        };
        let inner = futures::stream::unfold(follow, |mut follow| async move {
            let item = follow.next().await?;
            Some((item, follow))
        })
        .boxed();
        Self { inner, cursor }
    }

    /// The id of the last event delivered (`None` before the first): save
    /// it to resume elsewhere with [`Run::events_after`].
    pub fn cursor(&self) -> Option<u64> {
        match self.cursor.load(Ordering::Acquire) {
            0 => None,
            id => Some(id),
        }
    }
}

impl Follow {
    fn after(&self) -> Option<u64> {
        match self.cursor.load(Ordering::Acquire) {
            0 => None,
            id => Some(id),
        }
    }

    async fn next(&mut self) -> Option<Result<Event>> {
        loop {
            if self.done {
                return None;
            }
            let Some(stream) = self.stream.as_mut() else {
                match self
                    .client
                    .stream_run_events(&self.run_id, self.after())
                    .await
                {
                    Ok(stream) => {
                        self.stream = Some(stream);
                        self.fresh = true;
                    }
                    Err(error) => {
                        if let Some(error) = self.back_off(error).await {
                            return Some(Err(error));
                        }
                    }
                }
                continue;
            };
            match stream.next().await {
                Some(Ok(event)) => {
                    self.failures = 0;
                    self.fresh = false;
                    let id = event.id.parse::<u64>().ok();
                    if let Some(id) = id {
                        if id <= self.cursor.load(Ordering::Acquire) {
                            continue;
                        }
                        self.cursor.store(id, Ordering::Release);
                    }
                    if event.kind.is_terminal() {
                        self.done = true;
                    }
                    return Some(Ok(event));
                }
                Some(Err(error)) if error.retryable() => {
                    tracing::debug!(run = %self.run_id, %error, "the run's events were cut; resuming");
                    self.stream = None;
                    // A stream cut before it delivered anything counts as a
                    // failed open: reopen with backoff, not in a tight loop.
                    if self.fresh
                        && let Some(error) = self.back_off(error).await
                    {
                        return Some(Err(error));
                    }
                }
                Some(Err(error)) => {
                    self.done = true;
                    return Some(Err(error));
                }
                None => self.stream = None,
            }
        }
    }

    /// Waits before the next open, or gives up (returning the error).
    async fn back_off(&mut self, error: Error) -> Option<Error> {
        self.failures += 1;
        match self.client.retry_policy().delay(self.failures, &error) {
            Some(delay) => {
                tracing::debug!(run = %self.run_id, ?delay, %error, "reopening the run's events");
                tokio::time::sleep(delay).await;
                None
            }
            None => {
                self.done = true;
                Some(error)
            }
        }
    }
}

impl Stream for RunEvents {
    type Item = Result<Event>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
