//! The HTTP transport: health, the OpenAPI document, tokens, the error
//! shape for every kind of bad request, and the store-backed methods.

use std::os::unix::fs::PermissionsExt as _;
use talon_protocol::gateway::bounded::{ApprovalId, RunId};

use serde_json::{Value, json};
use talon_gateway::tokens;
use talon_protocol::gateway::{
    Approval, ApprovalDecision, ApprovalKind, ApprovalStatus, RiskLevel, Scope,
};

use talon_testing::redact::{Redactor, redacted};

use super::TestGateway;

#[tokio::test]
async fn health_openapi_and_the_admin_token_on_first_start() {
    let g = TestGateway::start().await;
    let health = g.client.get(g.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let openapi: Value = g
        .client
        .get(g.url("/v1/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(openapi, talon_protocol::openapi::openapi());
    // The admin token is on disk, owner-only, and works.
    let file = g.dir.path().join("admin.token");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), g.admin);
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let (status, body) = g.call(&g.admin, "agents.list", json!({})).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"agents": [{"id": "main", "description": "The default agent", "source": "config"}]})
        )
    );
    // A restart mints nothing new.
    let config = g.same_state();
    g.running.shutdown().await;
    let again = talon_gateway::start(config).await.unwrap();
    assert_eq!(again.admin_token, None);
    again.shutdown().await;
}

#[tokio::test]
async fn bad_requests_get_the_one_error_shape() {
    let g = TestGateway::start().await;
    // Each case with its status and whole body, snapshotted at the end.
    let mut seen = Vec::new();
    // No token, a wrong one, a malformed header.
    for auth in [
        None,
        Some("Bearer talon_0000"),
        Some("Basic abc"),
        Some("Bearer "),
    ] {
        let mut request = g.client.post(g.url("/v1/agents.list")).json(&json!({}));
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        seen.push(
            json!({"case": format!("authorization {auth:?}"), "status": status, "body": body}),
        );
    }
    // Unknown method, malformed JSON, params of the wrong shape, a body
    // over the limit, an unknown route.
    let (status, body) = g.call(&g.admin, "agents.explode", json!({})).await;
    seen.push(json!({"case": "an unknown method", "status": status, "body": body}));
    let response = g
        .client
        .post(g.url("/v1/agents.list"))
        .bearer_auth(&g.admin)
        .body("{not json")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    seen.push(json!({"case": "malformed JSON", "status": status, "body": body}));
    for params in [
        json!([1, 2]),
        json!({"agentId": 5}),
        json!({"agentId": "a", "extra": true}),
    ] {
        let (status, body) = g.call(&g.admin, "agents.get", params.clone()).await;
        seen.push(json!({"case": format!("params {params}"), "status": status, "body": body}));
    }
    let huge = "x".repeat(5 << 20);
    let response = g
        .client
        .post(g.url("/v1/agents.list"))
        .bearer_auth(&g.admin)
        .body(huge)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    seen.push(json!({"case": "a body over the limit", "status": status, "body": body}));
    let response = g.client.get(g.url("/v2/nothing")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 404);
    // A method's own refusal has the same shape.
    let (status, body) = g
        .call(&g.admin, "tasks.get", json!({"taskId": "task_nope"}))
        .await;
    seen.push(json!({"case": "a task that does not exist", "status": status, "body": body}));
    insta::assert_json_snapshot!("bad_requests", redacted(&Value::from(seen)));
    // Still serving.
    assert_eq!(g.call(&g.admin, "agents.list", json!({})).await.0, 200);
}

