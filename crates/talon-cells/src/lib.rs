//! Suspended cells: the snapshot store behind Code Mode's `wait`.
//!
//! A leaf crate: it knows the protocol's error codes, `talon-fs`'s safe
//! opens and the MAC crates, and nothing of the sandbox, the agent loop or
//! the durable store, so `talon-store` can keep cells in its database
//! (`talon_store::CellStore`) without building the Code Mode engine. The
//! key that seals records is a parameter ([`StoreKey::derive`] over the
//! host's secret); `talon_codemode::store::default_store_key` derives it
//! from the sandbox's snapshot secret.
//!
//! A suspended cell is the VM snapshot plus what the host must remember
//! about its nested calls. The store enforces the size limit, a cap on live
//! cells, the TTL, and scoping: a cell is only found by the agent, session
//! and run that suspended it. [`FileStore`] keeps cells on disk (one file
//! each, written atomically), so a new runtime on the same directory can
//! resume a cell an earlier process suspended; [`MemoryStore`] is for
//! tests and embedders without a state directory.
//!
//! # The file store against whoever can write its directory
//!
//! The state directory is assumed writable by an attacker who does not
//! hold the store key (in Talon it is derived from the sandbox's snapshot
//! key, which lives in the cache directory, not the state directory). What holds:
//!
//! - **Authenticity.** A record is sealed whole (`record.rs`): one
//!   HMAC-SHA256 covers the header (scope, expiry, pending calls with their
//!   arguments, results and `replaySafe`, meta), the snapshot, a per-record
//!   nonce and generation, the cell id and the file name. An edited,
//!   forged, renamed or re-scoped record fails with
//!   [`CellError::Tampered`] (`snapshot_restore_failed`).
//! - **Consumed once.** `take` claims a record by renaming it to a hold
//!   (`<id>.hold.<pid>.<rand>`): exactly one concurrent taker wins, the
//!   others get [`CellError::NotFound`]. Before the cell is returned, a
//!   sealed marker `<nonce>.mark` is rewritten to `consumed` (synced), so a
//!   copy of the record put back later fails. Every `put` draws a new nonce
//!   and writes its marker (`live`, generation 0) before the record; a
//!   record without a valid marker fails. `settle` rewrites the record at
//!   generation + 1 and then the marker, and a record older than its marker
//!   fails, so the pre-settle version cannot be put back to run a finished
//!   call again. `delete` marks the nonce consumed too.
//! - **Planted files.** Every read opens without following symlinks and
//!   without blocking, refuses anything but a regular file (`talon-fs`),
//!   and is capped (`maxSnapshotBytes` + the header cap). The purge reads
//!   only a record's 48-byte prefix and deletes a record only on its own
//!   prefix (expired or unreadable), so a planted file can cost only
//!   itself; non-regular `*.cell` entries are unlinked. Temporary files of
//!   dead writers (`*.tmp<pid>`, or older than ten minutes) are removed,
//!   and holds of dead takers are put back.
//!
//! What does not hold: markers are rewritten in place, not kept in an
//! append-only log. An attacker who saved an old record *and* its old
//! marker file can put both back after a resume (or after a `settle`) and
//! so make that record run again, until its expiry; no scheme confined to
//! a directory the attacker can roll back prevents this. Deleting or
//! corrupting records or markers denies service (the cell is lost), as
//! deleting the directory would. Markers are purged once the record's own
//! sealed expiry has passed; an expired record is refused anyway.
//!
//! # Where things are
//!
//! `record.rs` holds the on-disk formats (a record's 48-byte fixed prefix, its MAC, the marker
//! layout) and `seal_record`/`decode_record` (which `talon_store::CellStore` uses to keep the same
//! sealed records in a database row) and `reseal_record` (for the fuzz target); `file.rs` is
//! [`FileStore`]; `key.rs` draws nonces and hold names. The tests hold both stores to one contract
//! (`tests/suite/contract.rs`) and attack the file store (`tests/suite/attacks.rs`); a fuzz target
//! feeds arbitrary bytes to the record decoder. Callers: `talon-codemode` (its cells),
//! `talon-store` (`CellStore`) and, through Code Mode, `talon exec` (a `FileStore` in the state
//! directory).

mod file;
mod key;
mod record;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::Value;
use talon_protocol::clock::Clock;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId};
use talon_protocol::{CellId, CodeModeErrorCode};

pub use file::FileStore;
pub use record::{HEADER_CAP, StoreKey, decode_record, reseal_record, seal_record};

