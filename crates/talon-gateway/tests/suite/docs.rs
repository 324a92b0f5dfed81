//! `/` and `/docs` for a person: no token, a strict Content-Security-Policy,
//! the reference rendered by the vendored Redoc in a real headless
//! Chromium from the served schema.

use std::process::Command;

use serde_json::{Value, json};

use super::TestGateway;

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src blob:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[tokio::test]
async fn the_index_answers_json_clients_and_browsers_without_a_token() {
    let g = TestGateway::start().await;
    let json_index = g.client.get(g.url("/")).send().await.unwrap();
    assert_eq!(json_index.status(), 200);
    assert_eq!(json_index.headers()["vary"], "accept");
    assert_eq!(
        json_index.json::<Value>().await.unwrap(),
        json!({"name": "talon-gateway", "version": "1", "docs": "/docs",
               "openapi": "/v1/openapi.json", "health": "/healthz"})
    );
    let page = g
        .client
        .get(g.url("/"))
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    // A browser gets the dashboard (`dashboard.rs` checks its policy).
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .starts_with("default-src 'none'; script-src 'self'; style-src 'self';")
    );
    let body = page.text().await.unwrap();
    assert!(body.contains("/assets/"), "{body}");
    // A POST to the page is the usual 405.
    let post = g.client.post(g.url("/docs")).send().await.unwrap();
    assert_eq!(
        (
            post.status().as_u16(),
            post.headers()["allow"].to_str().unwrap()
        ),
        (405, "GET")
    );
}

#[tokio::test]
async fn the_docs_page_and_its_bundle_are_served_from_the_gateway() {
    let g = TestGateway::start().await;
    let page = g.client.get(g.url("/docs")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-security-policy"], POLICY);
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let body = page.text().await.unwrap();
    assert!(
        body.contains(r#"<redoc spec-url="/v1/openapi.json""#),
        "{body}"
    );
    assert!(
        !body.contains("http://") && !body.contains("https://"),
        "{body}"
    );
    let bundle = g
        .client
        .get(g.url("/docs/redoc.standalone.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(bundle.status(), 200);
    assert_eq!(
        bundle.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let bytes = bundle.bytes().await.unwrap();
    let vendored = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/redoc/redoc.standalone.js"),
    )
    .unwrap();
    assert!(
        bytes == vendored,
        "the served bundle is not the vendored one"
    );
}

/// Debian's Chromium, headless, on a fresh profile: the DOM once the page
/// has run for `budget_ms` of virtual time.
fn rendered_dom(url: &str, budget_ms: u32) -> String {
    let profile = tempfile::tempdir().unwrap();
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", profile.path().display()),
            &format!("--virtual-time-budget={budget_ms}"),
            "--dump-dom",
            url,
        ])
        .output()
        .expect("Debian's chromium (scripts/setup.sh installs it)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
async fn chromium_renders_the_reference_from_the_served_schema() {
    let g = TestGateway::start().await;
    let url = g.url("/docs");
    let dom = tokio::task::spawn_blocking(move || rendered_dom(&url, 20_000))
        .await
        .unwrap();
    // Redoc fetched the document under the policy and rendered every
    // operation: the method names are the schema's own.
    let doc = talon_protocol::openapi::openapi();
    assert!(dom.contains("Talon gateway"), "{dom}");
    for path in [
        "/v1/runs.create",
        "/v1/runs.wait",
        "/v1/runs.events",
        "/v1/tokens.ticket",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path}");
        assert!(dom.contains(path), "{path} is not on the page");
    }
    for summary in ["Starts a run.", "Waits for a run to end"] {
        assert!(dom.contains(summary), "{summary:?} is not on the page");
    }
    assert!(!dom.contains("Something went wrong"), "{dom}");
}
