//! A session's conversation between the store's form (the protocol's
//! `Message`) and the model's (the provider's `Message`): what a run
//! reads as its history, and what it writes back when it ends. A
//! compaction record stands for everything before it.

use serde_json::Value;
use talon_agent::wire_tool_call;
use talon_protocol::gateway::run_create::split_messages;
use talon_protocol::gateway::{InputMessage, InputRole, Message, MessageRole};
use talon_provider::{Message as ModelMessage, ToolCallRequest};

/// The model's history from a session's stored messages: from the last
/// compaction record (as a system note carrying its summary) on. A client
/// tool call the app never answered reads as [`UNANSWERED`], except those
/// of the last message, which the next run may still answer
/// ([`pending_calls`]).
pub(crate) fn to_model(stored: &[Message]) -> Vec<ModelMessage> {
    let start = stored
        .iter()
        .rposition(|m| m.role == MessageRole::Compaction)
        .unwrap_or(0);
    fill_unanswered(convert(&stored[start..]))
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
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: match &c.arguments {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        },
                    })
                    .collect(),
            }),
            MessageRole::Tool => Some(ModelMessage::Tool {
                call_id: m.tool_call_id.clone().unwrap_or_default(),
                content: m.text.clone().unwrap_or_default(),
            }),
            _ => None,
        })
        .collect()
}

/// A run's messages as the store keeps them.
pub(crate) fn to_stored(
    messages: &[ModelMessage],
    session_id: &str,
    run_id: &str,
    now: u64,
) -> Vec<Message> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut stored = Message {
                id: format!("msg_{run_id}_{i:04}").into(),
                session_id: session_id.to_owned().into(),
                run_id: Some(run_id.to_owned().into()),
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
                ModelMessage::Assistant { text, tool_calls } => {
                    stored.role = MessageRole::Assistant;
                    stored.text = text.clone();
                    stored.tool_calls = tool_calls.iter().map(wire_tool_call).collect();
                }
                ModelMessage::Tool { call_id, content } => {
                    stored.role = MessageRole::Tool;
                    stored.text = Some(content.clone());
                    stored.tool_call_id = Some(call_id.clone());
                }
            }
            stored
        })
        .collect()
}

/// A run's input, checked: the app's answers to pending client tool calls
/// (first), the messages before the user's turn, and the turn itself
/// (absent when the input only answers calls: the model goes on from the
/// answers).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Input {
    /// `tool` messages: (the call answered, the result).
    pub answers: Vec<(String, String)>,
    /// The messages between the answers and the turn.
    pub before: Vec<ModelMessage>,
    /// The user's message.
    pub message: Option<String>,
}

/// Splits a run's input (`talon_protocol::gateway::run_create`'s rules),
/// or says what is wrong with it.
pub(crate) fn split_input(messages: &[InputMessage]) -> Result<Input, String> {
    let parts = split_messages(messages)?;
    let answers = parts
        .answers
        .iter()
        .map(|m| {
            (
                m.tool_call_id.as_deref().unwrap_or_default().to_owned(),
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
            },
            InputRole::System => ModelMessage::System(m.content.clone()),
            InputRole::User | InputRole::Tool => ModelMessage::User(m.content.clone()),
        })
        .collect();
    Ok(Input {
        answers,
        before,
        message: parts.message.map(|m| m.content.clone()),
    })
}

/// What a client tool call the app never answered reads as.
pub(crate) const UNANSWERED: &str =
    r#"{"status":"unanswered","error":"the app did not answer this client tool call"}"#;

