//! Runs and their idempotency keys, results and nodes; tokens; agents.

use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::EnvironmentId;
use talon_protocol::gateway::bounded::{RunId, SessionId, SessionKey};
use talon_protocol::gateway::{
    Agent, AgentSource, Run, RunResult, RunResultStatus, RunStatus, Scope, Usage,
};
use talon_store::{CancelMode, StoreError, StoredToken};

pub fn run(id: &str) -> Run {
    Run {
        summary: None,
        model: None,
        subject: None,
        id: RunId::new(id),
        agent_id: AgentId::new("main"),
        session_id: Some(SessionId::new("s1")),
        session_key: Some(SessionKey::new("k")),
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
        let (first, created) = store.create_run(&run("r1"), Some("key-1"), "hash-a", "node-a", None).await.unwrap();
        assert!(created);
        let (again, created) = store.create_run(&run("r2"), Some("key-1"), "hash-a", "node-b", None).await.unwrap();
        assert!(!created);
        assert_eq!(again, first);
        assert!(store.run(&talon_protocol::gateway::bounded::RunId::new("r2")).await.unwrap().is_none());
        match store.create_run(&run("r3"), Some("key-1"), "hash-b", "node-a", None).await {
            Err(StoreError::IdempotencyConflict { key }) => assert_eq!(key, "key-1"),
            other => panic!("{other:?}"),
        }
        // Without a key, the same id twice is refused.
        store.create_run(&run("r4"), None, "h", "node-a", None).await.unwrap();
        assert!(matches!(
            store.create_run(&run("r4"), None, "h", "node-a", None).await,
            Err(StoreError::Exists { kind: "run", .. })
        ));
        assert!(matches!(
            store.create_run(&run("r4"), Some("key-2"), "h", "node-a", None).await,
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
            cache_read_tokens: None,
            cache_write_tokens: None,
            cost_usd: Some(0.25),
        });
        assert!(store.update_run(&done).await.unwrap());
        assert_eq!(store.run(&talon_protocol::gateway::bounded::RunId::new("r1")).await.unwrap(), Some(done.clone()));
        assert!(!store.update_run(&run("nope")).await.unwrap());
        assert_eq!(store.session_runs(&SessionId::new("s1")).await.unwrap(), vec![done, run("r4")]);
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
                store.create_run(&run(&format!("r{n}")), Some("same"), "hash", "node", None).await.unwrap()
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
        store.create_run(&run("r1"), None, "h", "n", None).await.unwrap();
        assert_eq!(store.run_result(&RunId::new("r1")).await.unwrap(), None);
        let result: RunResult = serde_json::from_value(serde_json::json!({
            "status": "completed", "runId": "r1", "startedAt": 2, "endedAt": 3, "output": {"text": "done"}
        })).unwrap();
        assert_eq!(result.status, RunResultStatus::Completed);
        assert!(store.set_run_result(&RunId::new("r1"), &result).await.unwrap());
        assert!(!store.set_run_result(&RunId::new("nope"), &result).await.unwrap());
        assert_eq!(store.run_result(&RunId::new("r1")).await.unwrap(), Some(result));
        assert_eq!(store.run_result(&RunId::new("nope")).await.unwrap(), None);
    }
}

