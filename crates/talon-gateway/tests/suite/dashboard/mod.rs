//! The dashboard on the gateway: its sign-in (a link that works once from
//! the gateway's own page, a cookie believed from that origin only, HTTP
//! and the WebSocket; sign-out that revokes the sign-in and never a bearer
//! token; the observer preset; hostile sign-in bodies) here, its page and
//! assets, at the root and under a base path, in [`pages`].

mod pages;

use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use talon_gateway::browser;
use talon_protocol::gateway::ScopePreset;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use super::TestGateway;

/// The gateway's own origin, as its page's requests carry it.
pub(super) fn origin(g: &TestGateway) -> String {
    format!("http://{}", g.running.addr)
}

/// The code in a link's fragment.
pub(super) fn code_of(link: &str) -> String {
    let (_, fragment) = link.split_once("#code=").unwrap();
    fragment.split('&').next().unwrap().to_owned()
}

/// A fresh admin sign-in link's code.
async fn admin_code(g: &TestGateway) -> String {
    let link = g.running.login_link().await.unwrap().unwrap();
    assert!(
        link.starts_with(&format!("{}/login#code=lgn_", origin(g))),
        "{link}"
    );
    code_of(&link)
}

/// A code for `preset`, under the root admin.
async fn code_for(g: &TestGateway, preset: ScopePreset) -> String {
    let store = &g.running.store;
    let admin = browser::root_admin(store, store.now_ms())
        .await
        .unwrap()
        .unwrap();
    browser::mint_login(
        store,
        preset.scopes().to_vec(),
        Some(&admin),
        store.now_ms(),
    )
    .await
    .unwrap()
    .code
}

/// `POST /v1/dashboard/login` from the gateway's own page (or with
/// `origin`): the status, the body, and the `Set-Cookie`.
async fn login_from(g: &TestGateway, code: &str, origin: Option<&str>) -> (u16, Value, String) {
    let mut request = g
        .client
        .post(g.url("/v1/dashboard/login"))
        .json(&json!({"code": code}));
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let cookie = response
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, response.json().await.unwrap(), cookie)
}

/// Signs in with `code`: the cookie's `name=value`.
async fn sign_in(g: &TestGateway, code: &str) -> String {
    let (status, body, cookie) = login_from(g, code, Some(&origin(g))).await;
    assert_eq!(status, 200, "{body}");
    cookie.split(';').next().unwrap().to_owned()
}

/// A method called as the dashboard's page calls it: the cookie and the
/// page's `Origin`.
async fn page_call(g: &TestGateway, cookie: &str, method: &str, params: Value) -> (u16, Value) {
    let response = g
        .client
        .post(g.url(&format!("/v1/{method}")))
        .header("cookie", cookie)
        .header("origin", origin(g))
        .json(&params)
        .send()
        .await
        .unwrap();
    (
        response.status().as_u16(),
        response.json().await.unwrap_or(Value::Null),
    )
}

fn reason(body: &Value) -> Value {
    json!([body["error"]["code"], body["error"]["details"]["reason"]])
}

#[tokio::test]
async fn a_link_signs_in_once_and_its_cookie_is_a_scoped_credential() {
    let g = TestGateway::start().await;
    let code = admin_code(&g).await;
    // The code is no bearer token.
    let (status, body) = g.call(&code, "agents.list", json!({})).await;
    assert_eq!(
        (status, reason(&body)),
        (401, json!(["unauthenticated", "malformed"]))
    );
    let (status, body, set_cookie) = login_from(&g, &code, Some(&origin(&g))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["scopes"], json!(["admin"]));
    let expires_in = body["expiresAt"].as_u64().unwrap() - g.running.store.now_ms();
    assert!(
        (43_190_000..=43_200_000).contains(&expires_in),
        "{expires_in}"
    );
    let attributes: Vec<&str> = set_cookie.split("; ").skip(1).collect();
    assert_eq!(
        attributes,
        ["Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=43200"]
    );
    assert!(
        set_cookie.starts_with("talon_dashboard=talon_"),
        "{set_cookie}"
    );
    // Once.
    let (status, again, _) = login_from(&g, &code, Some(&origin(&g))).await;
    assert_eq!(
        (status, reason(&again)),
        (401, json!(["unauthenticated", "login"]))
    );
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    let (status, _) = page_call(&g, &cookie, "agents.list", json!({})).await;
    assert_eq!(status, 200);
    // Listed as a token an admin can see and revoke, the code beside it used.
    let (_, tokens) = g
        .call(&g.admin, "tokens.list", json!({"includeRevoked": true}))
        .await;
    let mut names: Vec<(String, bool)> = tokens["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["revokedAt"].is_null(),
            )
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("admin".to_owned(), true),
            ("dashboard".to_owned(), true),
            ("dashboard login".to_owned(), false)
        ]
    );
}