/// The tool calls of the history's last assistant message that nothing
/// answers yet: client calls a run left for the app.
pub(crate) fn pending_calls(history: &[ModelMessage]) -> Vec<String> {
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

/// The messages that answer the history's pending calls: the app's
/// answers, in the calls' order, and [`UNANSWERED`] for the rest. An
/// answer to a call that is not pending is an error naming it.
pub(crate) fn answer_pending(
    history: &[ModelMessage],
    answers: &[(String, String)],
) -> Result<Vec<ModelMessage>, String> {
    let pending = pending_calls(history);
    if let Some((id, _)) = answers.iter().find(|(id, _)| !pending.contains(id)) {
        return Err(format!(
            "toolCallId {id:?} answers no pending client tool call of this session"
        ));
    }
    Ok(pending
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
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_round_trips_through_the_store() {
        let messages = vec![
            ModelMessage::User("hi".into()),
            ModelMessage::Assistant {
                text: None,
                tool_calls: vec![ToolCallRequest {
                    id: "c1".into(),
                    name: "exec".into(),
                    arguments: r#"{"code":"1"}"#.into(),
                }],
            },
            ModelMessage::Tool {
                call_id: "c1".into(),
                content: "1".into(),
            },
            ModelMessage::Assistant {
                text: Some("one".into()),
                tool_calls: Vec::new(),
            },
        ];
        let stored = to_stored(&messages, "s", "r", 7);
        assert_eq!(
            stored[1].tool_calls[0].arguments,
            serde_json::json!({"code": "1"})
        );
        assert_eq!(to_model(&stored), messages);
    }

    #[test]
    fn history_starts_at_the_last_compaction() {
        let mut stored = to_stored(&[ModelMessage::User("old".into())], "s", "r", 1);
        stored.push(Message {
            role: MessageRole::Compaction,
            text: Some("we said hello".into()),
            ..stored[0].clone()
        });
        stored.extend(to_stored(&[ModelMessage::User("new".into())], "s", "r2", 2));
        assert_eq!(
            to_model(&stored),
            vec![
                ModelMessage::System("Summary of the earlier conversation:\nwe said hello".into()),
                ModelMessage::User("new".into()),
            ]
        );
    }

    fn input(role: InputRole, content: &str, call: Option<&str>) -> InputMessage {
        InputMessage {
            role,
            content: content.into(),
            tool_call_id: call.map(Into::into),
        }
    }

    #[test]
    fn the_last_user_message_is_the_turn() {
        let input = vec![
            input(InputRole::System, "be brief", None),
            input(InputRole::User, "first", None),
            input(InputRole::Assistant, "ok", None),
            input(InputRole::User, "second", None),
        ];
        let split = split_input(&input).unwrap();
        assert_eq!(split.message.as_deref(), Some("second"));
        assert_eq!(split.before.len(), 3);
        assert!(split.answers.is_empty());
        assert!(split_input(&input[..1]).is_err());
        assert!(split_input(&input[..3]).is_err());
        assert!(split_input(&[]).is_err());
    }

    #[test]
    fn tool_answers_come_first_and_may_stand_alone() {
        let answers = vec![
            input(InputRole::Tool, "blue", Some("c1")),
            input(InputRole::Tool, "42", Some("c2")),
        ];
        assert_eq!(
            split_input(&answers).unwrap(),
            Input {
                answers: vec![("c1".into(), "blue".into()), ("c2".into(), "42".into())],
                before: Vec::new(),
                message: None,
            }
        );
        let mut then_user = answers.clone();
        then_user.push(input(InputRole::User, "thanks", None));
        assert_eq!(
            split_input(&then_user).unwrap().message.as_deref(),
            Some("thanks")
        );
        let bad = [
            (
                vec![input(InputRole::Tool, "x", None)],
                "needs its toolCallId",
            ),
            (
                vec![input(InputRole::Tool, "x", Some(""))],
                "needs its toolCallId",
            ),
            (
                vec![
                    input(InputRole::Tool, "x", Some("c")),
                    input(InputRole::Tool, "y", Some("c")),
                ],
                "answered twice",
            ),
            (
                vec![
                    input(InputRole::User, "x", None),
                    input(InputRole::Tool, "y", Some("c")),
                ],
                "come first",
            ),
            (
                vec![input(InputRole::User, "x", Some("c"))],
                "only a tool message",
            ),
            (
                vec![
                    input(InputRole::Tool, "x", Some("c")),
                    input(InputRole::Assistant, "y", None),
                ],
                "the last message must be the user's",
            ),
        ];
        for (messages, why) in bad {
            let error = split_input(&messages).unwrap_err();
            assert!(error.contains(why), "{error:?} should say {why:?}");
        }
    }

    fn assistant_calling(ids: &[&str]) -> ModelMessage {
        ModelMessage::Assistant {
            text: None,
            tool_calls: ids
                .iter()
                .map(|id| ToolCallRequest {
                    id: (*id).into(),
                    name: "pick_color".into(),
                    arguments: "{}".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn pending_calls_are_answered_by_the_app_or_marked_unanswered() {
        let history = vec![
            ModelMessage::User("pick".into()),
            assistant_calling(&["c1", "c2", "c3"]),
            ModelMessage::Tool {
                call_id: "c3".into(),
                content: "server-side".into(),
            },
        ];
        assert_eq!(pending_calls(&history), ["c1", "c2"]);
        assert_eq!(
            answer_pending(&history, &[("c2".into(), "blue".into())]).unwrap(),
            vec![
                ModelMessage::Tool {
                    call_id: "c1".into(),
                    content: UNANSWERED.into()
                },
                ModelMessage::Tool {
                    call_id: "c2".into(),
                    content: "blue".into()
                },
            ]
        );
        let error = answer_pending(&history, &[("c3".into(), "again".into())]).unwrap_err();
        assert!(error.contains("\"c3\""), "{error}");
        // Nothing is pending once a later message follows, and the
        // history then answers the open calls itself.
        let mut later = history.clone();
        later.push(ModelMessage::User("never mind".into()));
        assert!(pending_calls(&later).is_empty());
        assert_eq!(answer_pending(&later, &[]).unwrap(), Vec::new());
        let stored = to_stored(&later, "s", "r", 1);
        let unanswered = |id: &str| ModelMessage::Tool {
            call_id: id.into(),
            content: UNANSWERED.into(),
        };
        assert_eq!(
            to_model(&stored),
            vec![
                later[0].clone(),
                later[1].clone(),
                later[2].clone(),
                unanswered("c1"),
                unanswered("c2"),
                later[3].clone(),
            ]
        );
        // The tail's open calls stay open for the next run.
        assert_eq!(to_model(&stored[..3]), history);
    }
}
