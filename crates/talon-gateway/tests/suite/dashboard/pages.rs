//! The dashboard's page on every view's path, under its policy; its
//! embedded assets, immutable; and both, with sign-in and calls, under a
//! base path (`gateway.controlUi.basePath`) as well as at the root.

use serde_json::json;

use super::super::{Options, TestGateway};
use super::{code_of, origin};

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

#[tokio::test]
async fn the_page_answers_every_view_under_its_policy_and_assets_are_immutable() {
    let g = TestGateway::start().await;
    for path in [
        "/",
        "/login",
        "/inbox",
        "/approve/apr_1",
        "/runs/run_1",
        "/sessions/s_1",
        "/usage",
        "/health",
    ] {
        let page = g
            .client
            .get(g.url(path))
            .header("accept", "text/html")
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200, "{path}");
        assert_eq!(page.headers()["content-security-policy"], POLICY, "{path}");
        assert_eq!(page.headers()["referrer-policy"], "no-referrer");
        let body = page.text().await.unwrap();
        assert!(body.contains("<html lang=\"en\""), "{body}");
        assert!(
            !body.contains("<style") && !body.contains(" style="),
            "{body}"
        );
    }
    let page = g
        .client
        .get(g.url("/"))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    let body = page.text().await.unwrap();
    let linked: Vec<String> = body
        .split("/assets/")
        .skip(1)
        .map(|rest| rest.chars().take_while(|c| *c != '"').collect())
        .collect();
    assert!(!linked.is_empty(), "{body}");
    for name in linked {
        let asset = g
            .client
            .get(g.url(&format!("/assets/{name}")))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(asset.status(), 200, "{name}");
        assert_eq!(
            asset.headers()["cache-control"],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(asset.headers()["x-content-type-options"], "nosniff");
    }
    // Neither the page itself nor anything else by an asset's path.
    for missing in [
        "/assets/index.html",
        "/assets/files.rs",
        "/assets/..%2Ffiles.rs",
        "/assets/nope.js",
    ] {
        let status = g.client.get(g.url(missing)).send().await.unwrap().status();
        assert_eq!(status, 404, "{missing}");
    }
}

#[tokio::test]
async fn under_a_base_path_the_gateway_answers_there_and_at_the_root() {
    let g = TestGateway::start_opts(Options {
        base_path: "/ops/talon".into(),
        ..Options::default()
    })
    .await;
    let link = g.running.login_link().await.unwrap().unwrap();
    assert!(
        link.starts_with(&format!("{}/ops/talon/login#code=lgn_", origin(&g))),
        "{link}"
    );
    for path in ["/ops/talon", "/ops/talon/", "/ops/talon/runs/run_1", "/"] {
        let page = g
            .client
            .get(g.url(path))
            .header("accept", "text/html")
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200, "{path}");
        let body = page.text().await.unwrap();
        assert!(
            body.contains(r#"<meta name="talon-base" content="/ops/talon">"#),
            "{body}"
        );
        let asset: String = body
            .split("\"/ops/talon/assets/")
            .nth(1)
            .unwrap()
            .chars()
            .take_while(|c| *c != '"')
            .collect();
        for prefix in ["/ops/talon", ""] {
            let status = g
                .client
                .get(g.url(&format!("{prefix}/assets/{asset}")))
                .send()
                .await
                .unwrap()
                .status();
            assert_eq!(status, 200, "{prefix}/assets/{asset}");
        }
    }
    // Signing in and calling, under the prefix and at the root alike.
    let code = code_of(&link);
    let response = g
        .client
        .post(g.url("/ops/talon/v1/dashboard/login"))
        .header("origin", origin(&g))
        .json(&json!({"code": code}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    for path in ["/ops/talon/v1/agents.list", "/v1/agents.list"] {
        let response = g
            .client
            .post(g.url(path))
            .bearer_auth(&g.admin)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    // A path that merely starts with the prefix's letters is not under it.
    let status = g
        .client
        .get(g.url("/ops/talonx/assets/a.js"))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 404);
}
