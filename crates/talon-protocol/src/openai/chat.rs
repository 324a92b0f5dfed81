//! `POST /v1/chat/completions`: the request Talon reads, the completion
//! and the chunks it sends, and [`ChatFold`], the one projection of a
//! run's events into chunks. The non-streamed completion is the fold's
//! chunks gathered ([`ChatFold::completion`]), so both forms say the same.
//!
//! - `content` is every assistant text of the run, in order; the texts of
//!   two model turns are joined by a blank line.
//! - Server-side tool calls and approvals are `reasoning_content` lines
//!   plus a `talon` object on the chunk ([`super::progress`]); so is the
//!   model's own reasoning where the agent's exposure policy lets
//!   `thinking.delta` through.
//! - A client tool the model called ends the run with `pendingToolCalls`:
//!   they become `tool_calls` and `finish_reason: "tool_calls"`.
//! - A failed, cancelled or timed-out run is an error: in a stream, a
//!   `data: {"error": ...}` event (the official clients raise it).
//!
//! Fields Talon does not act on (`temperature`, `seed`, `logprobs`,
//! `response_format`, ...) are accepted and ignored; what would change
//! the answer's meaning and cannot be honoured (`n` > 1, a forced
//! `tool_choice`, non-text content) is refused.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::OpenAiError;
use crate::event_data::{EventData, RunEndedData};
use crate::events::Event;
use crate::gateway::{MessageToolCall, Usage};

/// A chat completion request (the fields Talon reads).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChatRequest {
    /// `talon/<agentId>`.
    pub model: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Stream chunks.
    #[serde(default)]
    pub stream: Option<bool>,
    /// `include_usage`.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Client tools.
    #[serde(default)]
    pub tools: Option<Vec<ChatTool>>,
    /// `auto` or `none`.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// A stable id of the end user: names the session when no header does.
    #[serde(default)]
    pub user: Option<String>,
    /// Choices wanted: only 1.
    #[serde(default)]
    pub n: Option<u64>,
}

/// `stream_options`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct StreamOptions {
    /// Send a last chunk with the usage.
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// One message of the request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Text, or text parts.
    #[serde(default)]
    pub content: Option<Content>,
    /// An assistant message's tool calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<ChatToolCall>>,
    /// A tool message's call.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// A message's content.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Parts (`{type: "text", text}`).
    Parts(Vec<ContentPart>),
}

/// One content part.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ContentPart {
    /// `text` (others are refused).
    #[serde(rename = "type")]
    pub kind: String,
    /// The text.
    #[serde(default)]
    pub text: Option<String>,
}

impl ChatMessage {
    /// The message's text (parts joined); an error for a part that is not
    /// text. `index` names the message in the error.
    pub fn text(&self, index: usize) -> Result<String, OpenAiError> {
        match &self.content {
            None => Ok(String::new()),
            Some(Content::Text(text)) => Ok(text.clone()),
            Some(Content::Parts(parts)) => {
                let mut text = String::new();
                for part in parts {
                    match (part.kind.as_str(), &part.text) {
                        ("text" | "input_text" | "output_text", Some(t)) => text.push_str(t),
                        (kind, _) => {
                            return Err(OpenAiError::invalid(
                                format!(
                                    "messages[{index}]: content parts of type {:?} are not supported (text only)",
                                    super::cut(kind, 40)
                                ),
                                Some("messages"),
                                "unsupported_content",
                            ));
                        }
                    }
                }
                Ok(text)
            }
        }
    }
}

/// A client tool.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChatTool {
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function.
    pub function: FunctionDef,
}

/// A function a client tool offers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FunctionDef {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
    /// Its JSON Schema.
    #[serde(default)]
    pub parameters: Option<Value>,
}

/// A tool call, as messages carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatToolCall {
    /// The call's id.
    pub id: String,
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The call.
    pub function: FunctionCall,
}

/// A function call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The function.
    pub name: String,
    /// Its arguments, a JSON string.
    pub arguments: String,
}

