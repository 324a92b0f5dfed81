//! The file store against whoever can write its directory without the key:
//! edited, moved, copied and replayed records fail as `Tampered`
//! (`snapshot_restore_failed`), planted files never hang it, killed
//! writers' leftovers go, and of racing takers exactly one wins.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId};

use serde_json::{Value, json};
use talon_cells::StoreKey;
use talon_cells::{
    CellError, CellScope, FileStore, PendingNestedCall, SnapshotStore, StoreLimits, SuspendedCell,
};
use talon_protocol::{CellId, CodeModeErrorCode};

const LIMITS: StoreLimits = StoreLimits {
    max_snapshot_bytes: 4096,
    max_live_cells: 64,
};

fn key() -> StoreKey {
    StoreKey::derive(&[5; 32])
}

fn store(dir: &Path) -> FileStore {
    FileStore::open(dir, LIMITS, key()).unwrap()
}

fn scope(run: &str) -> CellScope {
    CellScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s1"),
        run_id: RunId::new(run),
    }
}

fn cell(id: &str) -> SuspendedCell {
    SuspendedCell {
        id: CellId::new(id),
        scope: scope("r1"),
        snapshot: (0..200u32).map(|i| i as u8).collect(),
        pending: vec![PendingNestedCall {
            host_call_id: 3,
            call_id: "exec-1/3".into(),
            tool_id: "mcp:github:create_issue".into(),
            args: json!({"title": "x"}),
            replay_safe: false,
            result: None,
        }],
        expires_at: SystemTime::now() + Duration::from_secs(60),
        meta: json!({"parent": "exec-1"}),
    }
}

fn record(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.cell"))
}

fn assert_tampered(result: Result<SuspendedCell, CellError>, id: &str, shape: &str) {
    let error = result.expect_err(shape);
    assert_eq!(error, CellError::Tampered(id.into()), "{shape}");
    assert_eq!(
        error.code(),
        CodeModeErrorCode::SnapshotRestoreFailed,
        "{shape}"
    );
}

/// The record with its JSON header edited and re-serialised (valid JSON,
/// the header length fixed up, the old MAC kept).
fn edit_header(bytes: &[u8], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let header_len = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize;
    let mut header: Value = serde_json::from_slice(&bytes[80..80 + header_len]).unwrap();
    edit(&mut header);
    let header = header.to_string().into_bytes();
    let mut out = bytes[..80].to_vec();
    out[40..44].copy_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&bytes[80 + header_len..]);
    out
}

/// Runs `f` on a thread; fails if it does not finish within `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => value,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("the store hung"),
        Err(e) => panic!("the store panicked: {e}"),
    }
}

#[test]
fn a_flipped_byte_anywhere_fails_as_tampered() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    store.put(cell("probe")).unwrap();
    let len = std::fs::read(record(dir.path(), "probe")).unwrap().len();
    // Magic, version, expiry, nonce, generation, lengths, MAC, header,
    // snapshot, last byte.
    for at in [0, 4, 9, 20, 33, 41, 45, 60, 90, 300, len - 1] {
        store.put(cell("c")).unwrap();
        let path = record(dir.path(), "c");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        assert_tampered(
            store.take(&CellId::new("c"), &scope("r1")),
            "c",
            &format!("byte {at}"),
        );
    }
    for shape in ["truncated", "extended"] {
        store.put(cell("c")).unwrap();
        let path = record(dir.path(), "c");
        let mut bytes = std::fs::read(&path).unwrap();
        if shape == "truncated" {
            bytes.pop();
        } else {
            bytes.push(0);
        }
        std::fs::write(&path, &bytes).unwrap();
        assert_tampered(store.take(&CellId::new("c"), &scope("r1")), "c", shape);
    }
}

