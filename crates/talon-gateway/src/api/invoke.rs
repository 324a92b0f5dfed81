//! `tools.invoke`: one direct call an app makes, as a run of its own on
//! the session it names (so the one execution path applies: the policy,
//! durable approvals, events, the session's lane, a crash's recovery),
//! whose only work is the call. The same idempotency key returns the
//! first call's result and never makes the call twice.

use crate::auth::identity::Caller;
use sha2::{Digest, Sha256};
use talon_protocol::gateway::params::{ToolsInvokeParams, ToolsInvokeResult};
use talon_protocol::gateway::{ApiError, ErrorCode, MultitaskStrategy, RunInput, RunResultStatus};

use super::Api;
use crate::error::api_error;
use crate::runs::{Invocation, RunRequest, Submit};

use talon_protocol::gateway::caps::MAX_TOOL_REF_BYTES as MAX_TOOL_BYTES;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message)
}

/// Tells a retried call from another with the same key: the method and
/// its params (key aside) as canonical JSON.
fn request_hash(p: &ToolsInvokeParams) -> Result<String, ApiError> {
    let mut params = p.clone();
    params.idempotency_key = None;
    let canonical = serde_json::to_vec(&(
        "tools.invoke",
        serde_json::to_value(&params).map_err(|e| invalid(e.to_string()))?,
    ))
    .map_err(|e| invalid(e.to_string()))?;
    Ok(hex::encode(Sha256::digest(&canonical)))
}

impl Api {
    /// Makes the call (or finds the first call of its key) and waits for
    /// its result as long as a wait may.
    pub(super) async fn invoke(
        &self,
        caller: &Caller,
        p: ToolsInvokeParams,
    ) -> Result<ToolsInvokeResult, ApiError> {
        if p.tool.as_str().trim().is_empty() || p.tool.as_str().len() > MAX_TOOL_BYTES {
            return Err(talon_protocol::gateway::refuse::tool_ref_invalid(
                MAX_TOOL_BYTES as u64,
            ));
        }
        let arguments = match &p.arguments {
            serde_json::Value::Null => serde_json::json!({}),
            object @ serde_json::Value::Object(_) => object.clone(),
            _ => return Err(talon_protocol::gateway::refuse::arguments_not_object()),
        };
        let idempotency = match &p.idempotency_key {
            Some(key) => Some((caller.scoped_key("invoke", key.as_str()), request_hash(&p)?)),
            None => None,
        };
        let first = match &idempotency {
            Some((scoped, hash)) => match self
                .store
                .run_by_idempotency_key(scoped)
                .await
                .map_err(api_error)?
            {
                Some((run, first)) if first == *hash => Some(run),
                Some(_) => {
                    return Err(talon_protocol::gateway::refuse::idempotency_reused(
                        crate::auth::identity::given_key(scoped),
                    ));
                }
                None => None,
            },
            None => None,
        };
        let run = match first {
            Some(run) => run,
            None => {
                let session = self
                    .sessions_resolve_inner(caller, p.session_key.as_str(), None)
                    .await?;
                let request = RunRequest {
                    input: RunInput::Text(format!("tools.invoke {}", p.tool)),
                    timeout_ms: None,
                    tools: Vec::new(),
                    environment_id: None,
                    invoke: Some(Invocation {
                        tool: p.tool.clone(),
                        arguments,
                    }),
                    // The engine sets it as it accepts the run.
                    traceparent: None,
                    request_id: None,
                    task_id: None,
                };
                self.engine
                    .submit(Submit {
                        agent_id: session.agent_id.clone(),
                        session,
                        request,
                        strategy: MultitaskStrategy::Enqueue,
                        idempotency,
                    })
                    .await?
            }
        };
        let result = self
            .engine
            .wait(&run.id, Some(std::time::Duration::MAX))
            .await?;
        let details = talon_protocol::gateway::ErrorDetails {
            run_id: Some(run.id.clone()),
            ..Default::default()
        };
        match result.status {
            RunResultStatus::Completed => {
                let text = result.output.and_then(|o| o.text).unwrap_or_default();
                let value = serde_json::from_str(&text).map_err(|e| {
                    ApiError::new(
                        ErrorCode::Internal,
                        format!("the call's stored result is not JSON: {e}"),
                    )
                })?;
                Ok(ToolsInvokeResult { result: value })
            }
            RunResultStatus::Accepted => Err(ApiError::new(
                ErrorCode::Timeout,
                "the call is still running (waiting for an approval?); follow its run, or call again with the same idempotency key",
            )
            .with_details(details)),
            _ => {
                let mut error = result.error.unwrap_or_else(|| {
                    ApiError::new(ErrorCode::Unavailable, "the call did not complete")
                });
                let mut merged = error.details.take().map(|d| *d).unwrap_or_default();
                merged.run_id = Some(run.id.clone());
                Err(error.with_details(merged))
            }
        }
    }
}
