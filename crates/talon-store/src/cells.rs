//! Suspended Code Mode cells in the database: [`CellStore`] is the
//! durable, TTL'd, scoped [`SnapshotStore`] a gateway gives its Code Mode
//! runtime (the file store stays for `talon exec` without a gateway).
//!
//! Each cell is the file store's sealed record (`talon_cells`:
//! one HMAC over scope, expiry, pending calls with their results, meta and
//! snapshot) in a row filed under its id and scope:
//!
//! - **Consumed once.** `take` is `DELETE ... WHERE id AND scope RETURNING
//!   record`: of concurrent takers (on any node) exactly one gets the row.
//! - **Scoped.** Another run's `take` matches no row: `NotFound`, and the
//!   cell stays. The sealed header's scope is checked again on decode.
//! - **Settled in place.** `settle` rewrites the record with the call's
//!   result under a compare-and-set on the row's version, so a settle
//!   racing a `take` either lands before it or reports the cell gone.
//! - **TTL.** An expired cell is refused (and deleted) by `take`; the
//!   purge deletes the rest.
//!
//! The trait is synchronous (the runtime calls it from its async code, as
//! it calls the file store), so `CellStore` runs its database work on a
//! thread of its own with its own runtime and connection pool, and the
//! caller waits for the answer as it would for a file write.

use std::sync::mpsc as std_mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::Row;
use talon_cells::{
    CellError, CellHeader, CellScope, NestedResult, SnapshotStore, StoreKey, StoreLimits,
    SuspendedCell, decode_record, seal_record,
};
use talon_protocol::CellId;
use talon_protocol::gateway::bounded::{RunId, SessionId};
use tokio::sync::mpsc;

use crate::error::{Result, StoreError};
use crate::records::ms;
use crate::{Store, StoreConfig};

/// How often `settle` re-reads a record another writer changed first.
const SETTLE_ATTEMPTS: usize = 8;

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn cell_error(error: StoreError) -> CellError {
    CellError::storage("", error)
}

/// A stored cell row: its record and version.
struct CellRow {
    record: Vec<u8>,
    version: i64,
}

impl Store {
    /// Stores (or replaces) a cell's sealed record.
    async fn put_cell(&self, cell: &SuspendedCell, record: Vec<u8>) -> Result<()> {
        sqlx::query(
            "INSERT INTO cells (id, agent_id, session_id, run_id, expires_at, version, record) \
             VALUES ($1, $2, $3, $4, $5, 0, $6) \
             ON CONFLICT (id) DO UPDATE SET agent_id = excluded.agent_id, \
               session_id = excluded.session_id, run_id = excluded.run_id, \
               expires_at = excluded.expires_at, version = cells.version + 1, \
               record = excluded.record",
        )
        .bind(cell.id.to_string())
        .bind(cell.scope.agent_id.to_string())
        .bind(cell.scope.session_id.to_string())
        .bind(cell.scope.run_id.to_string())
        .bind(ms(millis(cell.expires_at))?)
        .bind(record)
        .execute(self.writes())
        .await?;
        Ok(())
    }

