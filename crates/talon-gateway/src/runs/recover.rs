//! Taking back the runs of a node that died (at start, and on
//! PostgreSQL whenever a lease lapses): a run whose terminal event was
//! committed has its row brought in line with it; one someone asked to
//! cancel is ended `cancelled`; one with no tool call in flight goes back
//! to the queue to resume ([`super::resume`]); any other is ended
//! `failed` (`unavailable`, `details.reason: "interrupted"`), saying why
//! it was not resumed.

use talon_protocol::event_data::{ApprovalResolvedData, RunQueuedData};
use talon_protocol::gateway::{ApiError, ApprovalStatus, ErrorCode, Run, RunStatus};
use talon_protocol::{Event, EventData};

use super::{Engine, approvals, ended_data, result_of, resume};

/// Why a run whose node died is ended instead of resumed.
#[derive(Debug)]
enum Blocker {
    /// Someone asked to cancel it.
    Cancelled,
    /// A tool call's effect is unknown (or the run was resumed too often).
    Unsafe(String),
}

impl Engine {
    /// Takes back a run whose node is gone: brought in line with its
    /// terminal event if it has one, else resumed if it can be, else
    /// ended.
    pub(super) async fn recover_orphan(&self, run: Run, orphaned: talon_store::Orphaned<'_>) {
        let store = &self.inner.store;
        let checkpoint = match store.run_checkpoint(&run.id).await {
            Ok(stored) => resume::RunCheckpoint::read(stored),
            Err(error) => {
                tracing::error!(%error, run = %run.id, "could not read an interrupted run's checkpoint");
                return;
            }
        };
        let ended = self.terminal_event(run.id.as_str()).await.is_some();
        let blocker = if ended {
            None
        } else if store.cancel_requested(&run.id).await.unwrap_or(false) {
            Some(Blocker::Cancelled)
        } else {
            resume::blocker(store, run.id.as_str(), &checkpoint)
                .await
                .map(Blocker::Unsafe)
        };
        if ended || blocker.is_some() {
            self.end_orphan(run, blocker).await;
            return;
        }
        let again = resume::RunCheckpoint {
            resumes: checkpoint.resumes + 1,
            ..checkpoint
        };
        match store
            .requeue_run(&run.id, orphaned, &again.to_value())
            .await
        {
            Ok(true) => {
                let mut queued = run.clone();
                queued.status = RunStatus::Queued;
                let event = self.run_event(
                    &queued,
                    EventData::RunQueued(RunQueuedData {
                        reason: "runtime".into(),
                    }),
                );
                if let Err(error) = store.append(vec![event]).await {
                    tracing::error!(%error, run = %run.id, "the run.queued event of a resumed run was not stored");
                }
                tracing::warn!(run = %run.id, resumes = again.resumes, "a run its node left live goes back to the queue to resume");
                self.inner.wake.notify_one();
            }
            Ok(false) => {}
            Err(error) => {
                tracing::error!(%error, run = %run.id, "could not put an interrupted run back in the queue")
            }
        }
    }

    /// The run's terminal event, if one was committed.
    async fn terminal_event(&self, run_id: &str) -> Option<Event> {
        let filter = talon_store::EventFilter {
            run_id: Some(run_id.to_owned()),
            types: vec![
                talon_protocol::EventType::RunCompleted,
                talon_protocol::EventType::RunFailed,
                talon_protocol::EventType::RunCancelled,
                talon_protocol::EventType::RunTimedOut,
            ],
            ..Default::default()
        };
        self.inner
            .store
            .after(None, &filter, 1)
            .await
            .ok()
            .and_then(|events| events.into_iter().next())
    }

    /// Ends a run whose node is gone (`blocker`: why it is not resumed).
    async fn end_orphan(&self, mut run: Run, blocker: Option<Blocker>) {
        let terminal = self.terminal_event(run.id.as_str()).await;
        let now = self.inner.store.now_ms();
        run.ended_at = Some(now);
        let event = match terminal {
            // It ended, but its row was not written: bring the row in line.
            Some(event) => {
                run.status = event.kind.ended_status().unwrap_or(RunStatus::Failed);
                None
            }
            None if matches!(blocker, Some(Blocker::Cancelled)) => {
                run.status = RunStatus::Cancelled;
                let mut data = ended_data(None);
                data.error = Some(
                    "the run was cancelled; its gateway stopped before it could end it".into(),
                );
                Some(self.run_event(&run, EventData::RunCancelled(data)))
            }
            None => {
                run.status = RunStatus::Failed;
                let why = match blocker {
                    Some(Blocker::Unsafe(why)) => why,
                    _ => "it could not be resumed".into(),
                };
                let error = ApiError::new(
                    ErrorCode::Unavailable,
                    format!(
                        "the gateway executing this run stopped before it ended; it was not resumed: {why}"
                    ),
                )
                .with_details(talon_protocol::gateway::ErrorDetails {reason: Some("interrupted".to_string()), node: Some(self.inner.node.to_string()), not_resumed: Some(why.to_string()), ..Default::default() });
                run.error = Some(error.clone());
                Some(self.run_event(&run, EventData::RunFailed(ended_data(Some(&error)))))
            }
        };
        let result = result_of(&run, None);
        // Its requests for approval go with it, reported before its end
        // (the node recovering it is the only one that does).
        let mut events = self.cancel_approvals(&run).await;
        events.extend(event);
        match self.end_run(&run, &result, events).await {
            Ok(Some(_)) => {
                tracing::warn!(run = %run.id, status = ?run.status, "ended a run its node left live");
            }
            Ok(None) => {}
            Err(error) => {
                tracing::error!(%error, run = %run.id, "could not end an interrupted run")
            }
        }
    }
}

impl Engine {
    /// Resolves `run`'s pending approvals `cancelled`; their events.
    async fn cancel_approvals(&self, run: &Run) -> Vec<Event> {
        let store = &self.inner.store;
        let pending = store
            .approvals(&talon_store::PendingFilter {
                status: Some("pending".into()),
                run_id: Some(run.id.clone().into_string()),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|error| {
                tracing::error!(%error, run = %run.id, "could not read an ended run's approvals");
                Vec::new()
            });
        let mut events = Vec::new();
        for approval in pending {
            if let Err(error) = approvals::cancel(store, approval.id.as_str()).await {
                tracing::error!(%error, approval = %approval.id, "could not cancel an approval");
                continue;
            }
            events.push(self.run_event(
                run,
                EventData::ApprovalResolved(ApprovalResolvedData {
                    approval_id: approval.id,
                    status: ApprovalStatus::Cancelled,
                    decision: None,
                    reason: Some("its run ended".into()),
                    reused: false,
                }),
            ));
        }
        if !events.is_empty() {
            self.resolved();
        }
        events
    }
}
