//! Suspended Code Mode cells in the database: consumed once (also by
//! concurrent takers on two nodes), scoped, settled in place, TTL'd,
//! bounded, and refused when tampered with.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId};

use serde_json::json;
use talon_cells::{
    CellError, CellScope, PendingNestedCall, SnapshotStore, StoreKey, StoreLimits, SuspendedCell,
};
use talon_protocol::CellId;
use talon_store::CellStore;

fn id(text: &str) -> CellId {
    CellId::new(text)
}

fn scope(run: &str) -> CellScope {
    CellScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s1"),
        run_id: RunId::new(run),
    }
}

fn cell(id: &str, ttl: Duration) -> SuspendedCell {
    SuspendedCell {
        id: CellId::new(id),
        scope: scope("r1"),
        snapshot: vec![1, 2, 3, 4],
        pending: vec![PendingNestedCall {
            host_call_id: 7,
            call_id: "c7".into(),
            tool_id: "mcp:fs/read".into(),
            args: json!({"path": "a.txt"}),
            replay_safe: true,
            result: None,
        }],
        // Expiry is kept to the millisecond.
        expires_at: UNIX_EPOCH
            + Duration::from_millis(
                (SystemTime::now() + ttl)
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_millis() as u64,
            ),
        meta: json!({"cell": 1}),
    }
}

fn key() -> StoreKey {
    StoreKey::derive(&[9u8; 32])
}

fn cells(t: &super::backend::TestStore, limits: StoreLimits) -> Arc<CellStore> {
    Arc::new(CellStore::open(&t.config, limits, key()).unwrap())
}

on_both! {
    async fn a_cell_is_taken_once_by_its_own_run(t) {
        let store = cells(&t, StoreLimits::default());
        let c = cell("cell-1", Duration::from_secs(60));
        store.put(c.clone()).unwrap();
        assert_eq!(store.take(&id("cell-1"), &scope("other")), Err(CellError::NotFound("cell-1".into())));
        assert_eq!(store.take(&id("cell-1"), &scope("r1")).unwrap().expires_at, c.expires_at);
        assert_eq!(store.take(&id("cell-1"), &scope("r1")), Err(CellError::NotFound("cell-1".into())));
        // Put again (a resumed cell suspends again), settle, then take.
        store.put(c.clone()).unwrap();
        assert!(store.settle(&id("cell-1"), 7, Ok(json!({"text": "hi"}))).unwrap());
        assert!(!store.settle(&id("cell-1"), 99, Ok(json!(null))).unwrap());
        assert!(!store.settle(&id("ghost"), 7, Ok(json!(null))).unwrap());
        let taken = store.take(&id("cell-1"), &scope("r1")).unwrap();
        assert_eq!(taken.pending[0].result, Some(Ok(json!({"text": "hi"}))));
        assert_eq!(SuspendedCell { pending: c.pending.clone(), ..taken }, c);
        // Delete and purge.
        store.put(cell("cell-2", Duration::from_secs(60))).unwrap();
        store.delete(&id("cell-2")).unwrap();
        store.delete(&id("cell-2")).unwrap();
        assert_eq!(store.take(&id("cell-2"), &scope("r1")), Err(CellError::NotFound("cell-2".into())));
    }
}

on_both! {
    async fn cells_expire_and_are_bounded(t) {
        let store = cells(&t, StoreLimits { max_snapshot_bytes: 16, max_live_cells: 2 });
        store.put(cell("old", Duration::from_millis(1))).unwrap();
        // Not a wait: lets the 1 ms expiry pass.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(store.take(&id("old"), &scope("r1")), Err(CellError::Expired("old".into())));
        store.put(cell("e1", Duration::from_millis(1))).unwrap();
        // Not a wait: lets the 1 ms expiry pass.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(store.purge_expired().unwrap(), 1);
        store.put(cell("a", Duration::from_secs(60))).unwrap();
        store.put(cell("b", Duration::from_secs(60))).unwrap();
        store.put(cell("b", Duration::from_secs(60))).unwrap();
        assert_eq!(store.put(cell("c", Duration::from_secs(60))), Err(CellError::TooMany(2)));
        let big = SuspendedCell { snapshot: vec![0; 17], ..cell("a", Duration::from_secs(60)) };
        assert!(matches!(store.put(big), Err(CellError::TooLarge { size: 17, limit: 16 })));
    }
}

on_both! {
    async fn of_concurrent_takers_on_two_nodes_exactly_one_gets_the_cell(t) {
        let nodes = [cells(&t, StoreLimits::default()), cells(&t, StoreLimits::default())];
        for round in 0..5 {
            let id = id(&format!("cell-{round}"));
            nodes[0].put(cell(id.as_str(), Duration::from_secs(60))).unwrap();
            let threads: Vec<_> = (0..6)
                .map(|n| {
                    let store = nodes[n % 2].clone();
                    let id = id.clone();
                    std::thread::spawn(move || store.take(&id, &scope("r1")).is_ok())
                })
                .collect();
            let won = threads.into_iter().map(|h| h.join().unwrap()).filter(|ok| *ok).count();
            assert_eq!(won, 1, "round {round}");
        }
    }
}

on_both! {
    async fn a_record_sealed_with_another_key_is_refused(t) {
        let mine = cells(&t, StoreLimits::default());
        mine.put(cell("cell-1", Duration::from_secs(60))).unwrap();
        let other = CellStore::open(&t.config, StoreLimits::default(), StoreKey::derive(&[1u8; 32])).unwrap();
        assert_eq!(other.take(&id("cell-1"), &scope("r1")), Err(CellError::Tampered("cell-1".into())));
    }
}
