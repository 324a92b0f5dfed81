//! Suspended cells: the snapshot store behind `wait`.
//!
//! A suspended cell is the VM snapshot plus what the host must remember
//! about its nested calls. The store enforces the size limit, a cap on live
//! cells, the TTL, and scoping: a cell is only found by the agent, session
//! and run that suspended it. [`FileStore`] keeps cells on disk (one file
//! each, written atomically), so a new runtime on the same directory can
//! resume a cell an earlier process suspended; [`MemoryStore`] is for
//! tests and embedders without a state directory.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use talon_protocol::CodeModeErrorCode;

/// Who may resume a cell.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CellScope {
    /// Agent id.
    pub agent_id: String,
    /// Session id.
    pub session_id: String,
    /// Run id.
    pub run_id: String,
}

/// A nested call the cell is waiting for.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingNestedCall {
    /// The guest-side id of the host call (settles the guest's promise).
    pub host_call_id: u64,
    /// The nested call's own id (trajectory).
    pub call_id: String,
    /// Catalog id.
    pub tool_id: String,
    /// Arguments.
    pub args: Value,
    /// A replay-safe tool may be dispatched again after a restart.
    pub replay_safe: bool,
    /// Its outcome, once it finished while the cell was suspended: a
    /// finished call is delivered from here and never run again.
    pub result: Option<NestedResult>,
}

/// How a nested call ended, as the guest will see it.
pub type NestedResult = Result<Value, NestedError>;

/// A nested call's failure: plain data, delivered to the guest as an
/// `Error` with `message` and `code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NestedError {
    /// The message.
    pub message: String,
    /// A stable code (`nested_tool_failed`, `not_found`, ...).
    pub code: Option<String>,
}

/// One suspended cell.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspendedCell {
    /// The `runId` `wait` takes.
    pub id: String,
    /// Who may resume it.
    pub scope: CellScope,
    /// The VM snapshot (already compressed and authenticated).
    pub snapshot: Vec<u8>,
    /// Calls still open when the cell was suspended.
    pub pending: Vec<PendingNestedCall>,
    /// When it stops being resumable.
    pub expires_at: SystemTime,
    /// What else the runtime keeps with the cell (opaque to the store).
    pub meta: Value,
}

/// Store failures, each with its protocol code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// No cell with this id for this caller (unknown, finished, or another
    /// run's: indistinguishable).
    #[error("no suspended cell {0:?} for this run")]
    NotFound(String),
    /// The cell's TTL passed; it was deleted.
    #[error("suspended cell {0:?} expired")]
    Expired(String),
    /// The snapshot is over `maxSnapshotBytes`.
    #[error("snapshot of {size} bytes exceeds maxSnapshotBytes ({limit})")]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Too many cells are suspended at once.
    #[error("too many suspended cells (limit {0})")]
    TooMany(usize),
    /// The backing storage failed or holds a damaged record.
    #[error("snapshot store: {0}")]
    Io(String),
}

impl StoreError {
    /// The `CodeModeErrorCode` of this failure.
    pub fn code(&self) -> CodeModeErrorCode {
        match self {
            Self::NotFound(_) => CodeModeErrorCode::InvalidInput,
            Self::Expired(_) => CodeModeErrorCode::SnapshotExpired,
            Self::TooLarge { .. } | Self::TooMany(_) => CodeModeErrorCode::SnapshotLimitExceeded,
            Self::Io(_) => CodeModeErrorCode::InternalError,
        }
    }
}

/// Limits a store enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// `maxSnapshotBytes`.
    pub max_snapshot_bytes: usize,
    /// Live cells at once.
    pub max_live_cells: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self {
            max_snapshot_bytes: 10 << 20,
            max_live_cells: 256,
        }
    }
}

/// Where suspended cells live. Implementations are shared by every run of
/// a runtime (and, for persistent ones, by later runtimes).
pub trait SnapshotStore: Send + Sync {
    /// Stores (or replaces) a cell.
    fn put(&self, cell: SuspendedCell) -> Result<(), StoreError>;
    /// Takes the cell for `scope` out of the store: a resumed cell is
    /// re-stored if it suspends again, and deleted otherwise.
    fn take(&self, id: &str, scope: &CellScope) -> Result<SuspendedCell, StoreError>;
    /// Deletes a cell (terminal states, aborts); absent cells are fine.
    fn delete(&self, id: &str) -> Result<(), StoreError>;
    /// Deletes every expired cell; returns how many.
    fn purge_expired(&self) -> Result<usize, StoreError>;
    /// Records the outcome of one of a stored cell's pending calls, so
    /// that it survives the process. Returns `false` when the cell is not
    /// stored (a `wait` took it, or it ended): the caller keeps the result.
    fn settle(&self, id: &str, host_call_id: u64, result: NestedResult)
    -> Result<bool, StoreError>;
}

fn settle_in(cell: &mut SuspendedCell, host_call_id: u64, result: NestedResult) -> bool {
    match cell
        .pending
        .iter_mut()
        .find(|p| p.host_call_id == host_call_id)
    {
        Some(pending) => {
            pending.result = Some(result);
            true
        }
        None => false,
    }
}