on_both! {
    async fn tokens_are_found_by_hash_listed_and_revoked(t) {
        let store = &t.store;
        let token = StoredToken {
            subject: None,
            agents: None,
            id: "tok_1".into(),
            hash: "ab".repeat(32),
            name: Some("ci".into()),
            scopes: vec![Scope::AgentRun, Scope::SessionRead],
            created_at: 10,
            expires_at: Some(1_000),
            revoked_at: None,
            parent_id: None,
        };
        store.insert_token(&token).await.unwrap();
        assert_eq!(store.token_by_hash(&token.hash).await.unwrap(), Some(token.clone()));
        assert!(store.token_by_hash("00").await.unwrap().is_none());
        // A new secret replaces the old one's hash and expiry.
        let rotated = StoredToken { hash: "cd".repeat(32), expires_at: Some(2_000), ..token.clone() };
        assert!(store.replace_token_secret("tok_1", &rotated.hash, Some(2_000)).await.unwrap());
        assert!(store.token_by_hash(&token.hash).await.unwrap().is_none());
        assert_eq!(store.token_by_hash(&rotated.hash).await.unwrap(), Some(rotated.clone()));
        assert!(!store.replace_token_secret("tok_9", &token.hash, None).await.unwrap());
        assert!(store.replace_token_secret("tok_1", &token.hash, Some(1_000)).await.unwrap());
        assert!(token.is_live(999));
        assert!(!token.is_live(1_000));
        assert!(store.revoke_token("tok_1", 50).await.unwrap());
        assert!(store.revoke_token("tok_1", 70).await.unwrap());
        assert!(!store.revoke_token("tok_9", 50).await.unwrap());
        // A revoked token keeps its secret.
        assert!(!store.replace_token_secret("tok_1", &rotated.hash, None).await.unwrap());
        let listed = store.tokens().await.unwrap();
        assert_eq!(listed, vec![StoredToken { revoked_at: Some(50), ..token.clone() }]);
        assert!(!listed[0].is_live(60));
        // The same hash twice is refused.
        assert!(store.insert_token(&StoredToken { id: "tok_2".into(), ..token }).await.is_err());
    }
}

on_both! {
    /// Revoking a token revokes the tokens it minted and theirs, once,
    /// and never a sibling's; pages list by id, revoked ones on request.
    async fn a_revocation_takes_the_tokens_minted_under_it(t) {
        let store = &t.store;
        let token = |id: &str, parent: Option<&str>| StoredToken {
            subject: None,
            agents: None,
            id: id.into(),
            hash: format!("{id:0>64}"),
            name: None,
            scopes: vec![Scope::Admin],
            created_at: 10,
            expires_at: None,
            revoked_at: None,
            parent_id: parent.map(str::to_owned),
        };
        for (id, parent) in [
            ("tok_a", None),
            ("tok_b", Some("tok_a")),
            ("tok_c", Some("tok_b")),
            ("tok_d", Some("tok_a")),
            ("tok_e", None),
            ("tok_f", Some("tok_e")),
        ] {
            store.insert_token(&token(id, parent)).await.unwrap();
        }
        // An earlier revocation keeps its time; a retry answers the same.
        assert_eq!(store.revoke_token_tree("tok_c", 20).await.unwrap(), Some(vec!["tok_c".to_owned()]));
        let tree = ["tok_a", "tok_b", "tok_c", "tok_d"].map(str::to_owned).to_vec();
        assert_eq!(store.revoke_token_tree("tok_a", 30).await.unwrap(), Some(tree.clone()));
        assert_eq!(store.revoke_token_tree("tok_a", 40).await.unwrap(), Some(tree));
        assert_eq!(store.revoke_token_tree("tok_z", 40).await.unwrap(), None);
        let revoked: Vec<(String, Option<u64>)> =
            store.tokens().await.unwrap().into_iter().map(|t| (t.id, t.revoked_at)).collect();
        assert_eq!(
            revoked,
            [("tok_a", Some(30)), ("tok_b", Some(30)), ("tok_c", Some(20)), ("tok_d", Some(30)), ("tok_e", None), ("tok_f", None)]
                .map(|(id, at)| (id.to_owned(), at))
        );
        let ids = |page: Vec<StoredToken>| page.into_iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(store.tokens_page(None, 10, false, None).await.unwrap()), ["tok_e", "tok_f"]);
        assert_eq!(ids(store.tokens_page(None, 2, true, None).await.unwrap()), ["tok_a", "tok_b"]);
        assert_eq!(ids(store.tokens_page(Some("tok_b"), 2, true, None).await.unwrap()), ["tok_c", "tok_d"]);
        assert_eq!(store.tokens_page(None, 10, true, None).await.unwrap()[1].parent_id.as_deref(), Some("tok_a"));
    }
}

