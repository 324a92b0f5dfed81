//! Artifact content over HTTP (`GET /v1/artifacts/{id}/content`), the same
//! on every server: the MIME type guessed from a written file's name, the
//! one `Range` a request may ask (or the `416` that refuses it), and the
//! headers of the answer: its type, length, `Accept-Ranges`, an `ETag`
//! (the SHA-256, quoted) and, for a range, `206` with `Content-Range`.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::ErrorResponse;
use crate::range::{Span, Unsatisfiable, parse_range};

/// A MIME type for a file by its name's extension (text when it is UTF-8
/// and the extension says nothing).
pub fn mime_of(name: &str, bytes: &[u8]) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("json") => "application/json",
        Some("md" | "markdown") => "text/markdown",
        Some("html" | "htm") => "text/html",
        Some("css") => "text/css",
        Some("js" | "mjs") => "text/javascript",
        Some("csv") => "text/csv",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        Some("diff" | "patch") => "text/x-diff",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The span of a content of `len` bytes that the request's `Range` asks
/// for (`None`: the whole), or the `416` answer to a range outside it.
pub fn requested_span(headers: &HeaderMap, len: u64) -> Result<Option<Span>, Box<Response>> {
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    parse_range(range, len).map_err(|Unsatisfiable| {
        let mut response =
            ErrorResponse(talon_protocol::gateway::refuse::range_outside(len)).into_response();
        *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
        if let Ok(value) = HeaderValue::from_str(&format!("bytes */{len}")) {
            response.headers_mut().insert(header::CONTENT_RANGE, value);
        }
        Box::new(response)
    })
}

/// What the answer's headers say of the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Content<'a> {
    /// Its MIME type (`application/octet-stream` when unknown).
    pub mime: Option<&'a str>,
    /// Its whole length.
    pub len: u64,
    /// Its SHA-256, hex.
    pub sha256: &'a str,
    /// The part sent, when the request asked for one.
    pub span: Option<Span>,
}

impl Content<'_> {
    /// The bytes the answer carries: the span's, else the whole.
    pub fn count(&self) -> u64 {
        self.span.map_or(self.len, |span| span.len())
    }

    /// Sets `response`'s status and headers for this content.
    pub fn describe(&self, response: &mut Response) {
        let out = response.headers_mut();
        let set = |out: &mut HeaderMap, name: header::HeaderName, value: String| {
            if let Ok(value) = HeaderValue::from_str(&value) {
                out.insert(name, value);
            }
        };
        let mime = self.mime.unwrap_or("application/octet-stream");
        set(out, header::CONTENT_TYPE, mime.to_owned());
        set(out, header::CONTENT_LENGTH, self.count().to_string());
        set(out, header::ACCEPT_RANGES, "bytes".into());
        set(out, header::ETAG, format!("\"{}\"", self.sha256));
        if let Some(span) = self.span {
            set(
                out,
                header::CONTENT_RANGE,
                format!("bytes {}-{}/{}", span.start, span.end, self.len),
            );
            *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        }
    }
}
