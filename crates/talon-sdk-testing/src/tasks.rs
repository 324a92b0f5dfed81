//! Background tasks in the fake: [`FakeTask`], a sub-agent a test scripts
//! (started by a scripted run, `FakeRun::spawn`, or added directly,
//! `FakeGateway::add_task`), and `tasks.*` answered from memory as the
//! gateway answers from its store. Every change appends `task.updated`
//! (carrying `taskId`) to the one log, so streams and `tasks.events` see it;
//! a task moves `queued → running →` its scripted end, and an ended task
//! never moves again (`tasks.cancel` and `tasks.notify` then refuse it with
//! the table's `task_ended`).
//!
//! Not modelled (listed in `docs/fake-differences.md`): a fake's task has no
//! child run or session (`childRunId` is absent; its events are its own
//! `task.updated`), and no message is posted to the session that started
//! it: an ended task's `deliveryStatus` is `delivered` at once
//! (`not_applicable` when `silent`).

use std::sync::Arc;
use std::time::Duration;

use talon_protocol::gateway::bounded::{AgentId, Cursor, TaskId};
use talon_protocol::gateway::page::{limit, page_after};
use talon_protocol::gateway::params::{
    TaskRef, TasksCancelParams, TasksEventsParams, TasksEventsResult, TasksNotifyParams,
};
use talon_protocol::gateway::refuse;
use talon_protocol::gateway::tasks::{
    DeliveryStatus, NotifyPolicy, Task, TaskKind, TaskStatus, TasksListParams, TasksListResult,
};
use talon_protocol::gateway::{ApiError, ErrorCode, Run};
use talon_protocol::{Event, EventData, EventType};

use super::state::{Shared, State};

/// How a [`FakeTask`] ends by itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ending {
    /// `succeeded`, with this result.
    Succeed(String),
    /// `failed`, with this error.
    Fail(ApiError),
    /// Never by itself: a test moves it (`FakeGateway::finish_task`) or a
    /// caller cancels it.
    Held,
}

/// The script of one background task (a sub-agent): what it was asked,
/// how long its work takes and how it ends.
///
/// ```no_run
/// # use std::time::Duration;
/// # use talon_sdk_testing::{FakeRun, FakeTask};
/// let run = FakeRun::reply("Spawned two helpers.")
///     .spawn(FakeTask::new("find the answer").label("finder").result("42").takes(Duration::from_millis(50)))
///     .spawn(FakeTask::new("wait for me").held());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FakeTask {
    pub(crate) description: String,
    pub(crate) label: Option<String>,
    pub(crate) agent_id: String,
    pub(crate) notify_policy: NotifyPolicy,
    pub(crate) takes: Duration,
    pub(crate) ending: Ending,
}

impl FakeTask {
    /// A sub-agent asked to do `description` (its `description`), of the
    /// agent `main`, that succeeds at once with the result `ok`.
    pub fn new(description: impl Into<String>) -> Self {
        Self {
            description: description.into(),
            label: None,
            agent_id: super::state::DEFAULT_AGENT.to_owned(),
            notify_policy: NotifyPolicy::DoneOnly,
            takes: Duration::ZERO,
            ending: Ending::Succeed("ok".into()),
        }
    }

    /// Its `label`.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The agent doing the work (`agentId`).
    pub fn agent(mut self, agent_id: impl Into<String>) -> Self {
        self.agent_id = agent_id.into();
        self
    }

    /// Its notification policy at the start.
    pub fn notify(mut self, policy: NotifyPolicy) -> Self {
        self.notify_policy = policy;
        self
    }

    /// Succeeds with `text` as its `result`.
    pub fn result(mut self, text: impl Into<String>) -> Self {
        self.ending = Ending::Succeed(text.into());
        self
    }

    /// Fails with this error (its `error`).
    pub fn fail(mut self, code: ErrorCode, message: impl Into<String>) -> Self {
        self.ending = Ending::Fail(ApiError::new(code, message)); // the test's words
        self
    }

    /// Its work takes `d` (it stays `running` that long) before it ends.
    pub fn takes(mut self, d: Duration) -> Self {
        self.takes = d;
        self
    }

