//! `runs.create`'s (and `sessions.send`'s) checks of its params, made once
//! for every server of the protocol: the gateway and the fake gateway
//! refuse the same requests with the same `invalid_request` message.
//! What a server checks against its own state (the agent, the session,
//! the environment, a tool name clashing with the agent's) stays its own.

use super::params::{
    ClientTool, InputMessage, InputRole, RunInput, RunsCreateParams, SessionsSendParams,
};
use super::{ApiError, refuse};
use crate::gateway::bounded::ToolCallId;

pub use super::caps::{MAX_CLIENT_TOOLS, MAX_INPUT_BYTES};

/// A run's messages input, in its three parts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InputParts<'a> {
    /// The leading `tool` messages: the app's answers to pending client
    /// tool calls, each with a `toolCallId` no other answer has.
    pub answers: &'a [InputMessage],
    /// The messages between the answers and the turn.
    pub before: &'a [InputMessage],
    /// The user's message (absent when the input only answers calls: the
    /// model goes on from the answers).
    pub message: Option<&'a InputMessage>,
}

/// What is wrong with a run's messages (the index is the message's, in
/// the input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputMessagesError {
    /// A leading `tool` message without its `toolCallId`.
    MissingToolCallId {
        /// The message.
        index: usize,
    },
    /// Two answers to one call.
    AnsweredTwice {
        /// The second answer.
        index: usize,
        /// The call.
        call: String,
    },
    /// A `tool` message after another kind of message.
    ToolMessageLate {
        /// The message.
        index: usize,
    },
    /// A `toolCallId` on a message that is not a `tool` message.
    StrayToolCallId {
        /// The message.
        index: usize,
    },
    /// No message at all.
    Empty,
    /// The input ends with a message that is not the user's.
    LastNotUser,
}

impl InputMessagesError {
    /// The `invalid_request` the servers answer with.
    pub fn error(&self) -> ApiError {
        let index = |i: &usize| u64::try_from(*i).unwrap_or(u64::MAX);
        match self {
            Self::MissingToolCallId { index: i } => {
                refuse::input_tool_message_without_call(index(i))
            }
            Self::AnsweredTwice { index: i, call } => {
                refuse::input_call_answered_twice(index(i), call)
            }
            Self::ToolMessageLate { index: i } => refuse::input_tool_message_late(index(i)),
            Self::StrayToolCallId { index: i } => refuse::input_call_id_off_tool(index(i)),
            Self::Empty => refuse::input_no_message(),
            Self::LastNotUser => refuse::input_last_not_user(),
        }
    }
}

impl std::fmt::Display for InputMessagesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error().message)
    }
}

impl std::error::Error for InputMessagesError {}

/// Splits a run's messages, or says what is wrong with them: `tool`
/// messages come first, each with a `toolCallId` no other answer has;
/// other messages carry none; the input ends with the user's message
/// unless it is only answers.
pub fn split_messages(messages: &[InputMessage]) -> Result<InputParts<'_>, InputMessagesError> {
    let answered = messages
        .iter()
        .take_while(|m| m.role == InputRole::Tool)
        .count();
    let (answers, rest) = messages.split_at(answered);
    for (index, m) in answers.iter().enumerate() {
        let Some(id) = m
            .tool_call_id
            .as_ref()
            .map(ToolCallId::as_str)
            .filter(|id| !id.is_empty())
        else {
            return Err(InputMessagesError::MissingToolCallId { index });
        };
        if answers[..index]
            .iter()
            .any(|seen| seen.tool_call_id.as_ref().map(ToolCallId::as_str) == Some(id))
        {
            return Err(InputMessagesError::AnsweredTwice {
                index,
                call: id.to_owned(),
            });
        }
    }
    for (i, m) in rest.iter().enumerate() {
        let index = i + answered;
        if m.role == InputRole::Tool {
            return Err(InputMessagesError::ToolMessageLate { index });
        }
        if m.tool_call_id.is_some() {
            return Err(InputMessagesError::StrayToolCallId { index });
        }
    }
    let Some((last, before)) = rest.split_last() else {
        return if answers.is_empty() {
            Err(InputMessagesError::Empty)
        } else {
            Ok(InputParts {
                answers,
                before: &[],
                message: None,
            })
        };
    };
    if last.role != InputRole::User {
        return Err(InputMessagesError::LastNotUser);
    }
    Ok(InputParts {
        answers,
        before,
        message: Some(last),
    })
}

