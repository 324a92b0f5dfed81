//! A conversation between the form hosts keep (the protocol's `Message`,
//! as a session stores it) and the form the model reads (the provider's
//! messages, which stay inside this crate): what a run reads as its
//! history, what its input adds ahead of the loop, and what it adds in
//! all when it ends. A compaction record stands for everything before it.
//!
//! Hosts hold a [`Conversation`] without seeing into it: they build one
//! from stored messages ([`Conversation::of_session`]) or a run's input
//! ([`prepare`]), hand it to a run, and store what comes back
//! ([`Conversation::to_stored`]).

use serde_json::Value;
use talon_agent::SettledCall;
use talon_codemode::AwaitingCell;
use talon_protocol::gateway::bounded::{MessageId, RunId, SessionId, ToolCallId};
use talon_protocol::gateway::run_create::{InputMessagesError, split_messages};
use talon_protocol::gateway::{InputMessage, InputRole, Message, MessageRole, RunInput};
use talon_provider::{Message as ModelMessage, ToolCallRequest};

/// Why a run's input cannot start it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RunInputError {
    /// The messages break `runs.create`'s rules
    /// (`talon_protocol::gateway::run_create`).
    #[error("input: {0}")]
    Messages(#[from] InputMessagesError),
    /// A tool message answers a call nothing is waiting for.
    #[error("input: toolCallId {0:?} answers no pending client tool call of this session")]
    NotPending(String),
    /// Answers to a Code Mode cell's client calls came with a user turn:
    /// the cell goes on before the model reads anything new.
    #[error(
        "input: answers to client tool calls made inside Code Mode's exec ({0:?}) come alone; \
         send the user's message in the next run"
    )]
    AnswersWithTurn(String),
}

/// What a client tool call the app never answered reads as: `talon_tools::UNANSWERED` as the
/// model reads a result (checked by a test).
pub const UNANSWERED: &str =
    r#"{"status":"unanswered","error":"the app did not answer this client tool call"}"#;

/// Messages in the model's form, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation(pub(crate) Vec<ModelMessage>);

impl Conversation {
    /// The model's history from a session's stored messages: from the
    /// last compaction record (as a system note carrying its summary) on.
    /// A client tool call the app never answered reads as [`UNANSWERED`],
    /// except those of the last message, which the next run may still
    /// answer ([`Conversation::pending_calls`]).
    pub fn of_session(stored: &[Message]) -> Self {
        let start = stored
            .iter()
            .rposition(|m| m.role == MessageRole::Compaction)
            .unwrap_or(0);
        Self(fill_unanswered(convert(&stored[start..])))
    }

    /// The messages as a session stores them, with ids
    /// `msg_<runId>_<index>` in order.
    pub fn to_stored(&self, session_id: &SessionId, run_id: &RunId, now: u64) -> Vec<Message> {
        self.0
            .iter()
            .enumerate()
            .map(|(i, m)| stored(m, i, session_id, run_id, now))
            .collect()
    }

    /// The user's message alone.
    pub fn user(text: String) -> Self {
        Self(vec![ModelMessage::User(text)])
    }

    /// How many messages.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many messages are not system notes (what a compaction would
    /// replace).
    pub fn said(&self) -> usize {
        self.0
            .iter()
            .filter(|m| !matches!(m, ModelMessage::System(_)))
            .count()
    }

    /// The index of the last message of the model's.
    pub fn last_assistant(&self) -> Option<usize> {
        self.0
            .iter()
            .rposition(|m| matches!(m, ModelMessage::Assistant { .. }))
    }

    /// Appends `other`.
    pub fn extend(&mut self, other: Conversation) {
        self.0.extend(other.0);
    }

