//! `GET /v1/artifacts/{id}/content`: an artifact's bytes, as the gateway
//! serves them: its MIME type, length, `ETag` (its SHA-256, quoted) and
//! one `Range` (`bytes=a-b`, `bytes=a-`, `bytes=-n`) answered `206` with
//! `Content-Range`; a range outside the content is `416`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::ApiError;

use super::http::{ErrorResponse, authenticate};
use super::state::{Shared, invalid, not_found};

/// A byte range of a content, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u64,
    end: u64,
}

/// Reads a `Range` header: `Ok(None)` for the whole content (no header,
/// or one not honoured, such as several ranges), `Err(())` when the range
/// is outside it.
fn parse_range(header: Option<&str>, len: u64) -> Result<Option<Span>, ()> {
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
    match serve(&shared, &id, &headers) {
        Ok(response) => response,
        Err(error) => ErrorResponse(error).into_response(),
    }
}

fn serve(shared: &Shared, id: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    authenticate(headers)?;
    let stored = shared
        .read(|s| s.artifacts.iter().find(|a| a.summary.id == id).cloned())
        .ok_or_else(|| not_found("artifact", id))?;
    let len = stored.bytes.len() as u64;
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let span = match parse_range(range, len) {
        Ok(span) => span,
        Err(()) => {
            let mut response = ErrorResponse(
                invalid(format!("the range is outside the content ({len} bytes)"))
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
    let (start, end) = match span {
        Some(span) => (span.start as usize, span.end as usize + 1),
        None => (0, stored.bytes.len()),
    };
    let body = stored
        .bytes
        .get(start..end.min(stored.bytes.len()))
        .unwrap_or_default()
        .to_vec();
    let count = body.len();
    let mut response = Response::new(axum::body::Body::from(body));
    let out = response.headers_mut();
    let mime = stored
        .summary
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
    fn ranges_are_read_as_the_gateway_reads_them() {
        let span = |start, end| Ok(Some(Span { start, end }));
        assert_eq!(parse_range(None, 10), Ok(None));
        assert_eq!(parse_range(Some("bytes=0-3"), 10), span(0, 3));
        assert_eq!(parse_range(Some("bytes=4-"), 10), span(4, 9));
        assert_eq!(parse_range(Some("bytes=-3"), 10), span(7, 9));
        assert_eq!(parse_range(Some("bytes=10-"), 10), Err(()));
        assert_eq!(parse_range(Some("bytes=0-1,3-4"), 10), Ok(None));
    }
}
