//! The router, on top of everything it routes to: each HTTP route to its
//! handler (the method table's `POST /v1/<method>`, the streams, the
//! WebSocket, artifacts' bytes, health, the OpenAPI document, metrics, the
//! reference pages and the OpenAI-compatible surface), every route behind
//! the Host, Origin and CORS guard ([`crate::auth::guard`]) and, before it,
//! the request id and access log ([`crate::observe::access`]). Nothing
//! imports it but the crate's root.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::Uri;
use axum::routing::{get, post};
use talon_wire::paths;

use crate::openai::{chat, models, not_allowed, responses};
use crate::state::Shared;
use crate::transport::{content, dashboard, docs, http, login, stream, ws};

/// `router`, answering under `base` (`gateway.controlUi.basePath`) as
/// well as at `/`: a request under the prefix is routed as the path after
/// it, so a reverse proxy may pass the prefix on or strip it.
pub(crate) fn under(base: &str, router: Router) -> Router {
    if base.is_empty() {
        return router;
    }
    let base: Arc<str> = Arc::from(base);
    Router::new()
        .fallback_service(router)
        .layer(axum::middleware::map_request(move |request: Request| {
            let base = base.clone();
            async move { strip(&base, request) }
        }))
}

/// `request` with `base` taken off its path, when its path is under it.
fn strip(base: &str, mut request: Request) -> Request {
    let rest = match request.uri().path().strip_prefix(base) {
        Some("") => "/",
        Some(rest) if rest.starts_with('/') => rest,
        _ => return request,
    };
    let mut target = rest.to_owned();
    if let Some(query) = request.uri().query() {
        target.push('?');
        target.push_str(query);
    }
    let mut parts = request.uri().clone().into_parts();
    if let Ok(target) = target.parse() {
        parts.path_and_query = Some(target);
        if let Ok(uri) = Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
    request
}

/// The router.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(paths::HEALTHZ, get(http::healthz).fallback(only_get))
        .route("/v1/openapi.json", get(http::openapi).fallback(only_get))
        .route(
            "/metrics",
            get(crate::observe::scrape::serve).fallback(only_get),
        )
        .route(paths::METHOD, post(http::call).fallback(only_post))
        .route(paths::EVENTS, get(stream::all_events).fallback(only_get))
        .route(paths::WS, get(ws::upgrade).fallback(only_get))
        .route(
            paths::RUN_EVENTS,
            get(stream::run_events).fallback(only_get),
        )
        .route(
            paths::ARTIFACT_CONTENT,
            get(content::artifact_content).fallback(only_get),
        )
        .merge(reference())
        .merge(dashboard())
        .merge(openai())
        .fallback(talon_wire::no_route)
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            crate::auth::guard::guard,
        ))
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            crate::observe::access::layer,
        ))
        .with_state(shared)
}

/// The dashboard: its page on each of its views' paths, its assets, and
/// its sign-in (no auth but the sign-in's own).
fn dashboard() -> Router<Arc<Shared>> {
    let mut router = Router::new()
        .route("/assets/{name}", get(dashboard::asset).fallback(only_get))
        .route(
            "/v1/dashboard/login",
            post(login::login).fallback(only_post),
        )
        .route(
            "/v1/dashboard/session",
            get(login::session).fallback(only_get),
        )
        .route(
            "/v1/dashboard/logout",
            post(login::logout).fallback(only_post),
        );
    for path in dashboard::APP_PATHS {
        router = router.route(path, get(dashboard::app_page).fallback(only_get));
    }
    router
}

/// The reference for a person: `GET /` and `GET /docs` (no auth).
fn reference() -> Router<Arc<Shared>> {
    Router::new()
        .route("/", get(docs::index).fallback(only_get))
        .route("/docs", get(docs::docs).fallback(only_get))
        .route(
            "/docs/redoc.standalone.js",
            get(docs::redoc).fallback(only_get),
        )
}

/// The OpenAI-compatible surface's routes.
fn openai() -> Router<Arc<Shared>> {
    Router::new()
        .route("/v1/models", get(models::list).fallback(not_allowed))
        .route(
            "/v1/models/{*model}",
            get(models::get).fallback(not_allowed),
        )
        .route(
            "/v1/chat/completions",
            post(chat::create).fallback(not_allowed),
        )
        .route(
            "/v1/responses",
            post(responses::create).fallback(not_allowed),
        )
        .route(
            "/v1/responses/{id}",
            get(responses::retrieve).fallback(not_allowed),
        )
        .route(
            "/v1/responses/{id}/cancel",
            post(responses::cancel).fallback(not_allowed),
        )
}

async fn only_post() -> axum::response::Response {
    talon_wire::method_not_allowed("POST")
}

async fn only_get() -> axum::response::Response {
    talon_wire::method_not_allowed("GET")
}
