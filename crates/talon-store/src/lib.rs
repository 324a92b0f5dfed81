//! Talon's durable store: the event log (append-only, a monotonic cursor
//! that holds under concurrent writers, retention that never shortens a
//! stream silently), runs with their idempotency keys, sessions and their
//! messages, agents created through the API, approvals and questions,
//! artifacts, suspended Code Mode cells, and access tokens (hashed).
//!
//! One [`Store`] over two backends, chosen by URL ([`Backend`]):
//!
//! - **SQLite**, the embedded default: `$TALON_STATE_DIR/talon.db`, WAL,
//!   `synchronous=FULL`, a busy timeout; nothing for the user to set up.
//! - **PostgreSQL**, for several gateway nodes sharing one database
//!   (`postgres://...`).
//!
//! Queries go through sqlx's `Any` driver; what the two dialects spell
//! differently lives in `dialect.rs`, and each has its own embedded
//! migrations, applied at open. Every write that returns is durable.
//!
//! Events are appended through a group-commit writer (`writer.rs`): appends
//! that arrive while a commit is in flight share the next one, so a burst
//! of `assistant.delta` events costs one fsync, not one each.
//!
//! `$TALON_DATABASE_URL` or the config's `store.url` selects PostgreSQL
//! (`talon_config::StoreSettings`; the store itself reads no config). One SQL text serves both
//! backends (`$n` placeholders, `ON CONFLICT`, `RETURNING`, JSON as TEXT, times as epoch-ms
//! integers); the migrations are `migrations/sqlite` and `migrations/postgres`, kept in step.
//! Errors are classified once (`error.rs`): a full disk is `DiskFull`, a read-only database
//! `ReadOnly`, on both backends, each keeping the database's error as its source; a conversion
//! that fails is `Conversion`, keeping its error; a URL's password never reaches an error.
//!
//! # What it holds, one module each
//!
//! - **The event log** (`events.rs`, `event_pages.rs`, `writer.rs`): `submit` queues an append without waiting for
//!   its commit (`Pending::durable` waits), so a producer streaming a delta per token pipelines; a
//!   failed shared commit is retried append by append. Ids come from a one-row counter updated
//!   inside the appending transaction and locked to commit, so ids become visible in increasing
//!   order even with writers on several nodes, and `after: id` returns every later event exactly
//!   once. Each row keeps the envelope's JSON (`body`), without the session's key when its session
//!   holds it; `after_json` hands the transports each envelope without parsing it. `prune` applies
//!   retention by age and count and records the floor: an older cursor is `CursorExpired { oldest
//!     }`, never a shortened stream. `last_before` reads a page counted from the end of a window
//!   (a long run's tail first).
//! - **Time**: every stored time is read from `StoreConfig::clock` (`Store::now_ms`), the one
//!   `talon_protocol::clock::Clock` the gateway shares; tests move an adjustable one.
//! - **Runs** (`runs.rs`, `request.rs`, `run_list.rs`, `resume.rs`): created once per idempotency key (the same
//!   key with other params is `IdempotencyConflict`) with what they execute (`request`: a typed
//!   `RunRequest`; one that does not decode is `Corrupt`, and a claim hands it over as
//!   `UnreadableRequest` so the run ends rather than being claimed again), the owning
//!   node, status, times, usage, error and final `RunResult`. `claim_run` hands the oldest queued
//!   run whose session has no live run to one node (`FOR UPDATE SKIP LOCKED` on PostgreSQL;
//!   SQLite's writes are serialized), with a lease the node renews (`renew_leases`);
//!   `orphaned_runs` finds live runs whose lease lapsed; `request_cancel`/`cancel_requests` carry a
//!   cancel to the node executing a run; `end_run` (`run_end.rs`) is a compare-and-set on a live
//!   status that commits the events telling the end (the terminal event last) with the row, through
//!   the event writer, so exactly one ending wins and a reader who sees the terminal event finds
//!   the run ended. `set_run_checkpoint` keeps a run's last checkpoint; `requeue_run`
//!   puts an orphan back in the queue by compare-and-set, so of several nodes noticing a death
//!   exactly one does. A run's row also keeps its one-line `summary` (and its ASCII-folded copy,
//!   what `runs.list`'s `text` matches), its `model` and its `waiting` state as its events tell
//!   them (`set_run_model`, `set_run_waiting`); `tally_usage` streams a window's
//!   runs into `usage.summary`'s tally.
//! - **Live readers** need not poll on SQLite, whose one writer announces every commit
//!   (`announces_every_commit`).
//! - **Notifications** (`notify.rs`, PostgreSQL): event commits notify `talon_events` inside their
//!   transaction; run changes another node may act on notify `talon_runs` after they commit. One
//!   listener per store moves `committed()` and ticks `runs_changed()`; polls stay as the fallback.
//!   SQLite has no listener (`runs_changed()` never ticks).
//! - **Sessions and messages** (`sessions.rs`): key, metadata, parent; messages in order per
//!   session (compaction records are messages); a fork copies a prefix of the parent's messages in
//!   one transaction. **Agents** created through the API (`agents.rs`).
//! - **Approvals and questions** (`approvals.rs`): resolved by a compare-and-set on `status =
//!     'pending'`, so of concurrent responders on any node exactly one wins. Approvals resolved
//!   `approve_session` or `approve_always` are filed in `approval_rules` (keyed by the tool's
//!   catalog id, `Approval::tool_key`, and scope), which `remembered_approval` reads by key.
//!   Migration 0004 backfilled the rules from stored docs' `toolName`, which held the catalog id
//!   before `toolId` existed (a build that writes `toolId` applies 0004 before it writes): a
//!   released migration is never edited, as sqlx refuses a database whose applied migration's
//!   checksum changed.
//! - **Artifacts** (`artifacts.rs`): the summary, and the content inline up to
//!   `inline_artifact_bytes` or in a synced file under `<state_dir>/artifacts/` above it; expired
//!   ones are invisible to reads and purged with their files.
//! - **Suspended Code Mode cells** (`cells.rs`): `CellStore` implements
//!   `talon_cells::SnapshotStore` over a `cells` table holding the cells' sealed records (see that
//!   module).
//! - **Tokens** (`tokens.rs`): the plain SHA-256 of each secret (hex, computed by the gateway:
//!   256-bit random secrets need no key), with name, scopes, expiry and revocation; never the
//!   secret. Stream tickets are kept as their hash and taken once (`DELETE ... RETURNING`).
//! - **Health** (`health.rs`): `Ok`, `Unwritable {reason}` (set by a failed write on any path;
//!   cleared only by a probe that writes, every 500 ms) or `Corrupt` (SQLite's `quick_check`, run
//!   in the background after open). A connection released inside a transaction is closed, so a
//!   failed commit never wedges the pool. `OnMissing::Refuse` refuses to create a database that
//!   should have existed.
//! - **Environments** (`environments.rs`): each provider's record, its subject, and its footprint
//!   on disk (which counts in `stored_bytes`).
//! - **Ownership** (`owner.rs`): tokens may be bound to a subject and agents; sessions, runs and
//!   environments record their subject, and session keys are unique per subject (0010). `Owner`
//!   is the one SQL condition every listing (sessions, runs, approvals, questions, artifacts, the
//!   event log) applies for a bound caller; the log splices each event's session's `subject` into
//!   its envelope as it reads it.
//! - **Deletes** (`deletes.rs`): a session with its runs, or one ended run, with everything they
//!   made, in one transaction (`Busy` while a run is live). `stored_bytes` counts SQLite's pages in
//!   use, so freed room is room again; a new SQLite database vacuums incrementally (`reclaim`).
//!
//! # Invariants
//!
//! Every call that returns has committed durably; an append is all or nothing. The store's normal
//! dependencies are `talon-cells` and `talon-protocol` only: never the Code Mode engine, the
//! sandbox or the agent loop (`tests/suite/layers.rs`). The test suite runs its tests on both
//! backends (`on_both!`), PostgreSQL being a real server `talon_testing::postgres` starts (a
//! missing one fails the tests); the crash tests SIGKILL a writing child at random points, twelve
//! times per backend. Deliberately absent: the `Any` driver's MySQL, an in-memory SQLite
//! (`sqlite::memory:` is refused), and artifact files shared between nodes (several PostgreSQL
//! nodes need a shared state directory for artifacts above the inline size).