#[test]
fn edited_headers_fail_as_tampered() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(&str, Edit, &str)> = vec![
        (
            "injected result",
            Box::new(|h| h["pending"][0]["result"] = json!({"ok": "attacker's"})),
            "r1",
        ),
        (
            "injected error",
            Box::new(|h| h["pending"][0]["result"] = json!({"error": "no", "code": null})),
            "r1",
        ),
        (
            "edited args",
            Box::new(|h| h["pending"][0]["args"] = json!({"title": "rm -rf"})),
            "r1",
        ),
        (
            "edited tool",
            Box::new(|h| h["pending"][0]["toolId"] = json!("openclaw:core:exec")),
            "r1",
        ),
        (
            "replaySafe flipped",
            Box::new(|h| h["pending"][0]["replaySafe"] = json!(true)),
            "r1",
        ),
        ("call dropped", Box::new(|h| h["pending"] = json!([])), "r1"),
        (
            "edited meta",
            Box::new(|h| h["meta"] = json!({"parent": "exec-9"})),
            "r1",
        ),
        (
            "moved to another run",
            Box::new(|h| h["scope"]["runId"] = json!("r2")),
            "r2",
        ),
        (
            "moved to another agent",
            Box::new(|h| h["scope"]["agentId"] = json!("other")),
            "r1",
        ),
    ];
    for (shape, edit, run) in edits {
        store.put(cell("c")).unwrap();
        let path = record(dir.path(), "c");
        let bytes = edit_header(&std::fs::read(&path).unwrap(), edit);
        std::fs::write(&path, &bytes).unwrap();
        let mut taker = scope(run);
        if shape == "moved to another agent" {
            taker.agent_id = AgentId::new("other");
        }
        assert_tampered(store.take(&CellId::new("c"), &taker), "c", shape);
    }
    // A later expiry in the fixed prefix.
    store.put(cell("c")).unwrap();
    let path = record(dir.path(), "c");
    let mut bytes = std::fs::read(&path).unwrap();
    let expiry = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) + 86_400_000;
    bytes[8..16].copy_from_slice(&expiry.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    assert_tampered(
        store.take(&CellId::new("c"), &scope("r1")),
        "c",
        "extended expiry",
    );
    // A settle on an edited record refuses too, and leaves it to `wait`.
    store.put(cell("c")).unwrap();
    let bytes = edit_header(&std::fs::read(&path).unwrap(), |h| {
        h["pending"][0]["replaySafe"] = json!(true);
    });
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(
        store.settle(&CellId::new("c"), 3, Ok(json!(1))),
        Err(CellError::Tampered("c".into()))
    );
    assert_tampered(
        store.take(&CellId::new("c"), &scope("r1")),
        "c",
        "settled after edit",
    );
}

#[test]
fn records_moved_copied_or_sealed_with_another_key_fail() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    store.put(cell("cell-a")).unwrap();
    // Renamed to another id.
    std::fs::rename(record(dir.path(), "cell-a"), record(dir.path(), "cell-b")).unwrap();
    assert_tampered(
        store.take(&CellId::new("cell-b"), &scope("r1")),
        "cell-b",
        "renamed",
    );
    // Copied to another id: the copy fails, the original still resumes.
    store.put(cell("cell-a")).unwrap();
    std::fs::copy(record(dir.path(), "cell-a"), record(dir.path(), "cell-c")).unwrap();
    assert_tampered(
        store.take(&CellId::new("cell-c"), &scope("r1")),
        "cell-c",
        "copied",
    );
    // Asked for by another scope: not found, and not consumed.
    assert_eq!(
        store
            .take(&CellId::new("cell-a"), &scope("r2"))
            .map(|c| c.id),
        Err(CellError::NotFound("cell-a".into()))
    );
    assert!(store.take(&CellId::new("cell-a"), &scope("r1")).is_ok());
    // Copied into another store directory (same key, no marker there).
    let other = tempfile::tempdir().unwrap();
    store.put(cell("cell-d")).unwrap();
    std::fs::copy(record(dir.path(), "cell-d"), record(other.path(), "cell-d")).unwrap();
    let elsewhere = self::store(other.path());
    assert_tampered(
        elsewhere.take(&CellId::new("cell-d"), &scope("r1")),
        "cell-d",
        "other dir",
    );
    // Sealed with another key.
    let foreign = FileStore::open(dir.path(), LIMITS, StoreKey::derive(&[6; 32])).unwrap();
    assert_tampered(
        foreign.take(&CellId::new("cell-d"), &scope("r1")),
        "cell-d",
        "other key",
    );
}