#[tokio::test]
async fn a_refused_token_is_told_why_with_a_bearer_challenge() {
    let g = TestGateway::start().await;
    let now = g.running.store.now_ms();
    let live = tokens::create(
        &g.running.store,
        None,
        vec![Scope::AgentRead],
        Some(now + 60_000),
        now,
    )
    .await
    .unwrap();
    let expired = tokens::create(
        &g.running.store,
        None,
        vec![Scope::AgentRead],
        Some(now - 1),
        now - 10,
    )
    .await
    .unwrap();
    assert_eq!(g.call(&live.secret, "agents.list", json!({})).await.0, 200);
    let revoked = tokens::create(&g.running.store, None, vec![Scope::AgentRead], None, now)
        .await
        .unwrap();
    g.running
        .store
        .revoke_token(&revoked.stored.id, now)
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let ask = |authorization: Option<String>| {
        let mut request = client.post(g.url("/v1/agents.list")).json(&json!({}));
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        async move {
            let response = request.send().await.unwrap();
            let challenge = response.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .to_owned();
            (
                response.status().as_u16(),
                challenge,
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let refused = |reason: &str, message: &str| {
        let challenge = if reason == "missing" {
            "Bearer realm=\"talon\"".to_owned()
        } else {
            format!(
                "Bearer realm=\"talon\", error=\"invalid_token\", error_description=\"the token is {reason}\""
            )
        };
        (
            401,
            challenge,
            json!({"error": {"code": "unauthenticated", "message": message, "retryable": false,
                "details": {"reason": reason}}}),
        )
    };
    let unknown = format!("Bearer talon_{}", "0".repeat(64));
    assert_eq!(
        [
            ask(None).await,
            ask(Some("Basic dXNlcjpwYXNz".into())).await,
            ask(Some(unknown)).await,
            ask(Some(format!("Bearer {}", revoked.secret))).await,
            ask(Some(format!("Bearer {}", expired.secret))).await,
        ],
        [
            refused(
                "missing",
                "no token: send Authorization: Bearer <token> (`talon token create` makes one)"
            ),
            refused(
                "malformed",
                "the Authorization header is not `Bearer talon_<secret>`"
            ),
            refused("unknown", "this token is not known to this gateway"),
            refused("revoked", "this token was revoked"),
            refused("expired", "this token has expired"),
        ]
    );
    g.running
        .store
        .revoke_token(&live.stored.id, now)
        .await
        .unwrap();
    assert_eq!(g.call(&live.secret, "agents.list", json!({})).await.0, 401);
}

#[tokio::test]
async fn a_wrong_http_method_gets_the_envelope_and_allow() {
    let g = TestGateway::start().await;
    let client = reqwest::Client::new();
    let mut seen = Vec::new();
    for (method, path) in [
        (reqwest::Method::GET, "/v1/agents.list"),
        (reqwest::Method::PUT, "/v1/runs.create"),
        (reqwest::Method::POST, "/healthz"),
        (reqwest::Method::DELETE, "/v1/events"),
    ] {
        let response = client
            .request(method, g.url(path))
            .bearer_auth(&g.admin)
            .send()
            .await
            .unwrap();
        let allow = response
            .headers()
            .get("allow")
            .map(|v| v.to_str().unwrap().to_owned());
        seen.push((
            response.status().as_u16(),
            allow,
            response.json::<Value>().await.unwrap(),
        ));
    }
    let expected = |allow: &str| {
        (
            405,
            Some(allow.to_owned()),
            json!({"error": {"code": "method_not_allowed", "message": format!("this path takes {allow} only"),
                "retryable": false}}),
        )
    };
    assert_eq!(
        seen,
        [
            expected("POST"),
            expected("POST"),
            expected("GET"),
            expected("GET")
        ]
    );
    let lost = client.get(g.url("/v2/nothing")).send().await.unwrap();
    assert_eq!(
        (lost.status().as_u16(), lost.json::<Value>().await.unwrap()),
        (
            404,
            json!({"error": {"code": "not_found",
            "message": "no such route: methods are POST /v1/<method>, described by /v1/openapi.json and readable at /docs",
            "retryable": false}})
        )
    );
}

#[tokio::test]
async fn agents_and_sessions_through_the_api() {
    let g = TestGateway::start().await;
    let (status, agent) = g
        .call(
            &g.admin,
            "agents.create",
            json!({"id": "helper", "name": "Helper", "idempotencyKey": "k1"}),
        )
        .await;
    // One numbering for the sessions below.
    let mut redactor = Redactor::new();
    insta::assert_json_snapshot!("agents_created", redactor.value(&json!([status, agent])));
    let (status, _) = g
        .call(
            &g.admin,
            "agents.create",
            json!({"id": "helper", "idempotencyKey": "k2"}),
        )
        .await;
    assert_eq!(status, 409);
    let (_, updated) = g
        .call(
            &g.admin,
            "agents.update",
            json!({"agentId": "helper", "model": "mock/m", "idempotencyKey": "k3"}),
        )
        .await;
    insta::assert_json_snapshot!("agents_updated", redactor.value(&updated));
    let (status, _) = g
        .call(&g.admin, "agents.get", json!({"agentId": "ghost"}))
        .await;
    assert_eq!(status, 404);
    let (status, session) = g
        .call(
            &g.admin,
            "sessions.create",
            json!({"agentId": "helper", "key": "app:1", "idempotencyKey": "s1"}),
        )
        .await;
    insta::assert_json_snapshot!("agents_session", redactor.value(&json!([status, session])));
    let (_, resolved) = g
        .call(&g.admin, "sessions.resolve", json!({"key": "app:1"}))
        .await;
    assert_eq!(resolved, session);
    let (_, fresh) = g
        .call(
            &g.admin,
            "sessions.resolve",
            json!({"key": "app:2", "agentId": "helper"}),
        )
        .await;
    insta::assert_json_snapshot!("agents_fresh", redactor.value(&fresh));
    let (_, listed) = g.call(&g.admin, "sessions.list", json!({"limit": 1})).await;
    insta::assert_json_snapshot!("agents_listed", redactor.value(&listed));
    let cursor = listed["nextCursor"].as_str().unwrap();
    let (_, rest) = g
        .call(&g.admin, "sessions.list", json!({"cursor": cursor}))
        .await;
    // The last page: no cursor.
    insta::assert_json_snapshot!("agents_rest", redactor.value(&rest));
    let (_, messages) = g
        .call(
            &g.admin,
            "sessions.messages",
            json!({"sessionId": session["id"]}),
        )
        .await;
    assert_eq!(messages, json!({"messages": [], "hasMore": false}));
    let (status, fork) = g
        .call(
            &g.admin,
            "sessions.fork",
            json!({"sessionId": session["id"], "idempotencyKey": "f1"}),
        )
        .await;
    insta::assert_json_snapshot!("agents_fork", redactor.value(&json!([status, fork])));
    let (status, _) = g
        .call(
            &g.admin,
            "sessions.create",
            json!({"agentId": "nobody", "idempotencyKey": "s2"}),
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn an_approval_is_answered_once() {
    let g = TestGateway::start().await;
    let approval = Approval {
        id: ApprovalId::new("ap1"),
        run_id: RunId::new("r1"),
        session_id: None,
        kind: ApprovalKind::Tool,
        summary: "delete build/".into(),
        tool_name: Some("exec".into()),
        tool_id: Some("openclaw:core:exec".into()),
        tool_call_id: None,
        arguments: None,
        environment_action: None,
        risk: RiskLevel::High,
        decisions: vec![ApprovalDecision::ApproveOnce, ApprovalDecision::Deny],
        expires_at: None,
        reusable: false,
        status: ApprovalStatus::Pending,
        decision: None,
        reason: None,
        created_at: 1,
        resolved_at: None,
    };
    g.running.store.create_approval(&approval).await.unwrap();
    let (_, pending) = g
        .call(&g.admin, "approvals.list", json!({"status": "pending"}))
        .await;
    insta::assert_json_snapshot!("approval_pending", pending);
    let (status, body) = g
        .call(
            &g.admin,
            "approvals.respond",
            json!({"approvalId": "ap1", "decision": "approve_always", "idempotencyKey": "a0"}),
        )
        .await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": {
                "code": "invalid_request",
                "message": "decision not offered for this approval; offered: approve_once, deny",
                "retryable": false,
            }})
        )
    );
    let (status, won) = g
        .call(&g.admin, "approvals.respond", json!({"approvalId": "ap1", "decision": "deny", "reason": "no", "idempotencyKey": "a1"}))
        .await;
    insta::assert_json_snapshot!("approval_won", redacted(&json!([status, won])));
    let (status, lost) = g
        .call(
            &g.admin,
            "approvals.respond",
            json!({"approvalId": "ap1", "decision": "approve_once", "idempotencyKey": "a2"}),
        )
        .await;
    pretty_assertions::assert_eq!(
        (status, lost),
        (
            409,
            json!({"error": {
                "code": "conflict",
                "message": "this approval was already resolved",
                "retryable": false,
                "details": {"approval": won}
            }})
        )
    );
    let (_, pending) = g
        .call(&g.admin, "approvals.list", json!({"status": "pending"}))
        .await;
    assert_eq!(pending, json!({"approvals": []}));
}
