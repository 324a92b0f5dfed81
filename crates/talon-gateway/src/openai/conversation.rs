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
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::params::SessionsMessagesResult;
use talon_protocol::gateway::{Message, MessageRole, RunAccepted, Session};
use talon_protocol::openai::OpenAiError;
use talon_protocol::openai::reconcile::{Plan, Said, Speaker, plan, view};

use super::call;
use crate::auth::identity::Caller;
use crate::state::Shared;

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
    // The tail: the trailing user messages, and the tool answers right
    // before them (or trailing tool answers alone).
    let users = messages
        .iter()
        .rev()
        .take_while(|m| m.role == Role::User)
        .count();
    let answers = messages[..messages.len() - users]
        .iter()
        .rev()
        .take_while(|m| m.role == Role::Tool)
        .count();
    if users + answers == 0 {
        return Err(invalid(
            "the last message must be the user's, or answers to tool calls",
            "invalid_messages",
        ));
    }
    let (prefix, tail) = messages.split_at(messages.len() - users - answers);
    let prefix = turns(prefix);
    let client_view: Vec<Said> = prefix.iter().map(|t| t.said.clone()).collect();
    let (session, plan, stored) = match &target {
        Target::New => (None, Plan::Import, Vec::new()),
        Target::Key(key) => {
            let session: Session = call(
                shared,
                caller,
                "sessions.resolve",
                json!({"key": key, "agentId": agent}),
            )
            .await?;
            let stored = history(shared, caller, session.id.as_str()).await?;
            let plan = plan(&client_view, &view(&stored));
            (Some(session.id.to_string()), plan, stored)
        }
        Target::After { session_id, run_id } => {
            // Every input item is new: the whole prefix is imported, after
            // that run (forking if later runs followed it).
            let stored = history(shared, caller, session_id).await?;
            let last_of_run = stored
                .iter()
                .rposition(|m| m.run_id.as_ref().map(RunId::as_str) == Some(run_id.as_str()));
            let plan = match last_of_run {
                Some(at) if at + 1 < stored.len() => Plan::Fork {
                    at: stored[at].id.to_string(),
                    import_from: 0,
                },
                _ => Plan::Import,
            };
            (Some(session_id.clone()), plan, stored)
        }
    };
    // Answers go to the run that asked: the session's latest, unforked.
    let continues =
        session.is_some() && !stored.is_empty() && matches!(plan, Plan::Append | Plan::Import);
    if answers > 0 && !continues {
        return Err(invalid(
            "tool answers continue the run that asked for them: name its session with the \
             x-talon-session-key header (every answer carries it), `user`, or previous_response_id",
            "session_required",
        ));
    }
    // What the session keeps (up to a fork's point) is not sent again.
    let kept: &[Message] = match &plan {
        Plan::Fork { at, .. } => {
            let through = stored
                .iter()
                .position(|m| m.id.as_str() == at)
                .map_or(0, |i| i + 1);
            &stored[..through]
        }
        Plan::Fresh => &[],
        _ => &stored,
    };
    let system: Vec<&String> = conversation
        .system
        .iter()
        .filter(|text| {
            !kept
                .iter()
                .any(|m| m.role == MessageRole::System && m.text.as_deref() == Some(text.as_str()))
        })
        .collect();
    if users == 0 && !system.is_empty() {
        return Err(invalid(
            "new system instructions cannot come with tool answers alone: send them with the next user message",
            "invalid_messages",
        ));
    }
    let (imported, session_id): (&[Turn], Option<String>) = match (&plan, session) {
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
    for text in system {
        input.push(json!({"role": "system", "content": text}));
    }
    for turn in imported {
        let role = if turn.said.speaker == Speaker::User {
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
        // `runs.create` keeps keys per token; the prefix keeps the OpenAI
        // routes' apart from the same token's native ones.
        params["idempotencyKey"] = json!(format!("openai:{key}"));
    }
    let accepted: RunAccepted = call(shared, caller, "runs.create", params).await?;
    let session_key = accepted.run.session_key.as_ref().map(|k| k.to_string());
    Ok(Started {
        accepted,
        session_key,
    })
}

/// One turn of a request's history: as compared, and as sent.
struct Turn {
    said: Said,
    /// The text as the client wrote it (a turn's parts joined by a blank
    /// line).
    text: String,
}

/// The client-visible turns of a request's history.
fn turns(messages: &[Msg]) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    for m in messages {
        match m.role {
            Role::User => turns.push(Turn {
                said: Said::new(Speaker::User, &m.text),
                text: m.text.clone(),
            }),
            Role::Assistant if !m.text.trim().is_empty() => match turns.last_mut() {
                Some(last) if last.said.speaker == Speaker::Assistant => {
                    last.said.extend(&m.text);
                    last.text.push_str("\n\n");
                    last.text.push_str(&m.text);
                }
                _ => turns.push(Turn {
                    said: Said::new(Speaker::Assistant, &m.text),
                    text: m.text.clone(),
                }),
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