impl From<&MessageToolCall> for ChatToolCall {
    fn from(call: &MessageToolCall) -> Self {
        Self {
            id: call.id.clone(),
            kind: "function".into(),
            function: FunctionCall {
                name: call.name.clone(),
                arguments: call.arguments.to_string(),
            },
        }
    }
}

/// `usage`, in OpenAI's names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatUsage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
    /// Prompt tokens the provider read from its cache, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptTokensDetails {
    /// Read from the provider's prompt cache.
    pub cached_tokens: u64,
}

impl From<&Usage> for ChatUsage {
    fn from(usage: &Usage) -> Self {
        let prompt = usage.input_tokens.unwrap_or(0);
        let completion = usage.output_tokens.unwrap_or(0);
        Self {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: usage.total_tokens.unwrap_or(prompt + completion),
            prompt_tokens_details: usage
                .cache_read_tokens
                .map(|cached_tokens| PromptTokensDetails { cached_tokens }),
        }
    }
}

/// What a chat stream sends next.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatOut {
    /// A chunk.
    Chunk(Value),
    /// The run failed: the stream's last event.
    Error(OpenAiError),
}

/// Who the completion is for, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatHeader {
    /// `chatcmpl-<runId>`.
    pub id: String,
    /// Seconds since the epoch.
    pub created: u64,
    /// The model id the request named.
    pub model: String,
    /// Send a usage chunk at the end.
    pub include_usage: bool,
}

/// The fold of a run's events into chat chunks.
#[derive(Debug, Clone)]
pub struct ChatFold {
    header: ChatHeader,
    content: String,
    reasoning: String,
    /// Text seen in the current model turn.
    turn_text: bool,
    /// A turn with text ended: the next text starts with a blank line.
    separate: bool,
    tool_calls: Vec<ChatToolCall>,
    finish: Option<String>,
    usage: ChatUsage,
    error: Option<OpenAiError>,
    ended: bool,
}

impl ChatFold {
    /// A fold for one run.
    pub fn new(header: ChatHeader) -> Self {
        Self {
            header,
            content: String::new(),
            reasoning: String::new(),
            turn_text: false,
            separate: false,
            tool_calls: Vec::new(),
            finish: None,
            usage: ChatUsage::default(),
            error: None,
            ended: false,
        }
    }

    /// Whether the run's terminal event was folded.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The first chunk: the assistant's role, sent before any event.
    pub fn opening(&self) -> Value {
        self.chunk(json!({"role": "assistant", "content": ""}), None, None)
    }

    fn chunk(&self, delta: Value, finish: Option<&str>, talon: Option<Value>) -> Value {
        let mut chunk = json!({
            "id": self.header.id, "object": "chat.completion.chunk",
            "created": self.header.created, "model": self.header.model,
            "system_fingerprint": null,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
        });
        if self.header.include_usage {
            chunk["usage"] = Value::Null;
        }
        if let Some(talon) = talon {
            chunk["talon"] = talon;
        }
        chunk
    }

    fn text(&mut self, text: &str) -> Option<Value> {
        if text.is_empty() {
            return None;
        }
        let mut piece = String::new();
        if self.separate && !self.turn_text {
            piece.push_str("\n\n");
        }
        self.separate = false;
        self.turn_text = true;
        piece.push_str(text);
        self.content.push_str(&piece);
        Some(self.chunk(json!({"content": piece}), None, None))
    }

    fn reasoning(&mut self, text: &str, talon: Option<Value>) -> Value {
        self.reasoning.push_str(text);
        self.chunk(json!({"reasoning_content": text}), None, talon)
    }

