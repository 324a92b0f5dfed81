//! Live revocation and expiry: a token's open WebSockets close with the
//! code naming why, and its SSE streams end with `event: error`
//! `unauthenticated`, within a second, on every node, whichever node (or
//! `talon token revoke`, straight in the store) revoked it.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures::{SinkExt as _, StreamExt as _};
use serde_json::json;
use talon_gateway::{CLOSE_EXPIRED, CLOSE_REVOKED, GatewayConfig, Running, tokens};
use talon_protocol::gateway::Scope;
use talon_store::{Store, StoreConfig};
use talon_testing::postgres::TestPostgres;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use super::super::ws::Socket;
use super::super::{TestGateway, config_in, host};

/// A token's two connections on one node.
struct Open {
    node: SocketAddr,
    socket: Socket,
    sse: reqwest::Response,
}

async fn open(client: &reqwest::Client, node: SocketAddr, secret: &str) -> Open {
    let mut request = format!("ws://{node}/v1/ws").into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {secret}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    // The socket works: a call is answered.
    socket
        .send(Message::Text(
            json!({"type": "req", "id": 1, "method": "sessions.list", "params": {}})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    loop {
        let Message::Text(text) = socket.next().await.unwrap().unwrap() else {
            continue;
        };
        let frame: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
        pretty_assertions::assert_eq!(
            frame,
            json!({"type": "res", "id": 1, "ok": true, "result": {"sessions": []}})
        );
        break;
    }
    let sse = client
        .get(format!("http://{node}/v1/events"))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    Open { node, socket, sse }
}

/// Waits for the socket's close frame: its code and when it came.
async fn closed(socket: &mut Socket) -> (u16, Instant) {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("the socket was not closed")
            .expect("the socket ended without a close frame");
        if let Ok(Message::Close(Some(close))) = frame {
            return (close.code.into(), Instant::now());
        }
    }
}

/// Reads the stream until its `event: error`: the error's data and when.
async fn ended(sse: &mut reqwest::Response) -> (serde_json::Value, Instant) {
    let mut text = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), sse.chunk())
            .await
            .expect("the stream did not end")
            .unwrap()
            .expect("the stream ended without an error event");
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(at) = text.find("event: error\n") {
            let rest = &text[at..];
            if let Some(line) = rest.lines().find_map(|l| l.strip_prefix("data: ")) {
                return (serde_json::from_str(line).unwrap(), Instant::now());
            }
        }
    }
}