on_both! {
    async fn agents_are_created_once_listed_and_updated(t) {
        let store = &t.store;
        let agent = Agent {
            id: AgentId::new("helper"),
            name: Some("Helper".into()),
            description: None,
            model: Some("mock/model".into()),
            source: AgentSource::Api,
            created_at: Some(5),
            updated_at: Some(5),
        };
        store.create_agent(&agent).await.unwrap();
        assert!(matches!(store.create_agent(&agent).await, Err(StoreError::Exists { kind: "agent", .. })));
        let older = Agent { id: AgentId::new("first"), created_at: Some(1), ..agent.clone() };
        store.create_agent(&older).await.unwrap();
        assert_eq!(store.agents().await.unwrap(), vec![older, agent.clone()]);
        let renamed = Agent { name: Some("Renamed".into()), updated_at: Some(9), ..agent.clone() };
        assert!(store.update_agent(&renamed).await.unwrap());
        assert_eq!(store.agent(&talon_protocol::gateway::bounded::AgentId::new("helper")).await.unwrap(), Some(renamed));
        assert!(!store.update_agent(&Agent { id: AgentId::new("ghost"), ..agent }).await.unwrap());
        assert_eq!(store.agent(&talon_protocol::gateway::bounded::AgentId::new("ghost")).await.unwrap(), None);
    }
}

fn in_session(id: &str, session: &str, created_at: u64) -> Run {
    Run {
        session_id: Some(SessionId::new(session)),
        created_at,
        ..run(id)
    }
}

on_both! {
    async fn claims_follow_the_session_lanes_and_happen_once(t) {
        let store = &t.store;
        let request: talon_store::RunRequest = serde_json::from_value(serde_json::json!({"input": "hi"})).unwrap();
        for (id, session, at) in [("a1", "sa", 1), ("a2", "sa", 2), ("b1", "sb", 3)] {
            store.create_run(&in_session(id, session, at), None, "h", "n1", Some(&request)).await.unwrap();
        }
        // Oldest first, one per session: a1, then b1 (a2 waits for a1).
        let first = store.claim_run("n1", None, 10, 100).await.unwrap().unwrap();
        assert_eq!((first.run.id.as_str(), first.run.status, first.run.started_at), ("a1", RunStatus::Running, Some(10)));
        assert_eq!(first.request, Ok(request.clone()));
        let second = store.claim_run("n2", None, 11, 100).await.unwrap().unwrap();
        assert_eq!(second.run.id, RunId::new("b1"));
        assert_eq!(store.claim_run("n1", None, 12, 100).await.unwrap(), None);
        // A named run is claimed only while queued and its lane is free.
        assert_eq!(store.claim_run("n1", Some(&RunId::new("a2")), 12, 100).await.unwrap(), None);
        let mut ended = first.run.clone();
        ended.status = RunStatus::Completed;
        ended.ended_at = Some(20);
        let result: RunResult = serde_json::from_value(serde_json::json!({"status": "completed", "runId": "a1"})).unwrap();
        assert!(store.end_run(&ended, &result, Vec::new()).await.unwrap().is_some());
        // Exactly one ending wins.
        assert_eq!(store.end_run(&ended, &result, Vec::new()).await.unwrap(), None);
        assert_eq!(store.run_result(&RunId::new("a1")).await.unwrap(), Some(result));
        let third = store.claim_run("n2", Some(&RunId::new("a2")), 21, 100).await.unwrap().unwrap();
        assert_eq!(third.run.id, RunId::new("a2"));
        // Many claimers, one winner per run.
        for n in 0..8 {
            store.create_run(&in_session(&format!("c{n}"), &format!("sc{n}"), 30 + n), None, "h", "n1", Some(&request)).await.unwrap();
        }
        let mut tasks = Vec::new();
        for n in 0..16 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let mut won = Vec::new();
                while let Some(claimed) = store.claim_run(&format!("node{n}"), None, 40, 100).await.unwrap() {
                    won.push(claimed.run.id);
                }
                won
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all.sort();
        assert_eq!(all.iter().map(RunId::as_str).collect::<Vec<_>>(), (0..8).map(|n| format!("c{n}")).collect::<Vec<_>>());
    }
}

