//! What a chat completion and a response share as they create a run: the
//! model they name (an agent the caller may run), the session they target
//! (the `x-talon-session-key` header, else one derived from `user` and the
//! token, else a new one), the `Idempotency-Key` passed on, and the error
//! when the node stops before the run's end.

use axum::http::HeaderMap;
use serde_json::json;
use sha2::{Digest, Sha256};
use talon_protocol::gateway::Agent;
use talon_protocol::openai::{OpenAiError, agent_of};

use super::conversation::Target;
use crate::auth::identity::Caller;
use crate::state::Shared;

/// The request header naming the conversation's session.
pub(super) const SESSION_HEADER: &str = "x-talon-session-key";

/// That the model names an agent the caller may run.
pub(super) async fn check_model(
    shared: &Shared,
    caller: &Caller,
    model: &str,
) -> Result<(), OpenAiError> {
    let agent = agent_of(model);
    if agent.is_empty() || agent.len() > 128 {
        return Err(super::models::model_not_found(model));
    }
    caller.require(talon_protocol::gateway::Scope::AgentRun)?;
    match super::agents_unchecked::<Agent>(shared, caller, "agents.get", json!({"agentId": agent}))
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if error.status == 404 || error.status == 400 => {
            Err(super::models::model_not_found(model))
        }
        Err(error) => Err(error),
    }
}

/// The error of a call whose run outlives the node's stream (shutdown).
pub(super) fn stopping(run_id: &str) -> OpenAiError {
    let mut error = OpenAiError::from(talon_protocol::gateway::ApiError::new(
        talon_protocol::gateway::ErrorCode::Unavailable,
        format!("the gateway is stopping; run {run_id} goes on and its result is kept"),
    ));
    error.retryable = false;
    error
}

/// The session a request names: the header, else `user` (per token).
pub(super) fn target(
    headers: &HeaderMap,
    user: Option<&str>,
    token_id: &str,
) -> Result<Target, OpenAiError> {
    if let Some(key) = headers.get(SESSION_HEADER) {
        return match key.to_str() {
            Ok(key) if !key.is_empty() => Ok(Target::Key(key.to_owned())),
            _ => Err(OpenAiError::invalid(
                "the x-talon-session-key header must be visible ASCII, not empty",
                None,
                "invalid_request",
            )),
        };
    }
    match user.filter(|u| !u.is_empty()) {
        Some(user) => {
            let mut hash = Sha256::new();
            hash.update(token_id.as_bytes());
            hash.update([0]);
            hash.update(user.as_bytes());
            let digest = hash.finalize();
            Ok(Target::Key(format!(
                "openai-user-{}",
                hex::encode(&digest[..16])
            )))
        }
        None => Ok(Target::New),
    }
}

/// The `Idempotency-Key` header, passed on to `runs.create`.
pub(super) fn idempotency_key(headers: &HeaderMap) -> Option<String> {
    headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
