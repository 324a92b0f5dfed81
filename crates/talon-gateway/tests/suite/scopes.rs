//! The scope matrix: every method, over HTTP and over WebSocket, and every
//! stream (the two SSE routes and a WebSocket subscription), with a token
//! holding each single scope, is refused with `forbidden` (naming the
//! scope) exactly when the method table says the scope does not cover it.

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use talon_gateway::tokens;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey};
use talon_protocol::gateway::{Method, Run, RunStatus, Scope};
use tokio_tungstenite::tungstenite::Message;

use super::TestGateway;
use super::ws::{Socket, connect};

/// A call over the socket: its answer's `ok` and `result` or `error`
/// (event frames of a subscription the matrix opened are passed over).
async fn ws_call(socket: &mut Socket, id: u64, method: &str) -> (bool, Value) {
    socket
        .send(Message::Text(
            json!({"type": "req", "id": id, "method": method, "params": {}})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    loop {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next())
            .await
            .expect("no answer")
            .unwrap()
            .unwrap();
        let Message::Text(text) = frame else {
            continue;
        };
        let frame: Value = serde_json::from_str(text.as_str()).unwrap();
        if frame["type"] == "res" && frame["id"] == id {
            let ok = frame["ok"] == true;
            return (
                ok,
                if ok {
                    frame["result"].clone()
                } else {
                    frame["error"].clone()
                },
            );
        }
    }
}

/// Checks one answer against the table.
fn check(what: &str, scope: Scope, needed: Scope, refused: Option<&Value>) {
    let allowed = needed.satisfied_by(&[scope]);
    match refused {
        Some(error) => {
            assert!(!allowed, "{what} with {scope} was refused: {error}");
            pretty_assertions::assert_eq!(
                error,
                &json!({
                    "code": "forbidden",
                    "message": format!("this token lacks the `{needed}` scope"),
                    "retryable": false,
                    "details": {"scope": needed.as_str()}
                }),
                "{what} with {scope}"
            );
        }
        None => assert!(allowed, "{what} with {scope} was allowed"),
    }
}

/// The error of a refusal by scope or authentication, if it was one.
fn refusal(error: &Value) -> Option<&Value> {
    matches!(
        error["code"].as_str(),
        Some("forbidden" | "unauthenticated")
    )
    .then_some(error)
}

#[tokio::test]
async fn every_method_and_stream_with_every_single_scope() {
    let g = TestGateway::start_with(talon_gateway::Limits {
        calls_per_second: 10_000.0,
        burst: 10_000,
        ..talon_gateway::Limits::default()
    })
    .await;
    let now = g.running.store.now_ms();
    let run = Run {
        summary: None,
        model: None,
        subject: None,
        id: RunId::new("run_matrix"),
        agent_id: AgentId::new("main"),
        session_id: Some(SessionId::new("sess_matrix")),
        session_key: Some(SessionKey::new("matrix")),
        status: RunStatus::Completed,
        created_at: 1,
        started_at: Some(1),
        ended_at: Some(2),
        usage: None,
        error: None,
    };
    g.running
        .store
        .create_run(&run, None, "", "node", None)
        .await
        .unwrap();
    let mut checked = 0;
    for scope in Scope::ALL {
        let token = tokens::create(&g.running.store, None, vec![scope], None, now)
            .await
            .unwrap();
        let mut socket = connect(&g, &token.secret).await.unwrap();
        for (n, &method) in Method::ALL.iter().enumerate() {
            let spec = method.spec();
            let (status, body) = g.call(&token.secret, spec.name, json!({})).await;
            let http = (status == 403 || status == 401).then_some(&body["error"]);
            check(&format!("POST {}", spec.name), scope, spec.scope, http);
            let (ok, answer) = ws_call(&mut socket, n as u64 + 1, spec.name).await;
            let ws = if ok { None } else { refusal(&answer) };
            check(&format!("ws {}", spec.name), scope, spec.scope, ws);
            checked += 2;
        }
        for (path, method) in [
            ("/v1/events".to_owned(), Method::EventsSubscribe),
            ("/v1/runs/run_matrix/events".to_owned(), Method::RunsEvents),
        ] {
            let response = g
                .client
                .get(g.url(&path))
                .bearer_auth(&token.secret)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let refused = match status {
                200 => None,
                _ => Some(response.json::<Value>().await.unwrap()["error"].clone()),
            };
            if let Some(error) = &refused {
                assert_eq!(status, 403, "GET {path} with {scope}: {error}");
            }
            check(
                &format!("GET {path}"),
                scope,
                method.spec().scope,
                refused.as_ref(),
            );
            checked += 1;
        }
    }
    assert_eq!(checked, Scope::ALL.len() * (2 * Method::ALL.len() + 2));
}
