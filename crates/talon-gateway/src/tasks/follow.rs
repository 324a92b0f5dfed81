//! A task follows the run it tracks: each sweep reads every unfinished
//! task's child run and moves the task to match (`queued`, `running`, or
//! the run's end), posts what the task's policy asks for, cancels the
//! children of a cancelled parent run when its agent's policy says so,
//! and posts again the messages of ended tasks still due. Any node may
//! sweep: each move is a compare-and-set, so exactly one node makes it.
//! Process tasks are moved by the node that runs them; each sweep first
//! looks after processes ([`Ledger::police_processes`]).

use std::time::Duration;

use talon_protocol::gateway::tasks::{Task, TaskKind, TaskStatus};
use talon_protocol::gateway::{ApiError, RunStatus};
use talon_runtime::OnParentCancel;
use talon_store::CancelMode;

use crate::error::api_error;

use super::Ledger;

/// How often a node sweeps without being told a run changed.
const SWEEP: Duration = Duration::from_millis(500);
/// How long a task may have no run before it is `lost` (its spawn died
/// between recording the task and creating the run).
const NO_RUN_GRACE_MS: u64 = 60_000;
/// Tasks looked at per sweep.
const PER_SWEEP: u32 = 1_000;

/// The status a task tracking a run in `status` has.
fn status_of(status: RunStatus) -> Option<TaskStatus> {
    Some(match status {
        RunStatus::Queued => TaskStatus::Queued,
        RunStatus::Running | RunStatus::Waiting => TaskStatus::Running,
        RunStatus::Completed => TaskStatus::Succeeded,
        RunStatus::Failed => TaskStatus::Failed,
        RunStatus::Cancelled => TaskStatus::Cancelled,
        RunStatus::TimedOut => TaskStatus::TimedOut,
        _ => return None,
    })
}

/// Sweeps when a run ends on this node, when the store says runs changed,
/// and every [`SWEEP`], until the node drains.
pub(crate) async fn follow(ledger: Ledger) {
    let engine = ledger.engine().clone();
    // Processes this node ran before it restarted died with it.
    ledger.police_processes(true).await;
    let mut ended = engine.ended();
    let mut changed = engine.store().runs_changed();
    let mut tick = tokio::time::interval(SWEEP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            Ok(()) = ended.changed() => {}
            Ok(()) = changed.changed() => {}
            _ = tick.tick() => {}
        }
        if engine.draining() {
            return;
        }
        ledger.police_processes(false).await;
        ledger.sweep().await;
    }
}

impl Ledger {
    /// One pass over the unfinished tasks and the undelivered ones.
    pub(crate) async fn sweep(&self) {
        let store = self.engine().store();
        match store
            .tasks_in(&[TaskStatus::Queued, TaskStatus::Running], PER_SWEEP)
            .await
        {
            Ok(live) => {
                for task in live {
                    self.follow_one(task).await;
                }
            }
            Err(error) => tracing::warn!(%error, "tasks could not be read; sweeping again"),
        }
        if let Ok(due) = store.tasks_undelivered(PER_SWEEP).await {
            for task in due {
                self.deliver(task).await;
            }
        }
    }

    async fn follow_one(&self, task: Task) {
        // A process task is moved by its node ([`super::process`]).
        if task.kind == TaskKind::Process {
            return;
        }
        let store = self.engine().store();
        let now = store.now_ms();
        let Some(child) = task.child_run_id.clone() else {
            if now.saturating_sub(task.created_at) > NO_RUN_GRACE_MS {
                self.lose(task, "its run was never created").await;
            }
            return;
        };
        let run = match store.run(&child).await {
            Ok(Some(run)) => run,
            Ok(None) => return self.lose(task, "its run was deleted").await,
            Err(_) => return,
        };
        let Some(next) = status_of(run.status) else {
            return;
        };
        if next == task.status {
            if !next.is_terminal() {
                self.cascade(task).await;
            }
            return;
        }
        let read = task.clone();
        let mut moved = task;
        if moved.started_at.is_none() && next != TaskStatus::Queued {
            moved.started_at = run.started_at.or(Some(now));
        }
        // Every task passes through `running`, even one whose run started
        // and ended between two sweeps.
        let read = if read.status == TaskStatus::Queued && next.is_terminal() {
            let running = Task {
                status: TaskStatus::Running,
                ..moved.clone()
            };
            match self.moved(running, &read).await {
                Ok(Some(stored)) => {
                    let stored = self.deliver(stored).await;
                    moved = stored.clone();
                    stored
                }
                _ => return,
            }
        } else {
            read
        };
        moved.status = next;
        if next.is_terminal() {
            moved.ended_at = run.ended_at.or(Some(now));
            moved.error = run.error.clone();
            moved.result = store
                .run_result(&child)
                .await
                .ok()
                .flatten()
                .and_then(|r| r.output.and_then(|o| o.text));
        }
        if let Ok(Some(stored)) = self.moved(moved, &read).await {
            self.deliver(stored).await;
        }
    }

