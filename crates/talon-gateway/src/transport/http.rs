//! The HTTP transport's own routes: `POST /v1/<method>` for every method
//! of the table (the params object as the JSON body, `Authorization:
//! Bearer <token>`) through the call path ([`crate::call`]), `GET
//! /healthz` (no auth: `200 ok`, or `503` with the store's reason while it
//! cannot write) and `GET /v1/openapi.json`. One error shape: `{"error":
//! {code, message, retryable, ...}}` with the code's HTTP status. The
//! routes themselves are [`crate::router`]'s.
//!
//! A body is read within its size, deadline and rate
//! ([`super::body`]), and its bytes are metered against the token's write
//! rate ([`crate::limits`]); what the store's health and quotas refuse is
//! [`crate::call`]'s.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::{ApiError, ErrorCode};
use talon_wire::ErrorResponse;

use crate::auth::caller;
use crate::call::serve_call;
use crate::state::Shared;

/// `GET /healthz`: `ok` and how commands are isolated, or `503` with the
/// store's reason while it cannot write.
pub(crate) async fn healthz(State(shared): State<Arc<Shared>>) -> Response {
    let health = shared.store.health();
    if health.is_ok() {
        return format!("ok\n{}\n", sandbox_line(&shared.sandbox)).into_response();
    }
    ErrorResponse(
        ApiError::new(ErrorCode::Unavailable, health.describe())
            .with_retry_after_ms(talon_store::PROBE_EVERY.as_millis() as u64)
            .with_details(talon_protocol::gateway::ErrorDetails::reason(
                health.reason(),
            )),
    )
    .into_response()
}

/// `/healthz`'s line on command isolation.
fn sandbox_line(status: &talon_jail::Status) -> String {
    let network = status.network.as_str();
    match status.mode {
        "bubblewrap" => format!("sandbox: bubblewrap (network {network})"),
        "off" => "sandbox: off (commands run unsandboxed: agents.defaults.sandbox.mode is \"off\")"
            .into(),
        _ => format!(
            "sandbox: unavailable (commands are refused: {})",
            status.reason.as_deref().unwrap_or("unknown")
        ),
    }
}

/// `GET /v1/openapi.json`, encoded on its first request.
pub(crate) async fn openapi(State(shared): State<Arc<Shared>>) -> Response {
    let document = shared.openapi.get_or_init(|| {
        serde_json::to_vec(&talon_protocol::openapi::openapi())
            .map(Bytes::from)
            .map_err(|e| format!("the OpenAPI document could not be encoded: {e}"))
    });
    match document {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], bytes.clone()).into_response(),
        Err(message) => {
            ErrorResponse(ApiError::new(ErrorCode::Internal, message.clone())).into_response()
        }
    }
}

/// `POST /v1/<method>`: the bearer token, one request in flight of the
/// token's, the body within its limits, then the call path.
pub(crate) async fn call(
    State(shared): State<Arc<Shared>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let caller = match caller(&shared, &headers).await {
        Ok(caller) => caller,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let _in_flight = match shared.limiter.request(caller.holder()) {
        Ok(permit) => permit,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let limits = shared.limiter.limits();
    let body = match super::body::read(body, limits).await {
        Ok(body) => body,
        Err(refused) => {
            return super::body::closing(ErrorResponse(refused.error(limits)).into_response());
        }
    };
    if let Err(error) = shared
        .limiter
        .take_bytes(&caller.token_id, &method, body.len())
    {
        return ErrorResponse(error).into_response();
    }
    let params = match talon_wire::params_of(&body) {
        Ok(params) => params,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    match serve_call(&shared, &caller, &method, params).await {
        Ok(result) => axum::Json(result).into_response(),
        Err(error) => ErrorResponse(error).into_response(),
    }
}
