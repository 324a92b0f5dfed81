//! What every request meets before its route: the Host it names, the
//! Origin a browser sends, and CORS.
//!
//! - **Host allow-list.** A request whose `Host` is not loopback
//!   (`localhost`, `127.0.0.0/8`, `::1`), the address the gateway listens
//!   on, or a name in `gateway.security.allowedHosts` (exact, or
//!   `*.example.com` for its subdomains) is answered `421 Misdirected
//!   Request`. A DNS-rebinding page reaches the gateway under its own name,
//!   so it is turned away before any route, authenticated or not.
//! - **Origin.** A request carrying an `Origin` (browsers send one on
//!   cross-site requests and on every WebSocket upgrade) must come from
//!   the gateway's own origin or one listed in
//!   `gateway.security.allowedOrigins`; any other is `403 forbidden`, so a
//!   foreign page cannot open a WebSocket or make a call.
//! - **CORS**, off unless origins are listed: a listed origin's preflight
//!   is answered (`POST`, `GET`, the headers the protocol uses), and its
//!   responses carry `Access-Control-Allow-Origin` with the headers a
//!   client reads exposed. No cookies are involved: tokens are bearer
//!   headers, and streams take a ticket ([`crate::auth::tokens`]).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::{ApiError, refuse};

use crate::auth::browsers::{
    BrowserPolicy, OriginVerdict, explicit_port, host_allowed, host_name, origin_allowed,
};
use crate::state::Shared;

/// The headers a page may send: the gateway's own, and those the official
/// OpenAI clients send to its OpenAI-compatible routes.
const ALLOW_HEADERS: &str = "authorization, content-type, last-event-id, range, x-request-id, \
     traceparent, idempotency-key, x-talon-session-key, openai-organization, openai-project, \
     openai-beta";
/// The prefix of the further headers the OpenAI clients send (their
/// platform and retry notes: `x-stainless-os`, `x-stainless-retry-count`,
/// ...), allowed when a preflight asks for them.
const ALLOW_HEADER_PREFIX: &str = "x-stainless-";
/// How many of a preflight's requested headers are looked at.
const MAX_REQUESTED_HEADERS: usize = 32;
/// The headers a page may read.
const EXPOSE_HEADERS: &str = "retry-after, etag, content-range, content-length, content-type, \
     x-request-id, x-talon-run-id, x-talon-session-key, x-should-retry, retry-after-ms";

/// The Host check, the Origin check and CORS, around every route.
pub(crate) async fn guard(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let policy = &shared.browsers;
    if let Some(error) = ambiguous_host(&request) {
        return refuse(StatusCode::BAD_REQUEST, error);
    }
    let host = match allowed_host(request.headers(), policy, shared.listen) {
        Ok(host) => host,
        Err(error) => return refuse(StatusCode::MISDIRECTED_REQUEST, error),
    };
    let port = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .and_then(explicit_port);
    let cors = match request.headers().get(header::ORIGIN) {
        None => None,
        Some(origin) => match origin_allowed(origin, (&host, port), policy) {
            OriginVerdict::SameOrigin => None,
            OriginVerdict::Listed(origin) => Some(origin),
            OriginVerdict::Refused(shown) => {
                log_refused("origin", &shown, "gateway.security.allowedOrigins");
                return refuse(StatusCode::FORBIDDEN, refuse::origin_refused(&shown));
            }
        },
    };
    if request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        let mut response = StatusCode::NO_CONTENT.into_response();
        if let Some(origin) = &cors {
            let headers = response.headers_mut();
            allow(headers, origin);
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("GET, POST"),
            );
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                allowed_headers(request.headers()),
            );
            headers.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static("600"),
            );
        }
        return response;
    }
    let mut response = next.run(request).await;
    if let Some(origin) = &cors {
        let headers = response.headers_mut();
        allow(headers, origin);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
    }
    response
}

/// The headers a preflight is granted: [`ALLOW_HEADERS`], and those it
/// asks for under [`ALLOW_HEADER_PREFIX`] (at most
/// [`MAX_REQUESTED_HEADERS`] names looked at; others are not granted, so
/// the browser refuses the request).
fn allowed_headers(headers: &HeaderMap) -> HeaderValue {
    let mut allowed = ALLOW_HEADERS.to_owned();
    let mut added: Vec<String> = Vec::new();
    let asked = headers
        .get_all(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .take(MAX_REQUESTED_HEADERS);
    for name in asked {
        let name = name.to_ascii_lowercase();
        let token = name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if token && name.starts_with(ALLOW_HEADER_PREFIX) && !added.contains(&name) {
            allowed.push_str(", ");
            allowed.push_str(&name);
            added.push(name);
        }
    }
    HeaderValue::from_str(&allowed).unwrap_or_else(|_| HeaderValue::from_static(ALLOW_HEADERS))
}

fn allow(headers: &mut HeaderMap, origin: &HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.append(header::VARY, HeaderValue::from_static("origin"));
}

/// How often a refused Host or Origin is logged at `warn`; the others in
/// between go to `debug`, so a flood of refused requests cannot flood the
/// log.
const REFUSED_WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Logs a request refused for its `what` (`host` or `origin`), naming the
/// config key that admits it: an operator whose page or proxy is refused
/// learns what to change from the log alone.
fn log_refused(what: &'static str, shown: &str, key: &'static str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = talon_protocol::clock::Clock::system().now_ms();
    let last = LAST.load(Ordering::Relaxed);
    let due = now.saturating_sub(last) >= REFUSED_WARN_EVERY.as_millis() as u64
        && LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
    if due {
        tracing::warn!(what, refused = ?shown, key, "a request was refused for its {what}; to accept it, list it in {key} (further refusals this minute are logged at debug)");
    } else {
        tracing::debug!(what, refused = ?shown, key, "a request was refused for its {what}");
    }
}

fn refuse(status: StatusCode, error: ApiError) -> Response {
    (status, axum::Json(serde_json::json!({"error": error}))).into_response()
}

/// Why a request names its host ambiguously (`400`), if it does: more
/// than one `Host` header, or an absolute-form target (`GET
/// http://name/path`, which HTTP/1.1 says wins over `Host`) naming
/// another host or port than its `Host`.
fn ambiguous_host(request: &Request) -> Option<ApiError> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let first = hosts.next();
    if hosts.next().is_some() {
        return Some(refuse::host_several());
    }
    let target = request.uri().authority()?;
    let named = |raw: &str| host_name(raw).map(|name| (name, explicit_port(raw)));
    let same = first
        .and_then(|v| v.to_str().ok())
        .and_then(named)
        .zip(named(target.as_str()))
        .is_some_and(|(host, target)| host == target);
    if same {
        None
    } else {
        Some(refuse::host_ambiguous())
    }
}

/// The request's host (lower case, without port), if the gateway answers
/// to it; else the error its `421` carries.
fn allowed_host(
    headers: &HeaderMap,
    policy: &BrowserPolicy,
    listen: SocketAddr,
) -> Result<String, ApiError> {
    let Some(raw) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return Err(refuse::host_missing());
    };
    let Some(host) = host_name(raw) else {
        return Err(refuse::host_malformed());
    };
    if host_allowed(&host, policy, listen) {
        Ok(host)
    } else {
        let shown: String = host.chars().take(64).collect();
        log_refused("host", &shown, "gateway.security.allowedHosts");
        Err(refuse::host_refused(&shown))
    }
}