    /// Cancels `task` when the run that started it was cancelled and its
    /// agent's `subagents.onParentCancel` is `cancel` (the default).
    async fn cascade(&self, task: Task) {
        let store = self.engine().store();
        let Some(parent) = &task.run_id else {
            return;
        };
        let Ok(Some(parent)) = store.run(parent).await else {
            return;
        };
        if parent.status != RunStatus::Cancelled {
            return;
        }
        let policy = self
            .engine()
            .host()
            .config()
            .document()
            .ok()
            .and_then(|d| d.agents.subagents(parent.agent_id.as_str()))
            .and_then(|s| s.on_parent_cancel)
            .unwrap_or(OnParentCancel::Cancel);
        if policy == OnParentCancel::Cancel {
            let _ = self
                .cancel(task, Some("the run that spawned it was cancelled"))
                .await;
        }
    }

    /// Ends `task` `lost`, saying why.
    pub(super) async fn lose(&self, task: Task, why: &str) {
        let lost = Task {
            status: TaskStatus::Lost,
            ended_at: Some(self.engine().store().now_ms()),
            error: Some(talon_protocol::gateway::refuse::task_lost(why)),
            ..task.clone()
        };
        if let Ok(Some(stored)) = self.moved(lost, &task).await {
            self.deliver(stored).await;
        }
    }

    /// Cancels a task that has not ended, and the run it tracks:
    /// `conflict` once it has ended. `reason` becomes its last progress
    /// line.
    pub(crate) async fn cancel(&self, task: Task, reason: Option<&str>) -> Result<Task, ApiError> {
        let store = self.engine().store();
        if task.kind == TaskKind::Process && !task.status.is_terminal() {
            // Killed here if this node runs it; else its node kills it
            // on its next sweep, seeing the task ended.
            self.engine()
                .processes()
                .kill(task.id.as_str(), "killed by tasks.cancel");
        }
        let mut read = task;
        let mut run_cancelled = None;
        // Another change may land between the read and the write (its run
        // linked meanwhile): read again and retry while the task has not
        // ended, cancelling the run each read names.
        for _ in 0..8 {
            if read.status.is_terminal() {
                return Err(talon_protocol::gateway::refuse::task_ended(
                    read.id.as_str(),
                    read.status.as_str(),
                ));
            }
            if let Some(child) = &read.child_run_id
                && run_cancelled.as_ref() != Some(child)
            {
                // A run that has ended meanwhile is left as it is: the
                // task then ends with it.
                let _ = self
                    .engine()
                    .cancel(child.as_str(), CancelMode::Cancel, Duration::ZERO)
                    .await;
                run_cancelled = Some(child.clone());
            }
            let cancelled = Task {
                status: TaskStatus::Cancelled,
                ended_at: Some(store.now_ms()),
                progress_summary: reason
                    .map(|r| format!("cancelled: {r}"))
                    .or(read.progress_summary.clone()),
                ..read.clone()
            };
            if let Some(stored) = self.moved(cancelled, &read).await.map_err(api_error)? {
                return Ok(self.deliver(stored).await);
            }
            read = store
                .task(&read.id, &talon_store::Owner::default())
                .await
                .map_err(api_error)?
                .ok_or_else(|| {
                    talon_protocol::gateway::refuse::not_found("task", read.id.as_str())
                })?;
        }
        Err(talon_protocol::gateway::refuse::task_busy(read.id.as_str()))
    }
}
