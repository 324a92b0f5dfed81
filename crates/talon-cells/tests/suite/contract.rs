//! Both snapshot stores obey the same contract; the file store, opened
//! again on the same directory with the same key, finds what an earlier
//! one left.

use std::time::{Duration, SystemTime};
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId};

use serde_json::json;
use talon_cells::StoreKey;
use talon_cells::{
    CellError, CellScope, FileStore, MemoryStore, NestedError, PendingNestedCall, SnapshotStore,
    StoreLimits, SuspendedCell,
};
use talon_protocol::{CellId, CodeModeErrorCode};

fn key() -> StoreKey {
    StoreKey::derive(&[3; 32])
}

fn scope(run: &str) -> CellScope {
    CellScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s1"),
        run_id: RunId::new(run),
    }
}

fn cell(id: &str, run: &str, ttl: Duration, size: usize) -> SuspendedCell {
    SuspendedCell {
        id: CellId::new(id),
        scope: scope(run),
        snapshot: vec![7; size],
        pending: vec![PendingNestedCall {
            host_call_id: 3,
            call_id: "exec-1/3".into(),
            tool_id: "mcp:github:create_issue".into(),
            args: json!({"title": "x"}),
            replay_safe: false,
            result: None,
        }],
        expires_at: SystemTime::now() + ttl,
        meta: json!({"parent": "exec-1"}),
    }
}

const LIMITS: StoreLimits = StoreLimits {
    max_snapshot_bytes: 1000,
    max_live_cells: 2,
};

fn contract(store: &dyn SnapshotStore) {
    let a = cell("cell-a", "r1", Duration::from_secs(60), 100);
    store.put(a.clone()).unwrap();
    // Another run (or session) cannot see it, and does not consume it.
    assert_eq!(
        store.take(&CellId::new("cell-a"), &scope("r2")),
        Err(CellError::NotFound("cell-a".into()))
    );
    // A result recorded while the cell is stored comes back with it.
    let failure = NestedError {
        message: "boom".into(),
        code: Some("nested_tool_failed".into()),
    };
    assert_eq!(
        store.settle(&CellId::new("cell-a"), 3, Err(failure.clone())),
        Ok(true)
    );
    assert_eq!(
        store.settle(&CellId::new("cell-a"), 99, Ok(json!(1))),
        Ok(false)
    );
    assert_eq!(
        store.settle(&CellId::new("nope"), 3, Ok(json!(1))),
        Ok(false)
    );
    let taken = store.take(&CellId::new("cell-a"), &scope("r1")).unwrap();
    let mut expected = a.clone();
    expected.pending[0].result = Some(Err(failure));
    // Files keep expiry to the millisecond.
    let drift = a
        .expires_at
        .duration_since(taken.expires_at)
        .unwrap_or_default();
    assert!(drift < Duration::from_millis(1));
    expected.expires_at = taken.expires_at;
    assert_eq!(taken, expected);
    assert_eq!(
        store.settle(&CellId::new("cell-a"), 3, Ok(json!(1))),
        Ok(false)
    );
    assert_eq!(
        store.take(&CellId::new("cell-a"), &scope("r1")),
        Err(CellError::NotFound("cell-a".into()))
    );

    let too_big = store
        .put(cell("big", "r1", Duration::from_secs(60), 1001))
        .unwrap_err();
    assert_eq!(too_big.code(), CodeModeErrorCode::SnapshotLimitExceeded);
    store
        .put(cell("one", "r1", Duration::from_secs(60), 10))
        .unwrap();
    store
        .put(cell("two", "r1", Duration::from_secs(60), 10))
        .unwrap();
    store
        .put(cell("two", "r1", Duration::from_secs(60), 20))
        .unwrap(); // replacing is fine
    assert_eq!(
        store.put(cell("three", "r1", Duration::from_secs(60), 10)),
        Err(CellError::TooMany(2))
    );
    store.delete(&CellId::new("one")).unwrap();
    store.delete(&CellId::new("one")).unwrap();
    store.delete(&CellId::new("two")).unwrap();

    store
        .put(cell("old", "r1", Duration::from_millis(1), 10))
        .unwrap();
    // Not a wait: lets the 1 ms expiry pass.
    std::thread::sleep(Duration::from_millis(20));
    let expired = store.take(&CellId::new("old"), &scope("r1")).unwrap_err();
    assert_eq!(
        (expired.clone(), expired.code()),
        (
            CellError::Expired("old".into()),
            CodeModeErrorCode::SnapshotExpired
        )
    );
    assert_eq!(
        store.take(&CellId::new("old"), &scope("r1")),
        Err(CellError::NotFound("old".into()))
    );
    store
        .put(cell("stale", "r1", Duration::from_millis(1), 10))
        .unwrap();
    store
        .put(cell("fresh", "r1", Duration::from_secs(60), 10))
        .unwrap();
    // Not a wait: lets the stale cell's 1 ms expiry pass.
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(store.purge_expired().unwrap(), 1);
    assert!(store.take(&CellId::new("fresh"), &scope("r1")).is_ok());
}

