//! Talon's conversation as an Anthropic Messages request body.
//!
//! - Every `System` message before the first other message goes to the
//!   top-level `system`; a later one (a compaction note) becomes a user
//!   text block `"[system note] ..."`, keeping the cached prefix stable.
//! - An assistant message is its reasoning blocks (replayed verbatim),
//!   its text and one `tool_use` per call; an empty one is left out.
//! - Consecutive tool results become one user message of `tool_result`
//!   blocks in the order of the calls they answer, and user text after
//!   them joins that message after the results (roles must alternate).
//! - A conversation that starts with the assistant gets a `"(continued)"`
//!   user message first.
//! - `max_tokens` is always sent: the request's, else the model row's
//!   `maxTokens`, else [`DEFAULT_MAX_TOKENS`]. A thinking budget is cut to
//!   fit below it; a budget under 1024 tokens sends no thinking.
//! - Thinking is left out of a request continuing a tool cycle whose
//!   assistant turn has no reasoning blocks (they were lost, e.g. on a
//!   resume from a store that keeps none): Anthropic would refuse it.
//! - With caching on, at most three `cache_control` breakpoints: the last
//!   tool, the last system block, the last block of the last user message
//!   (never a thinking block).
//! - No `tool_choice` (Anthropic's `auto`: parallel calls allowed, and
//!   compatible with thinking). A tool result is sent without `is_error`:
//!   Talon's results say their own status in their content.

use serde_json::{Value, json};

use crate::types::{CacheRetention, ChatRequest, Message, ReasoningBlock, Thinking};

/// `max_tokens` when neither the request nor the model row gives one.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
/// The least thinking budget Anthropic accepts.
const MIN_BUDGET: u32 = 1024;

/// The request body. `model_max` is the model row's `maxTokens`;
/// `long_ttl` whether a one-hour cache lifetime may be asked for
/// (api.anthropic.com only; elsewhere `long` is five minutes).
pub(crate) fn body(request: &ChatRequest, model_max: Option<u32>, long_ttl: bool) -> Value {
    let marker = match request.cache {
        CacheRetention::None => None,
        CacheRetention::Long if long_ttl => Some(json!({"type": "ephemeral", "ttl": "1h"})),
        CacheRetention::Short | CacheRetention::Long => Some(json!({"type": "ephemeral"})),
    };
    let (system, mut messages) = messages(&request.messages);
    let max_tokens = request
        .max_tokens
        .or(model_max)
        .unwrap_or(DEFAULT_MAX_TOKENS)
        .max(1);
    let mut body = json!({
        "model": request.model,
        "max_tokens": max_tokens,
        "stream": request.stream,
    });
    if !system.is_empty() {
        body["system"] = match &marker {
            None if system.len() == 1 => json!(system[0]),
            _ => {
                let mut blocks: Vec<Value> = system
                    .iter()
                    .map(|text| json!({"type": "text", "text": text}))
                    .collect();
                if let (Some(marker), Some(last)) = (&marker, blocks.last_mut()) {
                    last["cache_control"] = marker.clone();
                }
                Value::Array(blocks)
            }
        };
    }
    if let Some(marker) = &marker
        && let Some(last) = messages.iter_mut().rev().find(|m| m["role"] == "user")
        && let Some(block) = last["content"].as_array_mut().and_then(|c| c.last_mut())
    {
        block["cache_control"] = marker.clone();
    }
    body["messages"] = Value::Array(messages);
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if let (Some(marker), Some(last)) = (&marker, tools.last_mut()) {
            last["cache_control"] = marker.clone();
        }
        body["tools"] = Value::Array(tools);
    }
    if let Some(thinking) = thinking(request, max_tokens) {
        body["thinking"] = thinking;
    }
    body
}

/// The `thinking` setting, if one is sent.
fn thinking(request: &ChatRequest, max_tokens: u32) -> Option<Value> {
    let setting = match request.thinking {
        Thinking::Off => return None,
        Thinking::Adaptive => json!({"type": "adaptive"}),
        Thinking::Budget(budget) => {
            let budget = budget.min(max_tokens.saturating_sub(1));
            if budget < MIN_BUDGET {
                tracing::debug!(
                    max_tokens,
                    "no thinking: max_tokens leaves no budget of 1024 tokens"
                );
                return None;
            }
            json!({"type": "enabled", "budget_tokens": budget})
        }
    };
    let lost = request.messages.iter().rev().find_map(|m| match m {
        Message::Assistant {
            tool_calls,
            reasoning,
            ..
        } => Some(!tool_calls.is_empty() && reasoning.is_empty()),
        _ => None,
    });
    if lost == Some(true) {
        tracing::debug!("no thinking: the tool cycle's assistant turn has no thinking blocks");
        return None;
    }
    Some(setting)
}

