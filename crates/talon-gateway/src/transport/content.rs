//! `GET /v1/artifacts/{id}/content`: an artifact's bytes, for tokens with
//! `artifacts.read` (the scope of `artifacts.download`). Streamed from its
//! file (or sent from the database when it is inline), with its MIME type,
//! its length, an `ETag` (its SHA-256) and one `Range` (`bytes=a-b`,
//! `bytes=a-`, `bytes=-n`) answered `206` with `Content-Range`; a range
//! outside the content is `416`. An expired or unknown artifact is
//! `not_found`, as through the methods.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::{ApiError, ErrorCode, Method};
use talon_store::ArtifactContent;
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

use talon_wire::content::Content;

use crate::error::api_error;
use talon_wire::ErrorResponse;

use crate::auth::caller;
use crate::state::Shared;

pub(crate) async fn artifact_content(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match serve(&shared, &id, &headers).await {
        Ok(response) => response,
        Err(error) => ErrorResponse(error).into_response(),
    }
}

async fn serve(shared: &Shared, id: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    let caller = caller(shared, headers).await?;
    caller.require(Method::ArtifactsDownload.spec().scope)?;
    let now = shared.store.now_ms();
    let not_found = || talon_protocol::gateway::refuse::not_found("artifact", id);
    let summary = crate::auth::owned::artifact_for(&shared.store, &caller, id, now).await?;
    let stored = shared
        .store
        .artifact_content(id, now)
        .await
        .map_err(api_error)?
        .ok_or_else(not_found)?;
    let len = stored.size;
    let span = match talon_wire::content::requested_span(headers, len) {
        Ok(span) => span,
        Err(refused) => return Ok(*refused),
    };
    let (start, count) = match span {
        Some(span) => (span.start, span.end - span.start + 1),
        None => (0, len),
    };
    let body = match stored.content {
        ArtifactContent::Inline(bytes) => {
            let from = usize::try_from(start)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            let to = usize::try_from(start + count)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            Body::from(bytes[from..to].to_vec())
        }
        ArtifactContent::File(path) => {
            let mut file = tokio::fs::File::open(&path).await.map_err(|e| {
                tracing::error!(error = %e, artifact = %id, "an artifact's file could not be opened");
                ApiError::new(ErrorCode::Unavailable, "the artifact's content cannot be read")
            })?;
            file.seek(std::io::SeekFrom::Start(start))
                .await
                .map_err(|_| {
                    ApiError::new(
                        ErrorCode::Unavailable,
                        "the artifact's content cannot be read",
                    )
                })?;
            Body::from_stream(tokio_util::io::ReaderStream::new(file.take(count)))
        }
    };
    let mut response = Response::new(body);
    Content {
        mime: summary.mime_type.as_deref(),
        len,
        sha256: &stored.sha256,
        span,
    }
    .describe(&mut response);
    Ok(response)
}
