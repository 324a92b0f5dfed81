//! What callers ask of runs: accept one (`submit`, under the node's lane
//! lock, with the session's `multitaskStrategy` and the idempotency key),
//! cancel one (here, or through the store for another node), and wait for
//! one's result (woken by this node's runs ending, polling for others').

use std::sync::atomic::Ordering;
use std::time::Duration;
use talon_protocol::gateway::bounded::RunId;

use talon_protocol::EventData;
use talon_protocol::event_data::{RunCreatedData, RunQueuedData};
use talon_protocol::gateway::{
    ApiError, ErrorCode, MultitaskStrategy, Run, RunInput, RunResult, RunStatus,
};

use super::{Engine, Submit, WAIT_POLL, ended_data, new_id, result_of};
use crate::error::api_error;
use talon_store::CancelMode;

impl Engine {
    /// Accepts a run: `queued` in the store with its `run.created` event
    /// (and `run.queued` when it waits), or the first run of the same
    /// idempotency key.
    pub(crate) async fn submit(&self, submit: Submit) -> Result<Run, ApiError> {
        if self.inner.draining.load(Ordering::SeqCst) {
            return Err(ApiError::new(
                ErrorCode::Unavailable,
                "this gateway is shutting down; send the run to another node or retry",
            )
            .with_retry_after_ms(1_000));
        }
        let store = &self.inner.store;
        let _lane = self.inner.lane.lock().await;
        let live: Vec<Run> = store
            .session_runs(&submit.session.id)
            .await
            .map_err(api_error)?
            .into_iter()
            .filter(|r| !r.status.is_terminal())
            .collect();
        let busy = !live.is_empty();
        if busy {
            match submit.strategy {
                MultitaskStrategy::Reject => {
                    return Err(
                        talon_protocol::gateway::refuse::session_busy().with_details(
                            talon_protocol::gateway::ErrorDetails {
                                active_run_ids: live
                                    .iter()
                                    .map(|r| r.id.clone())
                                    .collect::<Vec<_>>(),
                                ..Default::default()
                            },
                        ),
                    );
                }
                MultitaskStrategy::Interrupt | MultitaskStrategy::Rollback => {
                    let rollback = if submit.strategy == MultitaskStrategy::Rollback {
                        CancelMode::Rollback
                    } else {
                        CancelMode::Cancel
                    };
                    for run in &live {
                        self.cancel(run.id.as_str(), rollback, Duration::ZERO)
                            .await?;
                    }
                }
                MultitaskStrategy::Enqueue => {}
            }
        }
        let environment_busy = match &submit.request.environment_id {
            Some(id) => store.environment_busy(id).await.map_err(api_error)?,
            None => false,
        };
        let queued = store
            .queued_runs(self.inner.limits.max_queued)
            .await
            .map_err(api_error)?;
        if queued.len() >= self.inner.limits.max_queued as usize {
            return Err(ApiError::new(
                ErrorCode::Unavailable,
                format!(
                    "{} runs are already waiting; retry later",
                    self.inner.limits.max_queued
                ),
            )
            .with_retry_after_ms(1_000));
        }
        let run = Run {
            summary: submit.request.input.summary(),
            model: None,
            subject: submit.session.subject.clone(),
            id: RunId::new(new_id("run")?),
            agent_id: submit.agent_id.clone(),
            session_id: Some(submit.session.id.clone()),
            session_key: Some(submit.session.key.clone()),
            status: RunStatus::Queued,
            created_at: self.inner.store.now_ms(),
            started_at: None,
            ended_at: None,
            usage: None,
            error: None,
        };
        let mut request = submit.request.clone();
        request.traceparent = talon_protocol::trace::current().map(|c| c.to_string());
        request.request_id = crate::observe::request_id();
        let (key, hash) = match &submit.idempotency {
            Some((key, hash)) => (Some(key.as_str()), hash.as_str()),
            None => (None, ""),
        };
        let (run, created) = store
            .create_run(&run, key, hash, &self.inner.node, Some(&request))
            .await
            .map_err(api_error)?;
        if !created {
            return Ok(run);
        }
        let input = match &submit.request.input {
            RunInput::Text(text) => text.clone(),
            RunInput::Messages(messages) => messages
                .last()
                .map(|m| m.content.clone())
                .unwrap_or_default(),
        };
        let mut events =
            vec![self.run_event(&run, EventData::RunCreated(RunCreatedData { input }))];
        let reason = if busy && submit.strategy == MultitaskStrategy::Enqueue {
            Some("session")
        } else if environment_busy {
            // Another run has the environment's workspace: this one waits
            // for it (claims keep one live run per environment).
            Some("environment")
        } else if self.running() >= self.inner.limits.max_concurrent {
            Some("runtime")
        } else {
            None
        };
        if let Some(reason) = reason {
            events.push(self.run_event(
                &run,
                EventData::RunQueued(RunQueuedData {
                    reason: reason.into(),
                }),
            ));
        }
        for event in &mut events {
            event.task_id.clone_from(&submit.request.task_id);
        }
        self.append(events).await.map_err(api_error)?;
        self.inner.metrics.run_created();
        tracing::info!(
            target: "talon::run",
            run_id = %run.id,
            agent = %run.agent_id,
            session_id = %submit.session.id,
            request_id = crate::observe::request_id().unwrap_or_default(),
            queued = reason.unwrap_or(""),
            "run created"
        );
        // This node claims under the lane too ([`Engine::fill`]): it
        // cannot start the run, and log or append its start, before its
        // creation is appended and logged.
        drop(_lane);
        self.inner.wake.notify_one();
        Ok(run)
    }

