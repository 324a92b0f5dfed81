//! The OpenAI-compatible surface: `GET /v1/models[/{model}]`,
//! `POST /v1/chat/completions`, `POST /v1/responses`,
//! `GET /v1/responses/{id}` (with `?stream=true&starting_after=N`) and
//! `POST /v1/responses/{id}/cancel`, beside the method routes, for clients
//! that speak only OpenAI's API (the official `openai` packages, editors,
//! LangChain, LiteLLM). The wire shapes and the projections of events are
//! `talon_protocol::openai`'s; this module authenticates, maps a request
//! to the protocol's methods and streams.
//!
//! - **One path.** Every call goes through [`crate::call::serve_call`] with
//!   the caller's token: the same scopes, rate limits, store health and
//!   quota as the method table. A chat completion or a response is a
//!   `runs.create` on the normal path (policy, approvals, the durable log).
//! - **Auth.** `Authorization: Bearer <token>` only (no tickets: a
//!   long-lived token never travels in a URL, and these clients set
//!   headers). Scopes: `agent.read` to list models (an agent is listed to
//!   a token that may run it, `agent.run`), `agent.run` to create,
//!   `session.write`/`session.read` when a session is named, `session.read`
//!   to retrieve, `agent.run` and `session.read` to cancel.
//! - **On by default only on loopback** (`gateway.openai.enabled`);
//!   when off, every route answers 404 `endpoint_disabled`.
//! - **Errors** are OpenAI's envelope ([`talon_protocol::openai::error`]),
//!   and say `x-should-retry: false` unless a retry is safe (no run was
//!   created): the official clients retry 409, 429 and 5xx by default and
//!   send no idempotency key. An `Idempotency-Key` header is passed on as
//!   `runs.create`'s `idempotencyKey`.
//! - **Streams** are SSE without `id:` lines (the Python client's decoder
//!   turns a heartbeat after an `id:` line into an empty event), heartbeat
//!   comments while idle, and read committed events only, as every Talon
//!   stream does ([`crate::transport::stream::Follow`]).
//! - **A client that leaves** before its run's end cancels the run
//!   (`sse::Abandon`), unless it runs in the background.
//! - **Approvals** ([`watch`]): a run the surface started that asks for an
//!   approval waits for an answer from the SDK or the dashboard up to
//!   `approvalWaitMs`, then is denied; or is denied at once
//!   (`onApproval: "deny"`).

pub(crate) mod chat;
mod conversation;
mod create;
mod input;
pub(crate) mod models;
pub(crate) mod policy;
pub(crate) mod responses;
mod sse;
mod watch;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use talon_protocol::openai::OpenAiError;

use crate::auth::identity::Caller;
use crate::state::Shared;

/// `405` in OpenAI's envelope (or `endpoint_disabled` while the surface
/// is off), for any other HTTP method on the surface's paths.
pub(crate) async fn not_allowed(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
) -> Response {
    if let Err(off) = serving(&shared) {
        return error_response(&off, Retry::Never);
    }
    let mut error = OpenAiError::invalid(
        "this path does not take that HTTP method",
        None,
        "method_not_allowed",
    );
    error.status = 405;
    error_response(&error, Retry::Never)
}

/// Whether a client may retry after an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Only if Talon says the error is retryable: no run exists yet.
    IfRetryable,
    /// Never: a run exists, or the request itself is at fault.
    Never,
}

