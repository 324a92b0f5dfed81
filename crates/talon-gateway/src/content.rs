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
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::{ApiError, ErrorCode, Method};
use talon_store::ArtifactContent;
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

use talon_wire::range::{Unsatisfiable, parse_range};

use crate::error::api_error;
use crate::http::{ErrorResponse, Shared, caller};

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
    let now = talon_store::now_ms();
    let not_found = || ApiError::new(ErrorCode::NotFound, format!("artifact {id:?} not found"));
    let summary = shared
        .store
        .artifact(id, now)
        .await
        .map_err(api_error)?
        .ok_or_else(not_found)?;
    let stored = shared
        .store
        .artifact_content(id, now)
        .await
        .map_err(api_error)?
        .ok_or_else(not_found)?;
    let len = stored.size;
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let span = match parse_range(range, len) {
        Ok(span) => span,
        Err(Unsatisfiable) => {
            let mut response = ErrorResponse(
                ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!("the range is outside the content ({len} bytes)"),
                )
                .with_details(serde_json::json!({"size": len})),
            )
            .into_response();
            *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
            if let Ok(value) = HeaderValue::from_str(&format!("bytes */{len}")) {
                response.headers_mut().insert(header::CONTENT_RANGE, value);
            }
            return Ok(response);
        }
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
    let out = response.headers_mut();
    let mime = summary
        .mime_type
        .as_deref()
        .unwrap_or("application/octet-stream");
    let set = |out: &mut HeaderMap, name: header::HeaderName, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            out.insert(name, value);
        }
    };
    set(out, header::CONTENT_TYPE, mime.to_owned());
    set(out, header::CONTENT_LENGTH, count.to_string());
    set(out, header::ACCEPT_RANGES, "bytes".into());
    set(out, header::ETAG, format!("\"{}\"", stored.sha256));
    if let Some(span) = span {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        set(
            response.headers_mut(),
            header::CONTENT_RANGE,
            format!("bytes {}-{}/{len}", span.start, span.end),
        );
    }
    Ok(response)
}