#[test]
fn a_record_put_back_after_its_resume_fails() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let path = record(dir.path(), "c");

    // After a take.
    store.put(cell("c")).unwrap();
    let copy = std::fs::read(&path).unwrap();
    assert!(store.take(&CellId::new("c"), &scope("r1")).is_ok());
    std::fs::write(&path, &copy).unwrap();
    assert_tampered(
        store.take(&CellId::new("c"), &scope("r1")),
        "c",
        "replayed after take",
    );

    // After a settle: the version from before it, while the settled one
    // is still stored, and again after the settled one was resumed.
    store.put(cell("c")).unwrap();
    let before = std::fs::read(&path).unwrap();
    assert_eq!(
        store.settle(&CellId::new("c"), 3, Ok(json!("done"))),
        Ok(true)
    );
    let settled = std::fs::read(&path).unwrap();
    std::fs::write(&path, &before).unwrap();
    assert_tampered(
        store.take(&CellId::new("c"), &scope("r1")),
        "c",
        "pre-settle copy",
    );
    std::fs::write(&path, &settled).unwrap();
    let taken = store.take(&CellId::new("c"), &scope("r1")).unwrap();
    assert_eq!(taken.pending[0].result, Some(Ok(json!("done"))));
    for (copy, shape) in [(&before, "pre-settle"), (&settled, "settled")] {
        std::fs::write(&path, copy).unwrap();
        assert_tampered(store.take(&CellId::new("c"), &scope("r1")), "c", shape);
    }
    // A stale copy also refuses a settle.
    store.put(cell("c")).unwrap();
    let before = std::fs::read(&path).unwrap();
    assert_eq!(store.settle(&CellId::new("c"), 3, Ok(json!(1))), Ok(true));
    std::fs::write(&path, &before).unwrap();
    assert_eq!(
        store.settle(&CellId::new("c"), 3, Ok(json!(2))),
        Err(CellError::Tampered("c".into()))
    );

    // After a delete, and after being replaced by a newer put.
    store.put(cell("d")).unwrap();
    let copy = std::fs::read(record(dir.path(), "d")).unwrap();
    store.delete(&CellId::new("d")).unwrap();
    std::fs::write(record(dir.path(), "d"), &copy).unwrap();
    assert_tampered(store.take(&CellId::new("d"), &scope("r1")), "d", "deleted");
    store.put(cell("e")).unwrap();
    let first = std::fs::read(record(dir.path(), "e")).unwrap();
    store.put(cell("e")).unwrap();
    std::fs::write(record(dir.path(), "e"), &first).unwrap();
    assert_tampered(store.take(&CellId::new("e"), &scope("r1")), "e", "replaced");
}

#[test]
fn planted_special_and_huge_files_never_hang_the_store() {
    within(Duration::from_secs(20), || {
        let dir = tempfile::tempdir().unwrap();
        let dir_path = dir.path().to_owned();
        let store = store(&dir_path);
        store.put(cell("live")).unwrap();
        let plant = || {
            let status = std::process::Command::new("mkfifo")
                .arg(record(&dir_path, "x"))
                .status()
                .unwrap();
            assert!(status.success());
            std::os::unix::fs::symlink("/dev/zero", record(&dir_path, "y")).unwrap();
            let junk = std::fs::File::create(record(&dir_path, "z")).unwrap();
            junk.set_len(50 << 20).unwrap();
            // A plausible prefix declaring a huge snapshot.
            let mut huge = b"TLNC\x02\0\0\0".to_vec();
            huge.extend_from_slice(&u64::MAX.to_le_bytes());
            huge.extend_from_slice(&[0; 24]);
            huge.extend_from_slice(&16u32.to_le_bytes());
            huge.extend_from_slice(&(50u32 << 20).to_le_bytes());
            huge.resize(4096, 0);
            std::fs::write(record(&dir_path, "h"), &huge).unwrap();
            std::fs::create_dir(record(&dir_path, "d")).unwrap();
        };
        plant();
        for id in ["x", "y", "z"] {
            assert_tampered(store.take(&CellId::new(id), &scope("r1")), id, id);
        }
        let huge = store.take(&CellId::new("h"), &scope("r1")).unwrap_err();
        assert_eq!(huge.code(), CodeModeErrorCode::SnapshotLimitExceeded);
        assert_eq!(
            store
                .take(&CellId::new("d"), &scope("r1"))
                .unwrap_err()
                .code(),
            CodeModeErrorCode::SnapshotRestoreFailed
        );
        std::fs::remove_dir(record(&dir_path, "d")).unwrap();
        plant();
        store.purge_expired().unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&dir_path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".cell"))
            .collect();
        left.sort();
        // The FIFO, the link and the junk are gone; the plausible prefix
        // is judged on its own (unexpired) claim, and costs only itself.
        assert_eq!(left, ["d.cell", "h.cell", "live.cell"]);
        store.put(cell("new")).unwrap();
        assert!(store.take(&CellId::new("new"), &scope("r1")).is_ok());
        assert!(store.take(&CellId::new("live"), &scope("r1")).is_ok());
        // settle and delete on planted names do not hang either.
        std::os::unix::fs::symlink("/dev/zero", record(&dir_path, "y")).unwrap();
        assert!(store.settle(&CellId::new("y"), 3, Ok(json!(1))).is_err());
        store.delete(&CellId::new("y")).unwrap();
        drop(dir);
    });
}