/// A query text assembled from fixed pieces (table and column names, a
/// dialect's fragment): never from a value, which is always bound.
macro_rules! sql {
    ($($text:tt)*) => {
        sqlx::AssertSqlSafe(format!($($text)*))
    };
}

mod agents;
mod approvals;
mod artifacts;
mod cells;
mod deletes;
mod dialect;
mod environments;
mod error;
mod event_pages;
mod events;
mod health;
mod notify;
mod owner;
mod records;
mod request;
mod resume;
mod run_end;
mod run_list;
mod runs;
mod schedules;
mod sessions;
mod tasks;
mod tokens;
mod usage;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use talon_protocol::clock::Clock;

use sqlx::AnyPool;

pub use approvals::{Page, PendingFilter, Resolution};
pub use artifacts::{ArtifactContent, NewArtifact, StoredContent};
pub use cells::CellStore;
pub use deletes::Deleted;
pub use dialect::Backend;
pub use error::{Result, StoreError};
pub use events::{MAX_PAGE, Pending, RawEvent};
pub use health::{Health, PROBE_EVERY};
pub use owner::Owner;
pub use records::{EventFilter, Retention, StoredTicket, StoredToken};
pub use request::{Invocation, RunRequest, UnreadableRequest};
pub use resume::Orphaned;
pub use run_list::{RunCursor, RunFilter, UsageFilter};
pub use runs::{CancelMode, Claimed, NodeLeases, RunWaits};
pub use schedules::ScheduleCursor;
pub use sessions::StoredMessage;
pub use tasks::{TaskCursor, TaskFilter, TaskOwner};
pub use tokens::MAX_TOKENS_PAGE;
pub use usage::{ROW_OVERHEAD, Usage};

