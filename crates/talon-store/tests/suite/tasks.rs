//! The task ledger: a task stored once, read back whole, listed newest
//! first through every filter and the owner's view, paged without skip or
//! repeat, and moved by compare-and-set so that exactly one change wins.

use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, TaskId};
use talon_protocol::gateway::{DeliveryStatus, Task, TaskKind, TaskStatus};
use talon_store::{Owner, StoreError, TaskCursor, TaskFilter, TaskOwner};

pub fn task(id: &str) -> Task {
    Task {
        label: Some("a label".into()),
        description: Some("look it up".into()),
        agent_id: Some(AgentId::new("helper")),
        session_id: Some(SessionId::new("s1")),
        run_id: Some(RunId::new("r1")),
        ..Task::queued(TaskId::new(id), TaskKind::Subagent, 10)
    }
}

fn ids(tasks: &[Task]) -> Vec<&str> {
    tasks.iter().map(|t| t.id.as_str()).collect()
}

on_both! {
    async fn a_task_is_stored_once_and_read_back_whole(t) {
        let store = &t.store;
        let owner = TaskOwner { subject: Some("alice"), agent_id: Some("main"), token_id: Some("tok_1") };
        let first = task("task_1");
        store.create_task(&first, owner).await.unwrap();
        assert!(matches!(
            store.create_task(&first, owner).await,
            Err(StoreError::Exists { kind: "task", .. })
        ));
        let everyone = Owner::default();
        assert_eq!(store.task(&first.id, &everyone).await.unwrap(), Some(first.clone()));
        assert_eq!(store.task(&TaskId::new("task_nope"), &everyone).await.unwrap(), None);
        // A bound token sees its own tasks only.
        let alice = Owner { subject: Some("alice".into()), agents: None };
        let bob = Owner { subject: Some("bob".into()), agents: None };
        let other_agent = Owner { subject: None, agents: Some(vec!["other".into()]) };
        assert_eq!(store.task(&first.id, &alice).await.unwrap(), Some(first.clone()));
        assert_eq!(store.task(&first.id, &bob).await.unwrap(), None);
        assert_eq!(store.task(&first.id, &other_agent).await.unwrap(), None);
    }
}

on_both! {
    async fn a_change_is_a_compare_and_set_and_a_terminal_task_never_moves(t) {
        let store = &t.store;
        let queued = task("task_1");
        store.create_task(&queued, TaskOwner::default()).await.unwrap();
        let running = Task {
            status: TaskStatus::Running,
            child_run_id: Some(RunId::new("r_child")),
            updated_at: 20,
            ..queued.clone()
        };
        assert!(store.update_task(&running, 10).await.unwrap());
        // A write from the stale read finds it changed: nothing is written.
        let stale = Task { label: Some("stale".into()), updated_at: 21, ..queued.clone() };
        assert!(!store.update_task(&stale, 10).await.unwrap());
        assert_eq!(store.task_of_child_run(&RunId::new("r_child")).await.unwrap(), Some(running.clone()));
        // A cancel and an ending race from the same read: exactly one wins.
        let cancelled = Task { status: TaskStatus::Cancelled, updated_at: 30, ..running.clone() };
        let succeeded = Task { status: TaskStatus::Succeeded, result: Some("done".into()), updated_at: 31, ..running.clone() };
        let (a, b) = tokio::join!(store.update_task(&cancelled, 20), store.update_task(&succeeded, 20));
        assert_eq!([a.unwrap(), b.unwrap()].iter().filter(|won| **won).count(), 1);
        let ended = store.task(&queued.id, &Owner::default()).await.unwrap().unwrap();
        assert!(ended == cancelled || ended == succeeded, "{ended:?}");
        // An ended task takes changes that keep its status, never another.
        let settled = Task { delivery_status: DeliveryStatus::Delivered, updated_at: 40, ..ended.clone() };
        assert!(store.update_task(&settled, ended.updated_at).await.unwrap());
        let revived = Task { status: TaskStatus::Running, updated_at: 50, ..settled.clone() };
        assert!(!store.update_task(&revived, 40).await.unwrap());
        assert_eq!(store.tasks_in(&[TaskStatus::Queued, TaskStatus::Running], 10).await.unwrap(), Vec::<Task>::new());
        assert_eq!(store.tasks_undelivered(10).await.unwrap(), Vec::<Task>::new());
    }
}

