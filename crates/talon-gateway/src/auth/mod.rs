//! Authentication and authorization: who is calling and what it may do.
//!
//! - [`identity`]: who is calling (a token's [`identity::Caller`]: its scopes,
//!   its binding, a ticket's one stream), and the namespace of its
//!   idempotency keys.
//! - [`tokens`]: secrets, their hashes, minting, [`tokens::authenticate`],
//!   stream tickets, the admin token of a first start.
//! - [`revocation`]: a revoked or expired token loses the streams and
//!   sockets it opened.
//! - [`owned`]: what a caller may see (a bound token: its subject's and
//!   agents' records only).
//! - [`browser`]: the dashboard's sign-in: a one-time link, a session
//!   token in an `HttpOnly` cookie, believed from the gateway's own
//!   origin only.
//! - [`guard`]: the Host allow-list, the Origin check and CORS
//!   (`talon_wire::guard`, which the fake applies too), around every route.
//!
//! Here, the two entries of a request: [`caller`] (the bearer token) and
//! [`stream_caller`] (the token, or a stream's ticket), each taking one
//! call from the token's rate.

pub mod browser;
pub(crate) mod guard;
pub(crate) mod identity;
pub(crate) mod owned;
pub(crate) mod revocation;
pub mod tokens;

use axum::http::{HeaderMap, header};
use talon_protocol::gateway::ApiError;

use crate::state::Shared;
use identity::Caller;

/// Authenticates a stream's request: its bearer token, else (for a
/// browser, which cannot set headers on `EventSource` or `WebSocket`) a
/// `tokens.ticket` ticket from the URL, consumed; then one call from the
/// token's rate.
pub(crate) async fn stream_caller(
    shared: &Shared,
    headers: &HeaderMap,
    ticket: Option<&str>,
) -> Result<Caller, ApiError> {
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
pub(crate) async fn caller(shared: &Shared, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let caller = tokens::authenticate(&shared.store, authorization, shared.store.now_ms()).await?;
    crate::observe::authenticated(&caller);
    shared.limiter.take(&caller.token_id)?;
    Ok(caller)
}