    /// Cells stored besides `except` that have not expired by `now`.
    async fn live_cells(&self, except: &str, now: u64) -> Result<usize> {
        let count: i64 =
            sqlx::query("SELECT COUNT(*) FROM cells WHERE id <> $1 AND expires_at > $2")
                .bind(except.to_owned())
                .bind(ms(now)?)
                .fetch_one(self.pool())
                .await?
                .try_get(0)?;
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    /// Claims a cell's record: deleted and returned, to exactly one caller
    /// whose scope matches.
    async fn take_cell(&self, id: &str, scope: &CellScope) -> Result<Option<Vec<u8>>> {
        let row = sqlx::query(
            "DELETE FROM cells WHERE id = $1 AND agent_id = $2 AND session_id = $3 AND run_id = $4 \
             RETURNING record",
        )
        .bind(id.to_owned())
        .bind(scope.agent_id.to_string())
        .bind(scope.session_id.to_string())
        .bind(scope.run_id.to_string())
        .fetch_optional(self.writes())
        .await?;
        row.map(|row| row.try_get(0).map_err(StoreError::from))
            .transpose()
    }

    async fn cell_row(&self, id: &str) -> Result<Option<CellRow>> {
        let row = sqlx::query("SELECT record, version FROM cells WHERE id = $1")
            .bind(id.to_owned())
            .fetch_optional(self.pool())
            .await?;
        row.map(|row| {
            Ok(CellRow {
                record: row.try_get(0)?,
                version: row.try_get(1)?,
            })
        })
        .transpose()
    }

    /// Replaces a record if the row is still at `version`.
    async fn swap_cell(&self, id: &str, version: i64, record: Vec<u8>) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE cells SET record = $3, version = version + 1 WHERE id = $1 AND version = $2",
        )
        .bind(id.to_owned())
        .bind(version)
        .bind(record)
        .execute(self.writes())
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    async fn delete_cell(&self, id: &str) -> Result<()> {
        sqlx::query("DELETE FROM cells WHERE id = $1")
            .bind(id.to_owned())
            .execute(self.writes())
            .await?;
        Ok(())
    }

    /// Deletes every cell expired by `now`: how many there were.
    pub async fn purge_cells(&self, now: u64) -> Result<u64> {
        Ok(sqlx::query("DELETE FROM cells WHERE expires_at <= $1")
            .bind(ms(now)?)
            .execute(self.writes())
            .await?
            .rows_affected())
    }

    /// Deletes `run_id`'s suspended cells, which end with their run:
    /// how many there were.
    pub async fn delete_run_cells(&self, run_id: &RunId) -> Result<u64> {
        Ok(sqlx::query("DELETE FROM cells WHERE run_id = $1")
            .bind(run_id.as_str().to_owned())
            .execute(self.writes())
            .await?
            .rows_affected())
    }

    /// The unexpired cell rows of `session_id`: (id, sealed record).
    async fn session_cell_rows(
        &self,
        session_id: &str,
        now: u64,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        let rows = sqlx::query(
            "SELECT id, record FROM cells WHERE session_id = $1 AND expires_at > $2 ORDER BY id",
        )
        .bind(session_id.to_owned())
        .bind(ms(now)?)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("id")?, row.try_get("record")?)))
            .collect()
    }

    /// Deletes `run_id`'s suspended cells but those in `keep` (cells that
    /// wait for the app's answers outlive the run that stored them, until
    /// the session's next run resumes them or they expire): how many were
    /// deleted.
    pub async fn delete_run_cells_except(&self, run_id: &RunId, keep: &[String]) -> Result<u64> {
        if keep.is_empty() {
            return self.delete_run_cells(run_id).await;
        }
        let mut deleted = 0;
        let ids: Vec<String> = sqlx::query("SELECT id FROM cells WHERE run_id = $1")
            .bind(run_id.as_str().to_owned())
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(|row| row.try_get("id"))
            .collect::<std::result::Result<_, _>>()?;
        for id in ids.iter().filter(|id| !keep.contains(id)) {
            deleted += sqlx::query("DELETE FROM cells WHERE id = $1")
                .bind(id.clone())
                .execute(self.writes())
                .await?
                .rows_affected();
        }
        Ok(deleted)
    }

    /// How many suspended cells `run_id` has stored.
    pub async fn run_cells(&self, run_id: &RunId) -> Result<u64> {
        let count: i64 = sqlx::query("SELECT COUNT(*) FROM cells WHERE run_id = $1")
            .bind(run_id.as_str().to_owned())
            .fetch_one(self.pool())
            .await?
            .try_get(0)?;
        Ok(u64::try_from(count).unwrap_or(0))
    }
}

