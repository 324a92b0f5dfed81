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
//!   headers, and streams take a ticket ([`crate::tokens`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use talon_protocol::gateway::{ApiError, refuse};

use crate::http::Shared;

/// What browsers and the names the gateway answers to may do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrowserPolicy {
    /// Host names, beyond loopback and the listen address, the gateway
    /// answers to: exact (`talon.example.com`) or `*.example.com` (any
    /// subdomain, not the name itself). Compared without the port.
    pub allowed_hosts: Vec<String>,
    /// Origins (`https://app.example.com`, scheme, host and port as the
    /// browser sends them) allowed to call the gateway from a page: their
    /// CORS preflights are answered and their WebSockets accepted.
    pub allowed_origins: Vec<String>,
}

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

/// A Host header's name: lower case, no port, no trailing dot; IPv6
/// literals without their brackets. `None` when malformed.
pub(crate) fn host_name(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > 255 {
        return None;
    }
    let name = if let Some(rest) = raw.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        inside.parse::<std::net::Ipv6Addr>().ok()?;
        inside
    } else {
        match raw.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return None,
            None => raw,
        }
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'_'));
    valid.then_some(name)
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit())
}

fn host_allowed(host: &str, policy: &BrowserPolicy, listen: SocketAddr) -> bool {
    if host == "localhost" {
        return true;
    }
    if let Ok(ip) = host.parse::<IpAddr>()
        && (ip.is_loopback() || (!listen.ip().is_unspecified() && ip == listen.ip()))
    {
        return true;
    }
    policy.allowed_hosts.iter().any(|allowed| {
        let allowed = allowed.trim_end_matches('.').to_ascii_lowercase();
        match allowed.strip_prefix("*.") {
            Some(suffix) => host
                .strip_suffix(suffix)
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            None => host == allowed,
        }
    })
}

enum OriginVerdict {
    /// The gateway's own origin (a page it serves).
    SameOrigin,
    /// A configured origin: CORS applies.
    Listed(HeaderValue),
    /// Any other (shown, cut short).
    Refused(String),
}

/// The port an authority (`name:port`, `[v6]:port`) names, if it names
/// one.
fn explicit_port(authority: &str) -> Option<u16> {
    let authority = authority.trim();
    let tail = match authority.strip_prefix('[') {
        Some(rest) => rest.split_once(']')?.1.strip_prefix(':')?,
        None => authority.rsplit_once(':')?.1,
    };
    tail.parse().ok()
}

/// Whether `origin` is listed, or is the page the request's `host` (its
/// name and explicit port) serves: same name, and the same port, a port
/// left out being the origin scheme's default (so a TLS proxy's
/// `https://name` matches `Host: name`).
fn origin_allowed(
    origin: &HeaderValue,
    (host, port): (&str, Option<u16>),
    policy: &BrowserPolicy,
) -> OriginVerdict {
    let text = origin.to_str().unwrap_or("").trim();
    let shown = || text.chars().take(100).collect::<String>();
    if policy
        .allowed_origins
        .iter()
        .any(|allowed| allowed.trim_end_matches('/').eq_ignore_ascii_case(text))
    {
        return OriginVerdict::Listed(origin.clone());
    }
    // `scheme://authority`, the authority naming this gateway's host.
    let same = text
        .split_once("://")
        .and_then(|(scheme, authority)| {
            let default = match scheme {
                "http" => 80,
                "https" => 443,
                _ => return None,
            };
            let name = host_name(authority)?;
            let ports_agree =
                explicit_port(authority).unwrap_or(default) == port.unwrap_or(default);
            Some(name == host && ports_agree)
        })
        .unwrap_or(false);
    if same {
        OriginVerdict::SameOrigin
    } else {
        OriginVerdict::Refused(shown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 7420))
    }

    #[test]
    fn host_names_parse_as_browsers_send_them() {
        assert_eq!(host_name("LocalHost:7420").as_deref(), Some("localhost"));
        assert_eq!(host_name("[::1]:7420").as_deref(), Some("::1"));
        assert_eq!(host_name("example.com.").as_deref(), Some("example.com"));
        for bad in ["", "a b", "x:y", "[::1", "[zz]:1", "host:123456", "é.com"] {
            assert_eq!(host_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn loopback_the_listen_address_and_listed_names_are_served() {
        let policy = BrowserPolicy {
            allowed_hosts: vec!["talon.example.com".into(), "*.corp.example".into()],
            allowed_origins: Vec::new(),
        };
        let lan = SocketAddr::from(([10, 0, 0, 5], 7420));
        for (host, listen, ok) in [
            ("localhost", listen(), true),
            ("127.9.9.9", listen(), true),
            ("::1", listen(), true),
            ("10.0.0.5", lan, true),
            ("10.0.0.6", lan, false),
            ("10.0.0.5", SocketAddr::from(([0, 0, 0, 0], 7420)), false),
            ("talon.example.com", listen(), true),
            ("a.corp.example", listen(), true),
            ("corp.example", listen(), false),
            ("evilcorp.example", listen(), false),
            ("rebind.attacker.test", listen(), false),
            ("localhost.attacker.test", listen(), false),
        ] {
            assert_eq!(host_allowed(host, &policy, listen), ok, "{host}");
        }
    }

    #[test]
    fn origins_are_the_gateways_own_or_listed() {
        let policy = BrowserPolicy {
            allowed_hosts: Vec::new(),
            allowed_origins: vec!["https://app.example.com".into()],
        };
        let verdict = |origin: &str| match origin_allowed(
            &HeaderValue::from_str(origin).unwrap(),
            ("127.0.0.1", Some(7420)),
            &policy,
        ) {
            OriginVerdict::SameOrigin => "same",
            OriginVerdict::Listed(_) => "listed",
            OriginVerdict::Refused(_) => "refused",
        };
        assert_eq!(verdict("http://127.0.0.1:7420"), "same");
        assert_eq!(verdict("https://app.example.com"), "listed");
        assert_eq!(verdict("https://app.example.com.evil.test"), "refused");
        assert_eq!(verdict("null"), "refused");
        assert_eq!(verdict("file://127.0.0.1"), "refused");
        assert_eq!(verdict("http://localhost:7420"), "refused");
        // Another port of the same host is another origin.
        assert_eq!(verdict("http://127.0.0.1:8080"), "refused");
        assert_eq!(verdict("http://127.0.0.1"), "refused");
        assert_eq!(explicit_port("[::1]:7420"), Some(7420));
        assert_eq!(explicit_port("talon.example.com"), None);
    }
}