    /// The tool calls of the last assistant message that nothing answers
    /// yet: client calls a run left for the app.
    pub fn pending_calls(&self) -> Vec<String> {
        let history = &self.0;
        let Some(at) = history
            .iter()
            .rposition(|m| !matches!(m, ModelMessage::Tool { .. }))
        else {
            return Vec::new();
        };
        let ModelMessage::Assistant { tool_calls, .. } = &history[at] else {
            return Vec::new();
        };
        tool_calls
            .iter()
            .filter(|c| {
                !history[at + 1..]
                    .iter()
                    .any(|m| matches!(m, ModelMessage::Tool { call_id, .. } if call_id == &c.id))
            })
            .map(|c| c.id.clone())
            .collect()
    }

    /// The pending calls `answers` settle (all but `held`), as
    /// [`Conversation::answer_pending_but`] answers them.
    fn settled_directly(&self, answers: &[(String, String)], held: &[String]) -> Vec<SettledCall> {
        let named = |id: &str| {
            self.0
                .iter()
                .rev()
                .find_map(|m| match m {
                    ModelMessage::Assistant { tool_calls, .. } => tool_calls
                        .iter()
                        .find(|c| c.id == id)
                        .map(|c| c.name.clone()),
                    _ => None,
                })
                .unwrap_or_default()
        };
        self.pending_calls()
            .into_iter()
            .filter(|id| !held.contains(id))
            .map(|id| SettledCall {
                name: named(&id),
                answer: answers
                    .iter()
                    .find(|(answered, _)| answered == &id)
                    .map(|(_, content)| content.clone()),
                parent_id: None,
                call_id: id,
            })
            .collect()
    }

    /// The calls of the last assistant message that `resume`'s cells
    /// belong to (their `exec` calls, held open for the app's answers),
    /// in the message's order: what a run that resumes them makes first.
    pub fn reopened(&self, resume: &[AwaitingCell]) -> Vec<ToolCallRequest> {
        let Some(ModelMessage::Assistant { tool_calls, .. }) = self
            .0
            .iter()
            .rfind(|m| matches!(m, ModelMessage::Assistant { .. }))
        else {
            return Vec::new();
        };
        tool_calls
            .iter()
            .filter(|c| resume.iter().any(|cell| cell.parent == c.id))
            .cloned()
            .collect()
    }

    /// The messages that answer the pending calls: the app's `answers`
    /// (call, result), in the calls' order, and [`UNANSWERED`] for the
    /// rest. An answer to a call that is not pending is an error naming it.
    pub fn answer_pending(&self, answers: &[(String, String)]) -> Result<Self, RunInputError> {
        self.answer_pending_but(answers, &[])
    }

    /// [`Conversation::answer_pending`], leaving the calls in `held` open
    /// (their cells go on with the app's answers and answer them).
    fn answer_pending_but(
        &self,
        answers: &[(String, String)],
        held: &[String],
    ) -> Result<Self, RunInputError> {
        let mut pending = self.pending_calls();
        pending.retain(|id| !held.contains(id));
        if let Some((id, _)) = answers.iter().find(|(id, _)| !pending.contains(id)) {
            return Err(RunInputError::NotPending(id.clone()));
        }
        Ok(Self(
            pending
                .into_iter()
                .map(|id| {
                    let content = answers
                        .iter()
                        .find(|(answered, _)| answered == &id)
                        .map_or_else(|| UNANSWERED.to_owned(), |(_, content)| content.clone());
                    ModelMessage::Tool {
                        call_id: id,
                        content,
                    }
                })
                .collect(),
        ))
    }
}

/// A run's input made ready for the loop.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prepared {
    /// The conversation the loop starts from: the session's, then what
    /// the input adds.
    pub history: Conversation,
    /// What the run adds to the session ahead of the loop's messages: the
    /// app's answers to pending client calls, then the messages before
    /// the user's turn.
    pub added: Conversation,
    /// The user's turn (none when the input only answers calls: the model
    /// goes on from the answers).
    pub message: Option<String>,
    /// Cells waiting for the answers the input gives (their `exec` calls
    /// stay open; the run makes them again first).
    pub resume: Vec<AwaitingCell>,
    /// The answers for those cells: (nested call id, content).
    pub cell_answers: Vec<(String, String)>,
    /// Cells of the history's open calls the input does not answer: their
    /// `exec` calls read as unanswered, and the cells can go.
    pub abandoned: Vec<AwaitingCell>,
    /// Every client call earlier runs left pending that the input settles
    /// (answered, or left unanswered), in the order they end: an abandoned
    /// cell's calls before its `exec`, a resumed cell's calls last.
    pub settled: Vec<SettledCall>,
}

