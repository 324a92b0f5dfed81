//! `tools.invoke`: a direct call through the one execution path (policy,
//! approvals, events), made once per idempotency key.

use serde_json::{Value, json};
use talon_testing::redact::{Redactor, redacted};
use talon_testing::wait;

use super::ws::{Transport, connect};
use super::{Options, TestGateway};

async fn gateway(config: Value) -> TestGateway {
    let g = TestGateway::start_opts(Options {
        config,
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    g
}

/// One body, over HTTP and over WebSocket: what the read and the write
/// answered, redacted, the transport's tag as `<tag>`.
async fn read_and_write(g: &TestGateway, t: &Transport, tag: &str) -> Value {
    let file = format!("{tag}.txt");
    std::fs::write(g.dir.path().join("workspace").join(&file), "hello").unwrap();
    let read = t
        .call(
            g,
            "tools.invoke",
            json!({"tool": "read", "arguments": {"path": file}, "sessionKey": format!("app:{tag}")}),
        )
        .await
        .unwrap();
    // By catalog id too; `write` is allowed by this gateway's policy.
    let written = t
        .call(
            g,
            "tools.invoke",
            json!({"tool": "openclaw:core:write", "arguments": {"path": file, "content": "bye"}, "sessionKey": format!("app:{tag}")}),
        )
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(g.dir.path().join("workspace").join(&file)).unwrap(),
        "bye"
    );
    // Calls add nothing to the session's conversation.
    let session = t
        .call(g, "sessions.resolve", json!({"key": format!("app:{tag}")}))
        .await
        .unwrap();
    assert_eq!(
        t.session_messages(g, &session["id"]).await,
        Vec::<Value>::new()
    );
    Redactor::new()
        .with(format!("{tag}.txt"), "<tag>.txt")
        .value(&json!({"read": read, "written": written}))
}

#[tokio::test]
async fn a_direct_call_over_http_and_websocket() {
    let g = gateway(json!({"tools": {"approvals": "allow"}})).await;
    let http = read_and_write(&g, &Transport::Http, "http").await;
    let socket = connect(&g, &g.admin).await.unwrap();
    let ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0))));
    let ws = read_and_write(&g, &ws, "ws").await;
    insta::assert_json_snapshot!(http);
    pretty_assertions::assert_eq!(ws, http);
}

#[tokio::test]
async fn the_same_idempotency_key_returns_the_first_result_and_never_calls_twice() {
    let g = gateway(json!({"tools": {"approvals": "allow"}})).await;
    let t = Transport::Http;
    let path = g.dir.path().join("workspace/once.txt");
    let params = json!({"tool": "write", "arguments": {"path": "once.txt", "content": "first"}, "sessionKey": "k", "idempotencyKey": "write-once"});
    let first = t.call(&g, "tools.invoke", params.clone()).await.unwrap();
    std::fs::write(&path, "changed since").unwrap();
    let again = t.call(&g, "tools.invoke", params).await.unwrap();
    assert_eq!(again, first);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "changed since");
    let other = t
        .call(
            &g,
            "tools.invoke",
            json!({"tool": "write", "arguments": {"path": "once.txt", "content": "second"}, "sessionKey": "k", "idempotencyKey": "write-once"}),
        )
        .await
        .unwrap_err();
    insta::assert_json_snapshot!(redacted(&other));
}

#[tokio::test]
async fn a_call_that_needs_approval_waits_for_it() {
    let g = gateway(json!({})).await;
    let invoked = {
        let g = &g;
        async move {
            Transport::Http
                .call(
                    g,
                    "tools.invoke",
                    json!({"tool": "write", "arguments": {"path": "asked.txt", "content": "ok"}, "sessionKey": "asked"}),
                )
                .await
        }
    };
    let answer = async {
        let approval =
            wait::until_async("an approval to be requested", wait::DEADLINE, async || {
                let list = Transport::Http
                    .call(&g, "approvals.list", json!({"status": "pending"}))
                    .await
                    .unwrap();
                list["approvals"].get(0).cloned()
            })
            .await;
        insta::assert_json_snapshot!("asked_approval", redacted(&approval));
        Transport::Http
            .call(
                &g,
                "approvals.respond",
                json!({"approvalId": approval["id"], "decision": "approve_once"}),
            )
            .await
            .unwrap();
    };
    let (result, ()) = tokio::join!(invoked, answer);
    insta::assert_json_snapshot!("asked_result", redacted(&result.unwrap()));
    assert!(g.dir.path().join("workspace/asked.txt").exists());
}

#[tokio::test]
async fn refused_unknown_and_malformed_calls_get_clear_errors() {
    let g =
        gateway(json!({"tools": {"approvals": {"rules": [{"tool": "exec", "action": "deny"}]}}}))
            .await;
    let t = Transport::Http;
    let call = |params: Value| {
        let g = &g;
        async move { t_call(g, params).await }
    };
    let denied =
        call(json!({"tool": "exec", "arguments": {"command": "true"}, "sessionKey": "s"})).await;
    let unknown = call(json!({"tool": "nope", "sessionKey": "s"})).await;
    let bad = call(json!({"tool": "read", "arguments": {"path": 7}, "sessionKey": "s"})).await;
    let shape = call(json!({"tool": "read", "arguments": [1], "sessionKey": "s"})).await;
    let empty = call(json!({"tool": " ", "sessionKey": "s"})).await;
    let mut r = Redactor::new();
    insta::assert_json_snapshot!(
        "refused_errors",
        r.value(&json!({
            "denied": denied,
            "unknown": unknown,
            "bad": bad,
            "shape": shape,
            "empty": empty,
        }))
    );
    // The refused call's run says why, in its events.
    let events = t
        .call(
            &g,
            "runs.events",
            json!({"runId": denied["details"]["runId"]}),
        )
        .await
        .unwrap();
    // run.created, run.started, tool.call.started, tool.call.failed,
    // run.failed.
    insta::assert_json_snapshot!(
        "refused_events",
        r.transcript(events["events"].as_array().unwrap())
    );
}

async fn t_call(g: &TestGateway, params: Value) -> Value {
    Transport::Http
        .call(g, "tools.invoke", params)
        .await
        .unwrap_err()
}
