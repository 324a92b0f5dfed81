//! What a person reads: `GET /` (the dashboard, [`super::dashboard`], for
//! a browser; [`GatewayIndex`] as JSON for any other client) and `GET
//! /docs`, the API reference rendered in the browser from the served
//! `/v1/openapi.json` by Redoc, whose standalone bundle is vendored in
//! `assets/redoc/` (version, licence and hash there) and served at
//! `/docs/redoc.standalone.js`. Nothing is loaded from another host.
//!
//! None of these needs a token, like `/v1/openapi.json`: they show the
//! protocol, never a resource. The HTML pages carry a strict
//! Content-Security-Policy: scripts and connections only from the gateway
//! itself, no inline script, no frames, no forms; inline styles are
//! allowed because Redoc styles its components at run time, and `blob:`
//! workers because its search index runs in one.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use talon_protocol::openapi::GatewayIndex;

/// Redoc's standalone bundle (npm `redoc` 2.5.1).
const REDOC: &[u8] = include_bytes!("../../assets/redoc/redoc.standalone.js");

/// The SHA-256 of [`REDOC`], as `assets/redoc/README.md` and the npm
/// lockfile of `tests/openapi` pin it.
#[cfg(test)]
const REDOC_SHA256: &str = "2d8d13e94b5a21011cc6f8260d87ca475d0f6f2faed16dd12e7394dfa3bb05b8";

/// The policy of the HTML pages.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; \
     connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

const DOCS_PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Talon gateway API reference</title>
</head>
<body>
<redoc spec-url="/v1/openapi.json" hide-download-button="false"></redoc>
<noscript><p>The reference needs JavaScript; the document itself is <a href="/v1/openapi.json">/v1/openapi.json</a>.</p></noscript>
<script src="/docs/redoc.standalone.js"></script>
</body>
</html>
"#;

/// An HTML page with the policy.
fn page(body: &'static str) -> Response {
    html(axum::body::Body::from(body), CONTENT_SECURITY_POLICY)
}

/// An HTML page under `policy`, sniffing off, sending no referrer: every
/// page the gateway serves (this one's and the dashboard's).
pub(crate) fn html(body: axum::body::Body, policy: &'static str) -> Response {
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(policy),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// Whether the client asked for HTML (a browser's `Accept`).
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            item.split(';')
                .next()
                .is_some_and(|t| t.trim() == "text/html")
        })
}

/// `GET /`: the dashboard for a browser, [`GatewayIndex`] for a program.
pub(crate) async fn index(
    axum::extract::State(shared): axum::extract::State<std::sync::Arc<crate::state::Shared>>,
    headers: HeaderMap,
) -> Response {
    let mut response = if wants_html(&headers) {
        super::dashboard::page(&shared.page)
    } else {
        axum::Json(GatewayIndex::current()).into_response()
    };
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("accept"));
    response
}

/// `GET /docs`: the reference, rendered by Redoc.
pub(crate) async fn docs() -> Response {
    page(DOCS_PAGE)
}

/// `GET /docs/redoc.standalone.js`: the vendored bundle.
pub(crate) async fn redoc() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        REDOC,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;

    #[test]
    fn the_vendored_redoc_is_the_pinned_one() {
        let digest = hex::encode(Sha256::digest(REDOC));
        assert_eq!(digest, REDOC_SHA256);
        let readme = include_str!("../../assets/redoc/README.md");
        assert!(readme.contains(REDOC_SHA256));
    }

    #[test]
    fn html_is_for_clients_that_ask_for_it() {
        let accept = |v: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_static(v));
            wants_html(&headers)
        };
        assert!(accept("text/html,application/xhtml+xml,*/*;q=0.8"));
        assert!(accept("application/json, text/html;q=0.5"));
        assert!(!accept("*/*"));
        assert!(!accept("application/json"));
        assert!(!accept("text/htmlx"));
        assert!(!wants_html(&HeaderMap::new()));
    }
}
