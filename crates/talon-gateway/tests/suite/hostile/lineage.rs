//! Token lineage: a token minted through `tokens.create` never outlives
//! the token that minted it (so no token re-mints itself past its end),
//! and dies with it: `tokens.revoke` takes the whole tree, and the
//! descendants' streams end within a second. `tokens.list` shows each
//! token's parent and never a secret.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::super::TestGateway;

async fn mint(g: &TestGateway, by: &str, name: &str, expires_in_ms: u64) -> (u16, Value) {
    g.call(
        by,
        "tokens.create",
        json!({"name": name, "preset": "admin", "expiresInMs": expires_in_ms}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minted_token_is_bounded_by_its_parent_and_dies_with_it() {
    use futures::StreamExt as _;
    let g = TestGateway::start().await;
    let hour = 3_600_000;
    let (status, a) = mint(&g, &g.admin, "a", hour).await;
    assert_eq!(status, 200, "{a}");
    let a_secret = a["token"].as_str().unwrap().to_owned();
    // Not past its parent's end, whoever asks: itself included.
    for (name, ms) in [("b-too-long", 2 * hour), ("a-again", hour + 60_000)] {
        let (status, error) = mint(&g, &a_secret, name, ms).await;
        assert_eq!(
            (status, &error["error"]["code"], &error["error"]["details"]),
            (
                400,
                &json!("invalid_request"),
                &json!({"field": "expiresInMs"})
            ),
            "{name}: {error}"
        );
    }
    let (status, b) = mint(&g, &a_secret, "b", hour / 2).await;
    assert_eq!(status, 200, "{b}");
    let b_secret = b["token"].as_str().unwrap().to_owned();
    let (_, c) = mint(&g, &b_secret, "c", hour / 4).await;
    let c_secret = c["token"].as_str().unwrap().to_owned();
    // The list shows each one's parent, never a secret or a hash.
    let (status, listed) = g.call(&g.admin, "tokens.list", json!({})).await;
    assert_eq!(status, 200, "{listed}");
    let text = listed.to_string();
    for secret in [&a_secret, &b_secret, &c_secret] {
        assert!(!text.contains(secret.as_str()));
    }
    let parent_of = |listed: &Value, id: &Value| {
        listed["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == *id)
            .map(|t| t["parentId"].clone())
    };
    assert_eq!(parent_of(&listed, &b["id"]), Some(a["id"].clone()));
    assert_eq!(parent_of(&listed, &c["id"]), Some(b["id"].clone()));
    // C's stream is open when A is revoked.
    let stream = g
        .client
        .get(g.url("/v1/events"))
        .bearer_auth(&c_secret)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let at = Instant::now();
    let (status, revoked) = g
        .call(&g.admin, "tokens.revoke", json!({"tokenId": a["id"]}))
        .await;
    assert_eq!(status, 200, "{revoked}");
    let mut tree = vec![b["id"].clone(), c["id"].clone()];
    tree.sort_by(|x, y| x.as_str().cmp(&y.as_str()));
    tree.insert(0, a["id"].clone());
    assert_eq!(revoked, json!({"tokenId": a["id"], "revoked": tree}));
    // A retry answers the same.
    let (_, again) = g
        .call(&g.admin, "tokens.revoke", json!({"tokenId": a["id"]}))
        .await;
    assert_eq!(again, revoked);
    // The descendants' stream ends within a second, saying why.
    let mut body = stream.bytes_stream();
    let mut seen = String::new();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = body.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream did not end: {seen}");
    assert!(
        at.elapsed() <= Duration::from_millis(1_500),
        "{:?}",
        at.elapsed()
    );
    assert!(
        seen.contains("event: error") && seen.contains("unauthenticated"),
        "{seen}"
    );
    // Every one of them is refused now.
    for secret in [&a_secret, &b_secret, &c_secret] {
        let (status, _) = g.call(secret, "agents.list", json!({})).await;
        assert_eq!(status, 401);
    }
    // Listed as revoked only when asked.
    let (_, live) = g.call(&g.admin, "tokens.list", json!({})).await;
    assert_eq!(parent_of(&live, &b["id"]), None);
    let (_, all) = g
        .call(&g.admin, "tokens.list", json!({"includeRevoked": true}))
        .await;
    assert_eq!(parent_of(&all, &b["id"]), Some(a["id"].clone()));
    // An unknown token is not found; a page is bounded and goes on.
    let (status, _) = g
        .call(&g.admin, "tokens.revoke", json!({"tokenId": "tok_nope"}))
        .await;
    assert_eq!(status, 404);
    let (_, first) = g
        .call(
            &g.admin,
            "tokens.list",
            json!({"limit": 2, "includeRevoked": true}),
        )
        .await;
    assert_eq!(first["tokens"].as_array().unwrap().len(), 2);
    let (_, second) = g
        .call(
            &g.admin,
            "tokens.list",
            json!({"limit": 2, "includeRevoked": true, "cursor": first["nextCursor"]}),
        )
        .await;
    assert!(second["tokens"][0]["id"].as_str() > first["tokens"][1]["id"].as_str());
}