/// The top-level system texts and the `messages` array.
fn messages(conversation: &[Message]) -> (Vec<String>, Vec<Value>) {
    let mut system = Vec::new();
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut leading = true;
    for message in conversation {
        let (role, blocks) = match message {
            Message::System(text) if leading => {
                system.push(text.clone());
                continue;
            }
            Message::System(text) => (
                "user",
                vec![json!({"type": "text", "text": format!("[system note] {text}")})],
            ),
            Message::User(text) => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Assistant {
                text,
                tool_calls,
                reasoning,
            } => {
                let mut blocks: Vec<Value> = reasoning.iter().map(reasoning_block).collect();
                if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    let input = serde_json::from_str::<Value>(&call.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks.push(
                        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                    );
                }
                ("assistant", blocks)
            }
            Message::Tool { call_id, content } => (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": call_id, "content": content})],
            ),
        };
        leading = false;
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    if out.first().is_some_and(|(role, _)| *role == "assistant") {
        out.insert(
            0,
            ("user", vec![json!({"type": "text", "text": "(continued)"})]),
        );
    }
    let mut calls: Vec<Value> = Vec::new();
    let messages = out
        .into_iter()
        .map(|(role, mut blocks)| {
            if role == "assistant" {
                calls = blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| b["id"].clone())
                    .collect();
            } else {
                // Results first, in the order of the calls they answer.
                let position = |block: &Value| match block["type"].as_str() {
                    Some("tool_result") => calls
                        .iter()
                        .position(|id| *id == block["tool_use_id"])
                        .unwrap_or(calls.len()),
                    _ => usize::MAX,
                };
                blocks.sort_by_key(position);
            }
            json!({"role": role, "content": blocks})
        })
        .collect();
    (system, messages)
}

fn reasoning_block(block: &ReasoningBlock) -> Value {
    match block {
        ReasoningBlock::Thinking { text, signature } => {
            json!({"type": "thinking", "thinking": text, "signature": signature.as_deref().unwrap_or_default()})
        }
        ReasoningBlock::Redacted { data } => json!({"type": "redacted_thinking", "data": data}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolCallRequest;
    use std::sync::Arc;
    use talon_protocol::ModelTool;

    fn call(id: &str) -> ToolCallRequest {
        ToolCallRequest {
            id: id.into(),
            name: "read".into(),
            arguments: format!("{{\"path\":\"{id}\"}}"),
        }
    }

    fn tool(id: &str) -> Message {
        Message::Tool {
            call_id: id.into(),
            content: format!("result {id}"),
        }
    }

    fn thought() -> ReasoningBlock {
        ReasoningBlock::Thinking {
            text: "hmm".into(),
            signature: Some("sig".into()),
        }
    }

    #[test]
    fn a_tool_cycle_with_thinking_and_caching() {
        let request = ChatRequest {
            model: "claude".into(),
            messages: vec![
                Message::System("be brief".into()),
                Message::User("read a and b".into()),
                Message::Assistant {
                    text: Some("Looking.".into()),
                    tool_calls: vec![call("a"), call("b")],
                    reasoning: vec![thought(), ReasoningBlock::Redacted { data: "xx".into() }],
                },
                tool("b"),
                tool("a"),
                Message::System("summary so far".into()),
            ],
            tools: Arc::new(vec![ModelTool {
                name: "read".into(),
                description: "reads".into(),
                parameters: json!({"type": "object"}),
            }]),
            max_tokens: None,
            stream: true,
            thinking: Thinking::Budget(4096),
            cache: CacheRetention::Long,
        };
        let marker = json!({"type": "ephemeral", "ttl": "1h"});
        assert_eq!(
            body(&request, Some(2048), true),
            json!({
                "model": "claude", "max_tokens": 2048, "stream": true,
                "system": [{"type": "text", "text": "be brief", "cache_control": marker}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "read a and b"}]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                        {"type": "redacted_thinking", "data": "xx"},
                        {"type": "text", "text": "Looking."},
                        {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "a"}},
                        {"type": "tool_use", "id": "b", "name": "read", "input": {"path": "b"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "a", "content": "result a"},
                        {"type": "tool_result", "tool_use_id": "b", "content": "result b"},
                        {"type": "text", "text": "[system note] summary so far", "cache_control": marker},
                    ]},
                ],
                "tools": [{"name": "read", "description": "reads",
                           "input_schema": {"type": "object"}, "cache_control": marker}],
                "thinking": {"type": "enabled", "budget_tokens": 2047},
            })
        );
        // Short, or long away from api.anthropic.com: five minutes.
        let five = body(&request, None, false);
        assert_eq!(
            five["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(five["max_tokens"], json!(DEFAULT_MAX_TOKENS));
        assert_eq!(
            five["thinking"],
            json!({"type": "enabled", "budget_tokens": 4096})
        );
        let breakpoints = five.to_string().matches("cache_control").count();
        assert_eq!(breakpoints, 3);
    }

    #[test]
    fn a_lost_thinking_block_drops_thinking_and_plain_requests_stay_plain() {
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![
                Message::Assistant {
                    text: None,
                    tool_calls: vec![call("a")],
                    reasoning: Vec::new(),
                },
                tool("a"),
                Message::User("and now?".into()),
            ],
            max_tokens: Some(100),
            thinking: Thinking::Adaptive,
            ..ChatRequest::default()
        };
        assert_eq!(
            body(&request, Some(5000), true),
            json!({
                "model": "m", "max_tokens": 100, "stream": false,
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "(continued)"}]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "a"}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "a", "content": "result a"},
                        {"type": "text", "text": "and now?"}]},
                ],
            })
        );
    }
}
