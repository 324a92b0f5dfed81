//! Whether the store can write, watched: the gateway's `/healthz`, its
//! write methods and its run engine read it.
//!
//! - A write that fails because the disk is full, the database is
//!   read-only or unreachable marks the store [`Health::Unwritable`]
//!   (the event writer reports every commit; anything else may report
//!   through [`Store::note_failure`]). A probe task then rewrites one row
//!   every [`PROBE_EVERY`] until a write succeeds, and the store is
//!   [`Health::Ok`] again without a restart.
//! - The integrity check ([`integrity_check`], SQLite's `PRAGMA
//!   quick_check`, run in the background after the store opens, so a large
//!   database does not delay the start) marks a damaged database
//!   [`Health::Corrupt`], which stays until the process restarts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::AnyPool;
use tokio::sync::watch;

use crate::error::StoreError;
use crate::{Backend, Store};

/// How often an unwritable store is probed.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);

/// Whether the store can write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Writes succeed (as far as the store knows).
    Ok,
    /// Writes fail; the store probes until one succeeds.
    Unwritable {
        /// Why, as a stable word: `disk_full`, `read_only` or
        /// `unreachable`.
        reason: &'static str,
        /// What the database said.
        detail: String,
    },
    /// The integrity check found damage: writes must not go on.
    Corrupt(String),
}

impl Health {
    /// Whether writes may proceed.
    pub fn is_ok(&self) -> bool {
        matches!(self, Self::Ok)
    }

    /// A sentence for people (`/healthz`, errors, logs).
    pub fn describe(&self) -> String {
        match self {
            Self::Ok => "the store is healthy".into(),
            Self::Unwritable { reason, detail } => {
                let what = match *reason {
                    "disk_full" => "its disk is full",
                    "read_only" => "it is read-only",
                    _ => "the database cannot be reached",
                };
                format!(
                    "the store cannot write: {what} ({detail}); it recovers by itself once writes succeed again"
                )
            }
            Self::Corrupt(detail) => format!(
                "the store's integrity check failed ({detail}); writes are refused: restore the database from a backup"
            ),
        }
    }

    /// The stable word for the reason (`ok`, `disk_full`, `read_only`,
    /// `unreachable`, `corrupt`).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Unwritable { reason, .. } => reason,
            Self::Corrupt(_) => "corrupt",
        }
    }
}

/// The shared health cell.
#[derive(Debug)]
pub(crate) struct HealthCell {
    state: watch::Sender<Health>,
}

impl HealthCell {
    pub(crate) fn new(initial: Health) -> Arc<Self> {
        Arc::new(Self {
            state: watch::Sender::new(initial),
        })
    }

    pub(crate) fn get(&self) -> Health {
        self.state.borrow().clone()
    }

    pub(crate) fn watch(&self) -> watch::Receiver<Health> {
        self.state.subscribe()
    }

    /// A write failed with `error`: unwritable when that is what it says.
    pub(crate) fn failed(&self, error: &StoreError) {
        if let Some(reason) = error.unwritable_reason() {
            self.unwritable(reason, error.to_string());
        }
    }

    /// The store cannot write, for `reason`.
    pub(crate) fn unwritable(&self, reason: &'static str, detail: String) {
        self.state.send_if_modified(|health| match health {
            Health::Corrupt(_) => false,
            Health::Unwritable { reason: was, .. } if *was == reason => false,
            _ => {
                tracing::error!(%detail, reason, "the store cannot write");
                *health = Health::Unwritable { reason, detail };
                true
            }
        });
    }

    /// The probe's write, which needs room, succeeded.
    pub(crate) fn recovered(&self) {
        self.state.send_if_modified(|health| match health {
            Health::Unwritable { .. } => {
                tracing::warn!("the store writes again");
                *health = Health::Ok;
                true
            }
            _ => false,
        });
    }

    pub(crate) fn corrupt(&self, detail: String) {
        tracing::error!(%detail, "the store's integrity check failed; writes are refused");
        self.state.send_replace(Health::Corrupt(detail));
    }
}

impl Store {
    /// Whether the store can write now.
    pub fn health(&self) -> Health {
        self.inner.health.get()
    }

    /// The store's health, watched.
    pub fn health_changes(&self) -> watch::Receiver<Health> {
        self.inner.health.watch()
    }

    /// Reports a failed write made outside the store's own paths, so that
    /// a full disk is seen (and probed) whatever wrote first.
    pub fn note_failure(&self, error: &StoreError) {
        self.inner.health.failed(error);
    }

