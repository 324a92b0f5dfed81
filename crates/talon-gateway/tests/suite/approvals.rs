//! Durable approvals: a call the policy sends to a person waits as a
//! stored approval until `approvals.respond` (or its expiry, or the run's
//! end) resolves it; the first decision wins; remembered decisions are
//! reused, saying so.

use serde_json::{Value, json};
use talon_mock_model::Script;
use talon_testing::redact::{Redactor, redacted};
use talon_testing::wait;

use super::artifacts::sized;
use super::ws::{Transport, connect};
use super::{Options, TestGateway, call_then_say, stored_events, told};

/// The model writes `note.txt`, then says what came of it.
fn script() -> Script {
    call_then_say(
        "write",
        json!({"path": "note.txt", "content": "approved text"}),
        "Done.",
    )
}

async fn gateway(config: Value) -> TestGateway {
    let g = TestGateway::start_opts(Options {
        script: script(),
        config,
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    g
}

async fn create(g: &TestGateway, t: &Transport, key: &str) -> Value {
    let run = t
        .call(
            g,
            "runs.create",
            json!({"input": "write the note", "sessionKey": key}),
        )
        .await
        .unwrap();
    run["runId"].clone()
}

/// The run's pending approvals, once there is one.
async fn pending(g: &TestGateway, t: &Transport, run_id: &Value) -> Vec<Value> {
    wait::until_async("an approval to be requested", wait::DEADLINE, async || {
        let list = t
            .call(
                g,
                "approvals.list",
                json!({"runId": run_id, "status": "pending"}),
            )
            .await
            .unwrap();
        let approvals = list["approvals"].as_array().unwrap().clone();
        (!approvals.is_empty()).then_some(approvals)
    })
    .await
}

async fn wait(g: &TestGateway, t: &Transport, run_id: &Value) -> Value {
    t.call(
        g,
        "runs.wait",
        json!({"runId": run_id, "timeoutMs": 20_000}),
    )
    .await
    .unwrap()
}

async fn events(g: &TestGateway, t: &Transport, run_id: &Value) -> Vec<Value> {
    stored_events(g, t, run_id).await
}

/// What the model was last told of a call, as JSON.
fn told_json(g: &TestGateway) -> Value {
    serde_json::from_str(&told(g)).unwrap()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// One body, over HTTP and over WebSocket: what was asked, answered and
/// stored, redacted.
async fn approve_once(g: &TestGateway, t: &Transport, tag: &str) -> Value {
    let run_id = create(g, t, &format!("approve:{tag}")).await;
    let asked = pending(g, t, &run_id).await;
    let mut r = Redactor::new();
    let asked_shown = r.value(&json!(asked));
    let approval = &asked[0];
    let id = approval["id"].clone();
    let now = g.running.store.now_ms();
    let expires = approval["expiresAt"].as_u64().unwrap();
    assert!(expires > now + 23 * 3600 * 1000, "{approval}");
    // Nothing was written while it waits, and the run says it waits.
    assert!(!g.dir.path().join("workspace/note.txt").exists());
    let status = async || {
        let run = t
            .call(g, "runs.get", json!({"runId": run_id}))
            .await
            .unwrap();
        run["status"].as_str().unwrap().to_owned()
    };
    wait::until_async("the run to be waiting", wait::DEADLINE, async || {
        (status().await == "waiting").then_some(())
    })
    .await;
    let waiting = t
        .call(g, "runs.list", json!({"status": ["waiting"]}))
        .await
        .unwrap();
    assert!(
        waiting["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == run_id),
        "{waiting}"
    );
    let answered = t
        .call(
            g,
            "approvals.respond",
            json!({"approvalId": id, "decision": "approve_once", "reason": "fine"}),
        )
        .await
        .unwrap();
    let answered = r.value(&answered);
    let result = r.value(&wait(g, t, &run_id).await);
    assert_eq!(status().await, "completed");
    assert_eq!(
        std::fs::read_to_string(g.dir.path().join("workspace/note.txt")).unwrap(),
        "approved text"
    );
    let events = events(g, t, &run_id).await;
    assert_eq!(of_type(&events, "approval.requested").len(), 1);
    let resolved = of_type(&events, "approval.resolved");
    pretty_assertions::assert_eq!(
        resolved
            .iter()
            .map(|e| e["data"].clone())
            .collect::<Vec<_>>(),
        [
            json!({"approvalId": id, "status": "approved", "decision": "approve_once", "reason": "fine", "reused": false})
        ]
    );
    // The request comes before the call's end, the resolution between.
    let position = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
    assert!(position("approval.requested") < position("approval.resolved"));
    assert!(position("approval.resolved") < position("tool.call.completed"));
    // A second answer loses to the first, and learns what won.
    let late = t
        .call(
            g,
            "approvals.respond",
            json!({"approvalId": id, "decision": "deny"}),
        )
        .await
        .unwrap_err();
    json!({
        // One pending approval of the write, expiring in a day.
        "asked": asked_shown,
        "answered": answered,
        "result": result,
        // One approval.requested (pending), one approval.resolved.
        "events": r.transcript(&events),
        // A conflict naming the approve_once that won.
        "late": r.value(&late),
    })
}

#[tokio::test]
async fn a_call_waits_for_its_approval_over_http_and_websocket() {
    let g = gateway(json!({})).await;
    let http = approve_once(&g, &Transport::Http, "http").await;
    insta::assert_json_snapshot!("approve_once_http", sized(http));
    std::fs::remove_file(g.dir.path().join("workspace/note.txt")).unwrap();
    let socket = connect(&g, &g.admin).await.unwrap();
    let ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0))));
    let ws = approve_once(&g, &ws, "ws").await;
    insta::assert_json_snapshot!("approve_once_ws", sized(ws));
}

