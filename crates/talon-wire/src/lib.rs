//! The rules of the gateway protocol's transports, shared by every server
//! of it: the gateway (`talon-gateway`) and the fake gateway apps test
//! against (`talon_sdk_testing`). What a client sees on the wire is
//! decided here once, so the two cannot answer the same request
//! differently:
//!
//! - [`ErrorResponse`]: the one error shape over HTTP
//!   (`{"error": ApiError}` with the code's status, `Retry-After` in
//!   seconds when `retryAfterMs` is set), and [`sse_error_frame`], the
//!   same error ending an event stream; [`sse_event_frame`], an event's
//!   frame;
//! - [`range`]: one `Range` request (`bytes=a-b`, `bytes=a-`, `bytes=-n`);
//! - [`stream_cursor`]: a stream's cursor (`Last-Event-ID`, else `after`);
//! - [`ws`]: the WebSocket's request frames and answers.
//!
//! Deliberately absent: routing, authentication and state (each server
//! has its own).
//!
//! Also `method_not_allowed` (the `405` both servers send). Everything here is pure functions over
//! `axum`'s HTTP types: `range::parse_range` takes RFC 9110's single-range forms and ignores a
//! request for several ranges; `ws::{decode_request, answer, binary_refusal}` are the WebSocket's
//! frames, decoded and written by hand (`ws::Request` is a decoded frame). The values it renders
//! (`ApiError`, event envelopes) are `talon-protocol`'s.

pub mod browsers;
pub mod content;
pub mod guard;
pub mod query;
pub mod range;
pub mod ws;

/// The paths every server of the protocol routes (axum's syntax).
pub mod paths {
    /// Liveness.
    pub const HEALTHZ: &str = "/healthz";
    /// A method of the table: `POST /v1/<method>`.
    pub const METHOD: &str = "/v1/{method}";
    /// The whole event log as SSE.
    pub const EVENTS: &str = "/v1/events";
    /// The WebSocket.
    pub const WS: &str = "/v1/ws";
    /// One run's events as SSE.
    pub const RUN_EVENTS: &str = "/v1/runs/{run_id}/events";
    /// An artifact's bytes.
    pub const ARTIFACT_CONTENT: &str = "/v1/artifacts/{artifact_id}/content";
}

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use talon_protocol::gateway::{ApiError, ErrorCode, refuse};

/// An error as the HTTP transport sends it.
#[derive(Debug)]
pub struct ErrorResponse(pub ApiError);

impl IntoResponse for ErrorResponse {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response =
            (status, axum::Json(serde_json::json!({"error": self.0}))).into_response();
        if let Some(ms) = self.0.retry_after_ms
            && let Ok(value) = HeaderValue::from_str(&ms.div_ceil(1000).to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        if self.0.code == ErrorCode::Unauthenticated {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, www_authenticate(&self.0));
        }
        response
    }
}

/// A request body as a method's params: `null` for an empty (or blank)
/// body, else its JSON, or `invalid_request` saying why it is not JSON.
pub fn params_of(body: &[u8]) -> Result<serde_json::Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Value::Null);
    }
    serde_json::from_slice(body).map_err(|e| refuse::body_not_json(&e.to_string()))
}

/// A path that no route serves: `not_found`, saying where methods are.
pub async fn no_route() -> ErrorResponse {
    ErrorResponse(refuse::no_route())
}

/// A route asked with the wrong HTTP method: `405 method_not_allowed`,
/// the envelope like every error, and `Allow`.
pub fn method_not_allowed(allow: &'static str) -> Response {
    let mut response = ErrorResponse(refuse::method_not_allowed(allow)).into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// RFC 6750's challenge: `Bearer realm="talon"`, with
/// `error="invalid_token"` and the reason when a token was sent.
fn www_authenticate(error: &ApiError) -> HeaderValue {
    let reason = error
        .details
        .as_ref()
        .and_then(|d| d.reason.as_deref())
        .filter(|r| r.bytes().all(|b| b.is_ascii_lowercase()));
    let value = match reason {
        None | Some("missing") => "Bearer realm=\"talon\"".to_owned(),
        Some(reason) => format!(
            "Bearer realm=\"talon\", error=\"invalid_token\", error_description=\"the token is {reason}\""
        ),
    };
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("Bearer realm=\"talon\""))
}