on_both! {
    async fn a_runs_end_and_its_terminal_event_commit_together_once(t) {
        use talon_protocol::EventType;
        let store = &t.store;
        let request: talon_store::RunRequest = serde_json::from_value(serde_json::json!({"input": "hi"})).unwrap();
        store.create_run(&in_session("r1", "s1", 1), None, "h", "n1", Some(&request)).await.unwrap();
        let claimed = store.claim_run("n1", None, 2, 100).await.unwrap().unwrap().run;
        let filter = talon_store::EventFilter { run_id: Some("r1".into()), ..Default::default() };
        // A delta queued before the end commits before it.
        let delta = store.submit(vec![crate::suite::events::event("r1", EventType::AssistantDelta, 3, 0)]).await.unwrap();
        // Eight enders race, each with its own terminal event: one wins,
        // and only its event is in the log, after the delta.
        let mut racers = Vec::new();
        for n in 0..8_u64 {
            let store = store.clone();
            let mut ended = claimed.clone();
            ended.status = if n % 2 == 0 { RunStatus::Completed } else { RunStatus::Cancelled };
            ended.ended_at = Some(10 + n);
            let result: RunResult = serde_json::from_value(serde_json::json!({"status": if n % 2 == 0 { "completed" } else { "cancelled" }, "runId": "r1"})).unwrap();
            let kind = if n % 2 == 0 { EventType::RunCompleted } else { EventType::RunCancelled };
            racers.push(tokio::spawn(async move {
                let told = vec![crate::suite::events::event("r1", kind, 10 + n, n)];
                (n, store.end_run(&ended, &result, told).await.unwrap())
            }));
        }
        let mut winners = Vec::new();
        for racer in racers {
            let (n, ended) = racer.await.unwrap();
            if let Some(events) = ended {
                winners.push((n, events));
            }
        }
        assert_eq!(winners.len(), 1, "exactly one ending wins");
        let (n, told) = winners.remove(0);
        let delta = delta.durable().await.unwrap();
        let log = store.after(None, &filter, 100).await.unwrap();
        assert_eq!(log.iter().map(|e| (e.id.clone(), e.kind)).collect::<Vec<_>>(), [
            (delta[0].id.clone(), EventType::AssistantDelta),
            (told[0].id.clone(), told[0].kind),
        ]);
        let row = store.run(&RunId::new("r1")).await.unwrap().unwrap();
        assert_eq!((row.status, row.ended_at), (told[0].kind.ended_status().unwrap(), Some(10 + n)));
        // A run that has ended takes no other end, and no event with it.
        let mut again = row.clone();
        again.status = RunStatus::Failed;
        let result: RunResult = serde_json::from_value(serde_json::json!({"status": "failed", "runId": "r1"})).unwrap();
        let told = vec![crate::suite::events::event("r1", EventType::RunFailed, 30, 0)];
        assert_eq!(store.end_run(&again, &result, told).await.unwrap(), None);
        assert_eq!(store.after(None, &filter, 100).await.unwrap().len(), 2);
        assert_eq!(store.run(&RunId::new("r1")).await.unwrap().unwrap().status, row.status);
    }
}

