//! Deletes: a session goes with its messages, its runs and everything
//! they made, or not at all while a run of it is live; an ended run goes
//! with its events, approvals and artifacts; the pages they held are
//! room again (`stored_bytes`).

use talon_protocol::EventType;
use talon_protocol::gateway::bounded::{SessionId, Subject};
use talon_protocol::gateway::{RunStatus, Session};
use talon_store::{EventFilter, StoreError};

use super::events::event;
use super::runs::run;
use super::sessions::{message, session};

on_both! {
    async fn a_session_goes_with_everything_its_runs_made_but_never_while_one_is_live(t) {
        let store = &t.store;
        let s1 = Session { id: SessionId::new("s1"), ..session("s1", "k", 1) };
        store.create_session(&s1).await.unwrap();
        store.create_session(&session("s2", "other", 2)).await.unwrap();
        store
            .append_messages(&SessionId::new("s1"), &[message("s1", "m1", talon_protocol::gateway::MessageRole::User, "hi")])
            .await
            .unwrap();
        for id in ["r1", "r2"] {
            store.create_run(&run(id), None, "h", "node", None).await.unwrap();
        }
        let mut other = run("r3");
        other.session_id = Some(SessionId::new("s2"));
        store.create_run(&other, None, "h", "node", None).await.unwrap();
        store
            .append(vec![
                event("r1", EventType::RunStarted, 1, 1),
                event("r2", EventType::RunStarted, 1, 2),
                talon_protocol::Event { session_id: Some(SessionId::new("s2")), ..event("r3", EventType::RunStarted, 1, 3) },
            ])
            .await
            .unwrap();
        // r2 is live: nothing goes.
        let mut live = run("r2");
        live.status = RunStatus::Running;
        store.update_run(&live).await.unwrap();
        assert!(matches!(store.delete_session("s1").await, Err(StoreError::Busy { kind: "session", .. })));
        assert!(matches!(store.delete_run("r2").await, Err(StoreError::Busy { kind: "run", .. })));
        assert!(store.session(&talon_protocol::gateway::bounded::SessionId::new("s1")).await.unwrap().is_some());
        // Ended, r1 goes alone; then the session with r2.
        live.status = RunStatus::Completed;
        store.update_run(&live).await.unwrap();
        let mut ended = run("r1");
        ended.status = RunStatus::Completed;
        store.update_run(&ended).await.unwrap();
        let gone = store.delete_run("r1").await.unwrap();
        assert_eq!((gone.run_ids, gone.events), (vec!["r1".to_owned()], 1));
        assert_eq!(store.run(&talon_protocol::gateway::bounded::RunId::new("r1")).await.unwrap(), None);
        assert_eq!(store.messages(&SessionId::new("s1"), None, 10).await.unwrap().len(), 1);
        let gone = store.delete_session("s1").await.unwrap();
        assert_eq!((gone.run_ids, gone.events), (vec!["r2".to_owned()], 1));
        assert_eq!(store.session(&talon_protocol::gateway::bounded::SessionId::new("s1")).await.unwrap(), None);
        assert_eq!(store.messages(&SessionId::new("s1"), None, 10).await.unwrap(), vec![]);
        // The other session's are untouched; the log reads on across the gap.
        let left = store.after(None, &EventFilter::default(), 100).await.unwrap();
        assert_eq!(left.iter().map(|e| e.run_id.clone().unwrap().to_string()).collect::<Vec<_>>(), ["r3"]);
        assert!(store.run(&talon_protocol::gateway::bounded::RunId::new("r3")).await.unwrap().is_some());
        assert!(matches!(store.delete_session("s1").await, Err(StoreError::NotFound { .. })));
        assert!(matches!(store.delete_run("r1").await, Err(StoreError::NotFound { .. })));
    }
}

/// On SQLite the pages a delete frees are room again: the store's size is
/// back near where it was before the session was written.
#[tokio::test]
async fn a_deleted_sessions_pages_are_room_again() {
    let t = super::backend::TestStore::open(super::backend::Kind::Sqlite).await;
    let store = &t.store;
    let before = store.stored_bytes().await.unwrap();
    store.create_session(&session("s1", "k", 1)).await.unwrap();
    let mut ended = run("r1");
    ended.status = RunStatus::Completed;
    store
        .create_run(&ended, None, "h", "node", None)
        .await
        .unwrap();
    let big: Vec<_> = (0..200)
        .map(|n| talon_protocol::Event {
            data: serde_json::json!({"text": "x".repeat(10_000), "n": n}),
            ..event("r1", EventType::AssistantDelta, 1, n)
        })
        .collect();
    store.append(big).await.unwrap();
    let full = store.stored_bytes().await.unwrap();
    assert!(full > before + 2_000_000, "{before} -> {full}");
    store.delete_session("s1").await.unwrap();
    let after = store.stored_bytes().await.unwrap();
    assert!(after < before + 200_000, "{before} -> {full} -> {after}");
}

on_both! {
    async fn usage_counts_what_each_subject_and_token_made(t) {
        let store = &t.store;
        let mine = Session { subject: Some(Subject::new("alice")), ..session("s1", "k", 1) };
        store.create_session_by(&mine, Some("tok_a")).await.unwrap();
        store.create_session_by(&session("s2", "k2", 2), Some("tok_b")).await.unwrap();
        store.create_session(&session("s3", "k3", 3)).await.unwrap();
        store.create_run(&run("r1"), None, "h", "node", None).await.unwrap();
        store
            .append(vec![talon_protocol::Event {
                data: serde_json::json!({"text": "x".repeat(10_000)}),
                ..event("r1", EventType::AssistantDelta, 1, 1)
            }])
            .await
            .unwrap();
        let usage = store.usage(0).await.unwrap();
        let alice = usage.subjects["alice"];
        assert!(alice > 10_000 && alice < 20_000, "{alice}");
        assert_eq!(usage.tokens["tok_a"], alice);
        assert!(usage.tokens["tok_b"] < 2_000, "{:?}", usage.tokens);
        assert_eq!(usage.subjects.len(), 1);
    }
}

on_both! {
    async fn a_deleted_session_takes_its_ended_tasks_and_leaves_live_ones_going(t) {
        let store = &t.store;
        store.create_session(&session("s1", "k", 1)).await.unwrap();
        let owner = talon_store::TaskOwner::default();
        let ended = talon_protocol::gateway::Task {
            status: talon_protocol::gateway::TaskStatus::Succeeded,
            ..crate::suite::tasks::task("task_ended")
        };
        let live = crate::suite::tasks::task("task_live");
        let elsewhere = talon_protocol::gateway::Task {
            session_id: Some(SessionId::new("s2")),
            ..ended.clone()
        };
        let elsewhere = talon_protocol::gateway::Task { id: talon_protocol::gateway::bounded::TaskId::new("task_else"), ..elsewhere };
        for task in [&ended, &live, &elsewhere] {
            store.create_task(task, owner).await.unwrap();
        }
        store.delete_session("s1").await.unwrap();
        let everyone = talon_store::Owner::default();
        assert_eq!(store.task(&ended.id, &everyone).await.unwrap(), None);
        assert_eq!(store.task(&live.id, &everyone).await.unwrap(), Some(live.clone()));
        assert_eq!(store.task(&elsewhere.id, &everyone).await.unwrap(), Some(elsewhere.clone()));
    }
}