/// What the cell thread is asked to do.
enum Job {
    Put(
        SuspendedCell,
        std_mpsc::Sender<std::result::Result<(), CellError>>,
    ),
    Take(
        String,
        CellScope,
        std_mpsc::Sender<std::result::Result<SuspendedCell, CellError>>,
    ),
    Delete(String, std_mpsc::Sender<std::result::Result<(), CellError>>),
    Purge(std_mpsc::Sender<std::result::Result<usize, CellError>>),
    Settle(
        String,
        u64,
        NestedResult,
        std_mpsc::Sender<std::result::Result<bool, CellError>>,
    ),
    Session(
        String,
        std_mpsc::Sender<std::result::Result<Vec<CellHeader>, CellError>>,
    ),
}

/// Suspended cells in the store's database (see the module doc).
#[derive(Debug)]
pub struct CellStore {
    jobs: mpsc::UnboundedSender<Job>,
    /// When expired cells were last purged (seconds since the epoch): a
    /// purge runs at most once a minute per store, however many runs ask
    /// (expired cells are invisible to reads meanwhile).
    last_purge: std::sync::atomic::AtomicU64,
    /// The store's clock.
    clock: talon_protocol::clock::Clock,
}

/// Seconds between two purges of expired cells.
const PURGE_EVERY_SECS: u64 = 60;

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CellJob")
    }
}

/// The cell thread's state.
struct Cells {
    store: Store,
    limits: StoreLimits,
    key: StoreKey,
}

impl CellStore {
    /// Opens the store `config` names on a thread of its own, for cells
    /// sealed with `key` and bounded by `limits`.
    pub fn open(config: &StoreConfig, limits: StoreLimits, key: StoreKey) -> Result<Self> {
        let (jobs, mut inbox) = mpsc::unbounded_channel::<Job>();
        let (ready, opened) = std_mpsc::channel::<Result<()>>();
        let clock = config.clock.clone();
        let config = config.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| StoreError::Io {
                path: config.state_dir.clone(),
                source,
            })?;
        std::thread::Builder::new()
            .name("talon-cells".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let store = match crate::open(&config).await {
                        Ok(store) => store,
                        Err(error) => {
                            let _ = ready.send(Err(error));
                            return;
                        }
                    };
                    let _ = ready.send(Ok(()));
                    let cells = Cells { store, limits, key };
                    while let Some(job) = inbox.recv().await {
                        cells.serve(job).await;
                    }
                    cells.store.close().await;
                });
            })
            .map_err(|source| StoreError::Io {
                path: "talon-cells thread".into(),
                source,
            })?;
        opened.recv().map_err(|_| StoreError::Closed)??;
        Ok(Self {
            jobs,
            last_purge: std::sync::atomic::AtomicU64::new(0),
            clock,
        })
    }

    fn ask<T>(
        &self,
        job: impl FnOnce(std_mpsc::Sender<std::result::Result<T, CellError>>) -> Job,
    ) -> std::result::Result<T, CellError> {
        let (reply, answer) = std_mpsc::channel();
        self.jobs
            .send(job(reply))
            .map_err(|_| CellError::Io("the cell store is closed".into()))?;
        answer
            .recv()
            .map_err(|_| CellError::Io("the cell store is closed".into()))?
    }
}

impl Cells {
    async fn serve(&self, job: Job) {
        match job {
            Job::Put(cell, reply) => {
                let _ = reply.send(self.put(cell).await);
            }
            Job::Take(id, scope, reply) => {
                let _ = reply.send(self.take(&id, &scope).await);
            }
            Job::Delete(id, reply) => {
                let _ = reply.send(self.store.delete_cell(&id).await.map_err(cell_error));
            }
            Job::Purge(reply) => {
                let purged = self.store.purge_cells(self.store.now_ms()).await;
                let _ = reply.send(
                    purged
                        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
                        .map_err(cell_error),
                );
            }
            Job::Settle(id, host_call_id, result, reply) => {
                let _ = reply.send(self.settle(&id, host_call_id, result).await);
            }
            Job::Session(session, reply) => {
                let _ = reply.send(self.session(&session).await);
            }
        }
    }