/// Who may resume a cell.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CellScope {
    /// Agent id.
    pub agent_id: AgentId,
    /// Session id.
    pub session_id: SessionId,
    /// The agent run's id.
    pub run_id: RunId,
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

/// A nested call's failure: plain data (`message` and `code`), delivered
/// to the guest as an `Error`; the sandbox's host-call error.
pub type NestedError = talon_protocol::HostCallError;

/// One suspended cell.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspendedCell {
    /// The cell's id: the `runId` `wait` takes.
    pub id: CellId,
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

/// The error under a [`CellError::Storage`]: an I/O error, the database's,
/// the random source's. Shared, so that a `CellError` stays `Clone`.
pub type ErrorSource = std::sync::Arc<dyn std::error::Error + Send + Sync>;

/// Store failures, each with its protocol code. Two are equal when they
/// are the same kind and read the same (a source has no equality of its
/// own).
#[derive(Debug, Clone, thiserror::Error)]
pub enum CellError {
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
    /// The record's header (pending calls and their results) is over
    /// [`HEADER_CAP`].
    #[error("suspended cell header of {size} bytes exceeds {limit}")]
    HeaderTooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Too many cells are suspended at once.
    #[error("too many suspended cells (limit {0})")]
    TooMany(usize),
    /// The stored record is damaged, forged, moved to another id or scope,
    /// or a copy of one that was already resumed: it is never run.
    #[error(
        "suspended cell {0:?} cannot be restored: its record failed authentication \
         (damaged, forged, moved, or already resumed)"
    )]
    Tampered(String),
    /// The store cannot serve for a reason of its own (it is closed, its
    /// lock is poisoned, a record kept changing).
    #[error("snapshot store: {0}")]
    Io(String),
    /// The backing storage failed: a file, the database, the random
    /// source. The failure is the source.
    #[error("snapshot store: {}{source}", lead(context))]
    Storage {
        /// What was being done or touched (a path; empty when the source
        /// says it all).
        context: String,
        /// The failure.
        source: ErrorSource,
    },
}

impl PartialEq for CellError {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

impl Eq for CellError {}

/// `context: `, or nothing.
fn lead(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!("{context}: ")
    }
}

impl CellError {
    /// A storage failure: `source` while doing or touching `context`
    /// (empty when the source says it all).
    pub fn storage(
        context: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Storage {
            context: context.into(),
            source: std::sync::Arc::new(source),
        }
    }

