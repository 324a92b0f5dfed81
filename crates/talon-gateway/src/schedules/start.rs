//! Starting a firing's run, once: the claiming node starts it at once,
//! and every node's sweep starts a claimed firing still without its run
//! [`ORPHAN_AFTER_MS`] after the claim (its node died in between). The run
//! is submitted under an idempotency key made from the task's id, and its
//! session is found by its key before it is made, so two nodes starting
//! the same firing make one session and one run. Once the run is linked,
//! the task follows it like a sub-agent's (`tasks::follow`), and a spent
//! `at` schedule with `deleteAfterRun` is deleted.

use talon_protocol::gateway::bounded::{SessionId, TaskId};
use talon_protocol::gateway::schedules::{Schedule, SchedulePayload, ScheduleSpec};
use talon_protocol::gateway::tasks::{Task, TaskKind, TaskStatus};
use talon_protocol::gateway::{ApiError, MultitaskStrategy, RunInput, Session};
use talon_store::{Owner, RunRequest};

use super::Schedules;
use crate::error::api_error;
use crate::runs::{Submit, new_id};

/// How long a claimed firing may stay without its run before another
/// node's sweep starts it.
const ORPHAN_AFTER_MS: u64 = 3_000;
/// Unstarted firings looked at per sweep.
const PER_SWEEP: u32 = 256;

/// Starts `task`'s run and links it; answers the task as it then is (ended
/// `failed`, saying why, if the run could not be made).
pub(crate) async fn start(schedules: &Schedules, task: Task) -> Task {
    let ledger = schedules.ledger();
    let store = ledger.engine().store();
    let schedule = match &task.schedule_id {
        Some(id) => store.schedule(id, &Owner::default()).await.ok().flatten(),
        None => None,
    };
    let started = match &schedule {
        Some(schedule) => submit(schedules, schedule, &task).await,
        None => Err(talon_protocol::gateway::refuse::not_found(
            "schedule",
            task.schedule_id.as_ref().map_or("", |s| s.as_str()),
        )),
    };
    let linked = match started {
        Ok((run_id, session_id)) => {
            let linked = ledger.link(task.clone(), &run_id, Some(&session_id)).await;
            if let Some(schedule) = schedule.filter(spent)
                && let Err(error) = store.delete_schedule(&schedule.id).await
            {
                super::log_store(&error, "a spent schedule could not be deleted");
            }
            linked
        }
        Err(error) => {
            let failed = Task {
                status: TaskStatus::Failed,
                ended_at: Some(store.now_ms()),
                error: Some(error),
                ..task.clone()
            };
            ledger.moved(failed, &task).await.ok().flatten()
        }
    };
    linked.unwrap_or(task)
}

/// Whether `schedule` is an `at` that fired and deletes itself.
fn spent(schedule: &Schedule) -> bool {
    matches!(schedule.schedule, ScheduleSpec::At { .. })
        && schedule.delete_after_run
        && schedule.state.next_run_at.is_none()
        && schedule.state.firings > 0
}

/// Submits the run of `task`, a firing of `schedule`, in its session:
/// answers its run and session ids.
async fn submit(
    schedules: &Schedules,
    schedule: &Schedule,
    task: &Task,
) -> Result<(talon_protocol::gateway::bounded::RunId, SessionId), ApiError> {
    let engine = schedules.ledger().engine();
    let store = engine.store();
    let subject = schedule.subject.as_ref().map(|s| s.as_str());
    let key = task.child_session_key.clone().ok_or_else(|| {
        ApiError::new(
            talon_protocol::gateway::ErrorCode::Internal,
            "a firing's task names no session",
        )
    })?;
    let session = match store
        .session_by_key(subject, key.as_str())
        .await
        .map_err(api_error)?
    {
        Some(session) => session,
        None => {
            let now = store.now_ms();
            let session = Session {
                id: SessionId::new(new_id("sess")?),
                key: key.clone(),
                agent_id: schedule.agent_id.clone(),
                subject: schedule.subject.clone(),
                parent_id: None,
                forked_at_message_id: None,
                metadata: Default::default(),
                created_at: now,
                updated_at: now,
            };
            match store.create_session(&session).await {
                Ok(()) => session,
                // Another node made it first: use that one.
                Err(talon_store::StoreError::Exists { .. }) => store
                    .session_by_key(subject, key.as_str())
                    .await
                    .map_err(api_error)?
                    .ok_or_else(|| {
                        ApiError::new(
                            talon_protocol::gateway::ErrorCode::Internal,
                            "a firing's session vanished",
                        )
                    })?,
                Err(error) => return Err(api_error(error)),
            }
        }
    };
    let SchedulePayload {
        message,
        timeout_seconds,
        ..
    } = &schedule.payload;
    let mut request = RunRequest::of_input(RunInput::Text(message.as_str().to_owned()));
    request.timeout_ms = timeout_seconds
        .filter(|s| *s > 0)
        .map(|s| s.saturating_mul(1_000));
    request.task_id = Some(task.id.clone());
    let run = engine
        .submit(Submit {
            agent_id: schedule.agent_id.clone(),
            session: session.clone(),
            request,
            // A schedule with a session of its own waits its turn there.
            strategy: MultitaskStrategy::Enqueue,
            idempotency: Some((firing_key(&task.id), "cron".to_owned())),
        })
        .await?;
    Ok((run.id, session.id))
}

/// The idempotency key of a firing's run.
fn firing_key(task: &TaskId) -> String {
    format!("cron\u{1f}{task}")
}

/// Starts every firing whose claiming node did not start it.
pub(crate) async fn sweep(schedules: &Schedules) {
    let store = schedules.ledger().engine().store();
    let queued = match store.tasks_in(&[TaskStatus::Queued], PER_SWEEP).await {
        Ok(queued) => queued,
        Err(error) => return super::log_store(&error, "unstarted firings could not be read"),
    };
    let now = store.now_ms();
    for task in queued {
        if task.kind == TaskKind::Cron
            && task.child_run_id.is_none()
            && now.saturating_sub(task.created_at) >= ORPHAN_AFTER_MS
        {
            tracing::info!(task = %task.id, "starting a firing its node did not start");
            start(schedules, task).await;
        }
    }
}
