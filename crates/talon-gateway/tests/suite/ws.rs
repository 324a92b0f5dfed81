//! The WebSocket transport: the same calls as HTTP from one test body,
//! subscriptions with the same envelopes and ids as SSE, and bad frames
//! answered without closing the connection.

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionKey};
use talon_protocol::{Event, EventType};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use talon_testing::redact::Redactor;

use super::TestGateway;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub async fn connect(g: &TestGateway, token: &str) -> Result<Socket, u16> {
    let mut request = format!("ws://{}/v1/ws", g.running.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            Err(response.status().as_u16())
        }
        Err(e) => panic!("{e}"),
    }
}

pub async fn next_frame(socket: &mut Socket) -> Value {
    loop {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next())
            .await
            .expect("no frame")
            .unwrap()
            .unwrap();
        if let Message::Text(text) = frame {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

/// A call over either transport: `Ok(result)` or `Err(error object)`.
pub enum Transport {
    Http,
    Ws(Box<tokio::sync::Mutex<(Socket, u64)>>),
}

impl Transport {
    pub async fn call(&self, g: &TestGateway, method: &str, params: Value) -> Result<Value, Value> {
        match self {
            Self::Http => {
                let (status, body) = g.call(&g.admin, method, params).await;
                if status == 200 {
                    Ok(body)
                } else {
                    Err(body["error"].clone())
                }
            }
            Self::Ws(socket) => {
                let mut guard = socket.lock().await;
                let (socket, next) = &mut *guard;
                *next += 1;
                let id = *next;
                socket
                    .send(Message::Text(
                        json!({"type": "req", "id": id, "method": method, "params": params})
                            .to_string()
                            .into(),
                    ))
                    .await
                    .unwrap();
                let frame = next_frame(socket).await;
                assert_eq!(
                    (frame["type"].clone(), frame["id"].clone()),
                    (json!("res"), json!(id))
                );
                if frame["ok"] == true {
                    Ok(frame["result"].clone())
                } else {
                    Err(frame["error"].clone())
                }
            }
        }
    }

    /// A session's stored messages (`sessions.messages`, first page).
    pub async fn session_messages(&self, g: &TestGateway, session_id: &Value) -> Vec<Value> {
        let page = self
            .call(g, "sessions.messages", json!({"sessionId": session_id}))
            .await
            .unwrap();
        page["messages"].as_array().unwrap().clone()
    }
}

/// One body, run over HTTP and over WebSocket: what each call answered,
/// redacted, the transport's tag in names as `<tag>`.
async fn the_methods(g: &TestGateway, t: &Transport, tag: &str) -> Value {
    let agent = t
        .call(
            g,
            "agents.create",
            json!({"id": format!("a-{tag}"), "idempotencyKey": "k"}),
        )
        .await
        .unwrap();
    let again = t
        .call(
            g,
            "agents.create",
            json!({"id": format!("a-{tag}"), "idempotencyKey": "k2"}),
        )
        .await
        .unwrap_err();
    let session = t
        .call(g, "sessions.create", json!({"agentId": format!("a-{tag}"), "key": format!("k-{tag}"), "idempotencyKey": "s"}))
        .await
        .unwrap();
    let resolved = t
        .call(g, "sessions.resolve", json!({"key": format!("k-{tag}")}))
        .await
        .unwrap();
    assert_eq!(resolved, session);
    let unknown = t.call(g, "agents.explode", json!({})).await.unwrap_err();
    let wrong = t
        .call(g, "agents.get", json!({"agentId": 7}))
        .await
        .unwrap_err();
    let missing = t
        .call(g, "tasks.get", json!({"taskId": "task_nope"}))
        .await
        .unwrap_err();
    Redactor::new()
        .with(format!("a-{tag}"), "a-<tag>")
        .with(format!("k-{tag}"), "k-<tag>")
        .value(&json!({
            "agent": agent,
            "again": again,
            "session": session,
            "unknown": unknown,
            "wrong": wrong,
            "missing": missing,
        }))
}

#[tokio::test]
async fn every_call_behaves_the_same_over_http_and_websocket() {
    let g = TestGateway::start().await;
    let http = the_methods(&g, &Transport::Http, "http").await;
    let socket = connect(&g, &g.admin).await.unwrap();
    let ws = the_methods(
        &g,
        &Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0)))),
        "ws",
    )
    .await;
    pretty_assertions::assert_eq!(ws, http);
    insta::assert_json_snapshot!("the_methods", http);
    assert_eq!(connect(&g, "talon_bad").await.err(), Some(401));
}