    /// The `CodeModeErrorCode` of this failure.
    pub fn code(&self) -> CodeModeErrorCode {
        match self {
            Self::NotFound(_) => CodeModeErrorCode::InvalidInput,
            Self::Expired(_) => CodeModeErrorCode::SnapshotExpired,
            Self::TooLarge { .. } | Self::HeaderTooLarge { .. } | Self::TooMany(_) => {
                CodeModeErrorCode::SnapshotLimitExceeded
            }
            Self::Tampered(_) => CodeModeErrorCode::SnapshotRestoreFailed,
            Self::Io(_) | Self::Storage { .. } => CodeModeErrorCode::InternalError,
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
    /// The wall clock expiries are measured against: a cell is stored
    /// with `clock().now() + ttl` and expires when this clock passes it.
    fn clock(&self) -> &Clock;
    /// Stores (or replaces) a cell.
    fn put(&self, cell: SuspendedCell) -> Result<(), CellError>;
    /// Takes the cell for `scope` out of the store: a resumed cell is
    /// re-stored if it suspends again, and deleted otherwise.
    fn take(&self, id: &CellId, scope: &CellScope) -> Result<SuspendedCell, CellError>;
    /// Deletes a cell (terminal states, aborts); absent cells are fine.
    fn delete(&self, id: &CellId) -> Result<(), CellError>;
    /// Deletes every expired cell; returns how many.
    fn purge_expired(&self) -> Result<usize, CellError>;
    /// Records the outcome of one of a stored cell's pending calls, so
    /// that it survives the process. Returns `false` when the cell is not
    /// stored (a `wait` took it, or it ended): the caller keeps the result.
    fn settle(
        &self,
        id: &CellId,
        host_call_id: u64,
        result: NestedResult,
    ) -> Result<bool, CellError>;
    /// The unexpired cells of `session` (of any of its runs), without
    /// their snapshots: how a session's next run finds the cells that wait
    /// for its app's answers. A record that fails its checks is left out.
    fn session_cells(&self, session: &SessionId) -> Result<Vec<CellHeader>, CellError>;
}

/// A stored cell without its snapshot ([`SnapshotStore::session_cells`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CellHeader {
    /// The cell's id.
    pub id: CellId,
    /// Who may resume it.
    pub scope: CellScope,
    /// Calls still open when the cell was suspended.
    pub pending: Vec<PendingNestedCall>,
    /// What else the runtime keeps with the cell.
    pub meta: Value,
}

impl SuspendedCell {
    /// The cell without its snapshot.
    pub fn header(self) -> CellHeader {
        CellHeader {
            id: self.id,
            scope: self.scope,
            pending: self.pending,
            meta: self.meta,
        }
    }
}

impl SuspendedCell {
    /// Records the outcome of pending call `host_call_id`; `false` when the
    /// cell has no such call.
    pub fn settle(&mut self, host_call_id: u64, result: NestedResult) -> bool {
        settle_in(self, host_call_id, result)
    }
}

impl StoreLimits {
    /// Whether `cell` may be stored while `live_others` other cells are.
    pub fn check(&self, cell: &SuspendedCell, live_others: usize) -> Result<(), CellError> {
        check_put(self, cell, live_others)
    }
}

pub(crate) fn settle_in(cell: &mut SuspendedCell, host_call_id: u64, result: NestedResult) -> bool {
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

pub(crate) fn check_put(
    limits: &StoreLimits,
    cell: &SuspendedCell,
    live_others: usize,
) -> Result<(), CellError> {
    if cell.snapshot.len() > limits.max_snapshot_bytes {
        return Err(CellError::TooLarge {
            size: cell.snapshot.len(),
            limit: limits.max_snapshot_bytes,
        });
    }
    if live_others >= limits.max_live_cells {
        return Err(CellError::TooMany(limits.max_live_cells));
    }
    Ok(())
}

/// Cells in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    limits: StoreLimits,
    cells: Mutex<HashMap<CellId, SuspendedCell>>,
    clock: Clock,
}

impl MemoryStore {
    /// An empty store.
    pub fn new(limits: StoreLimits) -> Self {
        Self {
            limits,
            cells: Mutex::new(HashMap::new()),
            clock: Clock::system(),
        }
    }

    /// The same store, reading `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    fn cells(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, HashMap<CellId, SuspendedCell>>, CellError> {
        self.cells
            .lock()
            .map_err(|_| CellError::Io("store lock poisoned".into()))
    }
}

impl SnapshotStore for MemoryStore {
    fn clock(&self) -> &Clock {
        &self.clock
    }

    fn put(&self, cell: SuspendedCell) -> Result<(), CellError> {
        let mut cells = self.cells()?;
        let others = cells.keys().filter(|k| **k != cell.id).count();
        check_put(&self.limits, &cell, others)?;
        cells.insert(cell.id.clone(), cell);
        Ok(())
    }

    fn take(&self, id: &CellId, scope: &CellScope) -> Result<SuspendedCell, CellError> {
        let mut cells = self.cells()?;
        let id = id.as_str();
        match cells.get(id) {
            Some(cell) if &cell.scope != scope => Err(CellError::NotFound(id.into())),
            Some(cell) if cell.expires_at <= self.clock.now() => {
                cells.remove(id);
                Err(CellError::Expired(id.into()))
            }
            Some(_) => cells
                .remove(id)
                .ok_or_else(|| CellError::NotFound(id.into())),
            None => Err(CellError::NotFound(id.into())),
        }
    }

    fn delete(&self, id: &CellId) -> Result<(), CellError> {
        self.cells()?.remove(id);
        Ok(())
    }

    fn purge_expired(&self) -> Result<usize, CellError> {
        let mut cells = self.cells()?;
        let now = self.clock.now();
        let before = cells.len();
        cells.retain(|_, c| c.expires_at > now);
        Ok(before - cells.len())
    }

    fn settle(
        &self,
        id: &CellId,
        host_call_id: u64,
        result: NestedResult,
    ) -> Result<bool, CellError> {
        Ok(self
            .cells()?
            .get_mut(id)
            .is_some_and(|cell| settle_in(cell, host_call_id, result)))
    }

    fn session_cells(&self, session: &SessionId) -> Result<Vec<CellHeader>, CellError> {
        let now = self.clock.now();
        Ok(self
            .cells()?
            .values()
            .filter(|c| &c.scope.session_id == session && c.expires_at > now)
            .map(|c| c.clone().header())
            .collect())
    }
}