/// An event's Server-Sent Events frame: `id: <id>`, `event: <type>`
/// (line breaks dropped), then `data:` with the envelope's JSON exactly as
/// given (one `data:` line per line of it, should it hold a line break).
pub fn sse_event_frame(id: u64, kind: &str, json: &str) -> Bytes {
    let kind: String = kind.chars().filter(|c| !matches!(c, '\n' | '\r')).collect();
    let mut frame = String::with_capacity(json.len() + kind.len() + 32);
    frame.push_str("id: ");
    frame.push_str(&id.to_string());
    frame.push_str("\nevent: ");
    frame.push_str(&kind);
    if json.contains(['\n', '\r']) {
        // An event stream ends a line at CRLF, LF or a lone CR: split at
        // each, so no line of the payload is read as a field of its own.
        for line in json.split("\r\n").flat_map(|l| l.split(['\n', '\r'])) {
            frame.push_str("\ndata: ");
            frame.push_str(line);
        }
    } else {
        frame.push_str("\ndata: ");
        frame.push_str(json);
    }
    frame.push_str("\n\n");
    Bytes::from(frame)
}

/// An event stream's response: `body` as `text/event-stream`, never
/// cached.
pub fn sse_response(body: axum::body::Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The frame of an error that ends an event stream: `event: error`, the
/// protocol's error shape as data.
pub fn sse_error_frame(error: &ApiError) -> Bytes {
    let data = serde_json::json!({ "error": error }).to_string();
    Bytes::from(format!("event: error\ndata: {data}\n\n"))
}

/// A stream's cursor: `Last-Event-ID` when the request sends it, else the
/// `after` query parameter; `None` for neither (or blank).
pub fn stream_cursor(headers: &HeaderMap, after: Option<&str>) -> Result<Option<u64>, ApiError> {
    let header = match headers.get("last-event-id") {
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| refuse::last_event_id_unreadable())?,
        ),
        None => None,
    };
    let text = header.or(after);
    match text.map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => text
            .parse::<u64>()
            .map(Some)
            .map_err(|_| refuse::not_an_event_id(text)),
    }
}

/// The event types a stream's `types` query asks for (comma-separated
/// lists, names trimmed), or `invalid_request` naming one this side does
/// not know.
pub fn event_types<'a>(
    lists: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<talon_protocol::EventType>, ApiError> {
    use talon_protocol::EventType;
    let mut types = Vec::new();
    for name in lists.into_iter().flat_map(|t| t.split(',')) {
        let name = name.trim();
        let unknown = || refuse::unknown_event_type(name);
        let kind: EventType = serde_json::from_value(serde_json::Value::String(name.into()))
            .map_err(|_| unknown())?;
        if kind == EventType::Unknown {
            return Err(unknown());
        }
        types.push(kind);
    }
    Ok(types)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_wins_over_after_and_bad_cursors_are_invalid() {
        let mut headers = HeaderMap::new();
        assert_eq!(stream_cursor(&headers, None), Ok(None));
        assert_eq!(stream_cursor(&headers, Some(" ")), Ok(None));
        assert_eq!(stream_cursor(&headers, Some("7")), Ok(Some(7)));
        headers.insert("last-event-id", HeaderValue::from_static("9"));
        assert_eq!(stream_cursor(&headers, Some("7")), Ok(Some(9)));
        headers.insert("last-event-id", HeaderValue::from_static("x1"));
        let error = stream_cursor(&headers, None).unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (ErrorCode::InvalidRequest, "\"x1\" is not an event id")
        );
    }

    #[test]
    fn event_frames_hold_the_json_as_given_and_never_break() {
        assert_eq!(
            &sse_event_frame(42, "run.completed", r#"{"type":"run.completed"}"#)[..],
            &b"id: 42\nevent: run.completed\ndata: {\"type\":\"run.completed\"}\n\n"[..]
        );
        assert_eq!(
            &sse_event_frame(1, "run.\nstarted", "{\"a\":\n1}")[..],
            &b"id: 1\nevent: run.started\ndata: {\"a\":\ndata: 1}\n\n"[..]
        );
    }

    #[test]
    fn errors_keep_their_status_and_retry_after() {
        let response = ErrorResponse(
            ApiError::new(ErrorCode::RateLimited, "slow down").with_retry_after_ms(1500),
        )
        .into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
        let frame = sse_error_frame(&ApiError::new(ErrorCode::CursorExpired, "gone"));
        assert_eq!(
            &frame[..],
            &b"event: error\ndata: {\"error\":{\"code\":\"cursor_expired\",\"message\":\"gone\",\"retryable\":false}}\n\n"[..]
        );
    }
}
