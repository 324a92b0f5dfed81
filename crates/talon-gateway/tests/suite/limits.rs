//! Limits under abuse: a token over its rate gets `rate_limited` with when
//! to retry (other tokens are unaffected); streams beyond the cap get
//! `unavailable` until one closes.

use std::time::Duration;

use serde_json::json;
use talon_gateway::{Limits, tokens};
use talon_protocol::gateway::Scope;
use talon_testing::wait;

use super::TestGateway;

#[tokio::test]
async fn a_token_over_its_rate_is_told_when_to_retry() {
    let g = TestGateway::start_with(Limits {
        calls_per_second: 2.0,
        burst: 3,
        ..Limits::default()
    })
    .await;
    for _ in 0..3 {
        assert_eq!(g.call(&g.admin, "agents.list", json!({})).await.0, 200);
    }
    let response = g
        .client
        .post(g.url("/v1/agents.list"))
        .bearer_auth(&g.admin)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let body: serde_json::Value = response.json().await.unwrap();
    let wait = body["error"]["retryAfterMs"].as_u64().unwrap();
    assert!((1..=500).contains(&wait), "{wait}");
    // The wait depends on how long the calls above took.
    let mut whole = body.clone();
    whole["error"]["retryAfterMs"] = serde_json::json!("<wait>");
    insta::assert_json_snapshot!("rate_limited", whole);
    // Another token has its own rate.
    let other = tokens::create(&g.running.store, None, vec![Scope::AgentRead], None, 1)
        .await
        .unwrap();
    assert_eq!(g.call(&other.secret, "agents.list", json!({})).await.0, 200);
    // After the wait, the first token is served again. (Not a wait on a
    // condition: lets the time the answer named pass.)
    tokio::time::sleep(Duration::from_millis(wait + 10)).await;
    assert_eq!(g.call(&g.admin, "agents.list", json!({})).await.0, 200);
}

#[tokio::test]
async fn streams_beyond_the_cap_wait_for_one_to_close() {
    let g = TestGateway::start_with(Limits {
        max_streams: 1,
        ..Limits::default()
    })
    .await;
    let open = || async {
        g.client
            .get(g.url("/v1/events"))
            .bearer_auth(&g.admin)
            .send()
            .await
            .unwrap()
    };
    let first = open().await;
    assert_eq!(first.status().as_u16(), 200);
    let second = open().await;
    assert_eq!(second.status().as_u16(), 503);
    let body: serde_json::Value = second.json().await.unwrap();
    insta::assert_json_snapshot!("streams_full", body);
    drop(first);
    wait::until_async(
        "the closed stream's place to be freed",
        wait::DEADLINE,
        async || match open().await.status().as_u16() {
            200 => Ok(()),
            status => Err(status),
        },
    )
    .await;
}
