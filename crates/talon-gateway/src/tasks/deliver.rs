//! How a task's news reaches the session that started it, by its policy:
//! `done_only` posts one system message when it ends, `state_changes`
//! also one when its work starts, `silent` none. A message's id is made
//! from the task and its status, so a message posted again (after a
//! failed try, or by another node after this one died) is stored once.
//!
//! A message waits for the run that started the task to end: that run's
//! own messages are stored as it ends, and the notice follows them in the
//! session (the next turn reads it after what caused it). An ended task's
//! message stays `pending` until then, and the next sweep posts it; a
//! `state_changes` start notice due while that run goes on is skipped.

use talon_protocol::gateway::bounded::MessageId;
use talon_protocol::gateway::tasks::{DeliveryStatus, NotifyPolicy, Task, TaskStatus};
use talon_protocol::gateway::{Message, MessageRole};

use super::Ledger;

/// The message `task`'s policy asks for as it is now, if any.
fn notice(task: &Task) -> Option<String> {
    let title = task
        .label
        .clone()
        .or_else(|| task.agent_id.as_ref().map(|a| format!("sub-agent {a}")))
        .unwrap_or_else(|| "background task".to_owned());
    let id = &task.id;
    let why = || {
        task.error
            .as_ref()
            .map(|e| format!(": {}", e.message))
            .unwrap_or_default()
    };
    let text = match (task.notify_policy, task.status) {
        (NotifyPolicy::Silent | NotifyPolicy::Unknown, _) => return None,
        (NotifyPolicy::StateChanges, TaskStatus::Running) => {
            format!("Background task started: {title} (task {id}).")
        }
        (_, TaskStatus::Succeeded) => format!(
            "Background task done: {title} (task {id}).\n\n{}",
            task.result.as_deref().unwrap_or("(no text)")
        ),
        (_, TaskStatus::Failed) => format!("Background task failed: {title} (task {id}){}", why()),
        (_, TaskStatus::TimedOut) => {
            format!("Background task timed out: {title} (task {id}){}", why())
        }
        (_, TaskStatus::Cancelled) => {
            format!("Background task cancelled: {title} (task {id}){}", why())
        }
        (_, TaskStatus::Lost) => format!("Background task lost: {title} (task {id}){}", why()),
        _ => return None,
    };
    Some(text)
}

impl Ledger {
    /// Posts what `task`'s policy asks for as it is now, and records
    /// what became of it when it ended: `delivered`, or `parent_missing`
    /// when its session is gone. A write that fails leaves an ended task
    /// `pending`, for the next sweep. Answers the task as stored.
    pub(crate) async fn deliver(&self, task: Task) -> Task {
        let Some(text) = notice(&task) else {
            return task;
        };
        let Some(session_id) = task.session_id.clone() else {
            return task;
        };
        let store = self.engine().store();
        if let Some(parent) = &task.run_id
            && let Ok(Some(parent)) = store.run(parent).await
            && !parent.status.is_terminal()
        {
            return task;
        }
        let posted = match store.session(&session_id).await {
            Ok(None) => Err(DeliveryStatus::ParentMissing),
            Ok(Some(_)) => {
                let message = Message {
                    id: MessageId::new(format!("msg_{}_{}", task.id, task.status.as_str())),
                    session_id,
                    run_id: None,
                    role: MessageRole::System,
                    text: Some(text),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    created_at: store.now_ms(),
                };
                store
                    .append_message_once(&message)
                    .await
                    .map(|_| ())
                    .map_err(|error| {
                        tracing::warn!(task = %task.id, %error, "a task's message was not posted; trying again");
                        DeliveryStatus::Pending
                    })
            }
            Err(error) => {
                tracing::warn!(task = %task.id, %error, "a task's session could not be read; trying again");
                Err(DeliveryStatus::Pending)
            }
        };
        if !task.status.is_terminal() {
            return task;
        }
        let settled = match posted {
            Ok(()) => Task {
                delivery_status: DeliveryStatus::Delivered,
                delivered_at: Some(store.now_ms()),
                delivery_error: None,
                ..task.clone()
            },
            Err(DeliveryStatus::ParentMissing) => Task {
                delivery_status: DeliveryStatus::ParentMissing,
                delivery_error: Some("the session that started it was deleted".to_owned()),
                ..task.clone()
            },
            Err(_) => return task,
        };
        match self.moved(settled, &task).await {
            Ok(Some(stored)) => stored,
            Ok(None) | Err(_) => task,
        }
    }
}
