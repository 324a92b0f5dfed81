//! The call path, one for every transport (`POST /v1/<method>`, the
//! WebSocket's call frames, the OpenAI-compatible surface): the method
//! (unknown: `not_found`), then the scope the table names for it
//! (`forbidden`, before the params are read), then the store's health for
//! a method that writes, then the quotas for one that stores, then the
//! params (strictly decoded), then `dispatch` to the method table
//! ([`crate::api`]). A call that failed because the store could not write
//! tells the store's health.

use talon_protocol::gateway::{ApiError, Effect, ErrorCode, Method, Request, dispatch};
use talon_store::Store;

use crate::auth::identity::{Caller, ticket_refusal};
use crate::state::Shared;

/// One call of an authenticated caller: the method, then the scope the
/// table names for it (before the params are looked at, so a caller
/// without the scope learns nothing from them), then the params, then the
/// method itself.
pub(crate) async fn serve_call(
    shared: &Shared,
    caller: &Caller,
    method: &str,
    params: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    if caller.ticket.is_some() {
        let shown: String = method.chars().take(64).collect();
        return Err(ticket_refusal(&format!("`{shown}`")));
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
