//! Browsers and the names the gateway answers to: the Host allow-list,
//! the Origin check, CORS, and stream tickets.

use std::time::Duration;

use reqwest::header::{HOST, ORIGIN};
use serde_json::{Value, json};
use talon_gateway::{BrowserPolicy, tokens};
use talon_protocol::gateway::Scope;
use talon_testing::redact::Redactor;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use super::super::{Options, TestGateway};

/// Every route, as `(method, path)`.
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/healthz"),
    ("GET", "/v1/openapi.json"),
    ("POST", "/v1/agents.list"),
    ("GET", "/v1/events"),
    ("GET", "/v1/runs/run_x/events"),
    ("GET", "/v1/artifacts/art_x/content"),
    ("GET", "/v1/ws"),
    ("GET", "/nowhere"),
];

async fn request(
    g: &TestGateway,
    method: &str,
    path: &str,
    headers: &[(reqwest::header::HeaderName, &str)],
) -> reqwest::Response {
    let mut builder = g
        .client
        .request(method.parse().unwrap(), g.url(path))
        .bearer_auth(&g.admin);
    if method == "POST" {
        builder = builder.json(&json!({}));
    }
    for (name, value) in headers {
        builder = builder.header(name, *value);
    }
    builder.send().await.unwrap()
}

/// The status and the error of a refused request.
async fn refused(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body["error"].clone())
}

async fn with_policy(browsers: BrowserPolicy) -> TestGateway {
    TestGateway::start_opts(Options {
        browsers,
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn a_foreign_host_is_misdirected_before_any_route() {
    let g = with_policy(BrowserPolicy {
        allowed_hosts: vec!["talon.example.com".into(), "*.corp.example".into()],
        allowed_origins: Vec::new(),
    })
    .await;
    let port = g.running.addr.port();
    // Per Host: the one answer every route gave.
    let mut seen = Vec::new();
    for host in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        "corp.example".into(),
        "talon.example.com.evil.net".into(),
        "xn--tlon-example".into(),
        "127.0.0.1.nip.io".into(),
        "".into(),
        "a".repeat(5_000),
    ] {
        let mut answers = Vec::new();
        for (method, path) in ROUTES {
            answers.push(refused(request(&g, method, path, &[(HOST, &host)]).await).await);
        }
        assert!(
            answers.iter().all(|a| *a == answers[0]),
            "Host {host:.40}: {answers:?}"
        );
        let (status, error) = &answers[0];
        // The port is the test's own.
        let shown = format!("{host:.40}").replace(&port.to_string(), "<port>");
        seen.push(json!({"host": shown, "status": status, "error": error}));
    }
    insta::assert_json_snapshot!("foreign_hosts", seen);
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "localhost".into(),
        "127.1.2.3".into(),
        format!("[::1]:{port}"),
        "talon.example.com".into(),
        "TALON.example.com:443".into(),
        "api.corp.example".into(),
    ] {
        let response = request(&g, "GET", "/healthz", &[(HOST, &host)]).await;
        assert_eq!(response.status(), 200, "Host {host}");
        let response = request(&g, "POST", "/v1/agents.list", &[(HOST, &host)]).await;
        assert_eq!(response.status(), 200, "Host {host}");
    }
}

#[tokio::test]
async fn a_foreign_origin_is_refused_and_cors_is_off_by_default() {
    let g = TestGateway::start().await;
    let own = format!("http://{}", g.running.addr);
    // Per Origin: the one answer every route gave, the gateway's own
    // address (its port the test's) as `<own>`.
    let mut redactor = Redactor::new().with(own.as_str(), "<own>");
    let mut seen = Vec::new();
    for origin in [
        "https://evil.example",
        "null",
        "http://127.0.0.1",
        "http://localhost:1",
        "file://",
        &format!("{own}.evil.example"),
    ] {
        let mut answers = Vec::new();
        for (method, path) in ROUTES {
            answers.push(refused(request(&g, method, path, &[(ORIGIN, origin)]).await).await);
        }
        assert!(
            answers.iter().all(|a| *a == answers[0]),
            "from {origin}: {answers:?}"
        );
        let (status, error) = &answers[0];
        seen.push(redactor.value(&json!({"origin": origin, "status": status, "error": error})));
        // A preflight gets no CORS grant either.
        let preflight = g
            .client
            .request(reqwest::Method::OPTIONS, g.url("/v1/agents.list"))
            .header(ORIGIN, origin)
            .header("access-control-request-method", "POST")
            .send()
            .await
            .unwrap();
        assert_eq!(preflight.status(), 403, "{origin}");
        assert!(
            preflight
                .headers()
                .get("access-control-allow-origin")
                .is_none()
        );
        // Nor does a WebSocket upgrade.
        let mut upgrade = format!("ws://{}/v1/ws", g.running.addr)
            .into_client_request()
            .unwrap();
        upgrade.headers_mut().insert(
            "authorization",
            format!("Bearer {}", g.admin).parse().unwrap(),
        );
        upgrade
            .headers_mut()
            .insert("origin", origin.parse().unwrap());
        match tokio_tungstenite::connect_async(upgrade).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 403, "{origin}");
            }
            other => panic!(
                "a WebSocket from {origin} was not refused: {:?}",
                other.map(|_| ())
            ),
        }
    }
    insta::assert_json_snapshot!("foreign_origins", seen);
    // The gateway's own origin is a same-origin page: served, no CORS.
    let response = request(&g, "POST", "/v1/agents.list", &[(ORIGIN, &own)]).await;
    assert_eq!(response.status(), 200);
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
}

