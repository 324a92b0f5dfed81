//! Background tasks: the ledger of detached work (`talon_store`'s `tasks`
//! table) as the gateway keeps it. Two kinds so far: a model's
//! `sessions_spawn` ([`spawn`]) starts a child run of an agent in a
//! session of its own and records a task that follows it; a command the
//! model's `exec` leaves running ([`process`]) is a task its node keeps
//! up to date until the process ends (or the node dies: `lost`).
//!
//! - Every change to a task is a compare-and-set in the store on the
//!   version it was read at (`updatedAt`), followed by its `task.updated`
//!   event (carrying `taskId`): of several nodes, sweeps or callers
//!   changing one task exactly one wins and the others read it again, and
//!   a terminal task's status never changes ([`Ledger::moved`]).
//! - The task follows its child run: [`follow`] looks over every unfinished
//!   task when a run ends on this node, when the store says runs changed
//!   (PostgreSQL), and every half second, so a task whose child run
//!   survived a restart (runs are durable) stays live and ends with it.
//! - Its result reaches the session that started it by its notification
//!   policy ([`deliver`]): a system message in that session, posted at
//!   least once and de-duplicated by a message id made from the task and
//!   its status; an ended task whose message is still due is posted again
//!   by the next sweep.

mod deliver;
pub(crate) mod follow;
pub(crate) mod process;
pub(crate) mod spawn;

use talon_protocol::gateway::tasks::Task;
use talon_protocol::{Event, EventData};
use talon_store::{StoreError, TaskOwner};

use crate::runs::Engine;

/// The ledger's writes, each with its event.
#[derive(Debug, Clone)]
pub(crate) struct Ledger {
    engine: Engine,
}

impl Ledger {
    /// The ledger of `engine`'s store.
    pub(crate) fn new(engine: Engine) -> Self {
        Self { engine }
    }

    /// `task.updated` for `task` as it now is.
    fn event(&self, task: &Task) -> Event {
        let (kind, data) = EventData::TaskUpdated(task.clone()).into_parts();
        Event {
            version: 1,
            id: talon_protocol::gateway::bounded::EventId::default(),
            ts: task.updated_at,
            kind,
            run_id: None,
            // A schedule's firing has no parent session: its events go
            // with its run's session, so its subject's tokens see them.
            session_id: task
                .session_id
                .clone()
                .or_else(|| task.child_session_id.clone()),
            session_key: task
                .session_key
                .clone()
                .or_else(|| task.child_session_key.clone()),
            subject: None,
            task_id: Some(task.id.clone()),
            agent_id: task.agent_id.clone(),
            request_id: None,
            data,
            raw: None,
        }
    }

    /// Records a new task and appends its first `task.updated`.
    pub(crate) async fn create(&self, task: &Task, owner: TaskOwner<'_>) -> Result<(), StoreError> {
        self.engine.store().create_task(task, owner).await?;
        self.engine.append(vec![self.event(task)]).await?;
        Ok(())
    }

    /// Appends the first `task.updated` of a task the store already holds
    /// (a schedule's firing, stored with its claim).
    pub(crate) async fn announce(&self, task: &Task) {
        if let Err(error) = self.engine.append(vec![self.event(task)]).await {
            tracing::warn!(task = %task.id, %error, "a new task's event could not be appended");
        }
    }

    /// Changes task `read` (as it was read) to `next`, stamped now, if
    /// nothing changed it since, appending `task.updated`: `None` when
    /// another node, sweep or caller got there first (nothing is written;
    /// read it again), or when `next` would move an ended task.
    pub(crate) async fn moved(
        &self,
        mut next: Task,
        read: &Task,
    ) -> Result<Option<Task>, StoreError> {
        next.updated_at = self
            .engine
            .store()
            .now_ms()
            .max(read.updated_at.saturating_add(1));
        if !self
            .engine
            .store()
            .update_task(&next, read.updated_at)
            .await?
        {
            return Ok(None);
        }
        self.engine.append(vec![self.event(&next)]).await?;
        Ok(Some(next))
    }

    /// Links `task` to the run that does its work (and that run's
    /// session), reading it again while another change (a caller's
    /// `tasks.notify`) lands first. A task cancelled while its run was
    /// being made (cancel during spawn) is not linked, and the run is
    /// cancelled: no run goes on with no task following it. `None` when
    /// the task is gone or kept changing (it is then `lost` a minute on).
    pub(crate) async fn link(
        &self,
        task: Task,
        run: &talon_protocol::gateway::bounded::RunId,
        session: Option<&talon_protocol::gateway::bounded::SessionId>,
    ) -> Option<Task> {
        let mut read = task;
        for _ in 0..8 {
            if read.status.is_terminal() && read.child_run_id.is_none() {
                tracing::info!(task = %read.id, run = %run, "a task ended before its run was linked; cancelling the run");
                let _ = self
                    .engine
                    .cancel(
                        run.as_str(),
                        talon_store::CancelMode::Cancel,
                        std::time::Duration::ZERO,
                    )
                    .await;
                return Some(read);
            }
            if read.child_run_id.is_some() {
                return Some(read);
            }
            let linked = Task {
                child_run_id: Some(run.clone()),
                child_session_id: session.cloned().or(read.child_session_id.clone()),
                ..read.clone()
            };
            match self.moved(linked, &read).await {
                Ok(Some(linked)) => return Some(linked),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(task = %read.id, %error, "a task could not be linked to its run");
                }
            }
            read = self
                .engine
                .store()
                .task(&read.id, &talon_store::Owner::default())
                .await
                .ok()
                .flatten()?;
        }
        tracing::warn!(task = %read.id, "a task kept changing; it is lost if never linked");
        None
    }

    /// The engine it writes for.
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }
}