    /// [`Store::note_failure`] for an error already turned into a
    /// `reason` ([`StoreError::unwritable_reason`]) and its `detail`.
    pub fn note_unwritable(&self, reason: &'static str, detail: String) {
        self.inner.health.unwritable(reason, detail);
    }
}

/// How many bytes the probe writes: a write that needs room, not one that
/// fits in a page or a log frame already there.
const PROBE_BYTES: usize = 256 << 10;

/// Probes an unwritable store until a write that needs room succeeds
/// (for SQLite, after its log is checkpointed and truncated, so that the
/// write cannot land in log space already allocated); ends when the pool
/// closes.
pub(crate) async fn probe(pool: AnyPool, backend: Backend, health: Arc<HealthCell>) {
    let mut changes = health.watch();
    loop {
        if pool.is_closed() {
            return;
        }
        let unwritable = matches!(*changes.borrow_and_update(), Health::Unwritable { .. });
        if !unwritable {
            if changes.changed().await.is_err() {
                return;
            }
            continue;
        }
        tokio::time::sleep(PROBE_EVERY).await;
        let probed = probe_once(&pool, backend).await;
        match probed {
            Ok(()) => health.recovered(),
            Err(sqlx::Error::PoolClosed) => return,
            Err(error) => tracing::debug!(%error, "the store is still unwritable"),
        }
    }
}

/// One probe: room for [`PROBE_BYTES`] more, written and cleared.
async fn probe_once(pool: &AnyPool, backend: Backend) -> Result<(), sqlx::Error> {
    // Any value will do: the probe only checks that a row can be written.
    let now = talon_protocol::clock::Clock::system().now_ms() as i64;
    let fill = match backend {
        Backend::Sqlite => {
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(pool)
                .await?;
            format!("hex(randomblob({}))", PROBE_BYTES / 2)
        }
        Backend::Postgres => format!(
            "(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, {}))",
            PROBE_BYTES / 32
        ),
    };
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE store_probe SET at = $1, pad = {fill} WHERE id = 1"
    )))
    .bind(now)
    .execute(pool)
    .await?;
    sqlx::query("UPDATE store_probe SET pad = NULL WHERE id = 1")
        .execute(pool)
        .await?;
    Ok(())
}

/// How long after the store opens its integrity check starts: start-up
/// (the first requests) goes first.
const CHECK_AFTER: Duration = Duration::from_millis(100);

/// SQLite's `PRAGMA quick_check` over the whole database, in the
/// background: a damaged database is marked [`Health::Corrupt`]. A
/// PostgreSQL server checks its own pages. The check reads through a
/// connection of its own with a small page cache, closed after it, so
/// reading the whole file leaves no memory behind. Returns how long it
/// took.
pub(crate) async fn integrity_check(
    pool: AnyPool,
    backend: Backend,
    health: Arc<HealthCell>,
) -> Option<Duration> {
    if backend != Backend::Sqlite {
        return None;
    }
    tokio::time::sleep(CHECK_AFTER).await;
    let started = Instant::now();
    let rows: Result<Vec<String>, sqlx::Error> = async {
        let mut conn = pool.acquire().await?;
        conn.close_on_drop();
        sqlx::query("PRAGMA cache_size = -256")
            .execute(&mut *conn)
            .await?;
        sqlx::query_scalar("PRAGMA quick_check(8)")
            .fetch_all(&mut *conn)
            .await
    }
    .await;
    let took = started.elapsed();
    match rows {
        Ok(rows) if rows.len() == 1 && rows[0] == "ok" => {
            tracing::info!(
                took_ms = took.as_millis() as u64,
                "the store's integrity check passed"
            );
        }
        Ok(rows) => health.corrupt(rows.join("; ")),
        Err(sqlx::Error::PoolClosed) => return None,
        Err(error) => {
            let error = StoreError::from(error);
            match &error {
                StoreError::Database(e)
                    if e.as_database_error()
                        .and_then(|d| d.code())
                        .and_then(|c| c.parse::<i32>().ok())
                        .is_some_and(|c| matches!(c & 0xff, 11 | 26)) =>
                {
                    // SQLITE_CORRUPT, SQLITE_NOTADB.
                    health.corrupt(error.to_string());
                }
                _ => tracing::warn!(%error, "the store's integrity check could not run"),
            }
        }
    }
    Some(took)
}
