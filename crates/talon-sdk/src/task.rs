//! Background tasks: [`Task`], a handle on one (a sub-agent a run
//! spawned), and [`Tasks`], the ledger as `talon.tasks()` lists it.
//!
//! [`Task::wait`] never polls: it replays the task's stored events
//! (`tasks.events`, page after page) to learn where it is and the cursor
//! they end at, then follows the gateway's log from that cursor
//! (`GET /v1/events?types=task.updated`, resuming by itself after a cut)
//! until the task's `task.updated` says it has ended. No change is missed
//! between the two: every change after the replay has a later id.

use futures::StreamExt as _;
use futures::stream::BoxStream;
use std::ops::Deref;
use talon_protocol::gateway::bounded::{Cursor, TaskId};
use talon_protocol::gateway::params::{
    TaskRef, TasksCancelParams, TasksEventsParams, TasksEventsResult, TasksNotifyParams,
};
use talon_protocol::gateway::tasks::{self as proto, NotifyPolicy, TasksListParams};
use talon_protocol::{Event, EventType};

use crate::client::{Client, StreamQuery};
use crate::error::{Error, Result};
use crate::events::Events;

/// A background task (see the module docs): the task as the gateway last
/// described it (reachable through `Deref`) and the client to act on it.
#[derive(Debug, Clone)]
pub struct Task {
    client: Client,
    info: proto::Task,
}

impl Deref for Task {
    type Target = proto::Task;

    fn deref(&self) -> &proto::Task {
        &self.info
    }
}

impl Task {
    /// A handle on `info` (e.g. decoded from a `task.updated` event) that
    /// acts through `client`.
    pub fn from_parts(client: Client, info: proto::Task) -> Self {
        Self { client, info }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        self.info.id.as_str()
    }

    /// The task as the gateway last described it.
    pub fn info(&self) -> &proto::Task {
        &self.info
    }

    /// The task, without the handle.
    pub fn into_inner(self) -> proto::Task {
        self.info
    }

    /// The task as the gateway describes it now (`tasks.get`).
    pub async fn refresh(&self) -> Result<Task> {
        let info = self
            .client
            .tasks_get(TaskRef {
                task_id: self.info.id.clone(),
            })
            .await?;
        Ok(Self::from_parts(self.client.clone(), info))
    }

    /// Cancels it and the run it tracks, saying why (the reason is kept
    /// with it); returns it `cancelled`. `conflict` once it has ended.
    pub async fn cancel(&self, reason: Option<String>) -> Result<Task> {
        let info = self
            .client
            .tasks_cancel(TasksCancelParams {
                task_id: self.info.id.clone(),
                reason: reason.map(Into::into),
                idempotency_key: None,
            })
            .await?;
        Ok(Self::from_parts(self.client.clone(), info))
    }

    /// Changes how its result reaches the session that started it;
    /// `conflict` once it has ended.
    pub async fn notify(&self, policy: NotifyPolicy) -> Result<Task> {
        let info = self
            .client
            .tasks_notify(TasksNotifyParams {
                task_id: self.info.id.clone(),
                notify_policy: policy,
                idempotency_key: None,
            })
            .await?;
        Ok(Self::from_parts(self.client.clone(), info))
    }

    /// One page of its stored events after the event with id `after`
    /// (from the first when `None`): its `task.updated` events and its
    /// run's; `done` once the page holds its last change.
    pub async fn events_page(&self, after: Option<u64>) -> Result<TasksEventsResult> {
        self.client
            .tasks_events(TasksEventsParams {
                task_id: self.info.id.clone(),
                after: after.map(|a| Cursor::new(a.to_string())),
                limit: None,
            })
            .await
    }

    /// Its events stored so far after `after`, page after page, ending
    /// with the last stored (or once the task has ended and settled). To
    /// follow it live, [`Task::wait`].
    pub fn events(&self, after: Option<u64>) -> BoxStream<'static, Result<Event>> {
        let task = self.clone();
        futures::stream::try_unfold((task, after, false), |(task, after, finished)| async move {
            if finished {
                return Ok(None);
            }
            let page = task.events_page(after).await?;
            let last = page.events.last().and_then(event_id);
            let finished = page.done || last.is_none();
            let next = last.or(after);
            Ok::<_, Error>(Some((
                futures::stream::iter(page.events.into_iter().map(Ok)),
                (task, next, finished),
            )))
        })
        .map(|page| match page {
            Ok(events) => events.left_stream(),
            Err(error) => futures::stream::iter([Err(error)]).right_stream(),
        })
        .flatten()
        .boxed()
    }

    /// Waits for it to end, however long it takes, and returns it as it
    /// ended (its `result` or `error`): subscribes to the log's
    /// `task.updated` events, never polls (see the module docs).
    pub async fn wait(&self) -> Result<Task> {
        let mut after = None;
        loop {
            let page = self.events_page(after).await?;
            if let Some(ended) = page.events.iter().rev().find_map(|e| self.ended(e)) {
                return Ok(Self::from_parts(self.client.clone(), ended));
            }
            match page.events.last().and_then(event_id) {
                Some(last) if !page.done => after = Some(last),
                _ => break,
            }
        }
        let query = StreamQuery {
            types: vec![EventType::TaskUpdated],
            ..StreamQuery::default()
        };
        let mut log = Events::of_log(self.client.clone(), query, after);
        while let Some(event) = log.next().await {
            if let Some(ended) = self.ended(&event?) {
                return Ok(Self::from_parts(self.client.clone(), ended));
            }
        }
        Err(Error::invalid(format!(
            "the event log ended before task {} did",
            self.info.id
        )))
    }

    /// The task as `event` says it ended, if it is this task's terminal
    /// `task.updated`.
    fn ended(&self, event: &Event) -> Option<proto::Task> {
        if event.kind != EventType::TaskUpdated || event.task_id.as_ref() != Some(&self.info.id) {
            return None;
        }
        let task = serde_json::from_value::<proto::Task>(event.data.clone()).ok()?;
        task.status.is_terminal().then_some(task)
    }
}

/// An event's id as the log numbers it.
fn event_id(event: &Event) -> Option<u64> {
    event.id.as_str().parse().ok()
}

/// The ledger of background tasks the token may see (`talon.tasks()`).
#[derive(Debug, Clone)]
pub struct Tasks {
    client: Client,
}

impl Tasks {
    pub(crate) fn new(client: Client) -> Self {
        Self { client }
    }

    /// Every task `filter` selects (status, kind, session, run), newest
    /// first, page after page (its cursor is set here).
    pub async fn list(&self, filter: TasksListParams) -> Result<Vec<Task>> {
        all_tasks(&self.client, filter).await
    }

    /// The task `id`, as the gateway describes it now.
    pub async fn get(&self, id: impl Into<String>) -> Result<Task> {
        let info = self
            .client
            .tasks_get(TaskRef {
                task_id: TaskId::new(id.into()),
            })
            .await?;
        Ok(Task::from_parts(self.client.clone(), info))
    }
}

/// Every task `filter` lists, page after page.
pub(crate) async fn all_tasks(client: &Client, mut filter: TasksListParams) -> Result<Vec<Task>> {
    let mut out = Vec::new();
    loop {
        let page = client.tasks_list(filter.clone()).await?;
        out.extend(
            page.tasks
                .into_iter()
                .map(|info| Task::from_parts(client.clone(), info)),
        );
        match page.next_cursor {
            Some(next) => filter.cursor = Some(next),
            None => return Ok(out),
        }
    }
}
