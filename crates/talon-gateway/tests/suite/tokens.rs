//! `tokens.create`: an admin mints a named, short-lived token from a
//! preset or scopes; an `app` token runs an agent, waits for it and
//! streams its events, and cannot mint tokens; a retry with the same
//! idempotency key replaces the secret instead of leaving two live tokens.

use serde_json::{Value, json};

use talon_testing::redact::{Redactor, redacted};

use super::TestGateway;
use super::artifacts::sized;

/// A redactor that also replaces `token`'s id: a token's id is
/// `tok_<16 hex digits>`, shorter than the ids `redact` knows.
fn with_id(token: &Value) -> Redactor {
    Redactor::new().with(token["id"].as_str().unwrap(), "<tok_1>")
}

async fn create(g: &TestGateway, token: &str, params: Value) -> (u16, Value) {
    g.call(token, "tokens.create", params).await
}

/// The event types an SSE stream sends until `last` arrives.
async fn stream_until(g: &TestGateway, token: &str, path: &str, last: &str) -> Vec<String> {
    let mut response = g
        .client
        .get(g.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut text = String::new();
    let mut types = Vec::new();
    while !types.iter().any(|t| t == last) {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(20), response.chunk())
            .await
            .expect("the stream went quiet")
            .unwrap()
            .expect("the stream ended early");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        types = text
            .lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .map(str::to_owned)
            .collect();
    }
    types
}

#[tokio::test]
async fn an_app_token_runs_waits_and_streams_but_cannot_mint() {
    let g = TestGateway::start().await;
    let (status, minted) = create(
        &g,
        &g.admin,
        json!({"name": "web backend", "preset": "app", "expiresInMs": 3_600_000}),
    )
    .await;
    assert_eq!(status, 200, "{minted}");
    let expires_at = minted["expiresAt"].as_u64().unwrap();
    let now = g.running.store.now_ms();
    assert!(expires_at > now + 3_590_000 && expires_at <= now + 3_600_000);
    let secret = minted["token"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("talon_") && secret.len() == 70);
    assert_eq!(
        minted,
        json!({
            "token": secret,
            "id": minted["id"],
            "name": "web backend",
            "scopes": ["agent.read", "agent.run", "session.read", "session.write", "task.read",
                       "schedule.read", "approval.respond", "artifacts.read"],
            "expiresAt": expires_at,
        })
    );
    // The store holds its name, scopes and expiry (and never the secret).
    let stored = g
        .running
        .store
        .token(minted["id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            stored.name.as_deref(),
            stored.expires_at,
            stored.hash == secret
        ),
        (Some("web backend"), Some(expires_at), false)
    );

    let (status, run) = g
        .call(&secret, "runs.create", json!({"input": "Say hello."}))
        .await;
    assert_eq!(status, 200, "{run}");
    let run_id = run["runId"].as_str().unwrap().to_owned();
    let (status, result) = g
        .call(
            &secret,
            "runs.wait",
            json!({"runId": run_id, "timeoutMs": 20_000}),
        )
        .await;
    insta::assert_json_snapshot!("app_result", sized(redacted(&json!([status, result]))));
    let types = stream_until(
        &g,
        &secret,
        &format!("/v1/runs/{run_id}/events"),
        "run.completed",
    )
    .await;
    insta::assert_json_snapshot!("app_streamed", types);
    let (status, answer) = g.call(&secret, "approvals.list", json!({})).await;
    pretty_assertions::assert_eq!((status, answer), (200, json!({"approvals": []})));

    // Minting is the admin's.
    let (status, refused) = create(
        &g,
        &secret,
        json!({"name": "escalate", "preset": "admin", "expiresInMs": 60_000}),
    )
    .await;
    assert_eq!(
        (status, refused),
        (
            403,
            json!({"error": {"code": "forbidden", "message": "this token lacks the `admin` scope",
                             "retryable": false, "details": {"scope": "admin"}}})
        )
    );
}

#[tokio::test]
async fn a_viewer_token_reads_but_does_not_run() {
    let g = TestGateway::start().await;
    let (_, minted) = create(
        &g,
        &g.admin,
        json!({"name": "dashboard", "preset": "viewer", "scopes": ["tools.invoke"], "expiresInMs": 60_000}),
    )
    .await;
    insta::assert_json_snapshot!("viewer_minted", with_id(&minted).value(&minted));
    let secret = minted["token"].as_str().unwrap();
    assert_eq!(g.call(secret, "agents.list", json!({})).await.0, 200);
    let (status, refused) = g.call(secret, "runs.create", json!({"input": "hi"})).await;
    insta::assert_json_snapshot!("viewer_refused", json!([status, refused]));
}