    /// The chunks one event makes (none for most).
    pub fn push(&mut self, event: &Event) -> Vec<ChatOut> {
        if self.ended {
            return Vec::new();
        }
        let Some(data) = event.typed() else {
            return Vec::new();
        };
        if let Some(step) = super::progress::step(&data) {
            return vec![ChatOut::Chunk(self.reasoning(&step.line, Some(step.talon)))];
        }
        match data {
            EventData::AssistantDelta(d) => {
                self.text(&d.text).map(ChatOut::Chunk).into_iter().collect()
            }
            EventData::ThinkingDelta(d) if !d.text.is_empty() => {
                vec![ChatOut::Chunk(self.reasoning(&d.text, None))]
            }
            EventData::AssistantMessage(m) => {
                // A provider that does not stream sends the text whole.
                let mut out = Vec::new();
                if !self.turn_text
                    && let Some(chunk) = m.text.as_deref().and_then(|t| self.text(t))
                {
                    out.push(ChatOut::Chunk(chunk));
                }
                if self.turn_text {
                    self.separate = true;
                }
                self.turn_text = false;
                out
            }
            EventData::RunCompleted(end) => self.end(&end, None),
            EventData::RunFailed(end) => self.end(&end, Some(("run_failed", 500, "server_error"))),
            EventData::RunCancelled(end) => {
                self.end(&end, Some(("run_cancelled", 409, "invalid_request_error")))
            }
            EventData::RunTimedOut(end) => {
                self.end(&end, Some(("run_timed_out", 504, "server_error")))
            }
            _ => Vec::new(),
        }
    }

    fn end(
        &mut self,
        end: &RunEndedData,
        failure: Option<(&'static str, u16, &'static str)>,
    ) -> Vec<ChatOut> {
        self.ended = true;
        self.usage = ChatUsage::from(&end.usage);
        let mut out = Vec::new();
        if let Some((code, status, kind)) = failure {
            let message = end.error.clone().unwrap_or_else(|| code.replace('_', " "));
            let error = OpenAiError {
                message,
                kind,
                param: None,
                code: Some(code),
                talon_code: None,
                retryable: false,
                details: None,
                status,
                retry_after_ms: None,
            };
            self.error = Some(error.clone());
            out.push(ChatOut::Error(error));
            return out;
        }
        if self.content.is_empty()
            && let Some(chunk) = end.text.as_deref().and_then(|t| self.text(t))
        {
            out.push(ChatOut::Chunk(chunk));
        }
        if end.pending_tool_calls.is_empty() {
            self.finish = Some("stop".into());
            out.push(ChatOut::Chunk(self.chunk(json!({}), Some("stop"), None)));
        } else {
            self.tool_calls = end
                .pending_tool_calls
                .iter()
                .map(ChatToolCall::from)
                .collect();
            let deltas: Vec<Value> = self
                .tool_calls
                .iter()
                .enumerate()
                .map(|(index, call)| {
                    json!({"index": index, "id": call.id, "type": "function",
                           "function": {"name": call.function.name,
                                        "arguments": call.function.arguments}})
                })
                .collect();
            out.push(ChatOut::Chunk(self.chunk(
                json!({"tool_calls": deltas}),
                None,
                None,
            )));
            self.finish = Some("tool_calls".into());
            out.push(ChatOut::Chunk(self.chunk(
                json!({}),
                Some("tool_calls"),
                None,
            )));
        }
        if self.header.include_usage {
            out.push(ChatOut::Chunk(json!({
                "id": self.header.id, "object": "chat.completion.chunk",
                "created": self.header.created, "model": self.header.model,
                "system_fingerprint": null, "choices": [], "usage": self.usage,
            })));
        }
        out
    }

    /// The whole completion, once the run ended: `Err` for a run that did
    /// not complete.
    pub fn completion(&self) -> Result<Value, OpenAiError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let mut message = json!({
            "role": "assistant", "content": self.content, "refusal": null,
        });
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = json!(self.tool_calls);
            if self.content.is_empty() {
                message["content"] = Value::Null;
            }
        }
        if !self.reasoning.is_empty() {
            message["reasoning_content"] = json!(self.reasoning);
        }
        Ok(json!({
            "id": self.header.id, "object": "chat.completion",
            "created": self.header.created, "model": self.header.model,
            "system_fingerprint": null,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": self.finish.as_deref().unwrap_or("stop"),
                         "logprobs": null}],
            "usage": self.usage,
        }))
    }
}
