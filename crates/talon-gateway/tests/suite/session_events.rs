//! `session.created`: every way a session is made announces it once on
//! the log, the session as its data; finding an existing one announces
//! nothing.

use serde_json::{Value, json};
use talon_protocol::EventType;

use super::TestGateway;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_new_session_is_announced_once() {
    let g = TestGateway::start().await;
    let call = async |method: &str, params: Value| {
        let (status, body) = g.call(&g.admin, method, params).await;
        assert_eq!(status, 200, "{method}: {body}");
        body
    };
    let created = call("sessions.create", json!({"agentId": "main", "key": "a"})).await;
    let found = call("sessions.resolve", json!({"key": "a"})).await;
    assert_eq!(found["id"], created["id"]);
    let resolved = call("sessions.resolve", json!({"key": "b"})).await;
    let forked = call("sessions.fork", json!({"sessionId": created["id"]})).await;
    let run = call("runs.create", json!({"input": "hi"})).await;
    let filter = talon_store::EventFilter {
        types: vec![EventType::SessionCreated],
        ..talon_store::EventFilter::default()
    };
    let events = g.running.store.after(None, &filter, 100).await.unwrap();
    let announced: Vec<&Value> = events.iter().map(|e| &e.data["id"]).collect();
    assert_eq!(
        announced,
        [
            &created["id"],
            &resolved["id"],
            &forked["id"],
            &run["sessionId"]
        ]
    );
    // The data is the session, as the method answered it; the envelope
    // names it.
    assert_eq!(events[0].data, created);
    assert_eq!(
        (
            events[0].session_id.as_deref(),
            events[0].session_key.as_deref(),
            events[0].run_id.as_deref()
        ),
        (created["id"].as_str(), Some("a"), None)
    );
}