    /// Cancels a run: at once when it is queued; through its token when
    /// this node executes it; through the store when another node does.
    /// With [`CancelMode::Rollback`], its messages are dropped. Waits up to `settle` for
    /// it to end, and returns it as it then is.
    pub(crate) async fn cancel(
        &self,
        run_id: &str,
        mode: CancelMode,
        settle: Duration,
    ) -> Result<Run, ApiError> {
        let store = &self.inner.store;
        let mut ended = self.inner.ended.subscribe();
        let run = store
            .run(&RunId::new(run_id))
            .await
            .map_err(api_error)?
            .ok_or_else(|| talon_protocol::gateway::refuse::not_found("run", run_id))?;
        if run.status.is_terminal() {
            return Ok(run);
        }
        if run.status == RunStatus::Queued {
            let mut cancelled = run.clone();
            cancelled.status = RunStatus::Cancelled;
            cancelled.ended_at = Some(self.inner.store.now_ms());
            let result = result_of(&cancelled, None);
            let mut data = ended_data(None);
            data.error = Some("the run was cancelled before it started".into());
            let told = vec![self.run_event(&cancelled, EventData::RunCancelled(data))];
            if self
                .end_run(&cancelled, &result, told)
                .await
                .map_err(api_error)?
                .is_some()
            {
                self.inner.ended.send_modify(|n| *n += 1);
                return Ok(cancelled);
            }
            // Claimed meanwhile: cancel it where it runs.
        }
        let local = self.active().get(run_id).cloned();
        match local {
            Some(active) => {
                active
                    .rollback
                    .fetch_or(mode == CancelMode::Rollback, Ordering::SeqCst);
                active.cancel.cancel();
            }
            None => {
                store
                    .request_cancel(&RunId::new(run_id), mode)
                    .await
                    .map_err(api_error)?;
            }
        }
        let deadline = tokio::time::Instant::now() + settle;
        loop {
            let run = store
                .run(&RunId::new(run_id))
                .await
                .map_err(api_error)?
                .ok_or_else(|| talon_protocol::gateway::refuse::not_found("run", run_id))?;
            if run.status.is_terminal() || tokio::time::Instant::now() >= deadline {
                return Ok(run);
            }
            let _ = tokio::time::timeout_at(
                deadline.min(tokio::time::Instant::now() + WAIT_POLL),
                ended.changed(),
            )
            .await;
        }
    }

    /// Waits for a run to end, at most `timeout`: its result, or
    /// `accepted` when the wait's own deadline passed first.
    pub(crate) async fn wait(
        &self,
        run_id: &RunId,
        timeout: Option<Duration>,
    ) -> Result<RunResult, ApiError> {
        let store = &self.inner.store;
        let timeout = timeout
            .unwrap_or(self.inner.limits.default_wait)
            .min(self.inner.limits.max_wait);
        let deadline = tokio::time::Instant::now() + timeout;
        let mut ended = self.inner.ended.subscribe();
        let mut runs_changed = store.runs_changed();
        // A sub-agent's run: its result names the task that follows it.
        let task_id = store
            .task_of_child_run(run_id)
            .await
            .map_err(api_error)?
            .map(|t| t.id);
        let of = |mut result: RunResult| {
            result.task_id.clone_from(&task_id);
            result
        };
        loop {
            runs_changed.borrow_and_update();
            let run = store.run(run_id).await.map_err(api_error)?.ok_or_else(|| {
                talon_protocol::gateway::refuse::not_found("run", run_id.as_str())
            })?;
            if run.status.is_terminal() {
                let result = store.run_result(run_id).await.map_err(api_error)?;
                return Ok(of(result.unwrap_or_else(|| result_of(&run, None))));
            }
            // Past the wait's deadline, or this node is shutting down:
            // the run goes on (here until the grace ends, or on the next
            // node); the caller waits again.
            if tokio::time::Instant::now() >= deadline || self.inner.draining.load(Ordering::SeqCst)
            {
                return Ok(of(result_of(&run, None)));
            }
            // A run of this node wakes the wait when it ends; one of
            // another node when its end is notified (PostgreSQL), else on
            // the next poll.
            let _ = tokio::time::timeout_at(
                deadline.min(tokio::time::Instant::now() + WAIT_POLL),
                async {
                    tokio::select! {
                        _ = ended.changed() => {}
                        _ = runs_changed.changed() => {}
                    }
                },
            )
            .await;
        }
    }
}
