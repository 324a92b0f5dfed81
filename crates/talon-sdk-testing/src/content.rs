//! `GET /v1/artifacts/{id}/content`: an artifact's bytes, as the gateway
//! serves them: its MIME type, length, `ETag` (its SHA-256, quoted) and
//! one `Range` (`bytes=a-b`, `bytes=a-`, `bytes=-n`) answered `206` with
//! `Content-Range`; a range outside the content is `416`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::ApiError;

use talon_wire::range::{Unsatisfiable, parse_range};

use super::http::{ErrorResponse, authenticate};
use super::state::{Shared, invalid, not_found};

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
    authenticate(shared, headers)?;
    let stored = shared
        .read(|s| s.artifacts.iter().find(|a| a.summary.id == id).cloned())
        .ok_or_else(|| not_found("artifact", id))?;
    let len = stored.bytes.len() as u64;
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let span = match parse_range(range, len) {
        Ok(span) => span,
        Err(Unsatisfiable) => {
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