    async fn put(&self, cell: SuspendedCell) -> std::result::Result<(), CellError> {
        let now = self.store.now_ms();
        let others = self
            .store
            .live_cells(cell.id.as_str(), now)
            .await
            .map_err(cell_error)?;
        self.limits.check(&cell, others)?;
        let record = seal_record(&self.key, &cell)?;
        self.store.put_cell(&cell, record).await.map_err(cell_error)
    }

    async fn take(
        &self,
        id: &str,
        scope: &CellScope,
    ) -> std::result::Result<SuspendedCell, CellError> {
        let record = self
            .store
            .take_cell(id, scope)
            .await
            .map_err(cell_error)?
            .ok_or_else(|| CellError::NotFound(id.to_owned()))?;
        let cell = decode_record(&self.key, id, &record)?;
        if &cell.scope != scope {
            return Err(CellError::Tampered(id.to_owned()));
        }
        if cell.expires_at <= self.store.clock().now() {
            return Err(CellError::Expired(id.to_owned()));
        }
        Ok(cell)
    }

    async fn session(&self, session: &str) -> std::result::Result<Vec<CellHeader>, CellError> {
        let now = self.store.now_ms();
        let rows = self
            .store
            .session_cell_rows(session, now)
            .await
            .map_err(cell_error)?;
        Ok(rows
            .into_iter()
            // One that fails its checks is `take`'s to report.
            .filter_map(|(id, record)| decode_record(&self.key, &id, &record).ok())
            .filter(|cell| cell.scope.session_id.as_str() == session)
            .map(SuspendedCell::header)
            .collect())
    }

    async fn settle(
        &self,
        id: &str,
        host_call_id: u64,
        result: NestedResult,
    ) -> std::result::Result<bool, CellError> {
        for attempt in 0..SETTLE_ATTEMPTS {
            let Some(row) = self.store.cell_row(id).await.map_err(cell_error)? else {
                return Ok(false);
            };
            let mut cell = decode_record(&self.key, id, &row.record)?;
            if !cell.settle(host_call_id, result.clone()) {
                return Ok(false);
            }
            let record = seal_record(&self.key, &cell)?;
            if self
                .store
                .swap_cell(id, row.version, record)
                .await
                .map_err(cell_error)?
            {
                return Ok(true);
            }
            // Another settle (or a put) changed the row first: read again.
            tokio::time::sleep(Duration::from_millis(1 << attempt.min(5))).await;
        }
        Err(CellError::Io(format!(
            "cell {id:?}: the record kept changing; the result was not recorded"
        )))
    }
}

impl SnapshotStore for CellStore {
    fn clock(&self) -> &talon_protocol::clock::Clock {
        &self.clock
    }

    fn put(&self, cell: SuspendedCell) -> std::result::Result<(), CellError> {
        self.ask(|reply| Job::Put(cell, reply))
    }

    fn take(
        &self,
        id: &CellId,
        scope: &CellScope,
    ) -> std::result::Result<SuspendedCell, CellError> {
        self.ask(|reply| Job::Take(id.to_string(), scope.clone(), reply))
    }

    fn delete(&self, id: &CellId) -> std::result::Result<(), CellError> {
        self.ask(|reply| Job::Delete(id.to_string(), reply))
    }

    fn purge_expired(&self) -> std::result::Result<usize, CellError> {
        use std::sync::atomic::Ordering;
        let now = self.clock.now_ms() / 1000;
        let last = self.last_purge.load(Ordering::Relaxed);
        if now < last + PURGE_EVERY_SECS
            || self
                .last_purge
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return Ok(0);
        }
        self.ask(Job::Purge)
    }

    fn settle(
        &self,
        id: &CellId,
        host_call_id: u64,
        result: NestedResult,
    ) -> std::result::Result<bool, CellError> {
        self.ask(|reply| Job::Settle(id.to_string(), host_call_id, result, reply))
    }

    fn session_cells(
        &self,
        session: &SessionId,
    ) -> std::result::Result<Vec<CellHeader>, CellError> {
        self.ask(|reply| Job::Session(session.to_string(), reply))
    }
}
