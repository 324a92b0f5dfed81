//! The conversation and reply types the loop and providers share.

use serde_json::{Value, json};
use talon_protocol::ModelTool;

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The system prompt.
    System(String),
    /// The user.
    User(String),
    /// The assistant: text and/or tool calls.
    Assistant {
        /// Its text, if any.
        text: Option<String>,
        /// Its tool calls, in order.
        tool_calls: Vec<ToolCallRequest>,
        /// The provider's reasoning blocks to replay verbatim (Anthropic
        /// `thinking`/`redacted_thinking`, with their signatures), in the
        /// order they came. Never shown to users; empty for providers that
        /// do not ask for it back (the Chat Completions form never sends it).
        reasoning: Vec<ReasoningBlock>,
    },
    /// A tool's result for one call.
    Tool {
        /// The call it answers.
        call_id: String,
        /// The result as text (JSON for structured results).
        content: String,
    },
}

impl Message {
    /// The Chat Completions form.
    pub fn to_openai(&self) -> Value {
        match self {
            Self::System(text) => json!({"role": "system", "content": text}),
            Self::User(text) => json!({"role": "user", "content": text}),
            Self::Assistant {
                text, tool_calls, ..
            } => {
                let mut message = json!({"role": "assistant", "content": text});
                if !tool_calls.is_empty() {
                    message["tool_calls"] = Value::Array(
                        tool_calls
                            .iter()
                            .map(|c| {
                                json!({"id": c.id, "type": "function",
                                       "function": {"name": c.name, "arguments": c.arguments}})
                            })
                            .collect(),
                    );
                }
                message
            }
            Self::Tool { call_id, content } => {
                json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        }
    }
}

/// A reasoning block a provider wants back unchanged in the next request
/// of a tool cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReasoningBlock {
    /// Visible thinking and the signature that seals it.
    Thinking {
        /// The thinking text.
        text: String,
        /// Its signature (opaque), if the provider sent one.
        signature: Option<String>,
    },
    /// Encrypted thinking (opaque data).
    Redacted {
        /// The data, as received.
        data: String,
    },
}

/// How hard the model thinks before it answers (OpenClaw's
/// `thinkingDefault`). Providers that cannot think ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Thinking {
    /// No extended thinking (the default).
    #[default]
    Off,
    /// Extended thinking with this budget of tokens (at least 1024).
    Budget(u32),
    /// The model decides (Anthropic `{"type": "adaptive"}`).
    Adaptive,
}

impl Thinking {
    /// OpenClaw's level names: `off`; `minimal` and `low` 1024 tokens,
    /// `medium` 4096, `high` 16384, `xhigh` and `max` 32768; `adaptive`.
    /// `None` for another word.
    pub fn from_level(level: &str) -> Option<Self> {
        Some(match level {
            "off" => Self::Off,
            "minimal" | "low" => Self::Budget(1024),
            "medium" => Self::Budget(4096),
            "high" => Self::Budget(16_384),
            "xhigh" | "max" => Self::Budget(32_768),
            "adaptive" => Self::Adaptive,
            _ => return None,
        })
    }
}

/// Prompt caching (OpenClaw's `params.cacheRetention`): where a provider
/// supports explicit breakpoints (Anthropic), `Short` marks them with a
/// five-minute lifetime and `Long` with an hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheRetention {
    /// No breakpoints (the default).
    #[default]
    None,
    /// `{"type": "ephemeral"}` (five minutes).
    Short,
    /// `{"type": "ephemeral", "ttl": "1h"}`.
    Long,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRequest {
    /// The provider's call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments as the model wrote them (JSON text).
    pub arguments: String,
}

/// One request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The model id at the provider.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// The tools the model may call (shared: a run sends the same list on
    /// every turn, and providers may serialize it once).
    pub tools: std::sync::Arc<Vec<ModelTool>>,
    /// Most tokens of the reply.
    pub max_tokens: Option<u32>,
    /// Ask for a streamed reply.
    pub stream: bool,
    /// Extended thinking, where the provider supports it.
    pub thinking: Thinking,
    /// Prompt-cache breakpoints, where the provider supports them.
    pub cache: CacheRetention,
}

impl ChatRequest {
    /// The Chat Completions request body.
    pub fn to_openai(&self) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": self.messages.iter().map(Message::to_openai).collect::<Vec<_>>(),
            "stream": self.stream,
        });
        if !self.tools.is_empty() {
            body["tools"] = tools_json(&self.tools);
        }
        if let Some(max) = self.max_tokens {
            body["max_tokens"] = json!(max);
        }
        if self.stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }
}

/// The Chat Completions `tools` array.
pub fn tools_json(tools: &[ModelTool]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {"name": t.name,
                       "description": t.description, "parameters": t.parameters}})
            })
            .collect(),
    )
}

impl ChatRequest {
    /// The request body as JSON text, with the tools array taken from
    /// `tools_text` (already serialized) instead of serialized again.
    pub fn to_openai_text(&self, tools_text: Option<&str>) -> String {
        let mut body = self.to_openai_without_tools();
        let rest = body.to_string();
        match tools_text {
            Some(tools) if !self.tools.is_empty() => {
                // `rest` is a JSON object with at least `model`: `{"...`.
                let mut out = String::with_capacity(rest.len() + tools.len() + 10);
                out.push_str("{\"tools\":");
                out.push_str(tools);
                out.push(',');
                out.push_str(&rest[1..]);
                out
            }
            _ => {
                if !self.tools.is_empty() {
                    body["tools"] = tools_json(&self.tools);
                }
                body.to_string()
            }
        }
    }

    fn to_openai_without_tools(&self) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": self.messages.iter().map(Message::to_openai).collect::<Vec<_>>(),
            "stream": self.stream,
        });
        if let Some(max) = self.max_tokens {
            body["max_tokens"] = json!(max);
        }
        if self.stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }
}

/// Token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Prompt tokens, all of them: with prompt caching, the uncached ones
    /// plus those read from and written to the cache.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache (part of
    /// `input_tokens`).
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache (part of
    /// `input_tokens`).
    pub cache_write_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// A streamed piece of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    /// Assistant text.
    Text(String),
    /// The model's reasoning (Anthropic `thinking_delta`, a Chat Completions
    /// `reasoning_content` or `reasoning`): shown only where policy allows.
    Thinking(String),
    /// A tool call started (its id and name are known).
    ToolCallStarted {
        /// Position among the reply's calls.
        index: usize,
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// More of a tool call's arguments.
    ToolCallArguments {
        /// Position among the reply's calls.
        index: usize,
        /// The new text.
        text: String,
    },
}

/// A whole reply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChatResponse {
    /// The assistant's text (empty when it only called tools).
    pub text: String,
    /// Its tool calls, in order.
    pub tool_calls: Vec<ToolCallRequest>,
    /// Tokens used.
    pub usage: Usage,
    /// `stop`, `tool_calls`, `length`, `refusal`, ...
    pub finish_reason: String,
    /// Reasoning to replay with this reply's tool calls (see
    /// [`Message::Assistant`]'s `reasoning`).
    pub reasoning: Vec<ReasoningBlock>,
    /// The native payload it came in, bounded, for diagnostics.
    pub raw: crate::RawReply,
    /// Bytes of the tool list as the request sent it (in the provider's
    /// wire format): counted where the body is built, not serialized again.
    pub tool_bytes: u64,
}
