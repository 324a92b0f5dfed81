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

use crate::error::api_error;
use crate::http::{ErrorResponse, Shared, caller};

/// A byte range of a content `len` long, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: u64,
    pub end: u64,
}

/// Reads a `Range` header: `Ok(None)` for the whole content (no header,
/// or one this server does not honour, such as several ranges, which RFC
/// 9110 lets it ignore), `Err(())` when the range is outside it.
pub(crate) fn parse_range(header: Option<&str>, len: u64) -> Result<Option<Span>, ()> {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((first, last)) = spec.split_once('-') else {
        return Ok(None);
    };
    let (first, last) = (first.trim(), last.trim());
    let span = if first.is_empty() {
        // The last n bytes.
        let Ok(n) = last.parse::<u64>() else {
            return Ok(None);
        };
        if n == 0 || len == 0 {
            return Err(());
        }
        Span {
            start: len.saturating_sub(n),
            end: len - 1,
        }
    } else {
        let Ok(start) = first.parse::<u64>() else {
            return Ok(None);
        };
        let end = if last.is_empty() {
            len.saturating_sub(1)
        } else {
            match last.parse::<u64>() {
                Ok(end) if end >= start => end.min(len.saturating_sub(1)),
                _ => return Ok(None),
            }
        };
        if start >= len {
            return Err(());
        }
        Span { start, end }
    };
    Ok(Some(span))
}

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
        Err(()) => {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_read_as_rfc_9110_says() {
        let span = |start, end| Ok(Some(Span { start, end }));
        assert_eq!(parse_range(None, 10), Ok(None));
        assert_eq!(parse_range(Some("bytes=0-3"), 10), span(0, 3));
        assert_eq!(parse_range(Some("bytes=4-"), 10), span(4, 9));
        assert_eq!(parse_range(Some("bytes=-3"), 10), span(7, 9));
        assert_eq!(parse_range(Some("bytes=-30"), 10), span(0, 9));
        assert_eq!(parse_range(Some("bytes=8-100"), 10), span(8, 9));
        assert_eq!(parse_range(Some("bytes=10-"), 10), Err(()));
        assert_eq!(parse_range(Some("bytes=-0"), 10), Err(()));
        assert_eq!(parse_range(Some("bytes=0-"), 0), Err(()));
        // Ignored: not bytes, several ranges, malformed, reversed.
        for ignored in [
            "items=0-1",
            "bytes=0-1,3-4",
            "bytes=a-b",
            "bytes=5-2",
            "bytes=5",
        ] {
            assert_eq!(parse_range(Some(ignored), 10), Ok(None), "{ignored}");
        }
    }
}
