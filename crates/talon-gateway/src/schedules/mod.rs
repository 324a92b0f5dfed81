//! Schedules: runs of an agent the clock starts. Every node with
//! `cron.enabled` (the default) runs the scheduler ([`run`]); the
//! schedules live in the store, so any node fires any schedule.
//!
//! - **Exactly once.** A due slot is fired by [`Schedules::fire`]: in one
//!   store transaction the schedule moves to its next slot if no other node
//!   moved it since it was read (compare-and-set on `updatedAt`), and the
//!   firing's task (`cron`, `queued`) is stored. Of several nodes seeing the
//!   slot, one claims it. The task's run is then started by its idempotency
//!   key ([`start`]): by the claiming node at once, or, if that node died
//!   before, by any node's sweep a few seconds later; either way one run.
//! - **Catch-up.** The next slot is always the first after now, so a node
//!   that was down never replays every tick it missed. A slot fired more
//!   than [`CATCH_UP_AFTER_MS`] late was missed: `catchUp: run_once`
//!   (default) fires it once, `skip` counts it in `state.skipped` and
//!   fires nothing.
//! - **No pile-up.** A slot due while the schedule's last firing is still
//!   live is skipped (and counted); one due while `cron.maxConcurrentRuns`
//!   firings are live waits for room.
//! - **Wake-ups.** The scheduler sleeps until the soonest slot, at most
//!   [`MAX_SLEEP`] (another node may have made a sooner one), and wakes at
//!   once when a method on this node makes or changes a schedule.

mod slots;
pub(crate) mod start;

use std::sync::Arc;
use std::time::Duration;

use talon_protocol::gateway::ApiError;
use talon_protocol::gateway::bounded::{SessionKey, TaskId};
use talon_protocol::gateway::schedules::{CATCH_UP_AFTER_MS, CatchUp, Schedule, ScheduleSpec};
use talon_protocol::gateway::tasks::{DeliveryStatus, NotifyPolicy, Task, TaskKind};
use talon_store::{Owner, StoreError, TaskOwner};

use crate::error::api_error;
use crate::tasks::Ledger;

pub(crate) use slots::check;

/// The longest the scheduler sleeps without looking at the store.
const MAX_SLEEP: Duration = Duration::from_secs(1);
/// Due schedules fired per pass.
const PER_PASS: u32 = 256;
/// The default of `cron.maxConcurrentRuns`.
const DEFAULT_MAX_CONCURRENT: u32 = 8;

/// The node's scheduler: fires schedules and is woken by the methods that
/// change them (cheap to clone).
#[derive(Debug, Clone)]
pub(crate) struct Schedules {
    ledger: Ledger,
    wake: Arc<tokio::sync::Notify>,
}

/// Why a firing happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// Its slot came.
    Clock,
    /// `schedules.run`.
    Now,
}

