//! The HTTP transport: `POST /v1/<method>` for every method of the table
//! (the params object as the JSON body, `Authorization: Bearer <token>`),
//! `GET /healthz` (no auth: `200 ok`, or `503` with the store's reason
//! while it cannot write), `GET /v1/openapi.json`, `GET /metrics`
//! (`metrics.read`; [`crate::metrics`]), and `/` and `/docs` for a
//! person ([`crate::docs`], no auth either). One error shape:
//! `{"error": {code, message, retryable, ...}}` with the code's HTTP
//! status. Every route is behind the Host, Origin and CORS guard
//! ([`crate::guard`]), and before it the request id and access log
//! ([`crate::observe`]).
//!
//! A method that writes is refused `unavailable` (retryable) at once
//! while the store cannot write, and `quota_exceeded` once the store holds
//! `maxStoredBytes`; the bytes of a token's write bodies are metered
//! ([`crate::limits`]).

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use talon_protocol::gateway::{ApiError, Effect, ErrorCode, Method, Request, dispatch};
use talon_store::Store;

use crate::api::Api;
use crate::tokens;

/// What every request handler shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub store: Store,
    pub api: Api,
    /// The served OpenAPI document, encoded on its first request (it is
    /// some 120 KB, built through a `serde_json::Value` tree: a start-up
    /// that never serves it should not pay for it).
    pub openapi: std::sync::OnceLock<Result<Bytes, String>>,
    pub limiter: crate::limits::Limiter,
    /// Turns `true` when the gateway shuts down: open streams and
    /// WebSocket connections end (clients resume by cursor elsewhere).
    pub closing: tokio::sync::watch::Receiver<bool>,
    /// The node's live tail of the event log.
    pub tail: crate::tail::Tail,
    /// Which hosts and origins are served.
    pub browsers: crate::guard::BrowserPolicy,
    /// Where the gateway listens (its own address is a served host).
    pub listen: std::net::SocketAddr,
    /// Revoked tokens, for the connections they opened.
    pub revocations: Arc<crate::revocation::Revocations>,
    /// How many bytes the store holds (database and artifact files),
    /// measured now and then, against `max_stored_bytes`.
    pub stored: crate::limits::StoredBytes,
    /// What each subject and token holds, against their quotas.
    pub quotas: crate::quota::Quotas,
    /// The node's run engine.
    pub engine: crate::runs::Engine,
    /// What the node counts (`GET /metrics`).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The OpenAI-compatible surface's policy.
    pub openai: crate::openai::OpenAiPolicy,
    /// When the node started (epoch milliseconds).
    pub started_at: u64,
    /// How commands are isolated (the default agents'; `/healthz`).
    pub sandbox: talon_jail::Status,
}

pub(crate) use talon_wire::ErrorResponse;
use talon_wire::paths;

/// The router.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(paths::HEALTHZ, get(healthz).fallback(only_get))
        .route("/v1/openapi.json", get(openapi).fallback(only_get))
        .route("/metrics", get(crate::metrics::serve).fallback(only_get))
        .route(paths::METHOD, post(call).fallback(only_post))
        .route(
            paths::EVENTS,
            get(crate::stream::all_events).fallback(only_get),
        )
        .route(paths::WS, get(crate::ws::upgrade).fallback(only_get))
        .route(
            paths::RUN_EVENTS,
            get(crate::stream::run_events).fallback(only_get),
        )
        .route(
            paths::ARTIFACT_CONTENT,
            get(crate::content::artifact_content).fallback(only_get),
        )
        .merge(crate::docs::routes())
        .merge(crate::openai::routes())
        .fallback(talon_wire::no_route)
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            crate::guard::guard,
        ))
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            crate::observe::layer,
        ))
        .with_state(shared)
}