on_both! {
    async fn claims_keep_one_live_run_per_environment(t) {
        let store = &t.store;
        let in_env: talon_store::RunRequest = serde_json::from_value(serde_json::json!({"input": "hi", "environmentId": "env_1"})).unwrap();
        let plain: talon_store::RunRequest = serde_json::from_value(serde_json::json!({"input": "hi"})).unwrap();
        for (id, session, at, request) in [("e1", "s1", 1, &in_env), ("e2", "s2", 2, &in_env), ("p1", "s3", 3, &plain)] {
            store.create_run(&in_session(id, session, at), None, "h", "n1", Some(request)).await.unwrap();
        }
        assert!(store.environment_busy(&EnvironmentId::new("env_1")).await.unwrap());
        assert!(!store.environment_busy(&EnvironmentId::new("env_2")).await.unwrap());
        // e2 waits for e1's environment though its session is free; p1 has none.
        let first = store.claim_run("n1", None, 10, 100).await.unwrap().unwrap();
        assert_eq!(first.run.id, RunId::new("e1"));
        let second = store.claim_run("n1", None, 11, 100).await.unwrap().unwrap();
        assert_eq!(second.run.id, RunId::new("p1"));
        assert_eq!(store.claim_run("n1", None, 12, 100).await.unwrap(), None);
        let mut ended = first.run.clone();
        ended.status = RunStatus::Completed;
        ended.ended_at = Some(20);
        let result: RunResult = serde_json::from_value(serde_json::json!({"status": "completed", "runId": "e1"})).unwrap();
        assert!(store.end_run(&ended, &result, Vec::new()).await.unwrap().is_some());
        let third = store.claim_run("n2", None, 21, 100).await.unwrap().unwrap();
        assert_eq!(third.run.id, RunId::new("e2"));
    }
}

on_both! {
    async fn leases_cancel_requests_and_orphans(t) {
        let store = &t.store;
        for (id, session) in [("r1", "s1"), ("r2", "s2"), ("r3", "s3")] {
            store.create_run(&in_session(id, session, 1), None, "h", "n", None).await.unwrap();
        }
        store.claim_run("alive", Some(&RunId::new("r1")), 10, 100).await.unwrap().unwrap();
        store.claim_run("dead", Some(&RunId::new("r2")), 10, 100).await.unwrap().unwrap();
        assert_eq!(store.renew_leases("alive", 500).await.unwrap(), 1);
        let lease = |node: &str, runs, until| talon_store::NodeLeases { node: node.into(), runs, lease_until: Some(until) };
        assert_eq!(store.leases().await.unwrap(), [lease("alive", 1, 500), lease("dead", 1, 100)]);
        let ids = |runs: Vec<Run>| runs.into_iter().map(|r| r.id.into_string()).collect::<Vec<_>>();
        assert_eq!(ids(store.orphaned_runs(200, None).await.unwrap()), ["r2"]);
        assert_eq!(ids(store.orphaned_runs(200, Some("alive")).await.unwrap()), ["r1", "r2"]);
        assert_eq!(ids(store.live_runs().await.unwrap()), ["r1", "r2"]);
        assert_eq!(ids(store.queued_runs(10).await.unwrap()), ["r3"]);
        assert!(store.request_cancel(&RunId::new("r1"), CancelMode::Rollback).await.unwrap());
        assert!(store.request_cancel(&RunId::new("r2"), CancelMode::Cancel).await.unwrap());
        assert!(!store.request_cancel(&RunId::new("ghost"), CancelMode::Cancel).await.unwrap());
        assert_eq!(store.cancel_requests("alive").await.unwrap(), [("r1".to_owned(), CancelMode::Rollback)]);
        assert_eq!(store.cancel_requests("dead").await.unwrap(), [("r2".to_owned(), CancelMode::Cancel)]);
        assert_eq!(store.cancel_requests("other").await.unwrap(), []);
        let (found, hash) = store.run_by_idempotency_key("none").await.unwrap().map_or((None, String::new()), |(r, h)| (Some(r), h));
        assert_eq!((found, hash), (None, String::new()));
        store.create_run(&in_session("r9", "s9", 2), Some("key"), "hash-9", "n", None).await.unwrap();
        let (found, hash) = store.run_by_idempotency_key("key").await.unwrap().unwrap();
        assert_eq!((found.id.as_str(), hash.as_str()), ("r9", "hash-9"));
    }
}

