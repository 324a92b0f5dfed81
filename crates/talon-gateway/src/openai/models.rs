//! `GET /v1/models` and `GET /v1/models/{model}`: the agents the token may
//! run, as OpenAI models (`talon/<agentId>`, `owned_by: "talon"`). A token
//! with `agent.run` sees every agent; one with only `agent.read` an empty
//! list (it may run none); one with neither is refused (`agent.run`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use talon_protocol::gateway::params::AgentsListResult;
use talon_protocol::gateway::{Agent, Scope};
use talon_protocol::openai::{OpenAiError, agent_of, model_id, seconds};

use super::{Retry, agents_unchecked, caller, error_response};
use crate::state::Shared;

/// An agent as a model; `since` (when this gateway started, in
/// milliseconds) stands for the creation time of an agent the config
/// declares, which has none.
fn model(agent: &Agent, since: u64) -> Value {
    json!({
        "id": model_id(agent.id.as_str()),
        "object": "model",
        "created": seconds(agent.created_at.unwrap_or(since)),
        "owned_by": "talon",
    })
}

async fn agents(shared: &Shared, headers: &HeaderMap) -> Result<Vec<Agent>, OpenAiError> {
    let caller = caller(shared, headers).await?;
    if let Err(refused) = caller.require(Scope::AgentRun) {
        return match caller.require(Scope::AgentRead) {
            Ok(()) => Ok(Vec::new()),
            Err(_) => Err(refused.into()),
        };
    }
    let listed: AgentsListResult =
        agents_unchecked(shared, &caller, "agents.list", Value::Null).await?;
    Ok(listed.agents)
}

/// `GET /v1/models`.
pub(crate) async fn list(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    match agents(&shared, &headers).await {
        Ok(agents) => axum::Json(json!({
            "object": "list",
            "data": agents.iter().map(|a| model(a, shared.started_at)).collect::<Vec<_>>(),
        }))
        .into_response(),
        Err(error) => error_response(&error, Retry::IfRetryable),
    }
}

/// `GET /v1/models/{model}`.
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let found = agents(&shared, &headers).await.and_then(|agents| {
        let wanted = agent_of(&name);
        agents
            .iter()
            .find(|a| a.id.as_str() == wanted)
            .map(|a| model(a, shared.started_at))
            .ok_or_else(|| model_not_found(&name))
    });
    match found {
        Ok(model) => axum::Json(model).into_response(),
        Err(error) => error_response(&error, Retry::IfRetryable),
    }
}

/// The error for a model that names no agent the caller may run.
pub(super) fn model_not_found(name: &str) -> OpenAiError {
    OpenAiError::not_found(
        format!(
            "the model {:?} does not exist: models are talon/<agentId> (GET /v1/models lists them)",
            talon_protocol::openai::cut(name, 64)
        ),
        Some("model"),
        "model_not_found",
    )
}