/// Opens connections on every node with a fresh token, ends the token by
/// `end` (revoking it in `store`, or waiting for its expiry), and checks
/// each connection ends within a second; the latencies, in ms.
async fn every_node_ends(
    store: &Store,
    nodes: &[SocketAddr],
    expiring: Option<Duration>,
) -> Vec<u128> {
    let client = reqwest::Client::new();
    let now = store.now_ms();
    let token = tokens::create(
        store,
        None,
        vec![Scope::AgentRun, Scope::SessionRead],
        expiring.map(|after| now + after.as_millis() as u64),
        now,
    )
    .await
    .unwrap();
    let mut opened = Vec::new();
    for node in nodes {
        opened.push(open(&client, *node, &token.secret).await);
    }
    let at = match expiring {
        Some(after) => {
            let left = (now + after.as_millis() as u64).saturating_sub(store.now_ms());
            assert!(left > 0, "the connections opened after the token expired");
            Instant::now() + Duration::from_millis(left)
        }
        None => {
            assert!(
                store
                    .revoke_token(&token.stored.id, store.now_ms())
                    .await
                    .unwrap()
            );
            Instant::now()
        }
    };
    let (code, reason, message) = match expiring {
        Some(_) => (
            CLOSE_EXPIRED,
            "expired",
            "the token that opened this stream expired",
        ),
        None => (
            CLOSE_REVOKED,
            "revoked",
            "the token that opened this stream was revoked",
        ),
    };
    let mut latencies = Vec::new();
    for Open {
        node,
        mut socket,
        mut sse,
    } in opened
    {
        let (closed_with, when) = closed(&mut socket).await;
        assert_eq!(closed_with, code, "{node}");
        latencies.push(when.saturating_duration_since(at).as_millis());
        let (error, when) = ended(&mut sse).await;
        pretty_assertions::assert_eq!(
            error,
            json!({"error": {"code": "unauthenticated", "message": message, "retryable": false,
                             "details": {"reason": reason}}}),
            "{node}"
        );
        latencies.push(when.saturating_duration_since(at).as_millis());
        // And new calls are refused.
        let refused = client
            .post(format!("http://{node}/v1/runs.create"))
            .bearer_auth(&token.secret)
            .json(&json!({"input": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401, "{node}");
    }
    for ms in &latencies {
        assert!(
            *ms <= 1_000,
            "a connection outlived its token by {ms} ms: {latencies:?}"
        );
    }
    latencies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_every_node_of_an_sqlite_state_directory() {
    let g = TestGateway::start().await;
    let other = talon_gateway::start(g.same_state()).await.unwrap();
    let nodes = [g.running.addr, other.addr];
    let revoked = every_node_ends(&g.running.store, &nodes, None).await;
    let expired =
        every_node_ends(&g.running.store, &nodes, Some(Duration::from_millis(1_500))).await;
    eprintln!("sqlite, two nodes: revoked→closed {revoked:?} ms, expired→closed {expired:?} ms");
}

async fn pg_node(
    url: &str,
    name: &str,
    mock: &talon_mock_model::MockModel,
) -> (Running, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        store: StoreConfig::at(url, dir.path()),
        node: Some(name.into()),
        ..GatewayConfig::local(dir.path(), 0, host(config_in(dir.path(), json!({})), mock))
    };
    (talon_gateway::start(config).await.unwrap(), dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_every_node_of_a_postgres_database() {
    let pg = TestPostgres::shared().unwrap();
    let url = pg.fresh_database().unwrap();
    let mock = talon_mock_model::MockModel::start(talon_mock_model::Script::texts(&["hi"]))
        .await
        .unwrap();
    let (a, _a) = pg_node(&url, "a", &mock).await;
    let (b, _b) = pg_node(&url, "b", &mock).await;
    let nodes = [a.addr, b.addr];
    let revoked = every_node_ends(&a.store, &nodes, None).await;
    let expired = every_node_ends(&b.store, &nodes, Some(Duration::from_millis(1_500))).await;
    eprintln!("postgres, two nodes: revoked→closed {revoked:?} ms, expired→closed {expired:?} ms");
}

#[tokio::test]
async fn a_ticket_stream_ends_with_the_token_that_minted_it() {
    let g = TestGateway::start().await;
    let now = g.running.store.now_ms();
    let token = tokens::create(&g.running.store, None, vec![Scope::SessionRead], None, now)
        .await
        .unwrap();
    let (_, ticket) = g
        .call(
            &token.secret,
            "tokens.ticket",
            json!({"stream": {"socket": {}}}),
        )
        .await;
    let ws = format!(
        "ws://{}/v1/ws?ticket={}",
        g.running.addr,
        ticket["ticket"].as_str().unwrap()
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(ws).await.unwrap();
    let at = Instant::now();
    g.running
        .store
        .revoke_token(&token.stored.id, g.running.store.now_ms())
        .await
        .unwrap();
    let (code, when) = closed(&mut socket).await;
    assert_eq!(code, CLOSE_REVOKED);
    assert!(when.duration_since(at) <= Duration::from_secs(1));
}

#[tokio::test]
async fn a_call_on_a_revoked_tokens_socket_is_refused_before_the_socket_closes() {
    let g = TestGateway::start().await;
    let now = g.running.store.now_ms();
    let token = tokens::create(&g.running.store, None, vec![Scope::AgentRun], None, now)
        .await
        .unwrap();
    let mut request = format!("ws://{}/v1/ws", g.running.addr)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", token.secret).parse().unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    g.running
        .store
        .revoke_token(&token.stored.id, g.running.store.now_ms())
        .await
        .unwrap();
    // At once, before the node's reader has seen the revocation.
    socket
        .send(Message::Text(
            json!({"type": "req", "id": 7, "method": "runs.create", "params": {"input": "x"}})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    loop {
        match socket.next().await.unwrap().unwrap() {
            Message::Text(text) => {
                let frame: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
                pretty_assertions::assert_eq!(
                    frame,
                    json!({"type": "res", "id": 7, "ok": false, "error": {
                        "code": "unauthenticated", "message": "the token that opened this stream was revoked",
                        "retryable": false, "details": {"reason": "revoked"}}})
                );
                break;
            }
            Message::Close(Some(close)) => {
                assert_eq!(u16::from(close.code), CLOSE_REVOKED);
                break;
            }
            _ => {}
        }
    }
    let filter = talon_store::EventFilter {
        types: vec![talon_protocol::EventType::RunCreated],
        ..Default::default()
    };
    let created = g.running.store.after(None, &filter, 10).await.unwrap();
    assert_eq!(created, Vec::new(), "no run was created");
}