/// Where the store lives and how it behaves.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `sqlite:PATH` (`?mode=ro` opens it read-only) or `postgres://...`;
    /// absent: `<state_dir>/talon.db`.
    pub url: Option<String>,
    /// The state directory (`$TALON_STATE_DIR`, default `~/.talon/`):
    /// the SQLite file and artifact contents above the inline size.
    pub state_dir: PathBuf,
    /// How long a writer waits for another to finish (SQLite).
    pub busy_timeout: Duration,
    /// How long opening the store (or taking a connection) may wait for
    /// the database.
    pub connect_timeout: Duration,
    /// Connections in the pool.
    pub max_connections: u32,
    /// SQLite only: the database file may not grow beyond this many bytes
    /// (writes past it fail with [`StoreError::DiskFull`], as on a full
    /// disk). PostgreSQL sizes are the server's business.
    pub max_size_bytes: Option<u64>,
    /// Artifact contents up to this size are kept in the database; larger
    /// ones in files under `<state_dir>/artifacts/`.
    pub inline_artifact_bytes: u64,
    /// What to do when there is no database yet (or an empty one).
    pub on_missing: OnMissing,
    /// The wall clock the store (and whoever holds it) reads: the system's,
    /// or in tests an adjustable one.
    pub clock: Clock,
}

/// What opening a store does when its database does not exist yet, or
/// exists but holds no Talon schema (an empty file, an empty PostgreSQL
/// database).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnMissing {
    /// Create it (a first start).
    #[default]
    Create,
    /// Refuse with [`StoreError::Missing`]: a state directory that already
    /// served must not quietly start over with an empty store.
    Refuse,
}

