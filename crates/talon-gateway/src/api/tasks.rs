//! `tasks.*`: the ledger of background tasks as callers read and change
//! it. A bound token sees the tasks its subject's runs started (and, with
//! agents, runs of those agents); another's are `not_found`, as runs are.

use talon_protocol::gateway::bounded::TaskId;
use talon_protocol::gateway::params::{
    TaskRef, TasksCancelParams, TasksEventsParams, TasksEventsResult, TasksNotifyParams,
};
use talon_protocol::gateway::tasks::{
    DeliveryStatus, NotifyPolicy, Task, TasksListParams, TasksListResult,
};
use talon_protocol::gateway::{ApiError, refuse};

use crate::auth::identity::Caller;
use crate::error::api_error;
use crate::state::Api;
use crate::tasks::Ledger;

impl Api {
    /// The task `id`, if the caller may see it.
    async fn task_for(&self, caller: &Caller, id: &TaskId) -> Result<Task, ApiError> {
        self.store
            .task(id, &caller.owner())
            .await
            .map_err(api_error)?
            .ok_or_else(|| refuse::not_found("task", id.as_str()))
    }

    pub(super) async fn list_tasks(
        &self,
        caller: &Caller,
        p: TasksListParams,
    ) -> Result<TasksListResult, ApiError> {
        p.check()?;
        let cursor = match p.cursor.as_ref().map(|c| c.as_str()) {
            None => None,
            Some(id) => {
                let task = self
                    .store
                    .task(&TaskId::new(id), &caller.owner())
                    .await
                    .ok()
                    .flatten();
                let task = task.ok_or_else(|| refuse::cursor_not_a_task(id))?;
                Some((task.id, task.created_at))
            }
        };
        let filter = talon_store::TaskFilter {
            statuses: p.status.unwrap_or_default(),
            kind: p.kind,
            session_id: p.session_id.map(|s| s.as_str().to_owned()),
            run_id: p.run_id.map(|r| r.as_str().to_owned()),
            owner: caller.owner(),
        };
        let limit = super::limit(p.limit);
        let after = cursor
            .as_ref()
            .map(|(id, created_at)| talon_store::TaskCursor {
                id: id.as_str(),
                created_at: *created_at,
            });
        let tasks = self
            .store
            .list_tasks(&filter, after, limit + 1)
            .await
            .map_err(api_error)?;
        let (tasks, next_cursor) = super::runs::page_of(tasks, limit, |t| t.id.clone().into());
        Ok(TasksListResult { tasks, next_cursor })
    }

    pub(super) async fn get_task(&self, caller: &Caller, p: TaskRef) -> Result<Task, ApiError> {
        self.task_for(caller, &p.task_id).await
    }

    pub(super) async fn cancel_task(
        &self,
        caller: &Caller,
        p: TasksCancelParams,
    ) -> Result<Task, ApiError> {
        let task = self.task_for(caller, &p.task_id).await?;
        let reason = p.reason.as_ref().map(|r| r.as_str());
        tracing::info!(task = %task.id, reason = reason.unwrap_or(""), "task cancelled by a caller");
        Ledger::new(self.engine.clone()).cancel(task, reason).await
    }

    pub(super) async fn notify_task(
        &self,
        caller: &Caller,
        p: TasksNotifyParams,
    ) -> Result<Task, ApiError> {
        if p.notify_policy == NotifyPolicy::Unknown {
            return Err(refuse::unknown_notify_policy());
        }
        let task = self.task_for(caller, &p.task_id).await?;
        if task.status.is_terminal() {
            return Err(refuse::task_ended(task.id.as_str(), task.status.as_str()));
        }
        let read = task.clone();
        let changed = Task {
            notify_policy: p.notify_policy,
            delivery_status: if p.notify_policy == NotifyPolicy::Silent {
                DeliveryStatus::NotApplicable
            } else {
                DeliveryStatus::Pending
            },
            ..task
        };
        match Ledger::new(self.engine.clone())
            .moved(changed, &read)
            .await
            .map_err(api_error)?
        {
            Some(stored) => Ok(stored),
            // It moved meanwhile: answer as it now is, or say it ended.
            None => {
                let now = self.task_for(caller, &p.task_id).await?;
                if now.status.is_terminal() {
                    Err(refuse::task_ended(now.id.as_str(), now.status.as_str()))
                } else {
                    Box::pin(self.notify_task(caller, p)).await
                }
            }
        }
    }

    pub(super) async fn task_events(
        &self,
        caller: &Caller,
        p: TasksEventsParams,
    ) -> Result<TasksEventsResult, ApiError> {
        let task = self.task_for(caller, &p.task_id).await?;
        let after = match p.after.as_ref().map(|c| c.as_str()) {
            None => None,
            Some(text) => Some(
                text.parse::<u64>()
                    .map_err(|_| refuse::after_not_an_event_id(text))?,
            ),
        };
        let filter = talon_store::EventFilter {
            task_id: Some(task.id.as_str().to_owned()),
            raw: caller.is_admin(),
            ..Default::default()
        };
        let events = self
            .store
            .after(after, &filter, super::limit(p.limit))
            .await
            .map_err(api_error)?;
        // Done once the page holds the task's last change: an ended
        // task's `task.updated` whose delivery has settled.
        let done = events.iter().any(|e| {
            e.kind == talon_protocol::EventType::TaskUpdated
                && serde_json::from_value::<Task>(e.data.clone()).is_ok_and(|t| {
                    t.status.is_terminal() && t.delivery_status != DeliveryStatus::Pending
                })
        });
        Ok(TasksEventsResult { events, done })
    }
}