#[tokio::test]
async fn a_listed_origin_gets_cors_and_its_websocket() {
    let app = "https://app.example";
    let g = with_policy(BrowserPolicy {
        allowed_hosts: Vec::new(),
        allowed_origins: vec![app.into()],
    })
    .await;
    let preflight = g
        .client
        .request(reqwest::Method::OPTIONS, g.url("/v1/runs.create"))
        .header(ORIGIN, app)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 204);
    let header = |name: &str| {
        preflight
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(header("access-control-allow-origin").as_deref(), Some(app));
    assert!(
        header("access-control-allow-methods")
            .unwrap()
            .contains("POST")
    );
    assert!(
        header("access-control-allow-headers")
            .unwrap()
            .contains("authorization")
    );
    assert!(
        header("access-control-allow-credentials").is_none(),
        "no cookies"
    );
    let response = request(&g, "POST", "/v1/agents.list", &[(ORIGIN, app)]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["access-control-allow-origin"], app);
    assert_eq!(
        response.headers()["vary"]
            .to_str()
            .unwrap()
            .to_ascii_lowercase(),
        "origin"
    );
    // An error answer carries the grant too, so the page can read it.
    let unauthenticated = g
        .client
        .post(g.url("/v1/agents.list"))
        .header(ORIGIN, app)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
    assert_eq!(
        unauthenticated.headers()["access-control-allow-origin"],
        app
    );
    // Its WebSocket, with a socket ticket (a browser cannot set the header).
    let (_, ticket) = g
        .call(&g.admin, "tokens.ticket", json!({"stream": {"socket": {}}}))
        .await;
    let mut upgrade = format!(
        "ws://{}/v1/ws?ticket={}",
        g.running.addr,
        ticket["ticket"].as_str().unwrap()
    )
    .into_client_request()
    .unwrap();
    upgrade.headers_mut().insert("origin", app.parse().unwrap());
    assert!(tokio_tungstenite::connect_async(upgrade).await.is_ok());
    // Other origins stay refused.
    let (status, _) = refused(
        request(
            &g,
            "POST",
            "/v1/agents.list",
            &[(ORIGIN, "https://app.example.evil")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 403);
}

async fn sse(g: &TestGateway, query: &str) -> reqwest::Response {
    g.client
        .get(g.url(&format!("/v1/events?{query}")))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn stream_tickets_are_single_use_short_lived_scoped_and_never_a_bearer() {
    let g = TestGateway::start_opts(Options {
        ticket_ttl: Duration::from_millis(300),
        ..Options::default()
    })
    .await;
    let (status, minted) = g.call(&g.admin, "tokens.ticket", json!({})).await;
    assert_eq!(status, 200, "{minted}");
    let ticket = minted["ticket"].as_str().unwrap().to_owned();
    assert!(ticket.starts_with(tokens::TICKET_PREFIX), "{minted}");
    let now = g.running.store.now_ms();
    let expires = minted["expiresAt"].as_u64().unwrap();
    assert!(expires > now && expires <= now + 300, "{minted}");
    // The admin's secret as `<admin>`, each ticket as `<ticket>`.
    let redactor = |ticket: &str| {
        Redactor::new()
            .with(ticket, "<ticket>")
            .with(g.admin.as_str(), "<admin>")
    };
    insta::assert_json_snapshot!("ticket_minted", redactor(&ticket).value(&minted));

    // Used once, it opens a stream; used again, it is refused.
    let first = sse(&g, &format!("ticket={ticket}")).await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "text/event-stream");
    let (status, error) = refused(sse(&g, &format!("ticket={ticket}")).await).await;
    pretty_assertions::assert_eq!(
        (status, error),
        (
            401,
            json!({"code": "unauthenticated",
                   "message": "the stream ticket is unknown, used or expired: mint a new one with tokens.ticket",
                   "retryable": false, "details": {"reason": "ticket"}})
        )
    );
    // It is not a bearer token for calls.
    let (_, fresh) = g.call(&g.admin, "tokens.ticket", json!({})).await;
    let fresh = fresh["ticket"].as_str().unwrap();
    let (status, _) = g.call(fresh, "agents.list", json!({})).await;
    assert_eq!(status, 401);
    // Expired, refused: the gateway's clock moves past the 300 ms TTL.
    g.time.advance(Duration::from_millis(400));
    let (status, _) = refused(sse(&g, &format!("ticket={fresh}")).await).await;
    assert_eq!(status, 401);
    // Malformed ones, and tokens in the URL, are refused alike.
    for query in [
        "ticket=tkt_".to_owned(),
        format!("ticket={}", "f".repeat(200)),
        format!("ticket={}", g.admin),
    ] {
        let (status, error) = refused(sse(&g, &query).await).await;
        assert!([400, 401].contains(&status), "{query}: {error}");
    }
    // A long-lived token is not taken from a URL.
    let mut in_url = Vec::new();
    for key in ["token", "access_token", "authorization", "bearer"] {
        let (status, error) = refused(sse(&g, &format!("{key}={}", g.admin)).await).await;
        in_url.push(json!({"key": key, "status": status, "error": error}));
    }
    insta::assert_json_snapshot!("token_in_url", redactor("").value(&json!(in_url)));

    // Read-only: a ticket takes session.read and nothing else.
    let reader = tokens::create(
        &g.running.store,
        None,
        vec![Scope::SessionRead],
        None,
        g.running.store.now_ms(),
    )
    .await
    .unwrap();
    let (status, error) = g
        .call(
            &reader.secret,
            "tokens.ticket",
            json!({"scopes": ["admin"]}),
        )
        .await;
    insta::assert_json_snapshot!("ticket_beyond_scopes", json!([status, error]));
    let (status, narrow) = g
        .call(
            &g.admin,
            "tokens.ticket",
            json!({"scopes": ["session.read"], "stream": {"socket": {"types": ["run.started"]}}}),
        )
        .await;
    insta::assert_json_snapshot!(
        "ticket_narrow",
        redactor(narrow["ticket"].as_str().unwrap()).value(&json!([status, narrow]))
    );
    let ws = format!(
        "ws://{}/v1/ws?ticket={}",
        g.running.addr,
        narrow["ticket"].as_str().unwrap()
    );
    let (socket, _) = tokio_tungstenite::connect_async(ws).await.unwrap();
    let transport = super::super::ws::Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0))));
    let denied = transport
        .call(&g, "agents.create", json!({"id": "x", "model": "mock/m"}))
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("ticket_denied", denied);
    // Nothing but the one subscription its ticket names.
    for (method, params) in [
        ("sessions.list", json!({})),
        ("tokens.ticket", json!({})),
        (
            "tokens.create",
            json!({"name": "x", "preset": "admin", "expiresInMs": 60000}),
        ),
        ("runs.create", json!({"input": "hi"})),
        ("events.subscribe", json!({})),
        ("events.subscribe", json!({"types": ["run.completed"]})),
    ] {
        let refused = transport.call(&g, method, params).await.unwrap_err();
        assert_eq!(
            (&refused["code"], &refused["details"]),
            (&json!("forbidden"), &json!({"reason": "ticket"})),
            "{method}: {refused}"
        );
    }
    assert!(
        transport
            .call(
                &g,
                "events.subscribe",
                json!({"types": ["run.started"], "after": "0"})
            )
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_ticket_opens_the_one_stream_it_was_minted_for() {
    let g = TestGateway::start().await;
    let (_, run) = g
        .call(&g.admin, "runs.create", json!({"input": "hi"}))
        .await;
    let (_, other) = g
        .call(&g.admin, "runs.create", json!({"input": "again"}))
        .await;
    let mint = |stream: Value| {
        let g = &g;
        async move {
            let (status, minted) = g
                .call(&g.admin, "tokens.ticket", json!({"stream": stream}))
                .await;
            assert_eq!(status, 200, "{minted}");
            minted["ticket"].as_str().unwrap().to_owned()
        }
    };
    let get = |path: String| {
        let g = &g;
        async move { g.client.get(g.url(&path)).send().await.unwrap() }
    };
    let run_stream = json!({"run": {"runId": run["id"]}});
    let run_path = format!("/v1/runs/{}/events", run["id"].as_str().unwrap());
    let other_path = format!("/v1/runs/{}/events", other["id"].as_str().unwrap());
    // A run's ticket: that run's stream, not another's, not the log, not
    // a socket.
    let ticket = mint(run_stream.clone()).await;
    assert_eq!(
        get(format!("{run_path}?ticket={ticket}")).await.status(),
        200
    );
    for path in [other_path.clone(), "/v1/events".to_owned()] {
        let ticket = mint(run_stream.clone()).await;
        let (status, error) = refused(get(format!("{path}?ticket={ticket}")).await).await;
        assert_eq!(
            (status, &error["details"]),
            (403, &json!({"reason": "ticket"})),
            "{path}: {error}"
        );
    }
    let ticket = mint(run_stream.clone()).await;
    let ws = format!("ws://{}/v1/ws?ticket={ticket}", g.running.addr);
    assert!(tokio_tungstenite::connect_async(ws).await.is_err());
    // The log's ticket (the default): the log, not a run's stream.
    let (_, minted) = g.call(&g.admin, "tokens.ticket", json!({})).await;
    assert_eq!(minted["stream"], json!({"events": {}}));
    let ticket = minted["ticket"].as_str().unwrap();
    let (status, _) = refused(get(format!("{run_path}?ticket={ticket}")).await).await;
    assert_eq!(status, 403);
    // A run that does not exist gets no ticket.
    let (status, error) = g
        .call(
            &g.admin,
            "tokens.ticket",
            json!({"stream": {"run": {"runId": "run_nope"}}}),
        )
        .await;
    assert_eq!(
        (status, &error["error"]["code"]),
        (404, &json!("not_found"))
    );
}

#[tokio::test]
async fn a_socket_without_credentials_authenticates_with_its_first_frame() {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    let g = TestGateway::start_with(talon_gateway::Limits {
        header_read_timeout: Duration::from_millis(500),
        ..talon_gateway::Limits::default()
    })
    .await;
    let url = format!("ws://{}/v1/ws", g.running.addr);
    // The token in the first frame: answered, then calls work.
    let (mut socket, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let auth = json!({"type": "auth", "token": g.admin}).to_string();
    socket.send(Message::Text(auth.into())).await.unwrap();
    let Some(Ok(Message::Text(answer))) = socket.next().await else {
        panic!("no answer to the auth frame");
    };
    assert_eq!(answer.as_str(), r#"{"type":"authenticated"}"#);
    let transport = super::super::ws::Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0))));
    assert!(transport.call(&g, "agents.list", json!({})).await.is_ok());
    // A wrong token, another frame first, or nothing in time: closed
    // with 4003, saying why.
    for first in [
        Some(json!({"type": "auth", "token": "talon_nope"})),
        Some(json!({"type": "req", "id": 1, "method": "agents.list", "params": {}})),
        Some(json!({"type": "auth", "token": g.admin, "extra": 1})),
        None,
    ] {
        let (mut socket, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        if let Some(first) = &first {
            socket
                .send(Message::Text(first.to_string().into()))
                .await
                .unwrap();
        }
        let closed = loop {
            match socket.next().await {
                Some(Ok(Message::Close(frame))) => break frame,
                Some(Ok(_)) => continue,
                other => panic!("{first:?}: {other:?}"),
            }
        };
        assert_eq!(
            closed.map(|f| f.code),
            Some(CloseCode::from(4003)),
            "{first:?}"
        );
    }
}