#[tokio::test]
async fn a_subscription_streams_the_stored_envelopes_and_bad_frames_are_answered() {
    let g = TestGateway::start().await;
    let store = &g.running.store;
    let event = |n: u64, kind| Event {
        subject: None,
        version: 1,
        id: Default::default(),
        ts: n,
        kind,
        run_id: Some(RunId::new("r1")),
        session_id: None,
        session_key: Some(SessionKey::new("key")),
        task_id: None,
        agent_id: Some(AgentId::new("main")),
        request_id: None,
        data: json!({"n": n}),
        raw: None,
    };
    let backlog = store
        .append(vec![
            event(1, EventType::RunStarted),
            event(2, EventType::AssistantDelta),
        ])
        .await
        .unwrap();
    let mut socket = connect(&g, &g.admin).await.unwrap();
    let mut redactor = Redactor::new();
    // Bad frames: answered with a null id; the connection stays.
    let mut answers = Vec::new();
    for bad in [
        Message::Text("not json".into()),
        Message::Binary(vec![1, 2].into()),
        Message::Text("{\"type\":\"req\"}".into()),
    ] {
        socket.send(bad).await.unwrap();
        answers.push(next_frame(&mut socket).await);
    }
    insta::assert_json_snapshot!("bad_frames", answers);
    let after = backlog[0].id.clone();
    socket
        .send(Message::Text(json!({"type": "req", "id": "s1", "method": "events.subscribe", "params": {"after": after, "types": ["assistant.delta", "run.completed"]}}).to_string().into()))
        .await
        .unwrap();
    let answer = next_frame(&mut socket).await;
    insta::assert_json_snapshot!("subscribed", redactor.value(&answer));
    let sid = answer["result"]["subscriptionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let frame = next_frame(&mut socket).await;
    assert_eq!(
        frame,
        json!({"type": "event", "subscriptionId": sid, "event": serde_json::to_value(&backlog[1]).unwrap()})
    );
    let live = store
        .append(vec![
            event(3, EventType::RunStarted),
            event(4, EventType::RunCompleted),
        ])
        .await
        .unwrap();
    let frame = next_frame(&mut socket).await;
    // Filtered by type, live.
    pretty_assertions::assert_eq!(
        frame,
        json!({"type": "event", "subscriptionId": sid, "event": serde_json::to_value(&live[1]).unwrap()})
    );
    // Unsubscribe: nothing more arrives; a call still answers.
    socket
        .send(Message::Text(json!({"type": "req", "id": 2, "method": "events.unsubscribe", "params": {"subscriptionId": sid}}).to_string().into()))
        .await
        .unwrap();
    insta::assert_json_snapshot!(
        "unsubscribed",
        redactor.value(&next_frame(&mut socket).await)
    );
    store
        .append(vec![event(5, EventType::AssistantDelta)])
        .await
        .unwrap();
    socket
        .send(Message::Text(
            json!({"type": "req", "id": 3, "method": "agents.list", "params": {}})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    insta::assert_json_snapshot!("listed", next_frame(&mut socket).await);
    // An expired cursor is refused at subscribe time.
    store
        .prune(
            talon_store::Retention {
                max_age: None,
                max_events: Some(1),
            },
            0,
        )
        .await
        .unwrap();
    socket
        .send(Message::Text(
            json!({"type": "req", "id": 4, "method": "events.subscribe", "params": {"after": "1"}})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    insta::assert_json_snapshot!("cursor_expired", next_frame(&mut socket).await);
}