/// A length as a refusal counts it.
fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Client tools as a provider takes them: at most [`MAX_CLIENT_TOOLS`],
/// each named by 1 to 64 ASCII letters, digits, `_` or `-`, once, with an
/// object schema. Whether a name clashes with the agent's own tools is
/// known when the run is built (the run then fails, naming both).
pub fn check_client_tools(tools: &[ClientTool]) -> Result<(), ApiError> {
    if tools.len() > MAX_CLIENT_TOOLS {
        return Err(refuse::too_many_client_tools(
            count(tools.len()),
            count(MAX_CLIENT_TOOLS),
        ));
    }
    for (i, tool) in tools.iter().enumerate() {
        let name = &tool.name;
        let well_formed = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !well_formed {
            let shown: String = name.chars().take(64).collect();
            return Err(refuse::client_tool_name(count(i), &shown));
        }
        if tools[..i].iter().any(|t| &t.name == name) {
            return Err(refuse::client_tool_twice(count(i), name));
        }
        if tool.parameters.get("type").and_then(|t| t.as_str()) != Some("object") {
            return Err(refuse::client_tool_parameters(count(i)));
        }
    }
    Ok(())
}

impl RunInput {
    /// Its size as [`MAX_INPUT_BYTES`] counts it.
    pub fn size(&self) -> usize {
        match self {
            Self::Text(text) => text.len(),
            Self::Messages(messages) => messages.iter().map(|m| m.content.len()).sum(),
        }
    }
}

impl RunsCreateParams {
    /// The checks that need no state: the client tools, the input (not
    /// empty, messages in order, at most [`MAX_INPUT_BYTES`]) and
    /// `timeoutMs` (above 0).
    pub fn check(&self) -> Result<(), ApiError> {
        check_client_tools(&self.tools)?;
        match &self.input {
            RunInput::Text(text) if text.trim().is_empty() => {
                return Err(refuse::input_empty());
            }
            RunInput::Text(_) => {}
            RunInput::Messages(messages) => {
                split_messages(messages).map_err(|e| e.error())?;
            }
        }
        let size = self.input.size();
        if size > MAX_INPUT_BYTES {
            return Err(refuse::input_too_large(count(size), count(MAX_INPUT_BYTES)));
        }
        if self.timeout_ms == Some(0) {
            return Err(refuse::timeout_zero());
        }
        Ok(())
    }
}

impl From<SessionsSendParams> for RunsCreateParams {
    /// `sessions.send` is `runs.create` in the session it names.
    fn from(p: SessionsSendParams) -> Self {
        Self {
            agent_id: None,
            input: p.input,
            session_key: None,
            session_id: Some(p.session_id),
            tools: p.tools,
            multitask_strategy: p.multitask_strategy,
            timeout_ms: p.timeout_ms,
            environment_id: p.environment_id,
            idempotency_key: p.idempotency_key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: InputRole, call: Option<&str>) -> InputMessage {
        InputMessage {
            role,
            content: "text".into(),
            tool_call_id: call.map(ToolCallId::new),
        }
    }

    #[test]
    fn each_refusal_is_a_variant_with_its_text() {
        use InputRole::{Assistant, Tool, User};
        let cases = [
            (
                vec![],
                InputMessagesError::Empty,
                "input: the input has no message",
            ),
            (
                vec![message(Tool, None)],
                InputMessagesError::MissingToolCallId { index: 0 },
                "input: input[0]: a tool message needs its toolCallId",
            ),
            (
                vec![message(Tool, Some("c")), message(Tool, Some("c"))],
                InputMessagesError::AnsweredTwice {
                    index: 1,
                    call: "c".into(),
                },
                "input: input[1]: call \"c\" is answered twice",
            ),
            (
                vec![message(User, None), message(Tool, Some("c"))],
                InputMessagesError::ToolMessageLate { index: 1 },
                "input: input[1]: tool messages come first, before any other message",
            ),
            (
                vec![message(User, Some("c"))],
                InputMessagesError::StrayToolCallId { index: 0 },
                "input: input[0]: only a tool message has a toolCallId",
            ),
            (
                vec![message(User, None), message(Assistant, None)],
                InputMessagesError::LastNotUser,
                "input: the last message must be the user's (or the input only answers tool calls)",
            ),
        ];
        for (messages, error, text) in cases {
            let got = split_messages(&messages).unwrap_err();
            assert_eq!((got.to_string().as_str(), &got), (text, &error));
        }
    }
}
