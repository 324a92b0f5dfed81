//! The fake gateway's `tokens.create` and `runs.list`: the token it mints
//! authenticates until it expires; a retry with the same idempotency key
//! replaces its secret; other params with the key are a conflict; runs
//! are listed newest first, filtered and paged; bad params are the real
//! gateway's `invalid_request`.

use serde_json::{Value, json};
use talon_sdk_testing::FakeGateway;
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
    let params =
        json!({"name": "web", "preset": "viewer", "expiresInMs": 60_000, "idempotencyKey": "k"});
    let (status, first) = call(&g, g.token(), "tokens.create", params.clone()).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(
        (&first["name"], &first["scopes"]),
        (
            &json!("web"),
            &json!(["agent.read", "session.read", "task.read", "artifacts.read"])
        )
    );
    let old = first["token"].as_str().unwrap().to_owned();
    assert_eq!(call(&g, &old, "agents.list", json!({})).await.0, 200);

    let (_, second) = call(&g, g.token(), "tokens.create", params).await;
    assert_eq!(first["id"], second["id"]);
    let (status, refused) = call(&g, &old, "agents.list", json!({})).await;
    assert_eq!(
        (status, &refused["error"]["details"]["reason"]),
        (401, &json!("unknown"))
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
        (
            status,
            &conflict["error"]["code"],
            &conflict["error"]["details"]
        ),
        (409, &json!("conflict"), &json!({"tokenId": first["id"]}))
    );
    let (status, bad) = call(
        &g,
        g.token(),
        "tokens.create",
        json!({"name": "web", "preset": "app", "expiresInMs": 5}),
    )
    .await;
    assert_eq!(
        (status, &bad["error"]["message"]),
        (
            400,
            &json!("expiresInMs: 5 is out of range: 1000 to 2592000000 (30 days)")
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
    assert_eq!(body["error"]["details"]["reason"], "expired");
}

#[tokio::test]
async fn runs_are_listed_newest_first_filtered_and_paged() {
    let g = FakeGateway::start().await.unwrap();
    let mut ids = Vec::new();
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
        assert_eq!(done["status"], "completed", "{done}");
        ids.push(id);
    }
    let listed = |page: &Value| -> Vec<String> {
        page["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, first) = call(&g, g.token(), "runs.list", json!({"limit": 2})).await;
    assert_eq!(listed(&first), [ids[2].clone(), ids[1].clone()]);
    let cursor = first["nextCursor"].clone();
    assert_eq!(cursor, json!(ids[1]));
    let (_, rest) = call(
        &g,
        g.token(),
        "runs.list",
        json!({"limit": 2, "cursor": cursor}),
    )
    .await;
    assert_eq!(
        (listed(&rest), rest.get("nextCursor")),
        (vec![ids[0].clone()], None)
    );
    let (_, run) = call(&g, g.token(), "runs.get", json!({"runId": ids[0]})).await;
    let (_, by_session) = call(
        &g,
        g.token(),
        "runs.list",
        json!({"sessionId": run["sessionId"], "status": ["completed"]}),
    )
    .await;
    assert_eq!(listed(&by_session), [ids[2].clone(), ids[0].clone()]);
    let (status, bad) = call(&g, g.token(), "runs.list", json!({"cursor": "run_nope"})).await;
    assert_eq!(
        (status, &bad["error"]["details"]),
        (400, &json!({"field": "cursor"}))
    );
}