#[tokio::test]
async fn the_cookie_is_believed_from_the_gateways_own_origin_only() {
    let g = TestGateway::start().await;
    let cookie = sign_in(&g, &admin_code(&g).await).await;
    let session = |site: Option<&'static str>, origin: Option<String>| {
        let mut request = g
            .client
            .get(g.url("/v1/dashboard/session"))
            .header("cookie", cookie.clone());
        if let Some(site) = site {
            request = request.header("sec-fetch-site", site);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = session(Some("same-origin"), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["scopes"], json!(["admin"]));
    assert_eq!(session(None, Some(origin(&g))).await.0, 200);
    // Another port of the same host is same-site: its cookie goes, its
    // Origin does not pass.
    let (status, body) = session(Some("same-site"), Some("http://127.0.0.1:1".into())).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (403, json!("forbidden"))
    );
    // No Origin and no same-origin fetch metadata: a link from elsewhere,
    // or a program; the cookie is not believed.
    for site in [Some("same-site"), Some("cross-site"), Some("none"), None] {
        let (status, body) = session(site, None).await;
        assert_eq!(
            (status, reason(&body)),
            (401, json!(["unauthenticated", "missing"])),
            "{site:?}"
        );
    }
    // A method call with the cookie and no Origin is no one's.
    let response = g
        .client
        .post(g.url("/v1/agents.list"))
        .header("cookie", cookie.clone())
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    // A bearer token wins over the cookie.
    let viewer = g
        .call(
            &g.admin,
            "tokens.create",
            json!({"name": "v", "preset": "viewer", "expiresInMs": 60_000}),
        )
        .await
        .1["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let response = g
        .client
        .post(g.url("/v1/tokens.list"))
        .header("cookie", cookie.clone())
        .header("origin", origin(&g))
        .bearer_auth(&viewer)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn signing_in_takes_the_own_page_and_a_live_unexpired_link() {
    let g = TestGateway::start().await;
    let code = admin_code(&g).await;
    for foreign in [None, Some("http://127.0.0.1:1"), Some("null")] {
        let (status, body, cookie) = login_from(&g, &code, foreign).await;
        assert_eq!(status, 403, "{foreign:?}: {body}");
        assert_eq!(cookie, "");
    }
    // Refused attempts did not use the code.
    sign_in(&g, &code).await;
    // Fifteen minutes.
    let late = admin_code(&g).await;
    g.time.advance(Duration::from_secs(15 * 60 + 1));
    let (status, body, _) = login_from(&g, &late, Some(&origin(&g))).await;
    assert_eq!(
        (status, reason(&body)),
        (401, json!(["unauthenticated", "login"]))
    );
    // Malformed and unknown codes, alike.
    for bad in [
        "".to_owned(),
        "lgn_".to_owned(),
        format!("lgn_{}", "0".repeat(64)),
        format!("talon_{}", "0".repeat(64)),
        format!("lgn_{}", "z".repeat(64)),
        format!("lgn_{}", "0".repeat(100_000)),
    ] {
        let (status, body, _) = login_from(&g, &bad, Some(&origin(&g))).await;
        assert_eq!(
            (status, reason(&body)),
            (401, json!(["unauthenticated", "login"]))
        );
    }
}

#[tokio::test]
async fn revoking_the_admin_ends_its_links_and_sign_ins() {
    let g = TestGateway::start().await;
    let cookie = sign_in(&g, &admin_code(&g).await).await;
    let unused = admin_code(&g).await;
    let admin_id = browser::root_admin(&g.running.store, g.running.store.now_ms())
        .await
        .unwrap()
        .unwrap()
        .id;
    let (status, _) = g
        .call(&g.admin, "tokens.revoke", json!({"tokenId": admin_id}))
        .await;
    assert_eq!(status, 200);
    let (status, body) = page_call(&g, &cookie, "agents.list", json!({})).await;
    assert_eq!(
        (status, reason(&body)),
        (401, json!(["unauthenticated", "revoked"]))
    );
    let (status, _, _) = login_from(&g, &unused, Some(&origin(&g))).await;
    assert_eq!(status, 401);
    // No root admin: no link.
    assert_eq!(g.running.login_link().await.unwrap(), None);
}

#[tokio::test]
async fn signing_out_revokes_the_sign_in_and_never_a_bearer_token() {
    let g = TestGateway::start().await;
    let cookie = sign_in(&g, &admin_code(&g).await).await;
    let logout = |cookie: String| {
        let request = g
            .client
            .post(g.url("/v1/dashboard/logout"))
            .header("cookie", cookie)
            .header("origin", origin(&g));
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.headers()["set-cookie"]
                    .to_str()
                    .unwrap()
                    .to_owned(),
            )
        }
    };
    assert_eq!(
        logout(cookie.clone()).await,
        (
            204,
            "talon_dashboard=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0".to_owned()
        )
    );
    let (status, body) = page_call(&g, &cookie, "agents.list", json!({})).await;
    assert_eq!(
        (status, reason(&body)),
        (401, json!(["unauthenticated", "revoked"]))
    );
    // The admin's secret put in the cookie by hand: signed out of, not revoked.
    assert_eq!(logout(format!("talon_dashboard={}", g.admin)).await.0, 204);
    assert_eq!(g.call(&g.admin, "agents.list", json!({})).await.0, 200);
    // From another origin, nothing happens.
    let response = g
        .client
        .post(g.url("/v1/dashboard/logout"))
        .header("cookie", format!("talon_dashboard={}", g.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn the_observer_reads_and_acts_on_nothing() {
    let g = TestGateway::start().await;
    let cookie = sign_in(&g, &code_for(&g, ScopePreset::Observer).await).await;
    assert_eq!(page_call(&g, &cookie, "runs.list", json!({})).await.0, 200);
    let (status, body) = page_call(
        &g,
        &cookie,
        "runs.create",
        json!({"agentId": "main", "input": "hi"}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (403, json!("forbidden"))
    );
    let metrics = g
        .client
        .get(g.url("/metrics"))
        .header("cookie", cookie.clone())
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
}

#[tokio::test]
async fn the_socket_of_a_signed_in_page_authenticates_with_its_cookie() {
    let g = TestGateway::start().await;
    let cookie = sign_in(&g, &admin_code(&g).await).await;
    let open = |origin: String| {
        let mut request = format!("ws://{}/v1/ws", g.running.addr)
            .into_client_request()
            .unwrap();
        request
            .headers_mut()
            .insert("cookie", cookie.parse().unwrap());
        request
            .headers_mut()
            .insert("origin", origin.parse().unwrap());
        tokio_tungstenite::connect_async(request)
    };
    let (mut socket, _) = open(origin(&g)).await.unwrap();
    socket
        .send(Message::Text(r#"{"type":"auth","token":""}"#.into()))
        .await
        .unwrap();
    assert_eq!(
        super::ws::next_frame(&mut socket).await,
        json!({"type": "authenticated"})
    );
    socket
        .send(Message::Text(
            json!({"type": "req", "id": 1, "method": "agents.list", "params": {}})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    let answer = super::ws::next_frame(&mut socket).await;
    assert_eq!(answer["ok"], json!(true), "{answer}");
    // From another origin the upgrade is refused before it.
    let refused = open("http://127.0.0.1:1".into()).await;
    assert!(refused.is_err());
    // Without the cookie an empty token is refused.
    let mut request = format!("ws://{}/v1/ws", g.running.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("origin", origin(&g).parse().unwrap());
    let (mut bare, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    bare.send(Message::Text(r#"{"type":"auth","token":""}"#.into()))
        .await
        .unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(10), bare.next())
        .await
        .unwrap();
    assert!(
        matches!(&closed, Some(Ok(Message::Close(Some(frame)))) if u16::from(frame.code) == 4003),
        "{closed:?}"
    );
}

#[tokio::test]
async fn hostile_sign_in_bodies_get_errors_and_floods_a_rate() {
    let g = TestGateway::start().await;
    let post = |body: Vec<u8>| {
        g.client
            .post(g.url("/v1/dashboard/login"))
            .header("origin", origin(&g))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (b"not json".to_vec(), 400),
        (deep.into_bytes(), 400),
        (br#"{"code": "x", "extra": 1}"#.to_vec(), 400),
        (br#"{"code": 7}"#.to_vec(), 400),
        (vec![b' '; 64 << 20], 400),
    ];
    for (body, expected) in cases {
        let len = body.len();
        let response = post(body).await.unwrap();
        assert_eq!(response.status(), expected, "{len}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], json!("invalid_request"), "{error}");
    }
    // Guesses share one bucket: a flood is refused by rate, not served.
    let mut statuses = Vec::new();
    for _ in 0..400 {
        let body = json!({"code": format!("lgn_{}", "1".repeat(64))}).to_string();
        statuses.push(post(body.into_bytes()).await.unwrap().status().as_u16());
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
}
