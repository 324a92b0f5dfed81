//! The access log: the layer around every HTTP request (the gateway's
//! request id in and out, the `request` spans, one `talon::access` line,
//! the request counted) and the same for each WebSocket call. The ids and
//! the task-local call they name are [`super`]'s.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument as _;

use super::{CALL, Call, MAX_PATH, REQUEST_ID, accepted, authenticated_as, minted};
use crate::state::Shared;

/// The layer: request id in, request id out, one access-log line.
pub(crate) async fn layer(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    // The gateway's own id, always: a client's cannot pose as another
    // request's in the log, the events or the traces.
    let id = minted();
    let client = accepted(request.headers().get(REQUEST_ID));
    let method = request.method().clone();
    let path: String = request.uri().path().chars().take(MAX_PATH).collect();
    let call = Arc::new(Call::new(id.clone()));
    // A caller's `traceparent` puts the request's span inside its trace.
    let traceparent = request
        .headers()
        .get(talon_protocol::trace::TRACEPARENT)
        .and_then(|v| v.to_str().ok())
        .and_then(talon_protocol::trace::TraceContext::parse)
        .map(|c| c.to_string());
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        client_request_id = client.as_deref()
    );
    let trace = tracing::info_span!(
        target: "talon::trace",
        "request",
        otel.name = %format_args!("{method} {path}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        url.path = %path,
        http.response.status_code = tracing::field::Empty,
        talon.request_id = %id,
        traceparent,
    );
    let mut response = CALL
        .scope(call.clone(), next.run(request))
        .instrument(trace.clone())
        .instrument(span)
        .await;
    let took = started.elapsed();
    trace.record("http.response.status_code", response.status().as_u16());
    if response.status().is_server_error() {
        trace.record("otel.status_code", "error");
    }
    drop(trace);
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let status = response.status().as_u16();
    shared.metrics.request(&method, status, took);
    let (token, token_name) = call.token();
    tracing::info!(
        target: "talon::access",
        transport = "http",
        method = %method,
        path = %path,
        status,
        duration_ms = took.as_secs_f64() * 1e3,
        token,
        token_name,
        request_id = %id,
        client_request_id = client.as_deref(),
        "request"
    );
    response
}

/// Serves one WebSocket call as the connection's `connection` request:
/// the call's own access-log line, its outcome counted.
pub(crate) async fn ws_call<F>(
    shared: &Shared,
    connection: &str,
    caller: &crate::auth::identity::Caller,
    frame: &serde_json::Value,
    method: &str,
    serve: F,
) -> Result<serde_json::Value, talon_protocol::gateway::ApiError>
where
    F: std::future::Future<Output = Result<serde_json::Value, talon_protocol::gateway::ApiError>>,
{
    let started = Instant::now();
    let call = Arc::new(Call::new(connection.to_owned()));
    authenticated_as(&call, caller);
    let span = tracing::info_span!("request", request_id = %connection);
    let shown: String = method.chars().take(64).collect();
    let trace = tracing::info_span!(
        target: "talon::trace",
        "request",
        otel.name = %format_args!("ws {shown}"),
        otel.kind = "server",
        rpc.method = %shown,
        talon.request_id = %connection,
    );
    let outcome = CALL
        .scope(call, serve)
        .instrument(trace)
        .instrument(span)
        .await;
    let code = outcome.as_ref().err().map(|e| e.code);
    ws_called(shared, connection, caller, frame, method, started, code);
    outcome
}

/// The access line of a WebSocket call that took from `started` and
/// ended with `code` (`None`: ok), counted.
pub(crate) fn ws_called(
    shared: &Shared,
    connection: &str,
    caller: &crate::auth::identity::Caller,
    frame: &serde_json::Value,
    method: &str,
    started: Instant,
    code: Option<talon_protocol::gateway::ErrorCode>,
) {
    let took = started.elapsed();
    shared.metrics.ws_call(code);
    let frame: String = frame.to_string().chars().take(64).collect();
    let shown: String = method.chars().take(64).collect();
    tracing::info!(
        target: "talon::access",
        transport = "ws",
        method = %shown,
        status = code.map_or("ok", |c| c.as_str()),
        duration_ms = took.as_secs_f64() * 1e3,
        token = %caller.token_id,
        token_name = caller.name.as_deref().unwrap_or(""),
        request_id = %connection,
        frame = %frame,
        "call"
    );
}