impl Schedules {
    /// The scheduler over `ledger`'s store.
    pub(crate) fn new(ledger: Ledger) -> Self {
        Self {
            ledger,
            wake: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Tells the scheduler a schedule changed on this node.
    pub(crate) fn changed(&self) {
        self.wake.notify_one();
    }

    pub(crate) fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Whether this node fires schedules (`cron.enabled`).
    fn enabled(&self) -> bool {
        self.ledger
            .engine()
            .host()
            .config()
            .document()
            .map_or(true, |d| d.cron.enabled != Some(false))
    }

    fn max_concurrent(&self) -> u64 {
        let max = self
            .ledger
            .engine()
            .host()
            .config()
            .document()
            .ok()
            .and_then(|d| d.cron.max_concurrent_runs)
            .unwrap_or(DEFAULT_MAX_CONCURRENT);
        u64::from(max)
    }

    /// One pass: fires every due schedule, then starts firings whose node
    /// died before starting them. Answers when to look again.
    async fn pass(&self) -> Duration {
        let store = self.ledger.engine().store();
        let enabled = self.enabled();
        if enabled {
            match store.due_schedules(store.now_ms(), PER_PASS).await {
                Ok(due) => {
                    for schedule in due {
                        if let Err(error) = self.fire(schedule, Trigger::Clock, None).await {
                            tracing::warn!(%error.message, "a schedule could not fire");
                        }
                    }
                }
                Err(error) => tracing::warn!(%error, "schedules could not be read"),
            }
        }
        start::sweep(self).await;
        let now = store.now_ms();
        match store.next_slot().await {
            Ok(Some(at)) if enabled => Duration::from_millis(at.saturating_sub(now)).min(MAX_SLEEP),
            _ => MAX_SLEEP,
        }
    }

    /// Fires `read` (as it was read): claims its slot and starts the
    /// firing's run. `Ok(None)` when nothing fired: another node claimed the
    /// slot, the last firing is still live (counted as skipped), the slot
    /// was missed under `catchUp: skip`, or firings are at their cap.
    /// A firing `schedules.run` asks for under an idempotency key has the
    /// task id `id` made from it.
    pub(crate) async fn fire(
        &self,
        read: Schedule,
        trigger: Trigger,
        id: Option<TaskId>,
    ) -> Result<Option<Task>, ApiError> {
        let store = self.ledger.engine().store();
        let now = store.now_ms();
        let slot = read.state.next_run_at.unwrap_or(now);
        let slots = check(&read.schedule, read.created_at)
            .map_err(|why| talon_protocol::gateway::refuse::bad_schedule(&why))?;
        let mut next = read.clone();
        next.updated_at = now.max(read.updated_at.saturating_add(1));
        if trigger == Trigger::Clock {
            // The first slot after now: missed ticks are never replayed.
            next.state.next_run_at = slots.next_after(now.max(slot));
        }
        if let Some(live) = self.live_firing(&read).await? {
            if trigger == Trigger::Now {
                return Err(talon_protocol::gateway::refuse::schedule_firing(
                    read.id.as_str(),
                    live.as_str(),
                ));
            }
            return skip(store, next, read.updated_at).await;
        }
        let late = now.saturating_sub(slot) > CATCH_UP_AFTER_MS;
        if trigger == Trigger::Clock {
            if late && read.catch_up == CatchUp::Skip {
                return skip(store, next, read.updated_at).await;
            }
            let live = store
                .live_task_count(TaskKind::Cron)
                .await
                .map_err(api_error)?;
            if live >= self.max_concurrent() {
                // Waits for room; the slot stays due.
                return Ok(None);
            }
        }
        // A slot's firing has an id made from the schedule and the slot:
        // the store could not hold two firings of one slot even if two
        // claims both won.
        let id = match trigger {
            Trigger::Clock => Some(TaskId::new(format!("task_{}_{slot}", read.id))),
            Trigger::Now => id,
        };
        let task = firing_task(&read, id, now)?;
        next.state.last_run_at = Some(now);
        next.state.last_task_id = Some(task.id.clone());
        next.state.firings += 1;
        let owner = TaskOwner {
            subject: read.subject.as_ref().map(|s| s.as_str()),
            agent_id: Some(read.agent_id.as_str()),
            token_id: None,
        };
        match store
            .claim_firing(&next, read.updated_at, Some((&task, owner)))
            .await
        {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(error) => return Err(api_error(error)),
        }
        self.ledger.announce(&task).await;
        tracing::info!(schedule = %read.id, task = %task.id, "schedule fired");
        Ok(Some(start::start(self, task).await))
    }

    /// The task of the schedule's last firing, if it has not ended.
    async fn live_firing(&self, schedule: &Schedule) -> Result<Option<TaskId>, ApiError> {
        let Some(id) = &schedule.state.last_task_id else {
            return Ok(None);
        };
        let task = self
            .ledger
            .engine()
            .store()
            .task(id, &Owner::default())
            .await
            .map_err(api_error)?;
        Ok(task.filter(|t| !t.status.is_terminal()).map(|t| t.id))
    }
}

/// Counts `next`'s slot as skipped: its claim moves the schedule on (the
/// compare-and-set on `read_at`) with no firing.
async fn skip(
    store: &talon_store::Store,
    mut next: Schedule,
    read_at: u64,
) -> Result<Option<Task>, ApiError> {
    next.state.skipped += 1;
    store
        .claim_firing(&next, read_at, None)
        .await
        .map_err(api_error)?;
    Ok(None)
}

/// The task of a firing of `schedule` at `now`: `cron`, `queued`,
/// `silent` (OpenClaw's default for cron), its run's session named.
fn firing_task(schedule: &Schedule, id: Option<TaskId>, now: u64) -> Result<Task, ApiError> {
    let id = match id {
        Some(id) => id,
        None => TaskId::new(crate::runs::new_id("task")?),
    };
    let session_key = schedule
        .session_key
        .clone()
        .unwrap_or_else(|| SessionKey::new(format!("cron:{}:{id}", schedule.id)));
    let talon_protocol::gateway::schedules::SchedulePayload { message, .. } = &schedule.payload;
    Ok(Task {
        notify_policy: NotifyPolicy::Silent,
        label: Some(schedule.name.as_str().to_owned()),
        description: Some(message.as_str().to_owned()),
        agent_id: Some(schedule.agent_id.clone()),
        subject: schedule.subject.clone(),
        child_session_key: Some(session_key),
        schedule_id: Some(schedule.id.clone()),
        delivery_status: DeliveryStatus::NotApplicable,
        ..Task::queued(id, TaskKind::Cron, now)
    })
}

/// The first slot of a schedule made or re-timed at `now`: the first
/// after now (an `every` made now fires first one interval on), or an
/// `at` that is not past (one in the past never fires).
pub(crate) fn first_slot(spec: &ScheduleSpec, now: u64) -> Result<Option<u64>, String> {
    let slots = check(spec, now)?;
    Ok(match spec {
        ScheduleSpec::At { .. } => slots.next_after(now.saturating_sub(1)),
        _ => slots.next_after(now),
    })
}

/// Runs the scheduler until the node drains.
pub(crate) async fn run(schedules: Schedules) {
    loop {
        if schedules.ledger.engine().draining() {
            return;
        }
        let sleep = schedules.pass().await;
        tokio::select! {
            () = tokio::time::sleep(sleep) => {}
            () = schedules.wake.notified() => {}
        }
    }
}

/// A store error as the scheduler logs it.
pub(crate) fn log_store(error: &StoreError, what: &str) {
    tracing::warn!(%error, "{what}");
}
