//! A request's conversation: chat `messages`, or Responses `input` (a
//! string or items), as the roles and texts a run takes. Only text is
//! taken: a non-text part, an unknown role or item type is refused, never
//! dropped. `system`/`developer` messages are this run's instructions;
//! echoes of earlier output (`function_call`, `reasoning`, `mcp_call`
//! items) are skipped, the session holds them.

use serde_json::Value;
use talon_protocol::openai::OpenAiError;
use talon_protocol::openai::chat::ChatRequest;

use super::conversation::{Conversation, Msg, Role};

/// The request's messages as a conversation.
pub(super) fn from_messages(request: &ChatRequest) -> Result<Conversation, OpenAiError> {
    let mut conversation = Conversation::default();
    if request.messages.is_empty() {
        return Err(OpenAiError::invalid(
            "messages must not be empty",
            Some("messages"),
            "invalid_messages",
        ));
    }
    for (index, message) in request.messages.iter().enumerate() {
        let text = message.text(index)?;
        let role = match message.role.as_str() {
            "system" | "developer" => {
                conversation.system.push(text);
                continue;
            }
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => {
                if message.tool_call_id.is_none() {
                    return Err(OpenAiError::invalid(
                        format!("messages[{index}]: a tool message needs its tool_call_id"),
                        Some("messages"),
                        "invalid_messages",
                    ));
                }
                Role::Tool
            }
            other => {
                return Err(OpenAiError::invalid(
                    format!(
                        "messages[{index}]: unknown role {:?}",
                        talon_protocol::openai::cut(other, 40)
                    ),
                    Some("messages"),
                    "invalid_messages",
                ));
            }
        };
        conversation.messages.push(Msg {
            role,
            text,
            tool_call_id: message.tool_call_id.clone(),
        });
    }
    Ok(conversation)
}

/// A request's `input`: a string, or items.
pub(super) fn from_items(input: &Value) -> Result<Conversation, OpenAiError> {
    let bad = |index: usize, what: &str| {
        OpenAiError::invalid(
            format!("input[{index}]: {what}"),
            Some("input"),
            "invalid_input",
        )
    };
    let mut conversation = Conversation::default();
    let items = match input {
        Value::String(text) => {
            conversation.messages.push(Msg {
                role: Role::User,
                text: text.clone(),
                tool_call_id: None,
            });
            return Ok(conversation);
        }
        Value::Array(items) => items,
        _ => {
            return Err(OpenAiError::invalid(
                "input must be a string or a list of items",
                Some("input"),
                "invalid_input",
            ));
        }
    };
    for (index, item) in items.iter().enumerate() {
        let kind = item["type"]
            .as_str()
            .unwrap_or(if item.get("role").is_some() {
                "message"
            } else {
                ""
            });
        match kind {
            "message" => {
                let text = match &item["content"] {
                    Value::String(text) => text.clone(),
                    Value::Array(parts) => {
                        let mut text = String::new();
                        for part in parts {
                            match (part["type"].as_str(), part["text"].as_str()) {
                                (Some("input_text" | "output_text" | "text"), Some(t)) => {
                                    text.push_str(t)
                                }
                                _ => return Err(bad(index, "only text content is supported")),
                            }
                        }
                        text
                    }
                    _ => return Err(bad(index, "a message needs content")),
                };
                match item["role"].as_str() {
                    Some("user") => conversation.messages.push(Msg {
                        role: Role::User,
                        text,
                        tool_call_id: None,
                    }),
                    Some("assistant") => conversation.messages.push(Msg {
                        role: Role::Assistant,
                        text,
                        tool_call_id: None,
                    }),
                    Some("system" | "developer") => conversation.system.push(text),
                    _ => {
                        return Err(bad(
                            index,
                            "a message's role is user, assistant, system or developer",
                        ));
                    }
                }
            }
            "function_call_output" => {
                let Some(call_id) = item["call_id"].as_str() else {
                    return Err(bad(index, "a function_call_output needs its call_id"));
                };
                let text = match &item["output"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                conversation.messages.push(Msg {
                    role: Role::Tool,
                    text,
                    tool_call_id: Some(call_id.to_owned()),
                });
            }
            // Echoes of earlier output: the session holds them.
            "function_call" | "reasoning" | "mcp_call" | "mcp_approval_request" => {}
            "mcp_approval_response" => {
                return Err(bad(
                    index,
                    "answer approvals with approvals.respond (the App SDK or the dashboard)",
                ));
            }
            _ => return Err(bad(index, "unsupported item type")),
        }
    }
    Ok(conversation)
}
