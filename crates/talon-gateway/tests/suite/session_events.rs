//! `session.created`: every way a session is made announces it once on
//! the log, the session as its data; finding an existing one announces
//! nothing. `session.updated`: each change of its metadata
//! (`sessions.update`), the session as it now is.

use serde_json::{Value, json};
use talon_protocol::EventType;
use talon_protocol::gateway::bounded::{RunId, SessionId, SessionKey};

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
            events[0].session_id.as_ref().map(SessionId::as_str),
            events[0].session_key.as_ref().map(SessionKey::as_str),
            events[0].run_id.as_ref().map(RunId::as_str)
        ),
        (created["id"].as_str(), Some("a"), None)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_change_is_announced_with_the_session_as_it_now_is() {
    let g = TestGateway::start().await;
    let (_, created) = g
        .call(
            &g.admin,
            "sessions.create",
            json!({"agentId": "main", "key": "m", "metadata": {"topic": "colors", "owner": "ada"}}),
        )
        .await;
    // Set one key, remove another.
    let (status, updated) = g
        .call(
            &g.admin,
            "sessions.update",
            json!({"sessionId": created["id"], "metadata": {"topic": "shapes", "owner": null}}),
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["metadata"], json!({"topic": "shapes"}));
    let filter = talon_store::EventFilter {
        types: vec![EventType::SessionUpdated],
        ..talon_store::EventFilter::default()
    };
    let events = g.running.store.after(None, &filter, 100).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.data.clone()).collect::<Vec<_>>(),
        vec![updated.clone()]
    );
    assert_eq!(
        events[0].session_id.as_ref().map(SessionId::as_str),
        created["id"].as_str()
    );
    // Past the caps: refused, nothing changes, nothing is announced.
    let many: serde_json::Map<String, Value> =
        (0..65).map(|i| (format!("k{i}"), json!(i))).collect();
    let (status, refused) = g
        .call(
            &g.admin,
            "sessions.update",
            json!({"sessionId": created["id"], "metadata": many}),
        )
        .await;
    assert_eq!(
        (status, refused["error"]["code"].clone()),
        (400, json!("invalid_request"))
    );
    let (_, unknown) = g
        .call(
            &g.admin,
            "sessions.update",
            json!({"sessionId": "sess_nope", "metadata": {}}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], "not_found");
    assert_eq!(
        g.running
            .store
            .after(None, &filter, 100)
            .await
            .unwrap()
            .len(),
        1
    );
}
