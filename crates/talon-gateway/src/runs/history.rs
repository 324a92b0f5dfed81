//! A session's conversation between the store's form (the protocol's
//! `Message`) and the model's (the provider's `Message`): what a run
//! reads as its history, and what it writes back when it ends. A
//! compaction record stands for everything before it.

use serde_json::Value;
use talon_protocol::gateway::{InputMessage, InputRole, Message, MessageRole, MessageToolCall};
use talon_provider::{Message as ModelMessage, ToolCallRequest};

/// The model's history from a session's stored messages: from the last
/// compaction record (as a system note carrying its summary) on.
pub(crate) fn to_model(stored: &[Message]) -> Vec<ModelMessage> {
    let start = stored
        .iter()
        .rposition(|m| m.role == MessageRole::Compaction)
        .unwrap_or(0);
    stored[start..]
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
                id: format!("msg_{run_id}_{i:04}"),
                session_id: session_id.to_owned(),
                run_id: Some(run_id.to_owned()),
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
                    stored.tool_calls = tool_calls
                        .iter()
                        .map(|c| MessageToolCall {
                            id: c.id.clone(),
                            name: c.name.clone(),
                            arguments: serde_json::from_str(&c.arguments)
                                .unwrap_or_else(|_| Value::String(c.arguments.clone())),
                        })
                        .collect();
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

/// A run's input split into the messages that precede the user's turn and
/// the user's message itself, which must come last (`None` otherwise).
pub(crate) fn split_input(messages: &[InputMessage]) -> Option<(Vec<ModelMessage>, String)> {
    let (last, before) = messages.split_last()?;
    if last.role != InputRole::User {
        return None;
    }
    let before = before
        .iter()
        .map(|m| match m.role {
            InputRole::User => ModelMessage::User(m.content.clone()),
            InputRole::Assistant => ModelMessage::Assistant {
                text: Some(m.content.clone()),
                tool_calls: Vec::new(),
            },
            InputRole::System => ModelMessage::System(m.content.clone()),
        })
        .collect();
    Some((before, last.content.clone()))
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

    #[test]
    fn the_last_user_message_is_the_turn() {
        let input = vec![
            InputMessage {
                role: InputRole::System,
                content: "be brief".into(),
            },
            InputMessage {
                role: InputRole::User,
                content: "first".into(),
            },
            InputMessage {
                role: InputRole::Assistant,
                content: "ok".into(),
            },
            InputMessage {
                role: InputRole::User,
                content: "second".into(),
            },
        ];
        let (before, message) = split_input(&input).unwrap();
        assert_eq!(message, "second");
        assert_eq!(before.len(), 3);
        assert_eq!(split_input(&input[..1]), None);
        assert_eq!(split_input(&input[..3]), None);
    }
}