#[test]
fn the_memory_store_keeps_the_contract() {
    contract(&MemoryStore::new(LIMITS));
}

#[test]
fn the_file_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract(&FileStore::open(dir.path(), LIMITS, key()).unwrap());
}

#[test]
fn a_store_opened_again_on_the_same_directory_finds_its_cells() {
    let dir = tempfile::tempdir().unwrap();
    let before = FileStore::open(dir.path(), LIMITS, key()).unwrap();
    before
        .put(cell("cell-1", "r1", Duration::from_secs(60), 300))
        .unwrap();
    drop(before);
    let after = FileStore::open(dir.path(), LIMITS, key()).unwrap();
    assert_eq!(
        after.settle(&CellId::new("cell-1"), 3, Ok(json!({"n": 1}))),
        Ok(true)
    );
    drop(after);
    let after = FileStore::open(dir.path(), LIMITS, key()).unwrap();
    let cell = after.take(&CellId::new("cell-1"), &scope("r1")).unwrap();
    assert_eq!(cell.snapshot.len(), 300);
    assert_eq!(cell.pending[0].result, Some(Ok(json!({"n": 1}))));
    assert_eq!(cell.meta, json!({"parent": "exec-1"}));
    assert_eq!(cell.pending[0].tool_id, "mcp:github:create_issue");
    use std::os::unix::fs::PermissionsExt as _;
    after.put(cell.clone()).unwrap();
    let mode = std::fs::metadata(dir.path().join("cell-1.cell"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn damaged_records_and_hostile_ids_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path(), LIMITS, key()).unwrap();
    std::fs::write(dir.path().join("bad.cell"), b"TLNC\xff\xff\xff\xffjunk").unwrap();
    let damaged = store.take(&CellId::new("bad"), &scope("r1")).unwrap_err();
    assert_eq!(
        (damaged.clone(), damaged.code()),
        (
            CellError::Tampered("bad".into()),
            CodeModeErrorCode::SnapshotRestoreFailed
        )
    );
    assert_eq!(
        store.take(&CellId::new("bad"), &scope("r1")),
        Err(CellError::NotFound("bad".into())),
        "a damaged record is dropped once reported"
    );
    std::fs::write(dir.path().join("worse.cell"), b"TLNC\xff\xff\xff\xffjunk").unwrap();
    assert_eq!(
        store.purge_expired().unwrap(),
        1,
        "damaged records are purged"
    );
    for id in ["../escape", "a/b", "", "x.cell"] {
        assert_eq!(
            store.take(&CellId::new(id), &scope("r1")),
            Err(CellError::NotFound(id.into()))
        );
    }
    assert!(
        store
            .put(cell("../escape", "r1", Duration::from_secs(60), 1))
            .is_err()
    );
}

#[test]
fn a_directory_that_cannot_be_made_is_a_storage_error_keeping_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let error = FileStore::open(file.join("cells"), LIMITS, key()).unwrap_err();
    assert_eq!(error.code(), CodeModeErrorCode::InternalError);
    let CellError::Storage { context, source } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(context, &file.join("cells").display().to_string());
    let io = source.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(
        error.to_string(),
        format!("snapshot store: {}: {io}", file.join("cells").display())
    );
    assert!(std::error::Error::source(&error).is_some());
}