#[test]
fn leftovers_of_killed_writers_and_takers_are_cleaned_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let me = std::process::id();
    let dead = dir.path().join("cm_1.0.tmp999999999");
    let writing = dir.path().join(format!("cm_1.1.tmp{me}"));
    let old = dir.path().join(format!("cm_1.2.tmp{me}"));
    for path in [&dead, &writing, &old] {
        std::fs::write(path, b"partial").unwrap();
    }
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    // A cell whose taker died holding it comes back.
    store.put(cell("held")).unwrap();
    std::fs::rename(
        record(dir.path(), "held"),
        dir.path().join("held.hold.999999999.abcd"),
    )
    .unwrap();
    assert_eq!(
        store.take(&CellId::new("held"), &scope("r1")).map(|c| c.id),
        Err(CellError::NotFound("held".into())),
        "a dead holder is not waited for"
    );
    store.purge_expired().unwrap();
    assert!(!dead.exists(), "a dead writer's file goes");
    assert!(!old.exists(), "an old file goes, whatever its pid");
    assert!(writing.exists(), "a live writer's file stays");
    assert!(!dir.path().join("held.hold.999999999.abcd").exists());
    assert!(store.take(&CellId::new("held"), &scope("r1")).is_ok());
}

#[test]
fn purge_reads_only_prefixes_and_drops_expired_markers() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut old = cell("old");
    old.expires_at = SystemTime::now() + Duration::from_millis(1);
    store.put(old).unwrap();
    store.put(cell("fresh")).unwrap();
    // Not a wait: lets the 1 ms expiry pass.
    std::thread::sleep(Duration::from_millis(20));
    let markers = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".mark")
            })
            .count()
    };
    assert_eq!(markers(), 2);
    assert_eq!(store.purge_expired().unwrap(), 1);
    assert_eq!(markers(), 1, "the expired record's marker went with it");
    assert!(store.take(&CellId::new("fresh"), &scope("r1")).is_ok());
}

#[test]
fn of_racing_takers_exactly_one_wins_and_the_rest_are_invalid_input() {
    const TAKERS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    for round in 0..10 {
        let id = format!("race-{round}");
        // Separate instances, like separate processes, and one shared.
        let shared = Arc::new(store(dir.path()));
        shared.put(cell(&id)).unwrap();
        let barrier = Arc::new(Barrier::new(TAKERS));
        let handles: Vec<_> = (0..TAKERS)
            .map(|i| {
                let barrier = barrier.clone();
                let id = id.clone();
                let own: Arc<FileStore> = if i % 2 == 0 {
                    Arc::new(store(dir.path()))
                } else {
                    shared.clone()
                };
                std::thread::spawn(move || {
                    barrier.wait();
                    own.take(&CellId::new(&id), &scope("r1")).map(|c| c.id)
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let won = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "{results:?}");
        for lost in results.iter().filter_map(|r| r.as_ref().err()) {
            assert_eq!(*lost, CellError::NotFound(id.clone()));
            assert_eq!(lost.code(), CodeModeErrorCode::InvalidInput);
        }
    }
}