fn check_put(
    limits: &StoreLimits,
    cell: &SuspendedCell,
    live_others: usize,
) -> Result<(), StoreError> {
    if cell.snapshot.len() > limits.max_snapshot_bytes {
        return Err(StoreError::TooLarge {
            size: cell.snapshot.len(),
            limit: limits.max_snapshot_bytes,
        });
    }
    if live_others >= limits.max_live_cells {
        return Err(StoreError::TooMany(limits.max_live_cells));
    }
    Ok(())
}

/// Cells in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    limits: StoreLimits,
    cells: Mutex<HashMap<String, SuspendedCell>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new(limits: StoreLimits) -> Self {
        Self {
            limits,
            cells: Mutex::new(HashMap::new()),
        }
    }

    fn cells(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, HashMap<String, SuspendedCell>>, StoreError> {
        self.cells
            .lock()
            .map_err(|_| StoreError::Io("store lock poisoned".into()))
    }
}

impl SnapshotStore for MemoryStore {
    fn put(&self, cell: SuspendedCell) -> Result<(), StoreError> {
        let mut cells = self.cells()?;
        let others = cells.keys().filter(|k| **k != cell.id).count();
        check_put(&self.limits, &cell, others)?;
        cells.insert(cell.id.clone(), cell);
        Ok(())
    }

    fn take(&self, id: &str, scope: &CellScope) -> Result<SuspendedCell, StoreError> {
        let mut cells = self.cells()?;
        match cells.get(id) {
            Some(cell) if &cell.scope != scope => Err(StoreError::NotFound(id.into())),
            Some(cell) if cell.expires_at <= SystemTime::now() => {
                cells.remove(id);
                Err(StoreError::Expired(id.into()))
            }
            Some(_) => cells
                .remove(id)
                .ok_or_else(|| StoreError::NotFound(id.into())),
            None => Err(StoreError::NotFound(id.into())),
        }
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.cells()?.remove(id);
        Ok(())
    }

    fn purge_expired(&self) -> Result<usize, StoreError> {
        let mut cells = self.cells()?;
        let now = SystemTime::now();
        let before = cells.len();
        cells.retain(|_, c| c.expires_at > now);
        Ok(before - cells.len())
    }

    fn settle(
        &self,
        id: &str,
        host_call_id: u64,
        result: NestedResult,
    ) -> Result<bool, StoreError> {
        Ok(self
            .cells()?
            .get_mut(id)
            .is_some_and(|cell| settle_in(cell, host_call_id, result)))
    }
}

/// Cells on disk: `<dir>/<id>.cell`, mode 0600, written to a temporary file
/// and renamed. A record is a length-prefixed JSON header (scope, pending
/// calls, expiry) followed by the snapshot bytes (which authenticate
/// themselves).
#[derive(Debug)]
pub struct FileStore {
    dir: PathBuf,
    limits: StoreLimits,
    lock: Mutex<()>,
}

impl FileStore {
    /// Opens (creating) the directory.
    pub fn open(dir: impl Into<PathBuf>, limits: StoreLimits) -> Result<Self, StoreError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)
            .map_err(|e| StoreError::Io(format!("{}: {e}", dir.display())))?;
        Ok(Self {
            dir,
            limits,
            lock: Mutex::new(()),
        })
    }

    fn path(&self, id: &str) -> Result<PathBuf, StoreError> {
        // Ids are generated by the runtime; refuse anything that could
        // leave the directory.
        if id.is_empty()
            || id.len() > 128
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(StoreError::NotFound(id.into()));
        }
        Ok(self.dir.join(format!("{id}.cell")))
    }

    fn live_ids(&self) -> Result<Vec<String>, StoreError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| StoreError::Io(e.to_string()))?;
        Ok(entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".cell"))
                    .map(str::to_owned)
            })
            .collect())
    }

    fn read(&self, path: &Path, id: &str) -> Result<SuspendedCell, StoreError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound(id.into()));
            }
            Err(e) => return Err(StoreError::Io(e.to_string())),
        };
        decode_record(id, &bytes)
    }
}

impl SnapshotStore for FileStore {
    fn put(&self, cell: SuspendedCell) -> Result<(), StoreError> {
        let _guard = self
            .lock
            .lock()
            .map_err(|_| StoreError::Io("store lock poisoned".into()))?;
        let path = self.path(&cell.id)?;
        let others = self
            .live_ids()?
            .into_iter()
            .filter(|id| *id != cell.id)
            .count();
        check_put(&self.limits, &cell, others)?;
        self.write(&path, &cell)
    }

