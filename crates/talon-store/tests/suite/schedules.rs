//! Schedules: stored once, read and listed through the owner's view, paged
//! oldest first, due by `next_at` only while enabled, and moved by
//! compare-and-set so that of nodes racing for one slot exactly one claims
//! it, its firing's task stored with the claim or not at all.

use talon_protocol::gateway::bounded::{AgentId, ScheduleId, Subject, TaskId, Text};
use talon_protocol::gateway::schedules::{
    CatchUp, PayloadKind, Schedule, SchedulePayload, ScheduleSpec, ScheduleState,
};
use talon_protocol::gateway::{TaskKind, TaskStatus};
use talon_store::{Owner, ScheduleCursor, StoreError, TaskOwner};

use super::tasks::task;

fn schedule(id: &str, created_at: u64, next: Option<u64>) -> Schedule {
    Schedule {
        id: ScheduleId::new(id),
        agent_id: AgentId::new("main"),
        name: Text::from("nightly"),
        description: None,
        enabled: true,
        schedule: ScheduleSpec::Cron {
            expr: Text::from("0 3 * * *"),
            tz: Some(Text::from("Europe/Berlin")),
        },
        payload: SchedulePayload {
            kind: PayloadKind::AgentTurn,
            message: Text::from("report"),
            timeout_seconds: None,
        },
        session_key: None,
        catch_up: CatchUp::RunOnce,
        delete_after_run: false,
        subject: Some(Subject::new("alice")),
        state: ScheduleState {
            next_run_at: next,
            ..ScheduleState::default()
        },
        created_at,
        updated_at: created_at,
    }
}

fn ids(schedules: &[Schedule]) -> Vec<&str> {
    schedules.iter().map(|s| s.id.as_str()).collect()
}

on_both! {
    async fn schedules_are_stored_once_listed_by_owner_and_paged(t) {
        let store = &t.store;
        let first = schedule("sch_1", 10, Some(100));
        store.create_schedule(&first, Some("tok_a")).await.unwrap();
        assert!(matches!(
            store.create_schedule(&first, Some("tok_a")).await,
            Err(StoreError::Exists { kind: "schedule", .. })
        ));
        let mut bobs = schedule("sch_2", 10, Some(50));
        bobs.subject = Some(Subject::new("bob"));
        store.create_schedule(&bobs, Some("tok_b")).await.unwrap();
        store.create_schedule(&schedule("sch_3", 20, None), Some("tok_a")).await.unwrap();
        let everyone = Owner::default();
        let alice = Owner { subject: Some("alice".into()), agents: None };
        assert_eq!(store.schedule(&first.id, &everyone).await.unwrap(), Some(first.clone()));
        assert_eq!(store.schedule(&bobs.id, &alice).await.unwrap(), None);
        assert_eq!(ids(&store.list_schedules(&everyone, None, None, 10).await.unwrap()), ["sch_1", "sch_2", "sch_3"]);
        assert_eq!(ids(&store.list_schedules(&alice, None, None, 10).await.unwrap()), ["sch_1", "sch_3"]);
        assert_eq!(ids(&store.list_schedules(&everyone, Some("other"), None, 10).await.unwrap()), Vec::<&str>::new());
        let page = store.list_schedules(&everyone, None, None, 2).await.unwrap();
        let cursor = ScheduleCursor { id: page[1].id.as_str(), created_at: page[1].created_at };
        assert_eq!(ids(&store.list_schedules(&everyone, None, Some(cursor), 2).await.unwrap()), ["sch_3"]);
        assert_eq!(store.schedule_count(Some("tok_a")).await.unwrap(), 2);
        assert_eq!(store.schedule_count(Some("tok_b")).await.unwrap(), 1);
        // Due: enabled with a slot at or before now, soonest first.
        assert_eq!(ids(&store.due_schedules(100, 10).await.unwrap()), ["sch_2", "sch_1"]);
        assert_eq!(ids(&store.due_schedules(60, 10).await.unwrap()), ["sch_2"]);
        assert_eq!(store.next_slot().await.unwrap(), Some(50));
        let mut paused = bobs.clone();
        paused.enabled = false;
        paused.updated_at = 11;
        assert!(store.update_schedule(&paused, 10).await.unwrap());
        assert!(!store.update_schedule(&paused, 10).await.unwrap(), "a stale write loses");
        assert_eq!(ids(&store.due_schedules(100, 10).await.unwrap()), ["sch_1"]);
        assert_eq!(store.next_slot().await.unwrap(), Some(100));
        assert!(store.delete_schedule(&first.id).await.unwrap());
        assert!(!store.delete_schedule(&first.id).await.unwrap());
        assert_eq!(store.next_slot().await.unwrap(), None);
    }
}

on_both! {
    async fn of_two_claims_of_one_slot_exactly_one_wins_with_its_task(t) {
        let store = &t.store;
        let read = schedule("sch_1", 10, Some(100));
        store.create_schedule(&read, None).await.unwrap();
        let firing = |id: &str| {
            let mut firing = task(id);
            firing.kind = TaskKind::Cron;
            firing.schedule_id = Some(read.id.clone());
            firing
        };
        let (a, b) = (firing("task_a"), firing("task_b"));
        let mut next = read.clone();
        next.state.next_run_at = Some(200);
        next.state.firings = 1;
        next.updated_at = 11;
        let owner = TaskOwner::default();
        let (won_a, won_b) = tokio::join!(
            store.claim_firing(&next, read.updated_at, Some((&a, owner))),
            store.claim_firing(&next, read.updated_at, Some((&b, owner))),
        );
        let (won_a, won_b) = (won_a.unwrap(), won_b.unwrap());
        assert!(won_a ^ won_b, "exactly one claim wins: {won_a} {won_b}");
        let everyone = Owner::default();
        let stored = [
            store.task(&TaskId::new("task_a"), &everyone).await.unwrap(),
            store.task(&TaskId::new("task_b"), &everyone).await.unwrap(),
        ];
        assert_eq!(stored.iter().filter(|t| t.is_some()).count(), 1, "the loser's task is not stored");
        assert_eq!(store.schedule(&read.id, &everyone).await.unwrap(), Some(next.clone()));
        assert_eq!(ids(&store.due_schedules(150, 10).await.unwrap()), Vec::<&str>::new());
        // A claim whose task id is taken writes nothing.
        let mut after = next.clone();
        after.updated_at = 12;
        let taken = if won_a { a } else { b };
        assert!(matches!(
            store.claim_firing(&after, next.updated_at, Some((&taken, owner))).await,
            Err(StoreError::Exists { kind: "task", .. })
        ));
        assert_eq!(store.schedule(&read.id, &everyone).await.unwrap(), Some(next));
        let queued = store.tasks_in(&[TaskStatus::Queued], 10).await.unwrap();
        assert_eq!(queued.len(), 1);
        assert_eq!(queued[0].schedule_id, Some(read.id.clone()));
    }
}