impl StoreConfig {
    /// The embedded default under `state_dir`.
    pub fn embedded(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            url: None,
            state_dir: state_dir.into(),
            busy_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(10),
            max_connections: 4,
            max_size_bytes: None,
            inline_artifact_bytes: 256 << 10,
            on_missing: OnMissing::Create,
            clock: Clock::system(),
        }
    }

    /// The store at `url` (`sqlite:PATH` or `postgres://...`), with
    /// `state_dir` for artifact files.
    pub fn at(url: impl Into<String>, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::embedded(state_dir)
        }
    }
}

/// The store: cheap to clone, shared by every part of a gateway.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: AnyPool,
    writes: AnyPool,
    backend: Backend,
    state_dir: PathBuf,
    inline_artifact_bytes: u64,
    clock: Clock,
    writer: writer::Writer,
    health: Arc<health::HealthCell>,
    /// Ticks when a run changes (on PostgreSQL, on any node).
    runs: Arc<tokio::sync::watch::Sender<u64>>,
    /// PostgreSQL: the notification listener (stops when dropped).
    _listening: Option<notify::Listening>,
}

/// Opens the store `config` names, creating and migrating it as needed.
/// Must run inside a Tokio runtime (the group-commit writer is a task on
/// it).
pub async fn open(config: &StoreConfig) -> Result<Store> {
    let dialect::Pools {
        backend,
        reads: pool,
        writes,
        listen_url,
    } = dialect::connect(config).await?;
    if config.on_missing == OnMissing::Refuse && !dialect::has_schema(backend, &pool).await? {
        pool.close().await;
        writes.close().await;
        return Err(StoreError::Missing(dialect::describe(config)));
    }
    let health = health::HealthCell::new(Health::Ok);
    if let Err(error) = migrate(backend, &writes).await {
        if matches!(error, StoreError::ReadOnly(_)) {
            health.failed(&error);
        } else {
            return Err(error);
        }
    }
    let last: i64 = sqlx::query_scalar("SELECT last FROM event_counter WHERE id = 1")
        .fetch_one(&pool)
        .await?;
    let committed = Arc::new(tokio::sync::watch::channel(u64::try_from(last).unwrap_or(0)).0);
    let runs = Arc::new(tokio::sync::watch::channel(0u64).0);
    let listening = listen_url.map(|url| {
        notify::listen(
            url,
            notify::Wakes {
                committed: committed.clone(),
                runs: runs.clone(),
            },
        )
    });
    let writer = writer::Writer::spawn(writes.clone(), backend, committed, health.clone());
    tokio::spawn(health::probe(writes.clone(), backend, health.clone()));
    tokio::spawn(health::integrity_check(
        pool.clone(),
        backend,
        health.clone(),
    ));
    Ok(Store {
        inner: Arc::new(Inner {
            pool,
            writes,
            backend,
            state_dir: config.state_dir.clone(),
            inline_artifact_bytes: config.inline_artifact_bytes,
            clock: config.clock.clone(),
            writer,
            health,
            runs,
            _listening: listening,
        }),
    })
}

/// Applies the backend's migrations. A read-only database whose schema is
/// already current opens (for reads); one that would need a migration is
/// [`StoreError::ReadOnly`].
async fn migrate(backend: Backend, pool: &AnyPool) -> Result<()> {
    let migrator = backend.migrator();
    let ran = match backend {
        Backend::Sqlite => {
            // Each migration is a commit of its own: on a new database, a
            // handful of fsyncs before the first request. They need not be
            // synced one by one: WAL keeps each atomic, one not yet synced
            // is applied again after a crash, and the next commit at
            // `synchronous = FULL` syncs them all.
            let mut conn = pool.acquire().await?;
            sqlx::query("PRAGMA synchronous = NORMAL")
                .execute(&mut *conn)
                .await?;
            let ran = migrator.run(&mut *conn).await;
            sqlx::query("PRAGMA synchronous = FULL")
                .execute(&mut *conn)
                .await?;
            ran
        }
        Backend::Postgres => migrator.run(pool).await,
    };
    let error = match ran {
        Ok(()) => return Ok(()),
        Err(sqlx::migrate::MigrateError::Execute(e)) => StoreError::from(e),
        Err(e) => return Err(e.into()),
    };
    if !matches!(error, StoreError::ReadOnly(_)) {
        return Err(error);
    }
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(pool)
            .await?;
    let wanted: Vec<i64> = migrator.iter().map(|m| m.version).collect();
    if applied == wanted {
        tracing::warn!("the store is read-only: reads are served, writes will fail");
        Err(error)
    } else {
        Err(StoreError::Migration(sqlx::migrate::MigrateError::Execute(
            sqlx::Error::Protocol(format!(
                "the read-only database's schema is not current ({error})"
            )),
        )))
    }
}

