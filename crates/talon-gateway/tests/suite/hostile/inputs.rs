//! Inputs that pile up: every capped string of every method's params,
//! read off the committed schema, at its cap and one past it; a session
//! key stored once per session; the bytes of writes per token; and the
//! stored bytes quota.

use serde_json::{Value, json};
use talon_gateway::Limits;
use talon_protocol::gateway::bounded::SessionKey;

use super::super::artifacts::sized;
use super::super::ws::{Transport, connect};
use super::super::{Options, TestGateway};

/// The protocol's committed schema (what generators read).
fn schema() -> Value {
    let text = include_str!("../../../../talon-protocol/schema/gateway.schema.json");
    serde_json::from_str(text).unwrap()
}

/// The string cap of a property's schema (through `$ref` and a nullable
/// `anyOf`), if it has one.
fn cap_of(defs: &Value, schema: &Value) -> Option<u64> {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.strip_prefix("#/$defs/")?;
        return cap_of(defs, &defs[name]);
    }
    if let Some(variants) = schema["anyOf"].as_array() {
        return variants.iter().find_map(|v| cap_of(defs, v));
    }
    let is_string = schema["type"] == "string"
        || schema["type"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("string")));
    if is_string {
        schema["maxLength"].as_u64()
    } else {
        None
    }
}

