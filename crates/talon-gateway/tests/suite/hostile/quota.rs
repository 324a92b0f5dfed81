//! Stored-bytes quotas per token and per subject: a burst of concurrent
//! writes from one token stops at its quota (each admitted write reserves
//! what it may store), not several times past it; others keep writing;
//! what frees room always passes; a subject's tokens share its quota.

use serde_json::{Value, json};
use talon_gateway::Limits;

use super::super::TestGateway;
use super::bound_token as token;

const PER_TOKEN: u64 = 256 << 10;
const PER_SUBJECT: u64 = 384 << 10;

/// No rate in the way: only the quotas refuse.
fn unmetered(quotas: Limits) -> Limits {
    Limits {
        calls_per_second: 1e6,
        burst: 1_000_000,
        input_bytes_per_second: 1 << 40,
        input_burst_bytes: 1 << 40,
        ..quotas
    }
}

/// 64 `sessions.create` of ~15 KiB each from `secret` at once: how many
/// went through, and the limit named by the refusals.
async fn burst(g: &TestGateway, secret: &str, tag: &str) -> (usize, Vec<Value>) {
    let calls = (0..64).map(|n| {
        let metadata = json!({"notes": "x".repeat(15_000)});
        let params = json!({"agentId": "main", "key": format!("{tag}-{n}"), "metadata": metadata});
        async move { g.call(secret, "sessions.create", params).await }
    });
    let answers = futures::future::join_all(calls).await;
    let passed = answers.iter().filter(|(s, _)| *s == 200).count();
    let mut limits: Vec<Value> = answers
        .iter()
        .filter(|(s, _)| *s != 200)
        .map(|(s, body)| {
            assert_eq!(
                (*s, &body["error"]["code"]),
                (507, &json!("quota_exceeded")),
                "{body}"
            );
            body["error"]["details"]["limit"].clone()
        })
        .collect();
    limits.dedup();
    (passed, limits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_stops_at_its_quota_and_others_keep_writing() {
    let g = TestGateway::start_with(unmetered(Limits {
        max_stored_bytes_per_token: Some(PER_TOKEN),
        max_stored_bytes_per_subject: Some(PER_SUBJECT),
        ..Limits::default()
    }))
    .await;
    let heavy = token(&g, "heavy", json!({})).await;
    let other = token(&g, "other", json!({})).await;
    let (passed, limits) = burst(&g, &heavy, "heavy").await;
    assert!((1..64).contains(&passed), "{passed} passed");
    assert_eq!(limits, [json!("maxStoredBytesPerToken")]);
    // By a recount, it holds no more than its quota and a tenth.
    let usage = g.running.store.usage().await.unwrap();
    let ids = g.running.store.tokens().await.unwrap();
    let id_of = |name: &str| {
        ids.iter()
            .find(|t| t.name.as_deref() == Some(name))
            .unwrap()
            .id
            .clone()
    };
    let held = usage.tokens[&id_of("heavy")];
    assert!(held <= PER_TOKEN + PER_TOKEN / 10, "{held} held");
    // Another token writes on; what frees room passes.
    let (status, _) = g
        .call(&other, "sessions.create", json!({"agentId": "main"}))
        .await;
    assert_eq!(status, 200);
    let listed = g.call(&heavy, "sessions.list", json!({})).await.1;
    let first = listed["sessions"][0]["id"].clone();
    let (status, body) = g
        .call(&heavy, "sessions.delete", json!({"sessionId": first}))
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = g
        .call(&heavy, "sessions.abort", json!({"sessionId": "sess_x"}))
        .await;
    assert_eq!((status, &body["error"]["code"]), (404, &json!("not_found")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subjects_tokens_share_its_quota() {
    let g = TestGateway::start_with(unmetered(Limits {
        max_stored_bytes_per_subject: Some(PER_SUBJECT),
        ..Limits::default()
    }))
    .await;
    let one = token(&g, "alice-1", json!({"subject": "alice"})).await;
    let two = token(&g, "alice-2", json!({"subject": "alice"})).await;
    let bob = token(&g, "bob", json!({"subject": "bob"})).await;
    let (first, _) = burst(&g, &one, "one").await;
    let (second, limits) = burst(&g, &two, "two").await;
    assert!(first >= 1, "{first}");
    assert_eq!(limits, [json!("maxStoredBytesPerSubject")]);
    assert!(first + second < 64, "{first} + {second}");
    let usage = g.running.store.usage().await.unwrap();
    let held = usage.subjects["alice"];
    assert!(held <= PER_SUBJECT + PER_SUBJECT / 10, "{held} held");
    let (passed, _) = burst(&g, &bob, "bob").await;
    assert!(passed >= 1, "bob wrote nothing");
}