impl Store {
    /// Which backend this is.
    pub fn backend(&self) -> Backend {
        self.inner.backend
    }

    /// The pool reads go through.
    fn pool(&self) -> &AnyPool {
        &self.inner.pool
    }

    /// The pool writes go through (one connection on SQLite).
    fn writes(&self) -> &AnyPool {
        &self.inner.writes
    }

    /// The id of the last event committed, watched: a live reader waits
    /// for it to change instead of polling. It moves for this process's
    /// appends and, on PostgreSQL, for other nodes' (notified); a lost
    /// notification is only caught by polling, so readers there also poll
    /// ([`Store::announces_every_commit`]).
    pub fn committed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.writer.committed()
    }

    /// Whether [`Store::committed`] moves for every commit there is, so a
    /// live reader never has to look for one it was not told of: on
    /// SQLite, whose one writing process is this one. On PostgreSQL other
    /// nodes' commits are notified, and a notification lost while the
    /// listener reconnects is only caught by a reader that polls.
    pub fn announces_every_commit(&self) -> bool {
        self.backend() == Backend::Sqlite
    }

    /// On PostgreSQL, ticks when any node (this one too) creates, ends or
    /// requeues a run or asks one to cancel (notified): claims and waits
    /// on other nodes' runs wake on it, and also poll. On SQLite it never
    /// ticks: one process owns the database and wakes its own waiters.
    pub fn runs_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.runs.subscribe()
    }

    /// Says that a run changed, on PostgreSQL, to every node (after the
    /// change committed).
    pub(crate) async fn notify_runs(&self) {
        match self.backend() {
            Backend::Sqlite => {}
            Backend::Postgres => {
                // Our own listener hears it too.
                if let Err(error) = sqlx::query("SELECT pg_notify($1, '')")
                    .bind(notify::RUNS)
                    .execute(self.writes())
                    .await
                {
                    tracing::debug!(%error, "a run change was not notified; nodes will see it on their next poll");
                }
            }
        }
    }

    /// The bytes the store holds: the database (SQLite's pages in use, or
    /// PostgreSQL's database size), the artifact files beside it, and the
    /// environments' workspaces as last measured.
    pub async fn stored_bytes(&self) -> Result<u64> {
        let database: i64 = match self.backend() {
            // Free pages (of deleted and pruned rows) are room.
            Backend::Sqlite => {
                sqlx::query_scalar(
                    "SELECT (page_count - freelist_count) * page_size \
                     FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()",
                )
                .fetch_one(self.pool())
                .await?
            }
            Backend::Postgres => {
                sqlx::query_scalar("SELECT pg_database_size(current_database())")
                    .fetch_one(self.pool())
                    .await?
            }
        };
        let files: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM artifacts WHERE path IS NOT NULL",
        )
        .fetch_one(self.pool())
        .await?;
        let environments: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(footprint), 0) AS BIGINT) FROM environments",
        )
        .fetch_one(self.pool())
        .await?;
        Ok(database.max(0) as u64 + files.max(0) as u64 + environments.max(0) as u64)
    }

    /// The clock this store (and the gateway over it) reads.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// Milliseconds since the Unix epoch, by [`Store::clock`].
    pub fn now_ms(&self) -> u64 {
        self.inner.clock.now_ms()
    }

    /// Waits for pending appends and closes every connection.
    pub async fn close(&self) {
        self.inner.writer.flush().await;
        self.inner.pool.close().await;
        self.inner.writes.close().await;
    }
}
