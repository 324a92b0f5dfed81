//! Anthropic replies, streamed and whole, as a [`ChatResponse`].
//!
//! [`Reply`] is the streaming state machine: content blocks by `index`
//! (new indexes only, at most [`MAX_BLOCKS`]), deltas checked against
//! their block's kind, tool input parsed once at `content_block_stop`,
//! usage from `message_start` overwritten by each `message_delta` (whose
//! counts are cumulative), `ping` and unknown event types ignored, an
//! `error` event turned into the error of its type. A stream that ends
//! before a `stop_reason` is malformed; a tool call left unfinished by
//! `max_tokens` is dropped (never run) and the reply is `length`. A reply
//! whose text, thinking and tool input pass [`MAX_REPLY_BYTES`] is
//! malformed.
//!
//! `stop_reason` maps to the loop's vocabulary: `end_turn`,
//! `stop_sequence` and `pause_turn` are `stop`, `tool_use` is
//! `tool_calls`, `max_tokens` and `model_context_window_exceeded` are
//! `length`, `refusal` is `refusal`; another value passes as it is.
//! Usage's `input_tokens` is the whole prompt: Anthropic's uncached
//! `input_tokens` plus the cache's reads and writes.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{ProviderError, Result};
use crate::retry;
use crate::types::{ChatResponse, ReasoningBlock, StreamDelta, ToolCallRequest, Usage};

/// Most content blocks in one reply (as the Chat Completions client
/// bounds tool call indexes).
pub(crate) const MAX_BLOCKS: usize = 256;
/// Most bytes of text, thinking and tool input in one reply (each event
/// is bounded by the SSE reader; this bounds their sum).
pub(crate) const MAX_REPLY_BYTES: usize = 64 << 20;

#[derive(Debug)]
enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
        /// The input of `content_block_start`, used when no fragment came.
        initial: Value,
    },
    Thinking {
        text: String,
        signature: Option<String>,
    },
    Redacted(String),
    /// A kind this client does not use (server tools, citations...).
    Other,
}

/// The state of one streamed reply.
#[derive(Debug)]
pub(crate) struct Reply {
    provider: String,
    /// The model asked for (named by a `not_found_error` event).
    model: String,
    /// The attempt this stream is (for an error event's `attempts`).
    attempt: u32,
    blocks: BTreeMap<usize, (Block, bool)>,
    started: bool,
    stopped: bool,
    stop_reason: Option<String>,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    /// Bytes of text, thinking and tool input so far.
    bytes: usize,
    /// Whether anything reached the sink (an error after that is not
    /// retried: the deltas would be shown twice).
    pub(crate) forwarded: bool,
}

impl Reply {
    pub(crate) fn new(provider: &str, model: &str, attempt: u32) -> Self {
        Self {
            provider: provider.to_owned(),
            model: model.to_owned(),
            attempt,
            blocks: BTreeMap::new(),
            started: false,
            stopped: false,
            stop_reason: None,
            input: 0,
            output: 0,
            cache_read: 0,
            cache_write: 0,
            bytes: 0,
            forwarded: false,
        }
    }

    fn malformed(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::Malformed {
            provider: self.provider.clone(),
            message: message.into(),
            source: None,
        }
    }

    fn send(&mut self, sink: crate::DeltaSink<'_>, delta: StreamDelta) {
        self.forwarded = true;
        sink(delta);
    }

    /// One event's `data`. `Ok(true)` once the reply is complete.
    pub(crate) fn event(&mut self, data: &str, sink: crate::DeltaSink<'_>) -> Result<bool> {
        let value: Value = serde_json::from_str(data).map_err(|e| ProviderError::Malformed {
            provider: self.provider.clone(),
            message: format!("{e} in {data:.120}"),
            source: Some(Arc::new(e)),
        })?;
        match value["type"].as_str().unwrap_or_default() {
            "message_start" => {
                if self.started {
                    return Err(self.malformed("a second message_start"));
                }
                self.started = true;
                self.usage(&value["message"]["usage"]);
            }
            "content_block_start" => self.start(&value, sink)?,
            "content_block_delta" => self.delta(&value, sink)?,
            "content_block_stop" => {
                let index = self.index(&value)?;
                match self.blocks.get_mut(&index) {
                    Some((_, open)) if *open => *open = false,
                    _ => {
                        return Err(
                            self.malformed(format!("block {index} stopped twice or never started"))
                        );
                    }
                }
            }
            "message_delta" => {
                if let Some(reason) = value["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(reason.to_owned());
                }
                self.usage(&value["usage"]);
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(true);
            }
            "error" => return Err(self.error_event(&value["error"])),
            // `ping` and event types added after this client: ignored.
            _ => {}
        }
        Ok(false)
    }

    fn usage(&mut self, usage: &Value) {
        let take = |slot: &mut u64, key: &str| {
            if let Some(n) = usage[key].as_u64() {
                *slot = n;
            }
        };
        take(&mut self.input, "input_tokens");
        take(&mut self.output, "output_tokens");
        take(&mut self.cache_read, "cache_read_input_tokens");
        take(&mut self.cache_write, "cache_creation_input_tokens");
    }