on_both! {
    async fn checkpoints_are_kept_by_the_executing_node_and_orphans_requeued_once(t) {
        use talon_store::Orphaned;
        let store = &t.store;
        store.create_run(&in_session("r1", "s1", 1), None, "h", "n", None).await.unwrap();
        store.create_run(&in_session("r2", "s1", 2), None, "h", "n", None).await.unwrap();
        let first = store.claim_run("dead", None, 10, 100).await.unwrap().unwrap();
        assert_eq!((first.run.id.as_str(), first.checkpoint), ("r1", None));
        let turn = serde_json::json!({"turn": {"turns": 1}, "through": 7});
        assert!(store.set_run_checkpoint(&RunId::new("r1"), "dead", &turn).await.unwrap());
        assert!(!store.set_run_checkpoint(&RunId::new("r1"), "other", &turn).await.unwrap(), "only the executing node");
        assert_eq!(store.run_checkpoint(&RunId::new("r1")).await.unwrap(), Some(turn.clone()));
        // Its lease has not ended: not an orphan for another node.
        assert!(!store.requeue_run(&RunId::new("r1"), Orphaned::LeaseEnded { now: 50 }, &turn).await.unwrap());
        let again = serde_json::json!({"turn": {"turns": 1}, "through": 7, "resumes": 1});
        // Two nodes notice the death; exactly one puts it back.
        let r1 = RunId::new("r1");
        let (a, b) = tokio::join!(
            store.requeue_run(&r1, Orphaned::LeaseEnded { now: 200 }, &again),
            store.requeue_run(&r1, Orphaned::LeaseEndedOrHeldBy { now: 200, node: "x" }, &again),
        );
        assert_eq!([a.unwrap(), b.unwrap()].iter().filter(|r| **r).count(), 1);
        let run = store.run(&talon_protocol::gateway::bounded::RunId::new("r1")).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Queued);
        // The resumed run is claimed before the run queued behind it, with
        // its checkpoint and its first start time.
        let resumed = store.claim_run("alive", None, 300, 400).await.unwrap().unwrap();
        assert_eq!(
            (resumed.run.id.as_str(), resumed.run.started_at, resumed.checkpoint),
            ("r1", Some(10), Some(again.clone()))
        );
        assert!(!store.set_run_checkpoint(&RunId::new("r1"), "dead", &turn).await.unwrap(), "the dead node lost it");
        assert!(!store.requeue_run(&RunId::new("r1"), Orphaned::LeaseEnded { now: 350 }, &again).await.unwrap());
        assert!(store.requeue_run(&RunId::new("r1"), Orphaned::Any, &again).await.unwrap());
    }
}

/// Another node's commits and run changes reach a store without polling
/// (LISTEN/NOTIFY). Without notifications `committed()` would only move
/// for the store's own appends and `runs_changed()` never.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_nodes_commits_and_run_changes_are_notified() {
    use std::time::Duration;
    let t = super::backend::TestStore::open(super::backend::Kind::Postgres).await;
    let other = t.reopen().await;
    let mut committed = other.committed();
    let mut runs = other.runs_changed();
    // The listener is connected once it has woken everyone.
    tokio::time::timeout(Duration::from_secs(10), runs.changed())
        .await
        .expect("the listener connects")
        .unwrap();
    committed.borrow_and_update();
    let appended = t
        .store
        .append(vec![crate::suite::events::event(
            "r1",
            talon_protocol::EventType::AssistantDelta,
            1,
            1,
        )])
        .await
        .unwrap();
    let id: u64 = appended[0].id.as_str().parse().unwrap();
    tokio::time::timeout(
        Duration::from_secs(10),
        committed.wait_for(|last| *last >= id),
    )
    .await
    .expect("another node's commit is notified")
    .unwrap();
    runs.borrow_and_update();
    t.store
        .create_run(&in_session("r1", "s1", 1), None, "h", "n", None)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), runs.changed())
        .await
        .expect("another node's new run is notified")
        .unwrap();
    runs.borrow_and_update();
    assert!(
        t.store
            .request_cancel(&RunId::new("r1"), CancelMode::Cancel)
            .await
            .unwrap()
    );
    tokio::time::timeout(Duration::from_secs(10), runs.changed())
        .await
        .expect("a cancel request is notified")
        .unwrap();
    // SQLite: one process; nothing ticks.
    let lite = super::backend::TestStore::open(super::backend::Kind::Sqlite).await;
    let quiet = lite.store.runs_changed();
    lite.store
        .create_run(&in_session("r1", "s1", 1), None, "h", "n", None)
        .await
        .unwrap();
    assert!(!quiet.has_changed().unwrap());
}

