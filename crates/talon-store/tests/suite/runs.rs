//! Runs and their idempotency keys, results and nodes; tokens; agents.

use talon_protocol::gateway::{
    Agent, AgentSource, Run, RunResult, RunResultStatus, RunStatus, Scope, Usage,
};
use talon_store::{StoreError, StoredToken};

pub fn run(id: &str) -> Run {
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

on_both! {
    async fn an_idempotency_key_returns_the_first_run_or_conflicts(t) {
        let store = &t.store;
        let (first, created) = store.create_run(&run("r1"), Some("key-1"), "hash-a", "node-a").await.unwrap();
        assert!(created);
        let (again, created) = store.create_run(&run("r2"), Some("key-1"), "hash-a", "node-b").await.unwrap();
        assert!(!created);
        assert_eq!(again, first);
        assert!(store.run("r2").await.unwrap().is_none());
        match store.create_run(&run("r3"), Some("key-1"), "hash-b", "node-a").await {
            Err(StoreError::IdempotencyConflict { key }) => assert_eq!(key, "key-1"),
            other => panic!("{other:?}"),
        }
        // Without a key, the same id twice is refused.
        store.create_run(&run("r4"), None, "h", "node-a").await.unwrap();
        assert!(matches!(
            store.create_run(&run("r4"), None, "h", "node-a").await,
            Err(StoreError::Exists { kind: "run", .. })
        ));
        assert!(matches!(
            store.create_run(&run("r4"), Some("key-2"), "h", "node-a").await,
            Err(StoreError::Exists { kind: "run", .. })
        ));
        let mut done = first.clone();
        done.status = RunStatus::Completed;
        done.started_at = Some(2);
        done.ended_at = Some(3);
        done.usage = Some(Usage {
            input_tokens: Some(10),
            output_tokens: Some(5),
            total_tokens: Some(15),
            cost_usd: Some(0.25),
        });
        assert!(store.update_run(&done).await.unwrap());
        assert_eq!(store.run("r1").await.unwrap(), Some(done.clone()));
        assert!(!store.update_run(&run("nope")).await.unwrap());
        assert_eq!(store.session_runs("s1").await.unwrap(), vec![done, run("r4")]);
        // What a restarted node picks up again.
        let open = store.runs_of_node("node-a", &[RunStatus::Queued, RunStatus::Running]).await.unwrap();
        assert_eq!(open, vec![run("r4")]);
    }
}

on_both! {
    async fn concurrent_creates_with_one_key_make_one_run(t) {
        let mut tasks = Vec::new();
        for n in 0..16 {
            let store = t.store.clone();
            tasks.push(tokio::spawn(async move {
                store.create_run(&run(&format!("r{n}")), Some("same"), "hash", "node").await.unwrap()
            }));
        }
        let mut created = 0;
        let mut ids = std::collections::BTreeSet::new();
        for task in tasks {
            let (run, new) = task.await.unwrap();
            created += usize::from(new);
            ids.insert(run.id);
        }
        assert_eq!((created, ids.len()), (1, 1));
    }
}

on_both! {
    async fn a_run_keeps_its_result(t) {
        let store = &t.store;
        store.create_run(&run("r1"), None, "h", "n").await.unwrap();
        assert_eq!(store.run_result("r1").await.unwrap(), None);
        let result: RunResult = serde_json::from_value(serde_json::json!({
            "status": "completed", "runId": "r1", "startedAt": 2, "endedAt": 3, "output": {"text": "done"}
        })).unwrap();
        assert_eq!(result.status, RunResultStatus::Completed);
        assert!(store.set_run_result("r1", &result).await.unwrap());
        assert!(!store.set_run_result("nope", &result).await.unwrap());
        assert_eq!(store.run_result("r1").await.unwrap(), Some(result));
        assert_eq!(store.run_result("nope").await.unwrap(), None);
    }
}

on_both! {
    async fn tokens_are_found_by_hash_listed_and_revoked(t) {
        let store = &t.store;
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
        assert_eq!(store.token_by_hash(&token.hash).await.unwrap(), Some(token.clone()));
        assert!(store.token_by_hash("00").await.unwrap().is_none());
        assert!(token.is_live(999));
        assert!(!token.is_live(1_000));
        assert!(store.revoke_token("tok_1", 50).await.unwrap());
        assert!(store.revoke_token("tok_1", 70).await.unwrap());
        assert!(!store.revoke_token("tok_9", 50).await.unwrap());
        let listed = store.tokens().await.unwrap();
        assert_eq!(listed, vec![StoredToken { revoked_at: Some(50), ..token.clone() }]);
        assert!(!listed[0].is_live(60));
        // The same hash twice is refused.
        assert!(store.insert_token(&StoredToken { id: "tok_2".into(), ..token }).await.is_err());
    }
}

on_both! {
    async fn agents_are_created_once_listed_and_updated(t) {
        let store = &t.store;
        let agent = Agent {
            id: "helper".into(),
            name: Some("Helper".into()),
            description: None,
            model: Some("mock/model".into()),
            source: AgentSource::Api,
            created_at: Some(5),
            updated_at: Some(5),
        };
        store.create_agent(&agent).await.unwrap();
        assert!(matches!(store.create_agent(&agent).await, Err(StoreError::Exists { kind: "agent", .. })));
        let older = Agent { id: "first".into(), created_at: Some(1), ..agent.clone() };
        store.create_agent(&older).await.unwrap();
        assert_eq!(store.agents().await.unwrap(), vec![older, agent.clone()]);
        let renamed = Agent { name: Some("Renamed".into()), updated_at: Some(9), ..agent.clone() };
        assert!(store.update_agent(&renamed).await.unwrap());
        assert_eq!(store.agent("helper").await.unwrap(), Some(renamed));
        assert!(!store.update_agent(&Agent { id: "ghost".into(), ..agent }).await.unwrap());
        assert_eq!(store.agent("ghost").await.unwrap(), None);
    }
}