#[tokio::test]
async fn bad_params_are_refused_naming_the_field() {
    let g = TestGateway::start().await;
    let cases = [
        (
            json!({"name": "x", "expiresInMs": 60_000}),
            "scopes: give scopes, a preset, or both",
        ),
        (
            json!({"name": "x", "preset": "app", "expiresInMs": 10}),
            "expiresInMs: 10 is out of range: 1000 to 2592000000 (30 days)",
        ),
        (
            json!({"name": "x", "preset": "app", "expiresInMs": 2_592_000_001u64}),
            "expiresInMs: 2592000001 is out of range: 1000 to 2592000000 (30 days)",
        ),
        (
            json!({"name": "x", "scopes": ["billing.read"], "expiresInMs": 60_000}),
            "scopes: an unknown scope",
        ),
        // The decoder's catch-all is no scope to grant, in either spelling.
        (
            json!({"name": "x", "scopes": ["unknown"], "expiresInMs": 60_000}),
            "scopes: an unknown scope",
        ),
        (
            json!({"name": "x", "scopes": ["Unknown"], "expiresInMs": 60_000}),
            "scopes: an unknown scope",
        ),
    ];
    for (params, message) in cases {
        let (status, body) = create(&g, &g.admin, params.clone()).await;
        // The field is the message's first word.
        let field = message.split_once(':').unwrap().0;
        pretty_assertions::assert_eq!(
            (status, body),
            (
                400,
                json!({"error": {"code": "invalid_request", "message": message, "retryable": false,
                    "details": {"field": field}}})
            ),
            "{params}"
        );
    }
    // No expiry, a preset nobody knows, a name too long: the decoder's.
    let mut decoded = Vec::new();
    for params in [
        json!({"name": "x", "preset": "app"}),
        json!({"name": "x", "preset": "root", "expiresInMs": 60_000}),
        json!({"name": "n".repeat(257), "preset": "app", "expiresInMs": 60_000}),
    ] {
        let (status, body) = create(&g, &g.admin, params.clone()).await;
        decoded.push(json!([status, body]));
    }
    insta::assert_json_snapshot!("decoder_refused", decoded);
    assert_eq!(
        g.running.store.tokens().await.unwrap().len(),
        1,
        "only the admin token"
    );
}

#[tokio::test]
async fn a_retry_with_the_key_replaces_the_secret() {
    let g = TestGateway::start().await;
    let params = json!({"name": "web", "preset": "app", "expiresInMs": 60_000, "idempotencyKey": "browser-1"});
    let (_, first) = create(&g, &g.admin, params.clone()).await;
    let (status, second) = create(&g, &g.admin, params.clone()).await;
    // One token (one id, numbered once), a new secret.
    let mut redactor = with_id(&first);
    insta::assert_json_snapshot!(
        "retry_minted",
        redactor.value(&json!([first, status, second]))
    );
    assert_ne!(first["token"], second["token"]);
    let old = first["token"].as_str().unwrap();
    let new = second["token"].as_str().unwrap();
    let (status, refused) = g.call(old, "agents.list", json!({})).await;
    pretty_assertions::assert_eq!(
        (status, refused),
        (
            401,
            json!({"error": {"code": "unauthenticated", "message": "this token is not known to this gateway",
                "retryable": false, "details": {"reason": "unknown"}}})
        )
    );
    assert_eq!(g.call(new, "agents.list", json!({})).await.0, 200);
    assert_eq!(g.running.store.tokens().await.unwrap().len(), 2);

    // The key with other scopes is a conflict naming the token.
    let other = json!({"name": "web", "preset": "viewer", "expiresInMs": 60_000, "idempotencyKey": "browser-1"});
    let (status, conflict) = create(&g, &g.admin, other).await;
    assert_eq!(
        (status, conflict),
        (
            409,
            json!({"error": {"code": "conflict", "retryable": false,
                "message": format!("idempotency key \"browser-1\" minted token {}, which has another name, scopes or binding: use a new key", first["id"].as_str().unwrap()),
                "details": {"tokenId": first["id"]}}})
        )
    );
    // Revoked: the key cannot bring it back.
    g.running
        .store
        .revoke_token(first["id"].as_str().unwrap(), g.running.store.now_ms())
        .await
        .unwrap();
    let (status, conflict) = create(&g, &g.admin, params).await;
    insta::assert_json_snapshot!("retry_revoked", redactor.value(&json!([status, conflict])));
    assert_eq!(g.call(new, "agents.list", json!({})).await.0, 401);
}