/// `head` sent as it is over a new connection (with `Connection: close`
/// added): the answer's status and body.
async fn raw(g: &TestGateway, head: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(g.running.addr)
        .await
        .unwrap();
    let request = format!("{head}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn two_hosts_or_a_target_naming_another_host_are_refused() {
    let g = TestGateway::start().await;
    let here = g.running.addr.to_string();
    let reason = |body: &str| {
        let body: Value = serde_json::from_str(body.trim()).unwrap();
        (
            body["error"]["code"].clone(),
            body["error"]["details"]["reason"].clone(),
        )
    };
    for head in [
        format!("GET /healthz HTTP/1.1\r\nHost: {here}\r\nHost: evil.example\r\n"),
        format!("GET /healthz HTTP/1.1\r\nHost: {here}\r\nHost: {here}\r\n"),
        format!("GET http://evil.example/healthz HTTP/1.1\r\nHost: {here}\r\n"),
        format!("GET http://{here}/healthz HTTP/1.1\r\nHost: evil.example\r\n"),
        format!("GET http://localhost:1/healthz HTTP/1.1\r\nHost: {here}\r\n"),
        format!("GET http://user@{here}/healthz HTTP/1.1\r\nHost: {here}\r\n"),
    ] {
        let (status, body) = raw(&g, &head).await;
        assert_eq!(
            (status, reason(&body)),
            (400, (json!("invalid_request"), json!("host"))),
            "{head:?}: {body}"
        );
    }
    // The target and the Host agreeing is an ordinary request.
    let (status, body) = raw(
        &g,
        &format!("GET http://{here}/healthz HTTP/1.1\r\nHost: {here}\r\n"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_browsers_openai_client_may_send_its_headers() {
    let app = "https://app.example";
    let g = with_policy(BrowserPolicy {
        allowed_hosts: Vec::new(),
        allowed_origins: vec![app.into()],
    })
    .await;
    // What openai-node asks for before a chat completion, and one more.
    let asked = "authorization, content-type, idempotency-key, x-talon-session-key, \
                 openai-organization, openai-project, openai-beta, x-stainless-os, \
                 x-stainless-arch, x-stainless-retry-count, x-stainless-timeout, x-evil";
    let preflight = g
        .client
        .request(reqwest::Method::OPTIONS, g.url("/v1/chat/completions"))
        .header(ORIGIN, app)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", asked)
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 204);
    let granted: Vec<String> = preflight.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .split(',')
        .map(|h| h.trim().to_owned())
        .collect();
    let missing: Vec<&str> = asked
        .split(',')
        .map(str::trim)
        .filter(|h| !granted.iter().any(|g| g == h))
        .collect();
    assert_eq!(missing, ["x-evil"]);
    // What the page may read of an OpenAI answer.
    let response = request(&g, "POST", "/v1/agents.list", &[(ORIGIN, app)]).await;
    let exposed = response.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_owned();
    for name in [
        "x-request-id",
        "x-talon-run-id",
        "x-talon-session-key",
        "x-should-retry",
        "retry-after-ms",
    ] {
        assert!(exposed.contains(name), "{name}: {exposed}");
    }
}
