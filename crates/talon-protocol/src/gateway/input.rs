//! A run's input: the user's message, or messages to add to the
//! session's conversation, decoded so that an error inside a message names
//! its path.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounded::ToolCallId;

/// A run's input: the user's message, or messages to add to the
/// session's conversation (the last one a user message).
///
/// Decoded by hand rather than as an untagged enum, so that an error
/// inside a message names its path (`input[0].toolCallId`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RunInput {
    /// The user's message.
    Text(String),
    /// Messages, oldest first.
    Messages(Vec<InputMessage>),
}

impl<'de> Deserialize<'de> for RunInput {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RunInput;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the user's message (a string) or an array of messages")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<RunInput, E> {
                Ok(RunInput::Text(text.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<RunInput, E> {
                Ok(RunInput::Text(text))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<RunInput, A::Error> {
                Vec::<InputMessage>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(RunInput::Messages)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl RunInput {
    /// How many characters of the input [`RunInput::summary`] keeps.
    pub const SUMMARY_CHARS: usize = super::caps::RUN_SUMMARY_CHARS;

    /// The input in one line (`Run.summary`): the first line of the
    /// user's message that is not blank (of the last user message, for
    /// messages; of the last message when none is the user's), trimmed,
    /// cut at [`RunInput::SUMMARY_CHARS`] characters with `…` marking the
    /// cut; `None` when there is no text.
    pub fn summary(&self) -> Option<String> {
        let text = match self {
            Self::Text(text) => text.as_str(),
            Self::Messages(messages) => messages
                .iter()
                .rev()
                .find(|m| m.role == InputRole::User)
                .or_else(|| messages.last())
                .map(|m| m.content.as_str())?,
        };
        let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        let mut chars = line.chars();
        let mut out: String = chars.by_ref().take(Self::SUMMARY_CHARS).collect();
        if chars.next().is_some() {
            out.pop();
            out.push('…');
        }
        Some(out)
    }
}

impl From<&str> for RunInput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for RunInput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Vec<InputMessage>> for RunInput {
    fn from(messages: Vec<InputMessage>) -> Self {
        Self::Messages(messages)
    }
}

/// One message of a [`RunInput`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InputMessage {
    /// `user`, `assistant`, `system` or `tool`.
    pub role: InputRole,
    /// Its text (for `tool`, the result the model reads).
    pub content: String,
    /// For `tool`: the client tool call it answers (a call the session's
    /// last run left pending; see `RunEndedData.pendingToolCalls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<ToolCallId>,
}

/// Who wrote an [`InputMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputRole {
    /// The user or app.
    User,
    /// The model (a prior reply the app supplies).
    Assistant,
    /// Instructions added to the system prompt.
    System,
    /// A client tool's result: answers the pending call `toolCallId`.
    /// Tool messages come first in the input; a run whose input is only
    /// tool messages lets the model go on from them.
    Tool,
}
