//! `sessions.delete` and `runs.delete`: `conflict` while a run is live;
//! once ended, the run goes with its events, approvals and artifact (its
//! bytes too), and the session with its messages; what is gone is
//! `not_found` everywhere, streams included.

use serde_json::json;
use talon_store::EventFilter;

use super::ws::Transport;
use super::{Options, TestGateway, call_then_say, next_pending};

#[tokio::test]
async fn a_deleted_run_and_session_are_gone_everywhere_but_never_while_live() {
    let g = TestGateway::start_opts(Options {
        script: call_then_say("write", json!({"path": "n.txt", "content": "x"}), "Done."),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let t = Transport::Http;
    let run = t
        .call(
            &g,
            "runs.create",
            json!({"input": "go", "sessionKey": "doomed"}),
        )
        .await
        .unwrap();
    let (run_id, session_id) = (run["runId"].clone(), run["sessionId"].clone());
    let approval = next_pending(&g, &t, "approvals", &run_id).await;
    // Live: nothing goes.
    for (method, params) in [
        ("sessions.delete", json!({"sessionId": session_id})),
        ("runs.delete", json!({"runId": run_id})),
    ] {
        let refused = t.call(&g, method, params).await.unwrap_err();
        assert_eq!(refused["code"], "conflict", "{method}: {refused}");
    }
    t.call(
        &g,
        "approvals.respond",
        json!({"approvalId": approval["id"], "decision": "deny"}),
    )
    .await
    .unwrap();
    let done = t
        .call(
            &g,
            "runs.wait",
            json!({"runId": run_id, "timeoutMs": 20_000}),
        )
        .await
        .unwrap();
    let artifact = done["artifacts"][0]["id"].clone();
    assert_eq!(g.artifact_content(&artifact, None).await.status(), 200);
    // A stream open across the delete does not bring the events back.
    let deleted = t
        .call(&g, "runs.delete", json!({"runId": run_id}))
        .await
        .unwrap();
    assert_eq!(
        (&deleted["id"], &deleted["status"]),
        (&run_id, &json!("completed"))
    );
    for (method, params) in [
        ("runs.get", json!({"runId": run_id})),
        ("runs.events", json!({"runId": run_id})),
        ("artifacts.get", json!({"artifactId": artifact})),
        ("runs.delete", json!({"runId": run_id})),
    ] {
        let gone = t.call(&g, method, params).await.unwrap_err();
        assert_eq!(gone["code"], "not_found", "{method}: {gone}");
    }
    assert_eq!(g.artifact_content(&artifact, None).await.status(), 404);
    let filter = EventFilter {
        run_id: Some(run_id.as_str().unwrap().to_owned()),
        ..EventFilter::default()
    };
    assert_eq!(
        g.running.store.after(None, &filter, 100).await.unwrap(),
        vec![]
    );
    let approvals = t
        .call(&g, "approvals.list", json!({"runId": run_id}))
        .await
        .unwrap();
    assert_eq!(approvals["approvals"], json!([]));
    // The session (its messages stay until it goes) goes next.
    let messages = t.session_messages(&g, &session_id).await;
    assert!(!messages.is_empty());
    let deleted = t
        .call(&g, "sessions.delete", json!({"sessionId": session_id}))
        .await
        .unwrap();
    assert_eq!(
        deleted,
        json!({"sessionId": session_id, "deletedRunIds": []})
    );
    let gone = t
        .call(&g, "sessions.messages", json!({"sessionId": session_id}))
        .await
        .unwrap_err();
    assert_eq!(gone["code"], "not_found");
    // Its key is free: resolving it makes a new session.
    let again = t
        .call(&g, "sessions.resolve", json!({"key": "doomed"}))
        .await
        .unwrap();
    assert_ne!(again["id"], session_id);
}
