//! The Chat Completions route (`POST /v1/chat/completions`): its error
//! bodies, whole replies and streamed chunks (text in 8-character deltas,
//! each call's arguments in two, reasoning as `reasoning_content`, usage
//! in the last chunk, then `[DONE]`).

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::script::Turn;

/// An OpenAI error reply.
pub(crate) fn error(status: StatusCode, message: &str, code: &str) -> Response {
    let body =
        json!({"error": {"message": message, "type": "invalid_request_error", "code": code}});
    (status, axum::Json(body)).into_response()
}

/// The bearer key given.
pub(crate) fn key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// The turn a request is on within its run: the assistant messages after
/// its last user message.
pub(crate) fn turn_in_run(request: &Value) -> usize {
    let Some(messages) = request["messages"].as_array() else {
        return 0;
    };
    messages
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "assistant")
        .count()
}

/// The last tool message's content, read as JSON.
pub(crate) fn last_tool(request: &Value) -> Option<Value> {
    request["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
        .and_then(|m| m["content"].as_str())
        .and_then(|content| serde_json::from_str::<Value>(content).ok())
}

fn tool_calls_json(turn: &Turn) -> Vec<Value> {
    turn.tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"id": format!("call_{}", i + 1), "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments.to_string()}})
        })
        .collect()
}

fn usage(turn: &Turn) -> Value {
    json!({"prompt_tokens": turn.usage.0, "completion_tokens": turn.usage.1,
           "total_tokens": turn.usage.0 + turn.usage.1})
}

fn finish_reason(turn: &Turn) -> &'static str {
    if turn.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

/// A whole reply.
pub(crate) fn whole(turn: &Turn, model: &str) -> Value {
    let mut message = json!({"role": "assistant", "content": turn.text});
    if let Some(thinking) = &turn.thinking {
        message["reasoning_content"] = json!(thinking);
    }
    if !turn.tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls_json(turn));
    }
    json!({
        "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(turn)}],
        "usage": usage(turn),
    })
}

/// The pieces of a string of at most `n` characters each.
pub(crate) fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// A string split in two at its middle character.
pub(crate) fn halves(text: &str) -> (&str, &str) {
    let split = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(at, _)| at);
    text.split_at(split)
}

/// The streamed reply, one SSE event a string.
pub(crate) fn events(turn: &Turn, model: &str) -> Vec<String> {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for piece in pieces(turn.thinking.as_deref().unwrap_or_default(), 8) {
        events.push(chunk(json!({"reasoning_content": piece}), None));
    }
    for piece in pieces(turn.text.as_deref().unwrap_or_default(), 8) {
        events.push(chunk(json!({"content": piece}), None));
    }
    for (i, call) in tool_calls_json(turn).into_iter().enumerate() {
        let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
        let (first, second) = halves(arguments);
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                   "function": {"name": call["function"]["name"], "arguments": first}}]}),
            None,
        ));
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "function": {"arguments": second}}]}),
            None,
        ));
    }
    let mut last = chunk(json!({}), Some(finish_reason(turn)));
    last["usage"] = usage(turn);
    events.push(last);
    let mut out: Vec<String> = events
        .into_iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect();
    out.push("data: [DONE]\n\n".to_owned());
    out
}
