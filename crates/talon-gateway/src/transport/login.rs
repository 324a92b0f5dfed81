//! The dashboard's sign-in routes ([`crate::auth::browser`] holds the
//! rules): `POST /v1/dashboard/login` (`{"code": "lgn_..."}` from the
//! link's fragment, from the gateway's own page only: a session token in
//! the cookie, `{tokenId, scopes, expiresAt}`), `GET /v1/dashboard/session`
//! (the cookie's sign-in, or `unauthenticated`) and `POST
//! /v1/dashboard/logout` (revokes the cookie's sign-in and clears it; a
//! bearer token is never revoked here). Every attempt at a code takes from
//! one gateway-wide bucket of the call rate, so a flood of guesses costs
//! the store nothing more than a flood of calls.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use talon_protocol::gateway::refuse;
use talon_wire::ErrorResponse;

use crate::auth::browser::{self, FromCookie, OwnOrigin};
use crate::state::Shared;

/// The bucket every sign-in attempt takes from. U+001F is in no token id.
const LOGIN_BUCKET: &str = "\u{1f}dashboard.login";

/// What a sign-in posts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    code: String,
}

/// A signed-in browser's view of itself.
fn signed_in(
    token_id: &str,
    scopes: &[talon_protocol::gateway::Scope],
    expires_at: Option<u64>,
) -> Response {
    axum::Json(serde_json::json!({
        "tokenId": token_id,
        "scopes": scopes,
        "expiresAt": expires_at,
    }))
    .into_response()
}

/// `POST /v1/dashboard/login`.
pub(crate) async fn login(
    State(shared): State<Arc<Shared>>,
    own: Option<Extension<OwnOrigin>>,
    body: Body,
) -> Response {
    if own.is_none() {
        return ErrorResponse(refuse::login_not_own_origin()).into_response();
    }
    if let Err(error) = shared.limiter.take(LOGIN_BUCKET) {
        return ErrorResponse(error).into_response();
    }
    let limits = shared.limiter.limits();
    let body = match super::body::read(body, limits).await {
        Ok(body) => body,
        Err(refused) => {
            return super::body::closing(ErrorResponse(refused.error(limits)).into_response());
        }
    };
    let code = match serde_json::from_slice::<LoginBody>(&body) {
        Ok(parsed) => parsed.code,
        Err(error) => {
            return ErrorResponse(refuse::body_not_json(&error.to_string())).into_response();
        }
    };
    match browser::exchange(&shared.store, &code, shared.store.now_ms()).await {
        Ok(done) => {
            let mut response = signed_in(&done.token.id, &done.token.scopes, done.token.expires_at);
            response
                .headers_mut()
                .insert(header::SET_COOKIE, done.cookie);
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                axum::http::HeaderValue::from_static("no-store"),
            );
            response
        }
        Err(error) => ErrorResponse(error).into_response(),
    }
}

/// `GET /v1/dashboard/session`.
pub(crate) async fn session(
    State(shared): State<Arc<Shared>>,
    cookie: Option<Extension<FromCookie>>,
    headers: HeaderMap,
) -> Response {
    if cookie.is_none() {
        return ErrorResponse(refuse::not_signed_in()).into_response();
    }
    match crate::auth::caller(&shared, &headers).await {
        Ok(caller) => signed_in(&caller.token_id, &caller.scopes, caller.expires_at),
        Err(error) => ErrorResponse(error).into_response(),
    }
}

/// `POST /v1/dashboard/logout`: the cookie's sign-in revoked and cleared.
pub(crate) async fn logout(
    State(shared): State<Arc<Shared>>,
    own: Option<Extension<OwnOrigin>>,
    cookie: Option<Extension<FromCookie>>,
    headers: HeaderMap,
) -> Response {
    if own.is_none() {
        return ErrorResponse(refuse::login_not_own_origin()).into_response();
    }
    let cleared = [(header::SET_COOKIE, browser::cleared_cookie())];
    if cookie.is_none() {
        return (StatusCode::NO_CONTENT, cleared).into_response();
    }
    let caller = match crate::auth::caller(&shared, &headers).await {
        Ok(caller) => caller,
        // Already ended: there is nothing to revoke, only a cookie to clear.
        Err(_) => return (StatusCode::NO_CONTENT, cleared).into_response(),
    };
    if caller.name.as_deref() != Some(browser::SESSION_NAME) {
        // A bearer token that was put in the cookie by hand stays live.
        return (StatusCode::NO_CONTENT, cleared).into_response();
    }
    match shared
        .store
        .revoke_token(&caller.token_id, shared.store.now_ms())
        .await
    {
        Ok(_) => {
            tracing::info!(token = %caller.token_id, "a browser signed out of the dashboard");
            (StatusCode::NO_CONTENT, cleared).into_response()
        }
        Err(error) => ErrorResponse(crate::error::api_error(error)).into_response(),
    }
}