#[tokio::test]
async fn a_denied_call_is_not_made_and_the_model_reads_why() {
    let g = gateway(json!({})).await;
    let t = Transport::Http;
    let run_id = create(&g, &t, "deny").await;
    let id = pending(&g, &t, &run_id).await[0]["id"].clone();
    t.call(
        &g,
        "approvals.respond",
        json!({"approvalId": id, "decision": "deny", "reason": "not in main"}),
    )
    .await
    .unwrap();
    let mut r = Redactor::new();
    let result = r.value(&wait(&g, &t, &run_id).await);
    insta::assert_json_snapshot!("denied_result", sized(result));
    assert!(!g.dir.path().join("workspace/note.txt").exists());
    // The call of write was denied: not in main.
    insta::assert_json_snapshot!("denied_told", r.value(&told_json(&g)));
    let events = events(&g, &t, &run_id).await;
    insta::assert_json_snapshot!("denied_events", r.transcript(&events));
}

#[tokio::test]
async fn an_unanswered_approval_expires_and_the_call_fails_readably() {
    let g = gateway(json!({"tools": {"approvals": {"timeoutMs": 300}}})).await;
    let t = Transport::Http;
    let run_id = create(&g, &t, "expire").await;
    let id = pending(&g, &t, &run_id).await[0]["id"].clone();
    let mut r = Redactor::new();
    // The approval's id is `<appr..._1>` in what follows.
    r.value(&id);
    let result = wait(&g, &t, &run_id).await;
    insta::assert_json_snapshot!("expired_result", sized(r.value(&result)));
    assert!(!g.dir.path().join("workspace/note.txt").exists());
    // Its approval expired before anyone answered.
    insta::assert_json_snapshot!("expired_told", r.value(&told_json(&g)));
    let list = t
        .call(&g, "approvals.list", json!({"runId": run_id}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("expired_list", r.value(&list));
    let events = events(&g, &t, &run_id).await;
    pretty_assertions::assert_eq!(
        of_type(&events, "approval.resolved")[0]["data"],
        json!({"approvalId": id, "status": "expired", "reused": false})
    );
    // Too late to answer.
    let late = t
        .call(
            &g,
            "approvals.respond",
            json!({"approvalId": id, "decision": "approve_once"}),
        )
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("expired_late", r.value(&late));
}

#[tokio::test]
async fn of_fifty_concurrent_responders_exactly_one_wins() {
    let g = gateway(json!({})).await;
    let t = Transport::Http;
    let run_id = create(&g, &t, "race").await;
    let id = pending(&g, &t, &run_id).await[0]["id"].clone();
    let answers = futures::future::join_all((0..50).map(|i| {
        let decision = if i % 2 == 0 { "approve_once" } else { "deny" };
        let g = &g;
        let id = id.clone();
        async move {
            g.call(
                &g.admin,
                "approvals.respond",
                json!({"approvalId": id, "decision": decision, "reason": format!("responder {i}")}),
            )
            .await
        }
    }))
    .await;
    let winners: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == 200)
        .map(|(_, body)| body)
        .collect();
    assert_eq!(winners.len(), 1, "{answers:?}");
    let winner = winners[0];
    for (status, body) in answers.iter().filter(|(status, _)| *status != 200) {
        pretty_assertions::assert_eq!(
            (*status, body),
            (
                409,
                &json!({"error": {
                    "code": "conflict",
                    "message": "this approval was already resolved",
                    "retryable": false,
                    "details": {"approval": winner},
                }})
            )
        );
    }
    let result = wait(&g, &t, &run_id).await;
    assert_eq!(result["status"], "completed", "{result}");
    let written = g.dir.path().join("workspace/note.txt").exists();
    assert_eq!(written, winner["decision"] == "approve_once", "{winner}");
    let events = events(&g, &t, &run_id).await;
    let resolved: Vec<&Value> = of_type(&events, "approval.resolved")
        .iter()
        .map(|e| &e["data"])
        .collect();
    pretty_assertions::assert_eq!(
        resolved,
        [&json!({
            "approvalId": id,
            "status": winner["status"],
            "decision": winner["decision"],
            "reason": winner["reason"],
            "reused": false,
        })]
    );
}

#[tokio::test]
async fn a_remembered_decision_is_reused_in_its_session_and_says_so() {
    let g = gateway(json!({})).await;
    let t = Transport::Http;
    let first = create(&g, &t, "remember").await;
    let id = pending(&g, &t, &first).await[0]["id"].clone();
    t.call(
        &g,
        "approvals.respond",
        json!({"approvalId": id, "decision": "approve_session"}),
    )
    .await
    .unwrap();
    let first_result = wait(&g, &t, &first).await;
    // The same session: approved without asking.
    let second = create(&g, &t, "remember").await;
    let mut r = Redactor::new();
    // The first approval's id is `<appr..._1>` in what follows.
    r.value(&id);
    let result = wait(&g, &t, &second).await;
    insta::assert_json_snapshot!("remembered_result", sized(r.value(&result)));
    // No approval.requested; one approval.resolved, approved by the
    // remembered approve_session, reused, naming the first approval.
    let seen = events(&g, &t, &second).await;
    insta::assert_json_snapshot!("remembered_events", r.transcript(&seen));
    // The reused approval is stored, approved.
    let list = t
        .call(&g, "approvals.list", json!({"runId": second}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("remembered_list", r.value(&list));
    // Another session is asked.
    let other = create(&g, &t, "elsewhere").await;
    let asked = pending(&g, &t, &other).await;
    t.call(
        &g,
        "approvals.respond",
        json!({"approvalId": asked[0]["id"], "decision": "approve_always"}),
    )
    .await
    .unwrap();
    let other_result = wait(&g, &t, &other).await;
    // And `approve_always` covers every session after it.
    let anywhere = create(&g, &t, "a third").await;
    let anywhere_result = wait(&g, &t, &anywhere).await;
    let seen = events(&g, &t, &anywhere).await;
    // Approved by the remembered approve_always, reused.
    let resolved = of_type(&seen, "approval.resolved");
    insta::assert_json_snapshot!("always_resolved", redacted(resolved[0]));
    // Each of the other runs completed.
    insta::assert_json_snapshot!(
        "remembered_others",
        sized(redacted(&json!({
            "first": first_result,
            "other": other_result,
            "anywhere": anywhere_result,
        })))
    );
}

/// An approval stored before `toolId` (the catalog id in `toolName`) and
/// answered `approve_always` after the upgrade still covers its tool:
/// the run's write is approved without asking, by a reused approval in
/// the new shape that names it.
#[tokio::test]
async fn an_approval_from_before_tool_id_still_covers_its_tool() {
    let g = gateway(json!({})).await;
    let t = Transport::Http;
    let legacy: talon_protocol::gateway::Approval = serde_json::from_value(json!({
        "id": "appr_legacy", "runId": "run_legacy", "kind": "tool",
        "summary": "write {}", "toolName": "openclaw:core:write", "risk": "medium",
        "decisions": ["approve_once", "approve_session", "approve_always", "deny"],
        "reusable": true, "status": "pending", "createdAt": 1,
    }))
    .unwrap();
    g.running.store.create_approval(&legacy).await.unwrap();
    t.call(
        &g,
        "approvals.respond",
        json!({"approvalId": "appr_legacy", "decision": "approve_always"}),
    )
    .await
    .unwrap();
    let run_id = create(&g, &t, "after the upgrade").await;
    assert_eq!(wait(&g, &t, &run_id).await["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(g.dir.path().join("workspace/note.txt")).unwrap(),
        "approved text"
    );
    let list = t
        .call(&g, "approvals.list", json!({"runId": run_id}))
        .await
        .unwrap();
    let shown: Vec<Value> = list["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            json!({
                "status": a["status"], "decision": a["decision"], "reason": a["reason"],
                "toolName": a["toolName"], "toolId": a["toolId"],
            })
        })
        .collect();
    assert_eq!(
        shown,
        [json!({
            "status": "approved", "decision": "approve_always",
            "reason": "remembered from approval appr_legacy",
            "toolName": "write", "toolId": "openclaw:core:write",
        })]
    );
    let events = events(&g, &t, &run_id).await;
    assert_eq!(
        (
            of_type(&events, "approval.requested").len(),
            of_type(&events, "approval.resolved")
                .iter()
                .map(|e| e["data"]["reused"].clone())
                .collect::<Vec<_>>()
        ),
        (0, vec![json!(true)])
    );
}

#[tokio::test]
async fn cancelling_a_waiting_run_cancels_its_approval() {
    let g = gateway(json!({})).await;
    let t = Transport::Http;
    let run_id = create(&g, &t, "cancel").await;
    let id = pending(&g, &t, &run_id).await[0]["id"].clone();
    t.call(&g, "runs.cancel", json!({"runId": run_id}))
        .await
        .unwrap();
    let mut r = Redactor::new();
    // The approval's id is `<appr..._1>` in what follows.
    r.value(&id);
    let result = wait(&g, &t, &run_id).await;
    insta::assert_json_snapshot!("cancelled_result", sized(r.value(&result)));
    let events = events(&g, &t, &run_id).await;
    // approval.resolved (cancelled) before run.cancelled.
    insta::assert_json_snapshot!("cancelled_events", r.transcript(&events));
    let position = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
    assert!(position("approval.resolved") < position("run.cancelled"));
    // The store holds it cancelled by the time the run's end is seen.
    let list = t
        .call(&g, "approvals.list", json!({"runId": run_id}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("cancelled_list", r.value(&list));
}

#[tokio::test]
async fn policy_rules_allow_or_deny_without_asking_and_a_bad_policy_is_refused_with_the_config() {
    let g = gateway(json!({"tools": {"approvals": {"rules": [
        {"tool": "write", "action": "deny"}
    ]}}}))
    .await;
    let t = Transport::Http;
    let run_id = create(&g, &t, "deny-rule").await;
    let mut r = Redactor::new();
    let result = wait(&g, &t, &run_id).await;
    insta::assert_json_snapshot!("deny_rule_result", sized(r.value(&result)));
    // Write is denied by the approval policy (tools.approvals).
    insta::assert_json_snapshot!("deny_rule_told", r.value(&told_json(&g)));
    // No approval.requested.
    let events = events(&g, &t, &run_id).await;
    insta::assert_json_snapshot!("deny_rule_events", r.transcript(&events));

    let g = gateway(json!({"tools": {"approvals": {"rules": [
        {"source": "core", "action": "allow"}
    ]}}}))
    .await;
    let run_id = create(&g, &t, "allow-rule").await;
    let result = wait(&g, &t, &run_id).await;
    insta::assert_json_snapshot!("allow_rule_result", sized(redacted(&result)));
    assert!(g.dir.path().join("workspace/note.txt").exists());

    // A bad policy is refused with the config (read once, when the host
    // is made), before any run: `talon gateway` does not start on it.
    let config = talon_config::Config::parse(r#"{tools: {approvals: "sometimes"}}"#, None).unwrap();
    let error = talon_runtime::Host::new(std::sync::Arc::new(config), Default::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "config key tools.approvals: `sometimes` is not one of `ask`, `allow`, `deny`"
    );
}

/// A provider may give every turn's call the same id (the mock model says
/// `call_1` each turn): one `approve_once` must still approve one call.
/// Another tool or other arguments under the same id, and the very same
/// call made again in a later turn, each ask anew.
#[tokio::test]
async fn an_approve_once_approves_one_call_even_when_call_ids_repeat() {
    use talon_mock_model::{Replay, Turn};
    let write = |path: &str| super::tool_turn("write", json!({"path": path, "content": "x"}));
    let g = TestGateway::start_opts(Options {
        script: Script {
            turns: vec![
                write("a.txt"),
                write("b.txt"),
                write("a.txt"),
                super::tool_turn("exec", json!({"command": "true"})),
                Turn {
                    text: Some("Done.".into()),
                    ..Turn::default()
                },
            ],
            replay: Replay::PerRun,
            ..Script::default()
        },
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let t = Transport::Http;
    let run_id = create(&g, &t, "repeated-ids").await;
    let mut answered = Vec::new();
    for _ in 0..4 {
        let asked = super::next_pending(&g, &t, "approvals", &run_id).await;
        t.call(
            &g,
            "approvals.respond",
            json!({"approvalId": asked["id"], "decision": "approve_once"}),
        )
        .await
        .unwrap();
        answered.push(asked);
    }
    let result = wait(&g, &t, &run_id).await;
    assert_eq!(result["status"], "completed", "{result}");
    let asked: Vec<Value> = answered
        .iter()
        .map(|a| json!([a["toolName"], a["toolCallId"], a["arguments"]]))
        .collect();
    pretty_assertions::assert_eq!(
        asked,
        vec![
            json!(["write", "call_1", {"path": "a.txt", "content": "x"}]),
            json!(["write", "call_1", {"path": "b.txt", "content": "x"}]),
            json!(["write", "call_1", {"path": "a.txt", "content": "x"}]),
            json!(["exec", "call_1", {"command": "true"}]),
        ]
    );
    let all = t
        .call(&g, "approvals.list", json!({"runId": run_id}))
        .await
        .unwrap();
    let statuses: Vec<Value> = all["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].clone())
        .collect();
    assert_eq!(statuses, vec![json!("approved"); 4]);
}

#[tokio::test]
async fn approvals_page_in_creation_order_with_a_cursor_and_a_bounded_limit() {
    let g = gateway(json!({})).await;
    let t = Transport::Http;
    let mut asked = Vec::new();
    for key in ["p1", "p2", "p3"] {
        let run = create(&g, &t, key).await;
        asked.push(pending(&g, &t, &run).await[0]["id"].clone());
    }
    let list = |params: Value| {
        let t = &t;
        let g = &g;
        async move { t.call(g, "approvals.list", params).await.unwrap() }
    };
    let first = list(json!({"status": "pending", "limit": 2})).await;
    let ids = |page: &Value| -> Vec<Value> {
        page["approvals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].clone())
            .collect()
    };
    assert_eq!(ids(&first), asked[..2]);
    assert_eq!(first["nextCursor"], asked[1]);
    let second =
        list(json!({"status": "pending", "limit": 2, "cursor": first["nextCursor"]})).await;
    assert_eq!(
        (ids(&second), second.get("nextCursor")),
        (asked[2..].to_vec(), None)
    );
    // A limit past the cap is the cap; zero is one.
    let one = list(json!({"status": "pending", "limit": 0})).await;
    assert_eq!(ids(&one), asked[..1]);
    let error = t
        .call(&g, "approvals.list", json!({"limit": -1}))
        .await
        .unwrap_err();
    assert_eq!(error["code"], "invalid_request");
}
