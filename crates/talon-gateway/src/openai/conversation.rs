//! A conversation in OpenAI's shape becomes one `runs.create` on the
//! session it names, by the rule in `talon_protocol::openai::reconcile`:
//! the request's messages are reconciled with the session's stored history
//! so nothing is sent to the model twice.
//!
//! Tool answers (`role: "tool"`, `function_call_output`) continue the run
//! that asked for them, so they need that run's session: a session key,
//! `user`, or `previous_response_id`. A stateless client's history is
//! imported as the run's earlier messages (their texts: tool calls and
//! results in it are not replayed).

use serde_json::{Value, json};
use talon_protocol::gateway::params::SessionsMessagesResult;
use talon_protocol::gateway::{Message, RunAccepted, Session};
use talon_protocol::openai::OpenAiError;
use talon_protocol::openai::reconcile::{Plan, Said, Speaker, plan, view};

use super::call;
use crate::http::Shared;
use crate::tokens::Caller;

/// Messages read from a session per page.
const PAGE: u32 = 1000;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    User,
    Assistant,
    Tool,
}

/// One message of the request.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Msg {
    pub role: Role,
    pub text: String,
    /// A tool answer's call.
    pub tool_call_id: Option<String>,
}

/// A request's conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Conversation {
    /// Instructions for this run only.
    pub system: Vec<String>,
    pub messages: Vec<Msg>,
}

/// Which session the run goes to.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Target {
    /// The session with this key (created if new).
    Key(String),
    /// The session of an earlier run (`previous_response_id`): continued
    /// when that run is its latest, else forked after it.
    After { session_id: String, run_id: String },
    /// A new session.
    New,
}

/// What a run needs beside its conversation.
#[derive(Debug, Clone, Default)]
pub(super) struct Extras {
    pub tools: Vec<Value>,
    pub idempotency_key: Option<String>,
}

/// The run started.
#[derive(Debug, Clone)]
pub(super) struct Started {
    pub accepted: RunAccepted,
    /// The session's key (a fork's or a new session's when the call
    /// moved the conversation there).
    pub session_key: Option<String>,
}

fn invalid(message: &str, code: &'static str) -> OpenAiError {
    OpenAiError::invalid(message, Some("messages"), code)
}

/// Starts the run.
pub(super) async fn start(
    shared: &Shared,
    caller: &Caller,
    agent: &str,
    conversation: Conversation,
    target: Target,
    extras: Extras,
) -> Result<Started, OpenAiError> {
    let messages = &conversation.messages;
    let answers = messages
        .iter()
        .rev()
        .take_while(|m| m.role == Role::Tool)
        .count();
    let users = messages
        .iter()
        .rev()
        .take_while(|m| m.role == Role::User)
        .count();
    let tail = answers.max(users);
    if tail == 0 {
        return Err(invalid(
            "the last message must be the user's, or answers to tool calls",
            "invalid_messages",
        ));
    }
    let (prefix, tail) = messages.split_at(messages.len() - tail);
    let prefix = said(prefix);
    let (session, plan): (Option<String>, Plan) = match &target {
        Target::New => (None, Plan::Import),
        Target::Key(key) => {
            let session: Session = call(
                shared,
                caller,
                "sessions.resolve",
                json!({"key": key, "agentId": agent}),
            )
            .await?;
            let stored = history(shared, caller, &session.id).await?;
            let plan = plan(&prefix, &view(&stored));
            (Some(session.id.to_string()), plan)
        }
        Target::After { session_id, run_id } => {
            let stored = history(shared, caller, session_id).await?;
            let last_of_run = stored
                .iter()
                .rposition(|m| m.run_id.as_deref() == Some(run_id.as_str()));
            let plan = match last_of_run {
                Some(at) if at + 1 < stored.len() => Plan::Fork {
                    at: stored[at].id.to_string(),
                    import_from: prefix.len(),
                },
                _ => Plan::Append,
            };
            (Some(session_id.clone()), plan)
        }
    };
    if answers > 0 && (plan != Plan::Append || session.is_none()) {
        return Err(invalid(
            "tool answers continue the run that asked for them: name its session with the \
             x-talon-session-key header (every answer carries it), `user`, or previous_response_id",
            "session_required",
        ));
    }
    let (imported, session_id): (&[Said], Option<String>) = match (&plan, session) {
        (Plan::Append, Some(id)) => (&[], Some(id)),
        (Plan::Import, Some(id)) => (&prefix, Some(id)),
        (Plan::Fork { at, import_from }, Some(id)) => {
            let fork: Session = call(
                shared,
                caller,
                "sessions.fork",
                json!({"sessionId": id, "atMessageId": at}),
            )
            .await?;
            (
                &prefix[(*import_from).min(prefix.len())..],
                Some(fork.id.to_string()),
            )
        }
        // A new session: the whole history is imported.
        _ => (&prefix, None),
    };
    let mut input: Vec<Value> = Vec::new();
    for answer in tail.iter().filter(|m| m.role == Role::Tool) {
        input.push(
            json!({"role": "tool", "content": answer.text, "toolCallId": answer.tool_call_id}),
        );
    }
    for system in &conversation.system {
        input.push(json!({"role": "system", "content": system}));
    }
    for turn in imported {
        let role = if turn.speaker == Speaker::User {
            "user"
        } else {
            "assistant"
        };
        input.push(json!({"role": role, "content": turn.text}));
    }
    for user in tail.iter().filter(|m| m.role == Role::User) {
        input.push(json!({"role": "user", "content": user.text}));
    }
    let mut params = json!({"agentId": agent, "input": input});
    if let Some(id) = session_id {
        params["sessionId"] = json!(id);
    }
    if !extras.tools.is_empty() {
        params["tools"] = json!(extras.tools);
    }
    if let Some(key) = extras.idempotency_key {
        params["idempotencyKey"] = json!(key);
    }
    let accepted: RunAccepted = call(shared, caller, "runs.create", params).await?;
    let session_key = accepted.run.session_key.as_ref().map(|k| k.to_string());
    Ok(Started {
        accepted,
        session_key,
    })
}

/// The client-visible turns of a request's history.
fn said(messages: &[Msg]) -> Vec<Said> {
    let mut turns: Vec<Said> = Vec::new();
    for m in messages {
        let text = m.text.trim();
        match m.role {
            Role::User => turns.push(Said::new(Speaker::User, text)),
            Role::Assistant if !text.is_empty() => match turns.last_mut() {
                Some(last) if last.speaker == Speaker::Assistant => {
                    last.text.push_str("\n\n");
                    last.text.push_str(text);
                }
                _ => turns.push(Said::new(Speaker::Assistant, text)),
            },
            _ => {}
        }
    }
    turns
}

/// A session's whole stored history.
async fn history(
    shared: &Shared,
    caller: &Caller,
    session_id: &str,
) -> Result<Vec<Message>, OpenAiError> {
    let mut all: Vec<Message> = Vec::new();
    loop {
        let mut params = json!({"sessionId": session_id, "limit": PAGE});
        if let Some(last) = all.last() {
            params["after"] = json!(last.id);
        }
        let page: SessionsMessagesResult =
            call(shared, caller, "sessions.messages", params).await?;
        let more = page.has_more && !page.messages.is_empty();
        all.extend(page.messages);
        if !more {
            return Ok(all);
        }
    }
}
