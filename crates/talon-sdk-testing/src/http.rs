//! The HTTP transport, as the gateway serves it: `POST /v1/<method>`
//! (the params object as the JSON body, an empty body being `{}`,
//! `Authorization: Bearer <token>`), `GET /healthz`, and the routes of
//! the other modules (streams, WebSocket, artifact bytes). Every error is
//! `{"error": ApiError}` with the code's HTTP status and `Retry-After`
//! when it carries `retryAfterMs`. Each call is recorded and meets the
//! queued call faults before it is served.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use talon_protocol::gateway::{ApiError, AuthRefusal, Method, Request, Scope, dispatch};

use super::RecordedCall;
use super::api::Api;
use super::script::{CallFault, take_call_fault};
use super::state::{Shared, TOKEN};

use talon_protocol::gateway::caps::DEFAULT_MAX_BODY_BYTES as MAX_BODY_BYTES;

pub(crate) use talon_wire::ErrorResponse;
use talon_wire::paths;

/// The router, behind the gateway's guard (`talon_wire::guard`: the Host
/// check, the Origin check and CORS, under the default policy: loopback
/// names, the fake's own origin) for a fake listening on `listen`.
pub(crate) fn router(shared: Arc<Shared>, listen: std::net::SocketAddr) -> Router {
    Router::new()
        .route(paths::HEALTHZ, get(healthz).fallback(only_get))
        .route(paths::METHOD, post(call).fallback(only_post))
        .route(
            paths::EVENTS,
            get(super::stream::all_events).fallback(only_get),
        )
        .route(paths::WS, get(super::ws::upgrade).fallback(only_get))
        .route(
            paths::RUN_EVENTS,
            get(super::stream::run_events).fallback(only_get),
        )
        .route(
            paths::ARTIFACT_CONTENT,
            get(super::content::artifact_content).fallback(only_get),
        )
        .fallback(talon_wire::no_route)
        .layer(axum::middleware::from_fn(move |request, next| {
            guarded(listen, request, next)
        }))
        .with_state(shared)
}

async fn guarded(
    listen: std::net::SocketAddr,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use talon_wire::guard::{Screened, expose, screen};
    let policy = talon_wire::browsers::BrowserPolicy::default();
    let cors = match screen(&request, &policy, listen) {
        Screened::Pass { cors, .. } => cors,
        Screened::Preflight(response) => return response,
        Screened::Refused(refused) => return refused.into_response(),
    };
    let mut response = next.run(request).await;
    expose(&mut response, cors.as_ref());
    response
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn only_post() -> axum::response::Response {
    talon_wire::method_not_allowed("POST")
}

async fn only_get() -> axum::response::Response {
    talon_wire::method_not_allowed("GET")
}

/// Checks the request's bearer token, the fake's own (an admin's), or
/// one that `tokens.create` minted and that has not expired (or been
/// replaced), and says what it grants.
pub(crate) fn authenticate(shared: &Shared, headers: &HeaderMap) -> Result<Vec<Scope>, ApiError> {
    let Some(header) = headers.get(header::AUTHORIZATION) else {
        return Err(AuthRefusal::Missing.error());
    };
    match header
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
    {
        Some(TOKEN) => Ok(vec![Scope::Admin]),
        Some(token) => match shared.read(|s| s.tokens.get(token).cloned()) {
            Some((expires_at, scopes)) if expires_at > shared.now_ms() => Ok(scopes),
            Some(_) => Err(AuthRefusal::Expired.error()),
            None => Err(AuthRefusal::Unknown.error()),
        },
        None => Err(AuthRefusal::Malformed.error()),
    }
}

/// `forbidden` unless `granted` has `scope` (or `admin`), as the gateway
/// checks every method's scope.
pub(crate) fn require(granted: &[Scope], scope: Scope) -> Result<(), ApiError> {
    if scope.satisfied_by(granted) {
        Ok(())
    } else {
        Err(ApiError::forbidden(scope))
    }
}

/// Checks a stream's credential: the bearer token, else a ticket from
/// `tokens.ticket` (`?ticket=`), which opens `stream`, once, before it
/// expires (another stream is `forbidden`, reason `ticket`), and says what
/// it grants; what a ticket's caller may do on it is the caller's to check
/// (`Some`).
pub(crate) fn authenticate_stream(
    shared: &Shared,
    headers: &HeaderMap,
    ticket: Option<&str>,
    stream: &dyn Fn(&talon_protocol::gateway::TicketStream) -> bool,
) -> Result<(Vec<Scope>, Option<talon_protocol::gateway::TicketStream>), ApiError> {
    match ticket {
        Some(ticket) if !headers.contains_key(header::AUTHORIZATION) => {
            let now = shared.now_ms();
            shared.write(|s| match s.tickets.remove(ticket) {
                Some((expires_at, named)) if expires_at > now => {
                    if stream(&named) {
                        Ok((vec![Scope::SessionRead], Some(named)))
                    } else {
                        Err(talon_protocol::gateway::refuse::ticket_calls(
                            "this ticket opens another stream",
                        ))
                    }
                }
                _ => Err(talon_protocol::gateway::refuse::bad_ticket()),
            })
        }
        _ => authenticate(shared, headers).map(|scopes| (scopes, None)),
    }
}

/// Records a call and applies the faults queued for its method.
pub(crate) async fn arrive(
    shared: &Shared,
    method: &str,
    params: &serde_json::Value,
) -> Result<(), ApiError> {
    let fault = shared.write(|s| {
        s.calls.push(RecordedCall {
            method: method.to_owned(),
            params: if params.is_null() {
                serde_json::json!({})
            } else {
                params.clone()
            },
        });
        take_call_fault(&mut s.faults, method)
    });
    match fault {
        Some(CallFault::Fail(error)) => Err(error),
        Some(CallFault::Wait(delay)) => {
            tokio::time::sleep(delay).await;
            Ok(())
        }
        None => Ok(()),
    }
}

/// One call of an authenticated caller: recorded, faults, the method
/// (unknown: `not_found`), the params (an object), decoded strictly, then
/// dispatched.
pub(crate) async fn serve_call(
    shared: &Arc<Shared>,
    granted: &[Scope],
    method: &str,
    params: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    arrive(shared, method, &params).await?;
    let Some(known) = Method::from_name(method) else {
        return Err(talon_protocol::gateway::refuse::no_method(method));
    };
    require(granted, known.spec().scope)?;
    if !params.is_object() && !params.is_null() {
        return Err(talon_protocol::gateway::refuse::params_not_object(method));
    }
    let request = Request::decode(method, params)?;
    dispatch(&Api(shared.clone()), &(), request).await
}

async fn call(
    State(shared): State<Arc<Shared>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let granted = match authenticate(&shared, &headers) {
        Ok(granted) => granted,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return ErrorResponse(talon_protocol::gateway::refuse::body_too_large(
            MAX_BODY_BYTES as u64,
        ))
        .into_response();
    };
    let params = match talon_wire::params_of(&body) {
        Ok(params) => params,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    match serve_call(&shared, &granted, &method, params).await {
        Ok(result) => axum::Json(result).into_response(),
        Err(error) => ErrorResponse(error).into_response(),
    }
}
