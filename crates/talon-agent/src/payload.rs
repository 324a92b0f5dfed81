//! What the model is sent, for debugging: `TALON_DEBUG_MODEL_PAYLOAD`
//! logs the model-visible tool names or the request body with
//! credential-like fields redacted.

use serde_json::Value;
use talon_provider::ChatRequest;

/// `TALON_DEBUG_MODEL_PAYLOAD=tools` logs the model-visible tool names;
/// `full-redacted` logs the request body, bounded, with credential-like
/// fields redacted (prompts and message text still show: debugging only).
pub(crate) fn debug_payload(request: &ChatRequest) {
    let Ok(mode) = std::env::var("TALON_DEBUG_MODEL_PAYLOAD") else {
        return;
    };
    match mode.as_str() {
        "tools" => {
            let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            tracing::info!(target: "talon::model_payload", model = %request.model, tools = ?names, "model-visible tools");
        }
        "full-redacted" => {
            let mut body = request.to_openai();
            redact(&mut body);
            let text: String = body.to_string().chars().take(DEBUG_PAYLOAD_CHARS).collect();
            tracing::info!(target: "talon::model_payload", body = %text, "model request (redacted)");
        }
        _ => {}
    }
}

/// Characters of a request body `full-redacted` logs.
pub const DEBUG_PAYLOAD_CHARS: usize = 16 * 1024;

/// Replaces the values of credential-like keys with `<redacted>`.
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                let k = key.to_ascii_lowercase().replace(['_', '-'], "");
                if [
                    "apikey",
                    "authorization",
                    "token",
                    "secret",
                    "password",
                    "accesstoken",
                ]
                .iter()
                .any(|s| k.contains(s))
                {
                    *v = Value::String("<redacted>".into());
                } else {
                    redact(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}