/// Makes a run's `input` ready after the session's `history`: checked
/// (`talon_protocol::gateway::run_create`'s rules), its answers matched
/// with the calls the history left pending.
pub fn prepare(history: Conversation, input: &RunInput) -> Result<Prepared, RunInputError> {
    prepare_with(history, input, &[])
}

/// [`prepare`], where `awaiting` are the session's cells that wait for
/// the app ([`talon_codemode::awaiting_cells`]): an answer naming one of
/// their calls goes to its cell, which resumes by its `exec` call.
pub fn prepare_with(
    mut history: Conversation,
    input: &RunInput,
    awaiting: &[AwaitingCell],
) -> Result<Prepared, RunInputError> {
    let input = match input {
        RunInput::Text(text) => Input {
            answers: Vec::new(),
            before: Conversation::default(),
            message: Some(text.clone()),
        },
        RunInput::Messages(messages) => split_input(messages)?,
    };
    let open = history.pending_calls();
    let cells: Vec<&AwaitingCell> = awaiting
        .iter()
        .filter(|c| open.contains(&c.parent))
        .collect();
    let for_cell = |id: &str| {
        cells
            .iter()
            .any(|c| c.calls.iter().any(|call| call.call_id == id))
    };
    let (cell_answers, answers): (Vec<_>, Vec<_>) =
        input.answers.into_iter().partition(|(id, _)| for_cell(id));
    let (resume, abandoned): (Vec<AwaitingCell>, Vec<AwaitingCell>) =
        cells.into_iter().cloned().partition(|c| {
            c.calls
                .iter()
                .any(|call| cell_answers.iter().any(|(id, _)| id == &call.call_id))
        });
    if let (Some(cell), Some(_)) = (resume.first(), &input.message) {
        return Err(RunInputError::AnswersWithTurn(cell.parent.clone()));
    }
    let held: Vec<String> = resume.iter().map(|c| c.parent.clone()).collect();
    let mut settled = in_cells(&abandoned, &[]);
    settled.extend(history.settled_directly(&answers, &held));
    settled.extend(in_cells(&resume, &cell_answers));
    let mut added = history.answer_pending_but(&answers, &held)?;
    added.extend(input.before);
    history.extend(added.clone());
    Ok(Prepared {
        history,
        added,
        message: input.message,
        resume,
        cell_answers,
        abandoned,
        settled,
    })
}

/// The client calls of `cells`, settled by `answers` (nested call id,
/// content; unanswered when missing).
fn in_cells(cells: &[AwaitingCell], answers: &[(String, String)]) -> Vec<SettledCall> {
    cells
        .iter()
        .flat_map(|cell| {
            cell.calls.iter().map(|call| SettledCall {
                call_id: call.call_id.clone(),
                parent_id: Some(cell.parent.clone()),
                name: call.name.clone(),
                answer: answers
                    .iter()
                    .find(|(id, _)| id == &call.call_id)
                    .map(|(_, content)| content.clone()),
            })
        })
        .collect()
}

/// A run's input, checked: the app's answers to pending client tool calls
/// (first), the messages before the user's turn, and the turn itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// `tool` messages: (the call answered, the result).
    pub answers: Vec<(String, String)>,
    /// The messages between the answers and the turn.
    pub before: Conversation,
    /// The user's message.
    pub message: Option<String>,
}

