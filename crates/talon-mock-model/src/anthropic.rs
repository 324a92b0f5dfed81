//! The Messages route (`POST /v1/messages`, Anthropic's wire): its error
//! bodies (`{"type": "error", "error": {"type", "message"}}`), whole
//! replies and streams (`message_start`, a `ping`, per block
//! `content_block_start`/`_delta`/`_stop`, `message_delta` with the stop
//! reason and usage, `message_stop`). A turn's thinking is a `thinking`
//! block of 8-character `thinking_delta`s and one `signature_delta`; its
//! text a `text` block of 8-character `text_delta`s; each call a
//! `tool_use` block whose input arrives as `""` and two
//! halves; its id is `call_<n>`, as on the Chat Completions route, so that
//! a plan's events are the same on either wire. The key is checked
//! against `x-api-key`.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::openai::{halves, pieces};
use crate::script::Turn;

/// An Anthropic error reply.
pub(crate) fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"type": "error", "error": {"type": kind, "message": message},
                      "request_id": "req_mock"});
    (status, axum::Json(body)).into_response()
}

/// The error type Anthropic sends with a status.
pub(crate) fn error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// The `x-api-key` given.
pub(crate) fn key(headers: &HeaderMap) -> Option<&str> {
    headers.get("x-api-key").and_then(|v| v.to_str().ok())
}

/// Whether a message is a user's own (not only tool results).
fn from_user(message: &Value) -> bool {
    message["role"] == "user"
        && match &message["content"] {
            Value::Array(blocks) => blocks.iter().any(|b| b["type"] != "tool_result"),
            _ => true,
        }
}

/// The turn a request is on within its run: the assistant messages after
/// its last user message (one of tool results only does not count).
pub(crate) fn turn_in_run(request: &Value) -> usize {
    let Some(messages) = request["messages"].as_array() else {
        return 0;
    };
    messages
        .iter()
        .rev()
        .take_while(|m| !from_user(m))
        .filter(|m| m["role"] == "assistant")
        .count()
}

/// The last `tool_result` block's content, read as JSON.
pub(crate) fn last_tool(request: &Value) -> Option<Value> {
    let messages = request["messages"].as_array()?;
    let block = messages.iter().rev().find_map(|m| {
        m["content"]
            .as_array()?
            .iter()
            .rev()
            .find(|b| b["type"] == "tool_result")
    })?;
    let text = match &block["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<String>(),
        _ => return None,
    };
    serde_json::from_str(&text).ok()
}

fn stop_reason(turn: &Turn) -> &'static str {
    if turn.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn signature(turn: &Turn, number: usize) -> String {
    turn.signature
        .clone()
        .unwrap_or_else(|| format!("sig-{number}"))
}

fn usage(turn: &Turn) -> Value {
    json!({"input_tokens": turn.usage.0, "output_tokens": turn.usage.1,
           "cache_read_input_tokens": turn.cache.0, "cache_creation_input_tokens": turn.cache.1})
}

/// A whole reply; `number` is the request's, from 1.
pub(crate) fn whole(turn: &Turn, model: &str, number: usize) -> Value {
    let mut content = Vec::new();
    if let Some(thinking) = &turn.thinking {
        content.push(
            json!({"type": "thinking", "thinking": thinking, "signature": signature(turn, number)}),
        );
    }
    if let Some(text) = &turn.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        content.push(json!({"type": "tool_use", "id": format!("call_{}", i + 1),
                            "name": call.name, "input": call.arguments}));
    }
    json!({"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
           "content": content, "stop_reason": stop_reason(turn), "stop_sequence": null,
           "usage": usage(turn)})
}

/// The streamed reply, one SSE event a string.
pub(crate) fn events(turn: &Turn, model: &str, number: usize) -> Vec<String> {
    let mut events: Vec<Value> = Vec::new();
    let mut start_usage = usage(turn);
    start_usage["output_tokens"] = json!(1);
    events.push(json!({"type": "message_start", "message": {
        "id": "msg_mock", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": start_usage}}));
    events.push(json!({"type": "ping"}));
    let mut index = 0;
    let mut block = |events: &mut Vec<Value>, start: Value, deltas: Vec<Value>| {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        for delta in deltas {
            events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    };
    if let Some(thinking) = &turn.thinking {
        let mut deltas: Vec<Value> = pieces(thinking, 8)
            .into_iter()
            .map(|p| json!({"type": "thinking_delta", "thinking": p}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": signature(turn, number)}));
        block(
            &mut events,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
    }
    if let Some(text) = &turn.text {
        let deltas = pieces(text, 8)
            .into_iter()
            .map(|p| json!({"type": "text_delta", "text": p}))
            .collect();
        block(&mut events, json!({"type": "text", "text": ""}), deltas);
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        let input = call.arguments.to_string();
        let (first, second) = halves(&input);
        let deltas = ["", first, second]
            .into_iter()
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect();
        block(
            &mut events,
            json!({"type": "tool_use", "id": format!("call_{}", i + 1), "name": call.name, "input": {}}),
            deltas,
        );
    }
    events.push(json!({"type": "message_delta",
                       "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null},
                       "usage": {"output_tokens": turn.usage.1}}));
    events.push(json!({"type": "message_stop"}));
    events
        .into_iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}
