//! The dashboard a person opens on the gateway: its page and its assets,
//! embedded at build from `assets/dashboard/` (written, with the
//! `files.rs` list included here, by `sdk/typescript/scripts/build-dashboard.mjs`
//! from `sdk/typescript/packages/dashboard`; a drift check in that build
//! keeps them equal to their sources). Nothing is loaded from another
//! host and no Node runs here.
//!
//! - The page (`index.html`) answers `GET /` for a browser (a program
//!   still gets [`super::docs`]' JSON index) and every path of the app
//!   ([`APP_PATHS`]), so a link into a view, or a reload, opens it. It
//!   carries no credential and needs none: what it shows, it reads with
//!   the sign-in cookie ([`crate::auth::browser`]).
//! - An asset is `GET /assets/{name}`, its name holding its content's
//!   hash, so it is cached for a year as immutable; gzipped once, on its
//!   first request, for a client that accepts it.
//! - Every page is served under [`CONTENT_SECURITY_POLICY`]: script, style
//!   and connections from the gateway only, no inline script or style, no
//!   frames; plus `nosniff` and `no-referrer`.

use std::io::Write as _;
use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::state::Shared;

include!("../../assets/dashboard/files.rs");

/// The page's policy: nothing inline, nothing from elsewhere.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// The paths of the app's views the page answers (`{id}` is one segment).
pub(crate) const APP_PATHS: &[&str] = &[
    "/login",
    "/inbox",
    talon_protocol::gateway::APPROVAL_PAGE,
    "/runs/{id}",
    "/sessions",
    "/sessions/{id}",
    "/tasks",
    "/agents",
    "/environments",
    "/usage",
    "/health",
];

/// One embedded file, and its gzip made on first use.
fn file(name: &str) -> Option<(usize, &'static str, &'static [u8])> {
    FILES
        .iter()
        .enumerate()
        .find(|(_, (n, _, _))| *n == name)
        .map(|(i, (_, kind, bytes))| (i, *kind, *bytes))
}

/// The gzip of file `index` (empty when it does not pay).
fn gzipped(index: usize, bytes: &'static [u8]) -> &'static [u8] {
    static GZIPPED: OnceLock<Vec<OnceLock<Vec<u8>>>> = OnceLock::new();
    let all = GZIPPED.get_or_init(|| FILES.iter().map(|_| OnceLock::new()).collect());
    let Some(slot) = all.get(index) else {
        return &[];
    };
    slot.get_or_init(|| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let done = encoder.write_all(bytes).and_then(|()| encoder.finish());
        match done {
            Ok(gz) if gz.len() < bytes.len() => gz,
            _ => Vec::new(),
        }
    })
}

/// Whether the client takes gzip.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            parts.next().is_some_and(|c| c.trim() == "gzip")
                && parts.all(|p| p.trim().replace(' ', "") != "q=0")
        })
}

/// The page as this gateway serves it: the built `index.html` with the
/// base path before every asset it loads and in `<meta
/// name="talon-base">`, where the page reads it (for its links, its calls
/// and its assets). A base path holds no character HTML would read.
#[derive(Debug, Clone)]
pub(crate) struct Page(Bytes);

impl Page {
    /// The page for `base` (`""` or `/prefix`).
    pub(crate) fn render(base: &str) -> Self {
        let built = file("index.html").map_or(&[][..], |(_, _, bytes)| bytes);
        let text = String::from_utf8_lossy(built)
            .replace("\"/assets/", &format!("\"{base}/assets/"))
            .replacen(
                "<title>",
                &format!("<meta name=\"talon-base\" content=\"{base}\">\n<title>"),
                1,
            );
        Self(Bytes::from(text))
    }
}

/// The page, with its policy.
pub(crate) fn page(page: &Page) -> Response {
    let mut response = super::docs::html(page.0.clone().into(), CONTENT_SECURITY_POLICY);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `GET` of one of [`APP_PATHS`].
pub(crate) async fn app_page(State(shared): State<Arc<Shared>>) -> Response {
    page(&shared.page)
}

/// `GET /assets/{name}`.
pub(crate) async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    let found = file(&name).filter(|_| name != "index.html");
    let Some((index, kind, bytes)) = found else {
        return talon_wire::no_route().await.into_response();
    };
    let gz = if accepts_gzip(&headers) {
        gzipped(index, bytes)
    } else {
        &[]
    };
    let mut response = (
        [(header::CONTENT_TYPE, kind)],
        if gz.is_empty() { bytes } else { gz },
    )
        .into_response();
    let headers = response.headers_mut();
    if !gz.is_empty() {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_for_clients_that_take_it() {
        let accept = |v: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(v));
            accepts_gzip(&headers)
        };
        assert!(accept("gzip, deflate, br"));
        assert!(accept("br;q=1.0, gzip;q=0.8"));
        assert!(!accept("gzip;q=0"));
        assert!(!accept("br"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn the_page_loads_and_names_its_base_path() {
        let Page(root) = Page::render("");
        let Page(under) = Page::render("/ops/talon");
        let (root, under) = (
            std::str::from_utf8(&root).unwrap(),
            std::str::from_utf8(&under).unwrap(),
        );
        assert!(
            root.contains(r#"<meta name="talon-base" content="">"#),
            "{root}"
        );
        assert!(
            under.contains(r#"<meta name="talon-base" content="/ops/talon">"#),
            "{under}"
        );
        assert_eq!(
            root.matches("\"/assets/").count(),
            under.matches("\"/ops/talon/assets/").count()
        );
        assert!(!under.contains("\"/assets/"), "{under}");
    }

    #[test]
    fn the_page_and_every_asset_it_names_are_embedded() {
        let (_, kind, page) = file("index.html").unwrap();
        assert_eq!(kind, "text/html; charset=utf-8");
        let page = std::str::from_utf8(page).unwrap();
        assert!(!page.contains("<style"), "no inline style");
        for (name, _, _) in FILES.iter().filter(|(n, _, _)| *n != "index.html") {
            assert!(!name.contains('/'), "{name}");
        }
        for linked in page.split("/assets/").skip(1) {
            let name: String = linked.chars().take_while(|c| *c != '"').collect();
            assert!(file(&name).is_some(), "{name} is linked but not embedded");
        }
    }
}