    fn take(&self, id: &str, scope: &CellScope) -> Result<SuspendedCell, StoreError> {
        let _guard = self
            .lock
            .lock()
            .map_err(|_| StoreError::Io("store lock poisoned".into()))?;
        let path = self.path(id)?;
        let cell = self.read(&path, id)?;
        if &cell.scope != scope {
            return Err(StoreError::NotFound(id.into()));
        }
        std::fs::remove_file(&path).map_err(|e| StoreError::Io(e.to_string()))?;
        if cell.expires_at <= SystemTime::now() {
            return Err(StoreError::Expired(id.into()));
        }
        Ok(cell)
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        let path = self.path(id)?;
        match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::Io(e.to_string())),
        }
    }

    fn purge_expired(&self) -> Result<usize, StoreError> {
        let _guard = self
            .lock
            .lock()
            .map_err(|_| StoreError::Io("store lock poisoned".into()))?;
        let now = SystemTime::now();
        let mut purged = 0;
        for id in self.live_ids()? {
            let path = self.path(&id)?;
            let expired = match self.read(&path, &id) {
                Ok(cell) => cell.expires_at <= now,
                // A damaged record can never be resumed.
                Err(StoreError::Io(_)) => true,
                Err(_) => false,
            };
            if expired && std::fs::remove_file(&path).is_ok() {
                purged += 1;
            }
        }
        Ok(purged)
    }

    fn settle(
        &self,
        id: &str,
        host_call_id: u64,
        result: NestedResult,
    ) -> Result<bool, StoreError> {
        let _guard = self
            .lock
            .lock()
            .map_err(|_| StoreError::Io("store lock poisoned".into()))?;
        let path = self.path(id)?;
        let mut cell = match self.read(&path, id) {
            Ok(cell) => cell,
            Err(StoreError::NotFound(_)) => return Ok(false),
            Err(e) => return Err(e),
        };
        if !settle_in(&mut cell, host_call_id, result) {
            return Ok(false);
        }
        self.write(&path, &cell)?;
        Ok(true)
    }
}

impl FileStore {
    /// Writes a record atomically: a 0600 temporary file, synced, renamed.
    fn write(&self, path: &Path, cell: &SuspendedCell) -> Result<(), StoreError> {
        let bytes = encode(cell);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            use std::os::unix::fs::OpenOptionsExt as _;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            StoreError::Io(format!("{}: {e}", path.display()))
        })
    }
}

const MAGIC: &[u8; 4] = b"TLNC";

fn encode(cell: &SuspendedCell) -> Vec<u8> {
    let pending: Vec<Value> = cell
        .pending
        .iter()
        .map(|p| {
            let mut v = json!({"hostCallId": p.host_call_id, "callId": p.call_id, "toolId": p.tool_id,
                   "args": p.args, "replaySafe": p.replay_safe});
            match &p.result {
                Some(Ok(value)) => v["result"] = json!({"ok": value}),
                Some(Err(e)) => v["result"] = json!({"error": e.message, "code": e.code}),
                None => {}
            }
            v
        })
        .collect();
    let expires_ms = cell
        .expires_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let header = json!({
        "scope": {"agentId": cell.scope.agent_id, "sessionId": cell.scope.session_id, "runId": cell.scope.run_id},
        "pending": pending,
        "expiresAtMs": expires_ms,
        "meta": cell.meta,
    })
    .to_string();
    let mut out = Vec::with_capacity(8 + header.len() + cell.snapshot.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&cell.snapshot);
    out
}

/// Decodes a stored record (the file store's format; public for fuzzing).
/// Damaged input is `StoreError::Io`, never a panic.
pub fn decode_record(id: &str, bytes: &[u8]) -> Result<SuspendedCell, StoreError> {
    let damaged = || StoreError::Io(format!("record {id:?} is damaged"));
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err(damaged());
    }
    let len = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    let header = bytes.get(8..8 + len).ok_or_else(damaged)?;
    let header: Value = serde_json::from_slice(header).map_err(|_| damaged())?;
    let text = |v: &Value| v.as_str().map(str::to_owned).ok_or_else(damaged);
    let scope = CellScope {
        agent_id: text(&header["scope"]["agentId"])?,
        session_id: text(&header["scope"]["sessionId"])?,
        run_id: text(&header["scope"]["runId"])?,
    };
    let pending = header["pending"]
        .as_array()
        .ok_or_else(damaged)?
        .iter()
        .map(|p| {
            Ok(PendingNestedCall {
                host_call_id: p["hostCallId"].as_u64().ok_or_else(damaged)?,
                call_id: text(&p["callId"])?,
                tool_id: text(&p["toolId"])?,
                args: p["args"].clone(),
                replay_safe: p["replaySafe"].as_bool().unwrap_or(false),
                result: match p.get("result") {
                    None => None,
                    Some(r) => Some(match r.get("ok") {
                        Some(value) => Ok(value.clone()),
                        None => Err(NestedError {
                            message: text(&r["error"])?,
                            code: r["code"].as_str().map(str::to_owned),
                        }),
                    }),
                },
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let expires_ms = header["expiresAtMs"].as_u64().ok_or_else(damaged)?;
    Ok(SuspendedCell {
        id: id.to_owned(),
        scope,
        snapshot: bytes[8 + len..].to_vec(),
        pending,
        expires_at: UNIX_EPOCH + Duration::from_millis(expires_ms),
        meta: header.get("meta").cloned().unwrap_or(Value::Null),
    })
}