/// A stored request that no longer decodes (edited by hand, or written by
/// another version) is reported as corrupt, naming the run and the field,
/// and never read as a run without a request.
#[tokio::test]
async fn a_stored_request_that_does_not_decode_is_corrupt_not_missing() {
    use sqlx::Connection as _;
    let t = super::backend::TestStore::open(super::backend::Kind::Sqlite).await;
    let request: talon_store::RunRequest =
        serde_json::from_value(serde_json::json!({"input": "hi"})).unwrap();
    t.store
        .create_run(&run("r1"), None, "h", "n1", Some(&request))
        .await
        .unwrap();
    let url = format!("sqlite:{}", t.dir.path().join("talon.db").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query("UPDATE runs SET request = '{\"input\": 7}' WHERE id = 'r1'")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let error = t.store.run_request(&RunId::new("r1")).await.unwrap_err();
    assert!(
        matches!(&error, StoreError::Corrupt(text) if text.starts_with("run r1's stored request: ")),
        "{error:?}"
    );
    // Claimed all the same, so that the run ends (with this as its error)
    // rather than being claimed again after every lease.
    let claimed = t
        .store
        .claim_run("n1", None, 10, 100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.run.id, RunId::new("r1"));
    assert!(
        matches!(&claimed.request, Err(talon_store::UnreadableRequest::Corrupt(text)) if text.starts_with("run r1's stored request: ")),
        "{:?}",
        claimed.request
    );
    assert_eq!(
        t.store.run_request(&RunId::new("gone")).await.unwrap(),
        None
    );
}

on_both! {
    /// A one-time secret is consumed once: of two concurrent consumers
    /// exactly one wins, and a revoked or unknown token is never consumed.
    async fn a_token_is_consumed_once_by_one_of_many(t) {
        let store = &t.store;
        let token = StoredToken {
            subject: None,
            agents: None,
            id: "tok_login".into(),
            hash: "ef".repeat(32),
            name: Some("dashboard login".into()),
            scopes: vec![Scope::AgentRead],
            created_at: 10,
            expires_at: Some(1_000),
            revoked_at: None,
            parent_id: None,
        };
        store.insert_token(&token).await.unwrap();
        let won = tokio::join!(
            store.consume_token("tok_login", 100),
            store.consume_token("tok_login", 101),
            store.consume_token("tok_login", 102),
            store.consume_token("tok_login", 103),
        );
        let won = [won.0.unwrap(), won.1.unwrap(), won.2.unwrap(), won.3.unwrap()];
        assert_eq!(won.iter().filter(|w| **w).count(), 1);
        let stored = store.token("tok_login").await.unwrap().unwrap();
        assert!(stored.revoked_at.is_some_and(|at| (100..104).contains(&at)));
        assert!(!store.consume_token("tok_login", 500).await.unwrap());
        assert!(!store.consume_token("tok_nobody", 500).await.unwrap());
    }
}
