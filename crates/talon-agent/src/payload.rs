//! What the model is sent, for debugging: `TALON_DEBUG_MODEL_PAYLOAD` (or
//! `OPENCLAW_DEBUG_MODEL_PAYLOAD`) logs the model-visible tool names or the request body with
//! credential-like fields redacted.

use talon_protocol::debug::DebugSwitch;
use talon_provider::ChatRequest;

/// `TALON_DEBUG_MODEL_PAYLOAD=tools` logs the model-visible tool names;
/// `full-redacted` logs the request body, bounded, with credential-like
/// fields redacted (prompts and message text still show: debugging only).
pub(crate) fn debug_payload(request: &ChatRequest) {
    let Some(mode) = DebugSwitch::ModelPayload.value() else {
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
pub use talon_protocol::debug::redact_credentials as redact;