    /// Stays `running` until the test ends it
    /// (`FakeGateway::finish_task`) or a caller cancels it.
    pub fn held(mut self) -> Self {
        self.ending = Ending::Held;
        self
    }
}

/// `task.updated` for `task` as it now is (the gateway's envelope: no
/// run, the session that started it, `taskId`).
fn event_of(task: &Task) -> Event {
    let (kind, data) = EventData::TaskUpdated(task.clone()).into_parts();
    Event {
        version: 1,
        id: Default::default(),
        ts: task.updated_at,
        kind,
        run_id: None,
        session_id: task.session_id.clone(),
        session_key: task.session_key.clone(),
        subject: None,
        task_id: Some(task.id.clone()),
        agent_id: task.agent_id.clone(),
        request_id: None,
        data,
        raw: None,
    }
}

impl State {
    /// Records a new task for `spec`, started by `parent` (if any):
    /// `queued`, then `running`, each announced.
    pub fn create_task(&mut self, spec: &FakeTask, parent: Option<&Run>) -> Task {
        let now = self.now_ms();
        let task = Task {
            notify_policy: spec.notify_policy,
            label: spec.label.clone(),
            description: Some(spec.description.clone()),
            agent_id: Some(AgentId::new(spec.agent_id.clone())),
            session_id: parent.and_then(|r| r.session_id.clone()),
            session_key: parent.and_then(|r| r.session_key.clone()),
            run_id: parent.map(|r| r.id.clone()),
            delivery_status: if spec.notify_policy == NotifyPolicy::Silent {
                DeliveryStatus::NotApplicable
            } else {
                DeliveryStatus::Pending
            },
            ..Task::queued(TaskId::new(self.new_id("task")), TaskKind::Subagent, now)
        };
        self.tasks.push(task.clone());
        self.push(event_of(&task));
        self.move_task(task.id.as_str(), |t| {
            t.status = TaskStatus::Running;
            t.started_at = Some(now);
        })
        .unwrap_or(task)
    }

    /// Changes the task `id` with `change` and announces it; `None` when
    /// there is no such task or it has ended (an ended task never moves).
    /// A change that ends it stamps `endedAt` and settles its delivery.
    pub fn move_task(&mut self, id: &str, change: impl FnOnce(&mut Task)) -> Option<Task> {
        let now = self.now_ms();
        let task = self
            .tasks
            .iter_mut()
            .find(|t| t.id.as_str() == id && !t.status.is_terminal())?;
        change(task);
        task.updated_at = now.max(task.updated_at.saturating_add(1));
        if task.status.is_terminal() {
            task.ended_at = Some(now);
            if task.delivery_status == DeliveryStatus::Pending {
                task.delivery_status = DeliveryStatus::Delivered;
                task.delivered_at = Some(now);
            }
        }
        let task = task.clone();
        self.push(event_of(&task));
        Some(task)
    }

    /// The task `id`, or `not_found`.
    pub fn task(&self, id: &str) -> Result<&Task, ApiError> {
        self.tasks
            .iter()
            .find(|t| t.id.as_str() == id)
            .ok_or_else(|| refuse::not_found("task", id))
    }
}

/// Ends the task `id` as `spec` says, after its work's time, unless it
/// ended first (cancelled).
pub(crate) fn play(shared: Arc<Shared>, id: TaskId, spec: &FakeTask) {
    let ending = spec.ending.clone();
    if ending == Ending::Held {
        return;
    }
    let takes = spec.takes;
    let mut closing = shared.closing.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = tokio::time::sleep(takes) => {}
            _ = closing.wait_for(|closing| *closing) => return,
        }
        shared.write(|s| {
            s.move_task(id.as_str(), |t| match ending {
                Ending::Succeed(text) => {
                    t.status = TaskStatus::Succeeded;
                    t.result = Some(text);
                }
                Ending::Fail(error) => {
                    t.status = TaskStatus::Failed;
                    t.error = Some(error);
                }
                Ending::Held => {}
            })
        });
    });
}

