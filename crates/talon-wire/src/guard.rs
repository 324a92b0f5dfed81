//! The check every request meets before its route, for the gateway and
//! the fake alike: the Host it names, the Origin a browser sends, and
//! CORS. [`screen`] decides; the server's middleware answers what it
//! decides (and logs a refusal where it logs).
//!
//! - **Host allow-list.** A request whose `Host` is not loopback
//!   (`localhost`, `127.0.0.0/8`, `::1`), the address the server listens
//!   on, or a name in `gateway.security.allowedHosts` is `421 Misdirected
//!   Request`; two `Host` headers, or an absolute-form target naming
//!   another host, are `400`.
//! - **Origin.** A request carrying an `Origin` must come from the
//!   server's own origin or one listed in `gateway.security.allowedOrigins`;
//!   any other is `403 forbidden`.
//! - **CORS**, off unless origins are listed: a listed origin's preflight
//!   is answered, and its responses carry `Access-Control-Allow-Origin`
//!   with the headers a client reads exposed ([`expose`]).

use std::net::SocketAddr;

use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::{ApiError, refuse};

use crate::browsers::{
    BrowserPolicy, OriginVerdict, explicit_port, host_allowed, host_name, origin_allowed,
};

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

/// Where a browser says a request comes from, relative to the page that
/// sent it (`same-origin`, `same-site`, `cross-site`, `none`).
const SEC_FETCH_SITE: &str = "sec-fetch-site";

/// A request refused before its route.
#[derive(Debug)]
pub struct Refused {
    /// Its status (`400`, `421` or `403`).
    pub status: StatusCode,
    /// Its error.
    pub error: ApiError,
    /// What a server logs of it, when it names something an admin can
    /// allow: what (`host`, `origin`), as shown, and the config key.
    pub noted: Option<(&'static str, String, &'static str)>,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        (
            self.status,
            axum::Json(serde_json::json!({"error": self.error})),
        )
            .into_response()
    }
}

/// What [`screen`] decides of a request.
#[derive(Debug)]
pub enum Screened {
    /// It goes on to its route; its response gets `cors` (a listed origin)
    /// through [`expose`].
    Pass {
        /// The listed origin the response allows, if any.
        cors: Option<HeaderValue>,
        /// Whether a browser sent it from the server's own origin: an
        /// `Origin` naming it, or none with `Sec-Fetch-Site: same-origin`
        /// (a browser's same-origin `GET`). What a server may honour a
        /// cookie for; a request with neither (a program's, an old
        /// browser's) is not.
        own_origin: bool,
    },
    /// A CORS preflight, answered here.
    Preflight(Response),
    /// Refused.
    Refused(Refused),
}

/// The Host check, the Origin check and CORS, for one request to a server
/// listening on `listen` under `policy`.
pub fn screen<B>(request: &Request<B>, policy: &BrowserPolicy, listen: SocketAddr) -> Screened {
    if let Some(error) = ambiguous_host(request) {
        return Screened::Refused(Refused {
            status: StatusCode::BAD_REQUEST,
            error,
            noted: None,
        });
    }
    let host = match allowed_host(request.headers(), policy, listen) {
        Ok(host) => host,
        Err(refused) => return Screened::Refused(refused),
    };
    let port = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .and_then(explicit_port);
    let mut own_origin = false;
    let cors = match request.headers().get(header::ORIGIN) {
        None => {
            own_origin = request
                .headers()
                .get(SEC_FETCH_SITE)
                .is_some_and(|v| v.as_bytes() == b"same-origin");
            None
        }
        Some(origin) => match origin_allowed(origin, (&host, port), policy) {
            OriginVerdict::SameOrigin => {
                own_origin = true;
                None
            }
            OriginVerdict::Listed(origin) => Some(origin),
            OriginVerdict::Refused(shown) => {
                return Screened::Refused(Refused {
                    status: StatusCode::FORBIDDEN,
                    error: refuse::origin_refused(&shown),
                    noted: Some(("origin", shown, "gateway.security.allowedOrigins")),
                });
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
        return Screened::Preflight(response);
    }
    Screened::Pass { cors, own_origin }
}

/// A passed request's response, for a listed origin: allowed, with the
/// headers a client reads exposed.
pub fn expose(response: &mut Response, cors: Option<&HeaderValue>) {
    if let Some(origin) = cors {
        let headers = response.headers_mut();
        allow(headers, origin);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
    }
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

/// Why a request names its host ambiguously (`400`), if it does: more
/// than one `Host` header, or an absolute-form target (`GET
/// http://name/path`, which HTTP/1.1 says wins over `Host`) naming
/// another host or port than its `Host`.
fn ambiguous_host<B>(request: &Request<B>) -> Option<ApiError> {
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
/// to it; else the `421` refusal.
fn allowed_host(
    headers: &HeaderMap,
    policy: &BrowserPolicy,
    listen: SocketAddr,
) -> Result<String, Refused> {
    let misdirected = |error| Refused {
        status: StatusCode::MISDIRECTED_REQUEST,
        error,
        noted: None,
    };
    let Some(raw) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return Err(misdirected(refuse::host_missing()));
    };
    let Some(host) = host_name(raw) else {
        return Err(misdirected(refuse::host_malformed()));
    };
    if host_allowed(&host, policy, listen) {
        Ok(host)
    } else {
        let shown: String = host.chars().take(64).collect();
        Err(Refused {
            status: StatusCode::MISDIRECTED_REQUEST,
            error: refuse::host_refused(&shown),
            noted: Some(("host", shown, "gateway.security.allowedHosts")),
        })
    }
}