/// `(method, field, cap)` for every top-level capped string of every
/// method's params.
fn capped_fields() -> Vec<(String, String, u64)> {
    let schema = schema();
    let defs = &schema["$defs"];
    let mut fields = Vec::new();
    for method in schema["methods"].as_array().unwrap() {
        let name = method["name"].as_str().unwrap();
        let Some(params) = method["params"]["$ref"].as_str() else {
            continue;
        };
        let params = &defs[params.strip_prefix("#/$defs/").unwrap()];
        for (field, property) in params["properties"].as_object().into_iter().flatten() {
            if let Some(cap) = cap_of(defs, property) {
                fields.push((name.to_owned(), field.clone(), cap));
            }
        }
    }
    fields
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_capped_field_is_refused_past_its_cap_naming_the_field_and_the_cap() {
    let fields = capped_fields();
    // The ids, keys and names the review found unbounded are among them.
    for (method, field) in [
        ("runs.create", "sessionKey"),
        ("runs.create", "idempotencyKey"),
        ("runs.create", "agentId"),
        ("agents.create", "id"),
        ("sessions.create", "key"),
        ("runs.get", "runId"),
        ("approvals.respond", "approvalId"),
        ("environments.create", "idempotencyKey"),
        ("tools.invoke", "tool"),
    ] {
        assert!(
            fields.iter().any(|(m, f, _)| m == method && f == field),
            "{method}.{field} has no maxLength in the schema"
        );
    }
    assert!(fields.len() >= 40, "{} capped fields", fields.len());
    let g = TestGateway::start_opts(Options {
        limits: Limits {
            calls_per_second: 10_000.0,
            burst: 10_000,
            ..Limits::default()
        },
        ..Options::default()
    })
    .await;
    let ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((
        connect(&g, &g.admin).await.unwrap(),
        0,
    ))));
    // Per field, the one error both transports gave: naming the field
    // and the cap.
    let mut refused = Vec::new();
    for (method, field, cap) in &fields {
        // A multi-byte character: caps count characters, not bytes.
        let over: String = "é".repeat(*cap as usize + 1);
        let mut errors = Vec::new();
        for transport in [&Transport::Http, &ws] {
            let error = transport
                .call(&g, method, json!({field.as_str(): over}))
                .await
                .expect_err(&format!("{method}.{field} took {} characters", cap + 1));
            errors.push(error);
        }
        pretty_assertions::assert_eq!(errors[0], errors[1], "{method}.{field}");
        refused.push(json!({"method": method, "field": field, "cap": cap, "error": errors[0]}));
    }
    insta::assert_json_snapshot!("over_the_cap", refused);
    // A control character in an id is refused too; at the cap, the field
    // itself is taken (the call fails later, for what it names).
    let error = Transport::Http
        .call(&g, "runs.get", json!({"runId": "run_\u{0}x"}))
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("control_character", error);
    let at_cap = Transport::Http
        .call(&g, "runs.get", json!({"runId": "r".repeat(128)}))
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("at_the_cap", at_cap);
    // Nested caps: a message's tool call id, a client tool's name.
    let mut nested = Vec::new();
    for (params, field) in [
        (
            json!({"input": [{"role": "tool", "toolCallId": "c".repeat(129), "content": "x"}]}),
            "input[0].toolCallId",
        ),
        (
            json!({"input": "x", "tools": [{"name": "n".repeat(65), "parameters": {}}]}),
            "tools[0].name",
        ),
    ] {
        let error = Transport::Http
            .call(&g, "runs.create", params)
            .await
            .unwrap_err();
        nested.push(json!({"field": field, "error": error}));
    }
    insta::assert_json_snapshot!("nested", nested);
    // Session metadata: a bounded number of bounded keys.
    let many: serde_json::Map<String, Value> =
        (0..65).map(|i| (format!("k{i}"), json!(i))).collect();
    let mut metadata_refused = Vec::new();
    for metadata in [
        json!(many),
        json!({"k".repeat(129): 1}),
        json!({"k": "v".repeat(17_000)}),
    ] {
        let error = Transport::Http
            .call(
                &g,
                "sessions.create",
                json!({"agentId": "main", "key": "m", "metadata": metadata}),
            )
            .await
            .unwrap_err();
        metadata_refused.push(error);
    }
    insta::assert_json_snapshot!("metadata", metadata_refused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_key_at_its_cap_is_kept_with_the_session_and_read_back_on_its_events() {
    // (That it takes no room per event is measured in talon-store's
    // suite: `a_session_key_is_stored_with_its_session_not_with_each_event`.)
    let g = TestGateway::with_script(talon_mock_model::Script {
        replay: talon_mock_model::Replay::PerRun,
        ..talon_mock_model::Script::texts(&["Hello."])
    })
    .await;
    let key = format!("session-{}", "k".repeat(248));
    assert_eq!(key.chars().count(), 256);
    let mut results = Vec::new();
    for _ in 0..4 {
        let (status, run) = g
            .call(
                &g.admin,
                "runs.create",
                json!({"input": "hi", "sessionKey": key}),
            )
            .await;
        assert_eq!(status, 200, "{run}");
        let (_, done) = g
            .call(
                &g.admin,
                "runs.wait",
                json!({"runId": run["id"], "timeoutMs": 10_000}),
            )
            .await;
        results.push(done);
    }
    // The key at its cap, as `<key>`.
    let mut redactor = talon_testing::redact::Redactor::new().with(key.as_str(), "<key>");
    insta::assert_json_snapshot!("results", sized(redactor.value(&json!(results))));
    let filter = talon_store::EventFilter {
        session_key: Some(key.clone()),
        ..Default::default()
    };
    let events = g.running.store.after(None, &filter, 10_000).await.unwrap();
    assert!(events.len() >= 16, "{} events", events.len());
    assert!(
        events
            .iter()
            .all(|e| e.session_key.as_ref().map(SessionKey::as_str) == Some(key.as_str()))
    );
    // The session's `session.created` first, then its run's.
    assert_eq!(events[0].kind, talon_protocol::EventType::SessionCreated);
    let (_, page) = g
        .call(&g.admin, "runs.events", json!({"runId": events[1].run_id}))
        .await;
    // Each event names the whole key.
    insta::assert_json_snapshot!(
        "events",
        redactor.transcript(page["events"].as_array().unwrap())
    );
}

#[tokio::test]
async fn the_bytes_of_writes_are_limited_per_token_and_the_store_has_a_quota() {
    let g = TestGateway::start_with(Limits {
        max_body_bytes: 64 << 10,
        input_burst_bytes: 64 << 10,
        input_bytes_per_second: 1024,
        ..Limits::default()
    })
    .await;
    let big = json!({"agentId": "main", "key": "big", "metadata": {"pad": "x".repeat(15_000)}});
    let mut limited = None;
    for i in 0..8 {
        let mut params = big.clone();
        params["key"] = json!(format!("big-{i}"));
        let (status, body) = g.call(&g.admin, "sessions.create", params).await;
        if status != 200 {
            limited = Some((status, body));
            break;
        }
    }
    let (status, body) = limited.expect("64 KiB of writes at 1 KiB/s is limited");
    assert!(
        body["error"]["retryAfterMs"].as_u64().unwrap() > 0,
        "{body}"
    );
    // The wait depends on how long the calls above took.
    let waited = |mut body: Value| {
        body["retryAfterMs"] = json!("<wait>");
        body
    };
    insta::assert_json_snapshot!(
        "rate_limited",
        json!([status, {"error": waited(body["error"].clone())}])
    );
    // Over WebSocket alike.
    let ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((
        connect(&g, &g.admin).await.unwrap(),
        0,
    ))));
    let error = ws
        .call(&g, "sessions.create", big.clone())
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("rate_limited_ws", waited(error));
    // Reads are not metered.
    let (status, _) = g.call(&g.admin, "sessions.list", json!({})).await;
    assert_eq!(status, 200);

    // A quota the store already holds: writes are refused, reads go on.
    let g = TestGateway::start_with(Limits {
        max_stored_bytes: Some(4096),
        ..Limits::default()
    })
    .await;
    let (status, body) = g
        .call(
            &g.admin,
            "sessions.create",
            json!({"agentId": "main", "key": "q"}),
        )
        .await;
    let stored = body["error"]["details"]["storedBytes"].as_u64().unwrap();
    assert!(stored > 4096, "{body}");
    // What the store holds depends on what it wrote at start.
    let mut whole = body.clone();
    whole["error"]["details"]["storedBytes"] = json!("<stored>");
    let whole = talon_testing::redact::Redactor::new()
        .with(format!("holds {stored} bytes"), "holds <stored> bytes")
        .value(&json!([status, whole]));
    insta::assert_json_snapshot!("quota", whole);
    let (status, _) = g.call(&g.admin, "sessions.list", json!({})).await;
    assert_eq!(status, 200);
    // A read that would store counts; what stops work or frees room always
    // passes the quota (it may fail for its own reasons, never for room).
    let code = |body: &Value| body["error"]["code"].clone();
    let (_, resolved) = g
        .call(&g.admin, "sessions.resolve", json!({"key": "new"}))
        .await;
    assert_eq!(code(&resolved), "quota_exceeded");
    let (_, ticket) = g.call(&g.admin, "tokens.ticket", json!({})).await;
    assert_eq!(code(&ticket), "quota_exceeded");
    for (method, params) in [
        ("runs.cancel", json!({"runId": "run_x"})),
        ("sessions.abort", json!({"sessionId": "sess_x"})),
        ("sessions.delete", json!({"sessionId": "sess_x"})),
        ("runs.delete", json!({"runId": "run_x"})),
        (
            "approvals.respond",
            json!({"approvalId": "ap_x", "decision": "deny"}),
        ),
        (
            "questions.respond",
            json!({"questionId": "q_x", "answer": "no"}),
        ),
        ("environments.delete", json!({"environmentId": "env_x"})),
        ("tokens.revoke", json!({"tokenId": "tok_x"})),
    ] {
        let (status, body) = g.call(&g.admin, method, params).await;
        assert_eq!(
            (status, code(&body)),
            (404, json!("not_found")),
            "{method}: {body}"
        );
    }
}
