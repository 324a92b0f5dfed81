//! `GET /v1/artifacts/{id}/content`: an artifact's bytes, as the gateway
//! serves them: its MIME type, length, `ETag` (its SHA-256, quoted) and
//! one `Range` (`bytes=a-b`, `bytes=a-`, `bytes=-n`) answered `206` with
//! `Content-Range`; a range outside the content is `416`.

use std::sync::Arc;
use talon_protocol::gateway::bounded::ArtifactId;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::{ApiError, Method};

use talon_wire::content::Content;

use super::http::{ErrorResponse, authenticate};
use super::state::{Shared, not_found};

pub(crate) async fn artifact_content(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match serve(&shared, &id, &headers) {
        Ok(response) => response,
        Err(error) => ErrorResponse(error).into_response(),
    }
}

fn serve(shared: &Shared, id: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    let granted = authenticate(shared, headers)?;
    super::http::require(&granted, Method::ArtifactsDownload.spec().scope)?;
    let stored = shared
        .read(|s| {
            s.artifacts
                .iter()
                .find(|a| a.summary.id == ArtifactId::new(id))
                .cloned()
        })
        .ok_or_else(|| not_found("artifact", id))?;
    let len = stored.bytes.len() as u64;
    let span = match talon_wire::content::requested_span(headers, len) {
        Ok(span) => span,
        Err(refused) => return Ok(*refused),
    };
    let (start, end) = match span {
        Some(span) => (span.start as usize, span.end as usize + 1),
        None => (0, stored.bytes.len()),
    };
    let body = stored
        .bytes
        .get(start..end.min(stored.bytes.len()))
        .unwrap_or_default()
        .to_vec();
    let mut response = Response::new(axum::body::Body::from(body));
    Content {
        mime: stored.summary.mime_type.as_deref(),
        len,
        sha256: &stored.sha256,
        span,
    }
    .describe(&mut response);
    Ok(response)
}