    fn index(&self, value: &Value) -> Result<usize> {
        value["index"]
            .as_u64()
            .map(|i| i as usize)
            .ok_or_else(|| self.malformed("an event without its block index"))
    }

    fn start(&mut self, value: &Value, sink: crate::DeltaSink<'_>) -> Result<()> {
        let index = self.index(value)?;
        if index >= MAX_BLOCKS || self.blocks.contains_key(&index) {
            return Err(self.malformed(format!("content block index {index} is out of order")));
        }
        let block = &value["content_block"];
        let block = match block["type"].as_str().unwrap_or_default() {
            "text" => {
                let text = block["text"].as_str().unwrap_or_default().to_owned();
                if !text.is_empty() {
                    self.send(sink, StreamDelta::Text(text.clone()));
                }
                Block::Text(text)
            }
            "tool_use" => {
                let id = block["id"].as_str().unwrap_or_default().to_owned();
                let name = block["name"].as_str().unwrap_or_default().to_owned();
                if name.is_empty() {
                    return Err(self.malformed(format!("tool call in block {index} has no name")));
                }
                let call = self.calls();
                self.send(
                    sink,
                    StreamDelta::ToolCallStarted {
                        index: call,
                        id: id.clone(),
                        name: name.clone(),
                    },
                );
                Block::Tool {
                    id,
                    name,
                    json: String::new(),
                    initial: block["input"].clone(),
                }
            }
            "thinking" => Block::Thinking {
                text: block["thinking"].as_str().unwrap_or_default().to_owned(),
                signature: block["signature"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            },
            "redacted_thinking" => {
                Block::Redacted(block["data"].as_str().unwrap_or_default().to_owned())
            }
            _ => Block::Other,
        };
        self.blocks.insert(index, (block, true));
        Ok(())
    }

    /// The tool calls begun so far.
    fn calls(&self) -> usize {
        self.blocks
            .values()
            .filter(|(b, _)| matches!(b, Block::Tool { .. }))
            .count()
    }

    fn delta(&mut self, value: &Value, sink: crate::DeltaSink<'_>) -> Result<()> {
        let index = self.index(value)?;
        let call = self
            .blocks
            .range(..index)
            .filter(|(_, (b, _))| matches!(b, Block::Tool { .. }))
            .count();
        let delta = &value["delta"];
        let kind = delta["type"].as_str().unwrap_or_default();
        let size = ["text", "partial_json", "thinking"]
            .iter()
            .filter_map(|key| delta[*key].as_str())
            .map(str::len)
            .sum::<usize>();
        self.bytes += size;
        if self.bytes > MAX_REPLY_BYTES {
            return Err(self.malformed(format!("the reply exceeded {MAX_REPLY_BYTES} bytes")));
        }
        let Some((block, true)) = self.blocks.get_mut(&index) else {
            return Err(self.malformed(format!("a delta for block {index}, which is not open")));
        };
        let forward = match (block, kind) {
            (Block::Text(text), "text_delta") => {
                let piece = delta["text"].as_str().unwrap_or_default();
                text.push_str(piece);
                (!piece.is_empty()).then(|| StreamDelta::Text(piece.to_owned()))
            }
            (Block::Tool { json, .. }, "input_json_delta") => {
                let piece = delta["partial_json"].as_str().unwrap_or_default();
                json.push_str(piece);
                (!piece.is_empty()).then(|| StreamDelta::ToolCallArguments {
                    index: call,
                    text: piece.to_owned(),
                })
            }
            (Block::Thinking { text, .. }, "thinking_delta") => {
                let piece = delta["thinking"].as_str().unwrap_or_default();
                text.push_str(piece);
                (!piece.is_empty()).then(|| StreamDelta::Thinking(piece.to_owned()))
            }
            (Block::Thinking { signature, .. }, "signature_delta") => {
                *signature = delta["signature"].as_str().map(str::to_owned);
                None
            }
            (_, "citations_delta") | (Block::Other, _) => None,
            (_, kind) => {
                return Err(self.malformed(format!("a {kind:?} delta does not fit block {index}")));
            }
        };
        if let Some(delta) = forward {
            self.send(sink, delta);
        }
        Ok(())
    }

    /// An `error` event (or body) as the error of its type: overloaded,
    /// rate-limited and internal errors are [`ProviderError::Unavailable`]
    /// (retried while nothing was forwarded), others as their status.
    fn error_event(&self, error: &Value) -> ProviderError {
        let kind = error["type"].as_str().unwrap_or("error");
        let message = error["message"].as_str().unwrap_or_default();
        let status = status_of(kind);
        retry::status_error(
            &self.provider,
            &self.model,
            status,
            self.attempt,
            matches!(status, 429 | 500 | 529),
            format!("{kind}: {message:.500}"),
        )
    }

    /// The reply, once the stream ended.
    pub(crate) fn finish(self) -> Result<ChatResponse> {
        let Some(stop_reason) = self.stop_reason.clone() else {
            return Err(self.malformed("the stream ended before the reply did"));
        };
        if !self.stopped {
            tracing::debug!(provider = %self.provider, "the stream ended without message_stop");
        }
        let truncated = stop_reason == "max_tokens";
        let mut out = ChatResponse {
            usage: Usage {
                input_tokens: self.input + self.cache_read + self.cache_write,
                output_tokens: self.output,
                cache_read_tokens: self.cache_read,
                cache_write_tokens: self.cache_write,
            },
            finish_reason: finish_reason(&stop_reason),
            ..ChatResponse::default()
        };
        for (index, (block, open)) in self.blocks {
            match block {
                Block::Text(text) => out.text.push_str(&text),
                Block::Tool { .. } if open && truncated => {
                    tracing::warn!(provider = %self.provider, index, "a tool call cut off by max_tokens is dropped");
                }
                Block::Tool { .. } if open => {
                    return Err(ProviderError::Malformed {
                        provider: self.provider,
                        message: format!("tool call in block {index} never ended"),
                        source: None,
                    });
                }
                Block::Tool {
                    id,
                    name,
                    json,
                    initial,
                } => {
                    let arguments = if json.trim().is_empty() {
                        if initial.is_object() {
                            initial.to_string()
                        } else {
                            "{}".to_owned()
                        }
                    } else {
                        serde_json::from_str::<Value>(&json).map_err(|e| {
                            ProviderError::Malformed {
                                provider: self.provider.clone(),
                                message: format!("tool call {name:?}'s input is not JSON: {e}"),
                                source: Some(Arc::new(e)),
                            }
                        })?;
                        json
                    };
                    let id = if id.is_empty() {
                        format!("call_{}", out.tool_calls.len())
                    } else {
                        id
                    };
                    out.tool_calls.push(ToolCallRequest {
                        id,
                        name,
                        arguments,
                    });
                }
                Block::Thinking { text, signature } => {
                    out.reasoning
                        .push(ReasoningBlock::Thinking { text, signature });
                }
                Block::Redacted(data) => out.reasoning.push(ReasoningBlock::Redacted { data }),
                Block::Other => {}
            }
        }
        Ok(out)
    }
}

/// A whole (non-streamed) reply: fed through the same machine, so both
/// forms obey the same rules. Thinking text reaches `sink` at once.
pub(crate) fn whole(
    provider: &str,
    model: &str,
    value: &Value,
    sink: crate::DeltaSink<'_>,
) -> Result<ChatResponse> {
    let mut reply = Reply::new(provider, model, 1);
    if value["type"] == "error" {
        return Err(reply.error_event(&value["error"]));
    }
    let Some(content) = value["content"].as_array() else {
        return Err(reply.malformed("a reply without content"));
    };
    reply.usage(&value["usage"]);
    reply.stop_reason = Some(
        value["stop_reason"]
            .as_str()
            .unwrap_or("end_turn")
            .to_owned(),
    );
    reply.stopped = true;
    for (index, block) in content.iter().enumerate().take(MAX_BLOCKS) {
        // The whole block arrives at its start (a tool's input too); the
        // text and thinking are passed on here, at once.
        let start = serde_json::json!({"index": index, "content_block": block});
        reply.start(&start, &|_| {})?;
        if let Some((state, open)) = reply.blocks.get_mut(&index) {
            *open = false;
            match state {
                Block::Text(text) if !text.is_empty() => sink(StreamDelta::Text(text.clone())),
                Block::Thinking { text, .. } if !text.is_empty() => {
                    sink(StreamDelta::Thinking(text.clone()));
                }
                _ => {}
            }
        }
    }
    reply.finish()
}

/// The status an error type stands for.
pub(crate) fn status_of(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}

fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" | "pause_turn" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" | "model_context_window_exceeded" => "length",
        other => other,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]
    use super::*;

    #[test]
    fn a_reply_past_its_byte_bound_is_malformed() {
        let mut reply = Reply::new("p", "m", 1);
        let start =
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
        assert_eq!(reply.event(start, &|_| {}), Ok(false));
        let piece = "x".repeat(1 << 20);
        let delta = serde_json::json!({"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": piece}})
        .to_string();
        for _ in 0..(MAX_REPLY_BYTES >> 20) {
            assert_eq!(reply.event(&delta, &|_| {}), Ok(false));
        }
        assert_eq!(
            reply.event(&delta, &|_| {}),
            Err(ProviderError::Malformed {
                provider: "p".into(),
                message: format!("the reply exceeded {MAX_REPLY_BYTES} bytes"),
                source: None,
            })
        );
    }

    #[test]
    fn stop_reasons_map_to_the_loops_words() {
        let got: Vec<String> = [
            "end_turn",
            "stop_sequence",
            "pause_turn",
            "tool_use",
            "max_tokens",
            "model_context_window_exceeded",
            "refusal",
            "something_new",
        ]
        .iter()
        .map(|r| finish_reason(r))
        .collect();
        assert_eq!(
            got,
            [
                "stop",
                "stop",
                "stop",
                "tool_calls",
                "length",
                "length",
                "refusal",
                "something_new"
            ]
        );
    }
}
