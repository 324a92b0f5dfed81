//! What a model request the mock recorded holds, on either wire (Chat
//! Completions or Anthropic Messages): its tools and its last tool result,
//! read the same way by every test that checks what the model was sent.

use serde_json::{Value, json};

/// A request's tools as `{name, description, parameters}`.
pub fn tool_list(request: &Value) -> Vec<Value> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| match t.get("function") {
                    Some(f) => json!({"name": f["name"], "description": f["description"],
                                      "parameters": f["parameters"]}),
                    None => json!({"name": t["name"], "description": t["description"],
                                   "parameters": t["input_schema"]}),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A request's tool names.
pub fn tool_names(request: &Value) -> Vec<String> {
    tool_list(request)
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The content of a request's last tool result, read as JSON (a text
/// result, or Anthropic's text blocks joined). Panics when there is none
/// or it is not JSON: a test's assertion.
pub fn last_tool_result(request: &Value) -> Value {
    let Some(messages) = request["messages"].as_array() else {
        panic!("no messages: {request}");
    };
    let content = messages
        .iter()
        .rev()
        .find_map(|m| match &m["content"] {
            Value::Array(blocks) => blocks
                .iter()
                .rev()
                .find(|b| b["type"] == "tool_result")
                .map(|b| b["content"].clone()),
            content if m["role"] == "tool" => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no tool result: {request}"));
    let text: String = match content {
        Value::String(text) => text,
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        other => panic!("a tool result of {other}"),
    };
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("a tool result not JSON ({e}): {text}"))
}