on_both! {
    async fn tasks_are_listed_newest_first_filtered_and_paged(t) {
        let store = &t.store;
        // t1..t5: two sessions, two runs, times 10, 20, 20, 20, 30.
        let specs = [
            ("t1", "s1", "r1", 10, TaskStatus::Succeeded, "alice"),
            ("t2", "s2", "r2", 20, TaskStatus::Running, "bob"),
            ("t3", "s1", "r1", 20, TaskStatus::Failed, "alice"),
            ("t4", "s1", "r3", 20, TaskStatus::Queued, "alice"),
            ("t5", "s2", "r2", 30, TaskStatus::Running, "bob"),
        ];
        for (id, session, run, at, status, subject) in specs {
            let t = Task {
                session_id: Some(SessionId::new(session)),
                run_id: Some(RunId::new(run)),
                created_at: at,
                status,
                ..task(id)
            };
            let owner = TaskOwner { subject: Some(subject), agent_id: Some("main"), token_id: None };
            store.create_task(&t, owner).await.unwrap();
        }
        let all = TaskFilter::default();
        assert_eq!(ids(&store.list_tasks(&all, None, 100).await.unwrap()), ["t5", "t4", "t3", "t2", "t1"]);
        let mut seen = Vec::new();
        let mut cursor: Option<(String, u64)> = None;
        loop {
            let after = cursor.as_ref().map(|(id, at)| TaskCursor { id, created_at: *at });
            let page = store.list_tasks(&all, after, 2).await.unwrap();
            if page.is_empty() {
                break;
            }
            seen.extend(page.iter().map(|t| t.id.as_str().to_owned()));
            let last = page.last().unwrap();
            cursor = Some((last.id.as_str().to_owned(), last.created_at));
        }
        assert_eq!(seen, ["t5", "t4", "t3", "t2", "t1"]);
        let cases: [(TaskFilter, &[&str]); 6] = [
            (TaskFilter { statuses: vec![TaskStatus::Running], ..all.clone() }, &["t5", "t2"]),
            (TaskFilter { statuses: vec![TaskStatus::Queued, TaskStatus::Failed], ..all.clone() }, &["t4", "t3"]),
            (TaskFilter { session_id: Some("s1".into()), ..all.clone() }, &["t4", "t3", "t1"]),
            (TaskFilter { run_id: Some("r2".into()), ..all.clone() }, &["t5", "t2"]),
            (TaskFilter { kind: Some(TaskKind::Subagent), run_id: Some("r1".into()), ..all.clone() }, &["t3", "t1"]),
            (TaskFilter { owner: Owner { subject: Some("bob".into()), agents: None }, ..all.clone() }, &["t5", "t2"]),
        ];
        for (filter, expected) in cases {
            assert_eq!(ids(&store.list_tasks(&filter, None, 100).await.unwrap()), expected, "{filter:?}");
        }
        let live = store.tasks_in(&[TaskStatus::Queued, TaskStatus::Running], 10).await.unwrap();
        assert_eq!(ids(&live), ["t2", "t4", "t5"]);
    }
}

on_both! {
    async fn a_process_task_is_orphaned_when_its_nodes_lease_passes_or_its_node_restarts(t) {
        let store = &t.store;
        let process = |id: &str, created_at: u64| Task {
            kind: TaskKind::Process,
            status: TaskStatus::Running,
            created_at,
            updated_at: created_at,
            ..task(id)
        };
        for (id, at) in [("p_a", 10), ("p_b", 11), ("p_c", 12), ("p_unheld", 13), ("p_new", 5_000)] {
            store.create_task(&process(id, at), TaskOwner::default()).await.unwrap();
        }
        store.create_task(&task("sub"), TaskOwner::default()).await.unwrap();
        store.hold_task(&TaskId::new("p_a"), "node_a", 1_000).await.unwrap();
        store.hold_task(&TaskId::new("p_b"), "node_b", 1_000).await.unwrap();
        store.hold_task(&TaskId::new("p_c"), "node_b", 1_000).await.unwrap();
        // node_b lives on, running both: their leases move past now (a
        // task another node holds is not renewed by node_b).
        let held = ["p_b".to_owned(), "p_c".to_owned(), "p_a".to_owned()];
        assert_eq!(store.renew_task_leases("node_b", &held, 3_000).await.unwrap(), 2);
        assert_eq!(store.renew_task_leases("node_b", &[], 3_000).await.unwrap(), 0);
        let orphans = |node: Option<&'static str>| async move {
            store
                .orphaned_process_tasks(TaskKind::Process, 2_000, node, 100)
                .await
                .unwrap()
        };
        // node_a's lease passed; p_unheld was never taken and is old; p_new
        // is young.
        assert_eq!(ids(&orphans(None).await), ["p_a", "p_unheld"]);
        // node_b restarted: its own are orphans too.
        assert_eq!(ids(&orphans(Some("node_b")).await), ["p_a", "p_b", "p_c", "p_unheld"]);
        // An ended task is no orphan.
        let read = store.task(&TaskId::new("p_a"), &Owner::default()).await.unwrap().unwrap();
        let lost = Task { status: TaskStatus::Lost, updated_at: 20, ..read.clone() };
        assert!(store.update_task(&lost, read.updated_at).await.unwrap());
        assert_eq!(ids(&orphans(None).await), ["p_unheld"]);
    }
}