async fn healthz(State(shared): State<Arc<Shared>>) -> Response {
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

async fn openapi(State(shared): State<Arc<Shared>>) -> Response {
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

async fn only_post() -> axum::response::Response {
    talon_wire::method_not_allowed("POST")
}

pub(crate) async fn only_get() -> axum::response::Response {
    talon_wire::method_not_allowed("GET")
}

/// Authenticates a stream's request: its bearer token, else (for a
/// browser, which cannot set headers on `EventSource` or `WebSocket`) a
/// `tokens.ticket` ticket from the URL, consumed; then one call from the
/// token's rate.
pub(crate) async fn stream_caller(
    shared: &Shared,
    headers: &HeaderMap,
    ticket: Option<&str>,
) -> Result<tokens::Caller, ApiError> {
    match ticket {
        Some(ticket) if !headers.contains_key(header::AUTHORIZATION) => {
            let caller =
                tokens::redeem_ticket(&shared.store, ticket, shared.store.now_ms()).await?;
            crate::observe::authenticated(&caller);
            shared.limiter.take(&caller.token_id)?;
            Ok(caller)
        }
        _ => caller(shared, headers).await,
    }
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
    let caller = tokens::authenticate(&shared.store, authorization, shared.store.now_ms()).await?;
    crate::observe::authenticated(&caller);
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
    if caller.ticket.is_some() {
        let shown: String = method.chars().take(64).collect();
        return Err(tokens::ticket_refusal(&format!("`{shown}`")));
    }
    let Some(known) = Method::from_name(method) else {
        let shown: String = method.chars().take(64).collect();
        return Err(talon_protocol::gateway::refuse::no_method(&shown));
    };
    caller.require(known.spec().scope)?;
    if known.spec().effect == Effect::Write {
        writable(shared)?;
    }
    // What stores something counts against the quota; what stops work or
    // frees room always passes it.
    if known.room() == talon_protocol::gateway::Room::Grows {
        shared.stored.check()?;
        shared
            .quotas
            .admit(&caller.token_id, caller.subject(), known, &params)?;
    }
    if !params.is_object() && !params.is_null() {
        return Err(talon_protocol::gateway::refuse::params_not_object(method));
    }
    let request = Request::decode(method, params)?;
    let answer = dispatch(&shared.api, caller, request).await;
    if let Err(error) = &answer {
        note_store_fault(&shared.store, error);
    }
    answer
}

/// A call that failed because the store could not write tells the store's
/// health, so `/healthz` and every later write see it at once (whichever
/// of the store's paths the call took).
fn note_store_fault(store: &Store, error: &ApiError) {
    if error.code != ErrorCode::Unavailable {
        return;
    }
    let Some(details) = &error.details else {
        return;
    };
    let reason = match details.reason.as_deref() {
        Some("disk_full") => "disk_full",
        Some("read_only") => "read_only",
        Some("unreachable") => "unreachable",
        _ => return,
    };
    let detail = details.detail.clone().unwrap_or_default();
    store.note_unwritable(reason, detail);
}

/// Whether a method that writes may go ahead: `unavailable` (retryable)
/// while the store cannot write.
fn writable(shared: &Shared) -> Result<(), ApiError> {
    let health = shared.store.health();
    match &health {
        talon_store::Health::Ok => {}
        talon_store::Health::Unwritable { .. } => {
            return Err(ApiError::new(ErrorCode::Unavailable, health.describe())
                .with_retry_after_ms(1_000)
                .with_details(talon_protocol::gateway::ErrorDetails::reason(
                    health.reason(),
                )));
        }
        talon_store::Health::Corrupt(_) => {
            let mut error = ApiError::new(ErrorCode::Unavailable, health.describe()).with_details(
                talon_protocol::gateway::ErrorDetails::reason(health.reason()),
            );
            error.retryable = false;
            return Err(error);
        }
    }
    Ok(())
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
    let _in_flight = match shared.limiter.request(caller.holder()) {
        Ok(permit) => permit,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let limits = shared.limiter.limits();
    let body = match crate::body::read(body, limits).await {
        Ok(body) => body,
        Err(refused) => {
            return crate::body::closing(ErrorResponse(refused.error(limits)).into_response());
        }
    };
    if let Err(error) = shared
        .limiter
        .take_bytes(&caller.token_id, &method, body.len())
    {
        return ErrorResponse(error).into_response();
    }
    let params: serde_json::Value = if body.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(e) => {
                return ErrorResponse(talon_protocol::gateway::refuse::body_not_json(
                    &e.to_string(),
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