/// `tasks.list`: newest first, filtered, paged by task id.
pub(crate) fn list(shared: &Shared, p: TasksListParams) -> Result<TasksListResult, ApiError> {
    p.check()?;
    let cursor = p.cursor.as_ref().map(Cursor::as_str);
    // Keyset paging, as the gateway's: the tasks older than the cursor's,
    // whether or not the cursor's own still passes the filter.
    let tasks: Vec<Task> = shared.read(|s| {
        let newest = s.tasks.iter().rev();
        let skip = match cursor {
            None => 0,
            Some(cursor) => match s.tasks.iter().rev().position(|t| t.id.as_str() == cursor) {
                Some(at) => at + 1,
                None => return Err(refuse::cursor_not_a_task(cursor)),
            },
        };
        Ok(newest.skip(skip).filter(|t| p.admits(t)).cloned().collect())
    })?;
    let (tasks, next_cursor) = page_after(tasks, None, p.limit, |t| t.id.as_str())?;
    Ok(TasksListResult { tasks, next_cursor })
}

/// `tasks.get`.
pub(crate) fn get(shared: &Shared, p: TaskRef) -> Result<Task, ApiError> {
    shared.read(|s| s.task(p.task_id.as_str()).cloned())
}

/// `tasks.cancel`: `cancelled` (the reason as its progress, as the
/// gateway words it), or `task_ended` once it has ended.
pub(crate) fn cancel(shared: &Shared, p: TasksCancelParams) -> Result<Task, ApiError> {
    shared.write(|s| {
        let read = s.task(p.task_id.as_str())?.clone();
        if read.status.is_terminal() {
            return Err(refuse::task_ended(read.id.as_str(), read.status.as_str()));
        }
        let reason = p
            .reason
            .as_ref()
            .map(|r| format!("cancelled: {}", r.as_str()));
        s.move_task(read.id.as_str(), |t| {
            t.status = TaskStatus::Cancelled;
            if reason.is_some() {
                t.progress_summary = reason;
            }
        })
        .ok_or_else(|| refuse::task_busy(read.id.as_str()))
    })
}

/// `tasks.notify`: the new policy, or `task_ended` once it has ended.
pub(crate) fn notify(shared: &Shared, p: TasksNotifyParams) -> Result<Task, ApiError> {
    if p.notify_policy == NotifyPolicy::Unknown {
        return Err(refuse::unknown_notify_policy());
    }
    shared.write(|s| {
        let read = s.task(p.task_id.as_str())?.clone();
        if read.status.is_terminal() {
            return Err(refuse::task_ended(read.id.as_str(), read.status.as_str()));
        }
        s.move_task(read.id.as_str(), |t| {
            t.notify_policy = p.notify_policy;
            t.delivery_status = if p.notify_policy == NotifyPolicy::Silent {
                DeliveryStatus::NotApplicable
            } else {
                DeliveryStatus::Pending
            };
        })
        .ok_or_else(|| refuse::task_busy(read.id.as_str()))
    })
}

/// `tasks.events`: its `task.updated` events after the cursor; `done` once
/// the page holds its last change (ended, delivery settled).
pub(crate) fn events(shared: &Shared, p: TasksEventsParams) -> Result<TasksEventsResult, ApiError> {
    let after = match p.after.as_ref().map(Cursor::as_str) {
        None => 0,
        Some(text) => text
            .parse::<u64>()
            .map_err(|_| refuse::after_not_an_event_id(text))?,
    };
    shared.read(|s| {
        let task = s.task(p.task_id.as_str())?;
        let events: Vec<Event> = s
            .log
            .iter()
            .skip(usize::try_from(after).unwrap_or(usize::MAX))
            .filter(|e| e.task_id.as_ref() == Some(&task.id))
            .take(limit(p.limit) as usize)
            .cloned()
            .collect();
        let done = events.iter().any(|e| {
            e.kind == EventType::TaskUpdated
                && serde_json::from_value::<Task>(e.data.clone()).is_ok_and(|t| {
                    t.status.is_terminal() && t.delivery_status != DeliveryStatus::Pending
                })
        });
        Ok(TasksEventsResult { events, done })
    })
}
