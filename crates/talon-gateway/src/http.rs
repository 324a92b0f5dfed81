//! The HTTP transport: `POST /v1/<method>` for every method of the table
//! (the params object as the JSON body, `Authorization: Bearer <token>`),
//! `GET /healthz` (no auth), `GET /v1/openapi.json`. One error shape:
//! `{"error": {code, message, retryable, ...}}` with the code's HTTP
//! status.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use talon_protocol::gateway::{ApiError, ErrorCode, Method, Request, dispatch};
use talon_store::Store;

use crate::api::Api;
use crate::tokens;

/// What every request handler shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub store: Store,
    pub api: Api,
    pub openapi: Bytes,
    pub limiter: crate::limits::Limiter,
    /// Turns `true` when the gateway shuts down: open streams and
    /// WebSocket connections end (clients resume by cursor elsewhere).
    pub closing: tokio::sync::watch::Receiver<bool>,
    /// The node's live tail of the event log.
    pub tail: crate::tail::Tail,
}

pub(crate) use talon_wire::ErrorResponse;

/// The router.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/v1/openapi.json", get(openapi))
        .route("/v1/{method}", post(call))
        .route("/v1/events", get(crate::stream::all_events))
        .route("/v1/ws", get(crate::ws::upgrade))
        .route("/v1/runs/{run_id}/events", get(crate::stream::run_events))
        .route(
            "/v1/artifacts/{artifact_id}/content",
            get(crate::content::artifact_content),
        )
        .fallback(fallback)
        .with_state(shared)
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn openapi(State(shared): State<Arc<Shared>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        shared.openapi.clone(),
    )
        .into_response()
}

async fn fallback() -> ErrorResponse {
    ErrorResponse(ApiError::new(
        ErrorCode::NotFound,
        "no such route: methods are POST /v1/<method>",
    ))
}

/// Authenticates the request's bearer token and takes one call from its
/// rate.
pub(crate) async fn caller(
    shared: &Shared,
    headers: &HeaderMap,
) -> Result<tokens::Caller, ApiError> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let caller = tokens::authenticate(&shared.store, authorization, talon_store::now_ms()).await?;
    shared.limiter.take(&caller.token_id)?;
    Ok(caller)
}

/// One call of an authenticated caller: the method, then the scope the
/// table names for it (before the params are looked at, so a caller
/// without the scope learns nothing from them), then the params, then the
/// method itself.
pub(crate) async fn serve_call(
    shared: &Shared,
    caller: &tokens::Caller,
    method: &str,
    params: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    let Some(known) = Method::from_name(method) else {
        return Err(
            ApiError::new(ErrorCode::NotFound, format!("no method `{method}`"))
                .with_details(serde_json::json!({"method": method})),
        );
    };
    caller.require(known.spec().scope)?;
    if !params.is_object() && !params.is_null() {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!("{method}: params must be a JSON object"),
        ));
    }
    let request = Request::decode(method, params)?;
    dispatch(&shared.api, caller, request).await
}

async fn call(
    State(shared): State<Arc<Shared>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let caller = match caller(&shared, &headers).await {
        Ok(caller) => caller,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let limit = shared.limiter.limits().max_body_bytes;
    let Ok(body) = axum::body::to_bytes(body, limit).await else {
        return ErrorResponse(ApiError::new(
            ErrorCode::InvalidRequest,
            format!("the body exceeds {limit} bytes (or was cut off)"),
        ))
        .into_response();
    };
    let params: serde_json::Value = if body.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(e) => {
                return ErrorResponse(ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!("the body is not JSON: {e}"),
                ))
                .into_response();
            }
        }
    };
    match serve_call(&shared, &caller, &method, params).await {
        Ok(result) => axum::Json(result).into_response(),
        Err(error) => ErrorResponse(error).into_response(),
    }
}