/// Splits a run's input messages, or says what is wrong with them.
pub fn split_input(messages: &[InputMessage]) -> Result<Input, RunInputError> {
    let parts = split_messages(messages)?;
    let answers = parts
        .answers
        .iter()
        .map(|m| {
            (
                m.tool_call_id
                    .as_ref()
                    .map(ToolCallId::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                m.content.clone(),
            )
        })
        .collect();
    let before = parts
        .before
        .iter()
        .map(|m| match m.role {
            InputRole::Assistant => ModelMessage::Assistant {
                text: Some(m.content.clone()),
                tool_calls: Vec::new(),
                reasoning: Vec::new(),
            },
            InputRole::System => ModelMessage::System(m.content.clone()),
            InputRole::User | InputRole::Tool => ModelMessage::User(m.content.clone()),
        })
        .collect();
    Ok(Input {
        answers,
        before: Conversation(before),
        message: parts.message.map(|m| m.content.clone()),
    })
}

/// Adds an [`UNANSWERED`] answer for each call that a later message left
/// without one (the provider refuses a history with an open call).
fn fill_unanswered(messages: Vec<ModelMessage>) -> Vec<ModelMessage> {
    let mut out: Vec<ModelMessage> = Vec::with_capacity(messages.len());
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        match &message {
            ModelMessage::Tool { call_id, .. } => open.retain(|id| id != call_id),
            _ => {
                out.extend(open.drain(..).map(|call_id| ModelMessage::Tool {
                    call_id,
                    content: UNANSWERED.to_owned(),
                }));
                if let ModelMessage::Assistant { tool_calls, .. } = &message {
                    open = tool_calls.iter().map(|c| c.id.clone()).collect();
                }
            }
        }
        out.push(message);
    }
    out
}

fn convert(stored: &[Message]) -> Vec<ModelMessage> {
    stored
        .iter()
        .filter_map(|m| match m.role {
            MessageRole::User => Some(ModelMessage::User(m.text.clone().unwrap_or_default())),
            MessageRole::System => Some(ModelMessage::System(m.text.clone().unwrap_or_default())),
            MessageRole::Compaction => Some(ModelMessage::System(format!(
                "Summary of the earlier conversation:\n{}",
                m.text.as_deref().unwrap_or_default()
            ))),
            MessageRole::Assistant => Some(ModelMessage::Assistant {
                text: m.text.clone(),
                tool_calls: m
                    .tool_calls
                    .iter()
                    .map(|c| ToolCallRequest {
                        id: c.id.to_string(),
                        name: c.name.to_string(),
                        arguments: match &c.arguments {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        },
                    })
                    .collect(),
                reasoning: Vec::new(),
            }),
            MessageRole::Tool => Some(ModelMessage::Tool {
                call_id: m
                    .tool_call_id
                    .as_deref()
                    .map(str::to_owned)
                    .unwrap_or_default(),
                content: m.text.clone().unwrap_or_default(),
            }),
            _ => None,
        })
        .collect()
}

/// One message as a session stores it.
fn stored(m: &ModelMessage, i: usize, session_id: &SessionId, run_id: &RunId, now: u64) -> Message {
    let mut stored = Message {
        id: MessageId::new(format!("msg_{run_id}_{i:04}")),
        session_id: session_id.clone(),
        run_id: Some(run_id.clone()),
        role: MessageRole::User,
        text: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        created_at: now,
    };
    match m {
        ModelMessage::System(text) => {
            stored.role = MessageRole::System;
            stored.text = Some(text.clone());
        }
        ModelMessage::User(text) => stored.text = Some(text.clone()),
        ModelMessage::Assistant {
            text, tool_calls, ..
        } => {
            stored.role = MessageRole::Assistant;
            stored.text = text.clone();
            stored.tool_calls = tool_calls.iter().map(talon_agent::wire_tool_call).collect();
        }
        ModelMessage::Tool { call_id, content } => {
            stored.role = MessageRole::Tool;
            stored.text = Some(content.clone());
            stored.tool_call_id = Some(call_id.as_str().into());
        }
    }
    stored
}

#[cfg(test)]
#[path = "conversation_tests.rs"]
mod tests;
