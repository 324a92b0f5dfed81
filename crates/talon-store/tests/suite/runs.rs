//! Runs and their idempotency keys; tokens.

use talon_protocol::gateway::{Run, RunStatus, Scope, Usage};
use talon_store::{StoreError, StoredToken};

use super::events::store;

fn run(id: &str) -> Run {
    Run {
        id: id.into(),
        agent_id: "main".into(),
        session_id: Some("s1".into()),
        session_key: Some("k".into()),
        status: RunStatus::Queued,
        created_at: 1,
        started_at: None,
        ended_at: None,
        usage: None,
        error: None,
    }
}

#[tokio::test]
async fn an_idempotency_key_returns_the_first_run_or_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let (first, created) = store
        .create_run(&run("r1"), "key-1", "hash-a")
        .await
        .unwrap();
    assert!(created);
    let (again, created) = store
        .create_run(&run("r2"), "key-1", "hash-a")
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(again, first);
    assert!(store.run("r2").await.unwrap().is_none());
    match store.create_run(&run("r3"), "key-1", "hash-b").await {
        Err(StoreError::IdempotencyConflict { key }) => assert_eq!(key, "key-1"),
        other => panic!("{other:?}"),
    }
    let mut done = first.clone();
    done.status = RunStatus::Completed;
    done.started_at = Some(2);
    done.ended_at = Some(3);
    done.usage = Some(Usage {
        input_tokens: Some(10),
        output_tokens: Some(5),
        total_tokens: Some(15),
        cost_usd: None,
    });
    assert!(store.update_run(&done).await.unwrap());
    assert_eq!(store.run("r1").await.unwrap(), Some(done));
    assert!(!store.update_run(&run("nope")).await.unwrap());
}

#[tokio::test]
async fn tokens_are_found_by_hash_listed_and_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let token = StoredToken {
        id: "tok_1".into(),
        hash: "ab".repeat(32),
        name: Some("ci".into()),
        scopes: vec![Scope::AgentRun, Scope::SessionRead],
        created_at: 10,
        expires_at: Some(1_000),
        revoked_at: None,
    };
    store.insert_token(&token).await.unwrap();
    assert_eq!(
        store.token_by_hash(&token.hash).await.unwrap(),
        Some(token.clone())
    );
    assert!(store.token_by_hash("00").await.unwrap().is_none());
    assert!(token.is_live(999));
    assert!(!token.is_live(1_000));
    assert!(store.revoke_token("tok_1", 50).await.unwrap());
    assert!(!store.revoke_token("tok_9", 50).await.unwrap());
    let listed = store.tokens().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].revoked_at, Some(50));
    assert!(!listed[0].is_live(60));
    // The same hash twice is refused.
    assert!(
        store
            .insert_token(&StoredToken {
                id: "tok_2".into(),
                ..token
            })
            .await
            .is_err()
    );
}