/// An error in OpenAI's envelope, with its status and retry headers.
pub(crate) fn error_response(error: &OpenAiError, retry: Retry) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let should = retry == Retry::IfRetryable && error.should_retry(false);
    let mut response = (status, axum::Json(error.body())).into_response();
    let headers = response.headers_mut();
    headers.insert(
        "x-should-retry",
        HeaderValue::from_static(if should { "true" } else { "false" }),
    );
    if let Some(ms) = error.retry_after_ms {
        if let Ok(v) = HeaderValue::from_str(&ms.to_string()) {
            headers.insert("retry-after-ms", v);
        }
        if let Ok(v) = HeaderValue::from_str(&ms.div_ceil(1000).to_string()) {
            headers.insert(header::RETRY_AFTER, v);
        }
    }
    if error.status == 401 {
        headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// Whether `tool_choice` turns the client's tools off (`"none"`); only
/// `"auto"` and `"none"` are taken: Talon's agent decides which tools to
/// call.
pub(crate) fn tools_off(tool_choice: Option<&serde_json::Value>) -> Result<bool, OpenAiError> {
    match tool_choice.map(|c| c.as_str()) {
        None | Some(Some("auto")) => Ok(false),
        Some(Some("none")) => Ok(true),
        Some(_) => Err(OpenAiError::invalid(
            "tool_choice may be \"auto\" or \"none\": Talon's agent decides which tools to call",
            Some("tool_choice"),
            "unsupported_parameter",
        )),
    }
}

/// A handler's answer: its response, or its error with the retry rule.
pub(crate) fn answer(result: Result<Response, (OpenAiError, Retry)>) -> Response {
    match result {
        Ok(response) => response,
        Err((error, retry)) => error_response(&error, retry),
    }
}

/// The caller of a request to the surface: the surface must be on, then
/// the bearer token (never a ticket), then one call from its rate.
pub(crate) async fn caller(shared: &Shared, headers: &HeaderMap) -> Result<Caller, OpenAiError> {
    serving(shared)?;
    crate::auth::caller(shared, headers)
        .await
        .map_err(OpenAiError::from)
}

/// `endpoint_disabled` while the surface is off.
fn serving(shared: &Shared) -> Result<(), OpenAiError> {
    if shared.openai.serves(shared.listen) {
        return Ok(());
    }
    Err(OpenAiError::not_found(
        "the OpenAI-compatible endpoint is off on this gateway (gateway.openai.enabled)",
        None,
        "endpoint_disabled",
    ))
}

/// A request body as JSON, within the gateway's body limit and the
/// token's write rate.
pub(crate) async fn json_body<T: serde::de::DeserializeOwned>(
    shared: &Shared,
    caller: &Caller,
    body: Body,
) -> Result<T, OpenAiError> {
    let limits = shared.limiter.limits();
    let bytes = match crate::transport::body::read(body, limits).await {
        Ok(bytes) => bytes,
        Err(refused) => {
            let error = refused.error(limits);
            let code = match refused {
                crate::transport::body::Refused::TooLarge => "body_too_large",
                crate::transport::body::Refused::TooSlow => "body_too_slow",
            };
            return Err(OpenAiError::invalid(error.message, None, code));
        }
    };
    shared
        .limiter
        .take_bytes(&caller.token_id, "runs.create", bytes.len())
        .map_err(OpenAiError::from)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        OpenAiError::invalid(
            format!("the body is not a valid request: {e}"),
            None,
            "invalid_request",
        )
    })
}

/// One method of the table, as the caller, its result decoded.
pub(crate) async fn call<T: serde::de::DeserializeOwned>(
    shared: &Shared,
    caller: &Caller,
    method: &str,
    params: serde_json::Value,
) -> Result<T, OpenAiError> {
    let value = crate::call::serve_call(shared, caller, method, params)
        .await
        .map_err(OpenAiError::from)?;
    serde_json::from_value(value).map_err(|e| {
        OpenAiError::from(talon_protocol::gateway::ApiError::new(
            talon_protocol::gateway::ErrorCode::Internal,
            format!("{method}'s result did not decode: {e}"),
        ))
    })
}

/// A read of the agents, as the caller but without the method's own
/// scope: whether an agent exists is the caller's to know when it may run
/// agents (`agent.run`), which the surface's routes check themselves.
pub(crate) async fn agents_unchecked<T: serde::de::DeserializeOwned>(
    shared: &Shared,
    caller: &Caller,
    method: &'static str,
    params: serde_json::Value,
) -> Result<T, OpenAiError> {
    use talon_protocol::gateway::{ApiError, ErrorCode, Request, dispatch};
    debug_assert!(method.starts_with("agents."));
    let request = Request::decode(method, params).map_err(OpenAiError::from)?;
    let value = dispatch(&shared.api, caller, request)
        .await
        .map_err(OpenAiError::from)?;
    serde_json::from_value(value).map_err(|e| {
        OpenAiError::from(ApiError::new(
            ErrorCode::Internal,
            format!("{method}'s result did not decode: {e}"),
        ))
    })
}

/// Adds the run and session headers every created call answers with.
pub(crate) fn run_headers(response: &mut Response, run_id: &str, session_key: Option<&str>) {
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(run_id) {
        headers.insert("x-talon-run-id", v);
    }
    if let Some(key) = session_key
        && let Ok(v) = HeaderValue::from_str(key)
    {
        headers.insert("x-talon-session-key", v);
    }
}
