//! The fake gateway's `tokens.create` and `runs.list`: the token it mints
//! authenticates until it expires; a retry with the same idempotency key
//! replaces its secret; other params with the key are a conflict; runs
//! are listed newest first, filtered and paged; bad params are the real
//! gateway's `invalid_request`.

use super::sized;
use serde_json::{Value, json};
use talon_sdk_testing::FakeGateway;
use talon_testing::redact::Redactor;
use talon_testing::wait;

async fn call(g: &FakeGateway, token: &str, method: &str, params: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/v1/{method}", g.url()))
        .bearer_auth(token)
        .json(&params)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn minted_tokens_authenticate_and_a_keyed_retry_replaces_the_secret() {
    let g = FakeGateway::start().await.unwrap();
    let mut r = Redactor::new();
    let params =
        json!({"name": "web", "preset": "viewer", "expiresInMs": 60_000, "idempotencyKey": "k"});
    let minted = json!({
        "token": "<secret>",
        "id": "<tok_1>",
        "name": "web",
        "scopes": ["agent.read", "session.read", "task.read", "schedule.read", "artifacts.read"],
        "expiresAt": "<time>"
    });
    let (status, first) = call(&g, g.token(), "tokens.create", params.clone()).await;
    assert_eq!((status, r.value(&first)), (200, minted.clone()));
    let old = first["token"].as_str().unwrap().to_owned();
    assert_eq!(call(&g, &old, "agents.list", json!({})).await.0, 200);

    // The same id (numbered the same), a new secret.
    let (_, second) = call(&g, g.token(), "tokens.create", params).await;
    assert_eq!(r.value(&second), minted);
    let (status, refused) = call(&g, &old, "agents.list", json!({})).await;
    assert_eq!(
        (status, refused),
        (
            401,
            json!({"error": {"code": "unauthenticated",
                "message": "this token is not known to this gateway", "retryable": false,
                "details": {"reason": "unknown"}}})
        )
    );
    assert_eq!(
        call(
            &g,
            second["token"].as_str().unwrap(),
            "agents.list",
            json!({})
        )
        .await
        .0,
        200
    );

    let other =
        json!({"name": "web", "preset": "app", "expiresInMs": 60_000, "idempotencyKey": "k"});
    let (status, conflict) = call(&g, g.token(), "tokens.create", other).await;
    assert_eq!(
        (status, r.value(&conflict)),
        (
            409,
            json!({"error": {"code": "conflict",
                "message": "idempotency key \"k\" minted token <tok_1>, which has another name, scopes or binding: use a new key",
                "retryable": false, "details": {"tokenId": "<tok_1>"}}})
        )
    );
    let (status, bad) = call(
        &g,
        g.token(),
        "tokens.create",
        json!({"name": "web", "preset": "app", "expiresInMs": 5}),
    )
    .await;
    assert_eq!(
        (status, bad),
        (
            400,
            json!({"error": {"code": "invalid_request",
                "message": "expiresInMs: 5 is out of range: 1000 to 2592000000 (30 days)",
                "retryable": false, "details": {"field": "expiresInMs"}}})
        )
    );
}

#[tokio::test]
async fn a_minted_token_stops_at_its_expiry() {
    let g = FakeGateway::start().await.unwrap();
    let (_, minted) = call(
        &g,
        g.token(),
        "tokens.create",
        json!({"name": "brief", "scopes": ["agent.read"], "expiresInMs": 1_000}),
    )
    .await;
    let token = minted["token"].as_str().unwrap();
    assert_eq!(call(&g, token, "agents.list", json!({})).await.0, 200);
    let body = wait::until_async("the token to expire", wait::DEADLINE, async || {
        let (status, body) = call(&g, token, "agents.list", json!({})).await;
        if status == 401 { Ok(body) } else { Err(body) }
    })
    .await;
    assert_eq!(
        body,
        json!({"error": {"code": "unauthenticated", "message": "this token has expired",
            "retryable": false, "details": {"reason": "expired"}}})
    );
}

#[tokio::test]
async fn runs_are_listed_newest_first_filtered_and_paged() {
    let g = FakeGateway::start().await.unwrap();
    let mut ids = Vec::new();
    let mut results = Vec::new();
    for key in ["a", "b", "a"] {
        let (status, run) = call(
            &g,
            g.token(),
            "runs.create",
            json!({"input": "hi", "sessionKey": key}),
        )
        .await;
        assert_eq!(status, 200, "{run}");
        let id = run["id"].as_str().unwrap().to_owned();
        let (_, done) = call(
            &g,
            g.token(),
            "runs.wait",
            json!({"runId": id, "timeoutMs": 10_000}),
        )
        .await;
        results.push(done);
        ids.push(id);
    }
    // The runs are numbered <run_1>, <run_2>, <run_3> in the order they
    // were created; each completed.
    let mut r = Redactor::new();
    assert_eq!(
        r.value(&json!(ids)),
        json!(["<run_1>", "<run_2>", "<run_3>"])
    );
    insta::assert_json_snapshot!("results", sized(r.value(&json!(results))));
    let (_, first) = call(&g, g.token(), "runs.list", json!({"limit": 2})).await;
    insta::assert_json_snapshot!("first_page", sized(r.value(&first)));
    // The cursor (redacted in the page) is the last run listed.
    let cursor = first["nextCursor"].clone();
    assert_eq!(cursor, json!(ids[1]));
    let (_, rest) = call(
        &g,
        g.token(),
        "runs.list",
        json!({"limit": 2, "cursor": cursor}),
    )
    .await;
    insta::assert_json_snapshot!("last_page", sized(r.value(&rest)));
    let (_, run) = call(&g, g.token(), "runs.get", json!({"runId": ids[0]})).await;
    let (_, by_session) = call(
        &g,
        g.token(),
        "runs.list",
        json!({"sessionId": run["sessionId"], "status": ["completed"]}),
    )
    .await;
    insta::assert_json_snapshot!("by_session", sized(r.value(&by_session)));
    let (status, bad) = call(&g, g.token(), "runs.list", json!({"cursor": "run_nope"})).await;
    pretty_assertions::assert_eq!(
        (status, bad),
        (
            400,
            json!({
                "error": {
                    "code": "invalid_request",
                    "details": {"field": "cursor"},
                    "message": "cursor \"run_nope\" is not a run: pass the previous page's nextCursor",
                    "retryable": false
                }
            })
        )
    );
}
