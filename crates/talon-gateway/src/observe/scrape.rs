//! `GET /metrics`: the node's [`super::metrics::Metrics`] and what a scrape reads from
//! the store at its time, as Prometheus text, for a token holding
//! `metrics.read`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::Scope;
use talon_wire::ErrorResponse;

use super::metrics::Sampled;
use crate::state::Shared;

/// The content type of the text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `GET /metrics`: for a token holding `metrics.read`.
pub(crate) async fn serve(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let caller = match crate::auth::caller(&shared, &headers).await {
        Ok(caller) => caller,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    if let Err(error) = caller.require(Scope::MetricsRead) {
        return ErrorResponse(error).into_response();
    }
    let sampled = match sample(&shared).await {
        Ok(sampled) => sampled,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let mut response = shared.metrics.render(&sampled).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

async fn sample(shared: &Shared) -> Result<Sampled, talon_protocol::gateway::ApiError> {
    let engine = &shared.engine;
    let queued = shared
        .store
        .queued_runs(engine.max_queued())
        .await
        .map_err(crate::error::api_error)?
        .len();
    let approvals = shared
        .store
        .approvals(&talon_store::PendingFilter {
            status: Some("pending".into()),
            ..Default::default()
        })
        .await
        .map_err(crate::error::api_error)?
        .len();
    let leases = shared
        .store
        .leases()
        .await
        .map_err(crate::error::api_error)?;
    Ok(Sampled {
        queued,
        running: engine.running(),
        waiting: engine.waiting(),
        approvals,
        store_up: shared.store.health().is_ok(),
        node: engine.node().to_owned(),
        leases,
        now: shared.store.now_ms(),
    })
}
