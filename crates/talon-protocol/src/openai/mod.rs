//! The OpenAI-compatible surface's wire types and projections: what
//! `/v1/models`, `/v1/chat/completions` and `/v1/responses` take and send,
//! in OpenAI's shapes, and how a Talon run's events become them. Pure: no
//! I/O; the gateway (`talon-gateway`'s `openai` module) serves them.
//!
//! - [`error`]: OpenAI's error envelope and the status, `type`, `code` and
//!   retry header each Talon [`ErrorCode`](crate::gateway::ErrorCode) maps to.
//! - [`chat`]: Chat Completions requests, completions, chunks, and
//!   [`chat::ChatFold`], which turns a run's events into chunks (the
//!   non-streamed completion is the same fold, gathered).
//! - [`responses`]: Responses requests, the `Response` object and
//!   [`responses::ResponseFold`], which turns a run's events into stream
//!   events numbered from the event ids, so a resume is a cursor.
//! - [`reconcile`]: how a chat request's messages meet the session's
//!   history.
//! - [`progress`]: the text lines that show server-side tool calls.
//!
//! A `model` names an agent: `talon/<agentId>` (a bare `<agentId>` is
//! accepted too).

pub mod chat;
pub mod error;
pub mod progress;
pub mod reconcile;
pub mod responses;

pub use error::{OpenAiError, OpenAiErrorBody};

/// The prefix of every model id the surface lists.
pub const MODEL_PREFIX: &str = "talon/";

/// The model id of an agent: `talon/<agentId>`.
pub fn model_id(agent_id: &str) -> String {
    format!("{MODEL_PREFIX}{agent_id}")
}

/// The agent a model id names: `talon/<agentId>`, or a bare `<agentId>`.
pub fn agent_of(model: &str) -> &str {
    model.strip_prefix(MODEL_PREFIX).unwrap_or(model)
}

/// Seconds since the epoch, from Talon's milliseconds (OpenAI's times are
/// seconds).
pub fn seconds(ms: u64) -> u64 {
    ms / 1000
}

/// A string cut to at most `max` characters, marked when cut.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_name_agents() {
        assert_eq!(model_id("main"), "talon/main");
        assert_eq!(agent_of("talon/reviewer"), "reviewer");
        assert_eq!(agent_of("reviewer"), "reviewer");
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(cut("hé", 2), "hé");
    }
}
