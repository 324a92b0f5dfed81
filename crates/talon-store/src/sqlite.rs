//! The SQLite store: one file, WAL, `synchronous=FULL`, a busy timeout,
//! migrations embedded in the binary and applied at open.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use talon_protocol::Event;
use talon_protocol::gateway::{ApiError, Run, RunStatus, Scope, Usage};

use crate::error::{Result, StoreError};
use crate::records::{EventFilter, Retention, StoredToken};

static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// Rows per INSERT statement (9 parameters each, under SQLite's limit of
/// 32,766).
const ROWS_PER_INSERT: usize = 256;

/// The largest page of events one read returns.
pub const MAX_PAGE: u32 = 10_000;

/// A store in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating it and its directory if need be) and migrates the
    /// database at `path`.
    pub async fn open(path: &Path, busy_timeout: Duration) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.to_owned(),
                source,
            })?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(busy_timeout)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        MIGRATIONS.run(&pool).await?;
        Ok(Self { pool })
    }

    /// Appends `events` in one transaction, in order, and returns them
    /// with their ids (the replay cursor) set. All or none are stored.
    pub async fn append(&self, mut events: Vec<Event>) -> Result<Vec<Event>> {
        let mut tx = self.pool.begin().await?;
        for chunk in events.chunks_mut(ROWS_PER_INSERT) {
            let mut rows = Vec::with_capacity(chunk.len());
            for event in chunk.iter() {
                let data = serde_json::to_string(&event.data).map_err(corrupt)?;
                let raw = event
                    .raw
                    .as_ref()
                    .map(serde_json::to_string)
                    .transpose()
                    .map_err(corrupt)?;
                rows.push((event, data, raw));
            }
            let mut insert = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                "INSERT INTO events (ts, type, run_id, session_id, session_key, task_id, agent_id, data, raw) ",
            );
            insert.push_values(rows, |mut row, (event, data, raw)| {
                row.push_bind(event.ts as i64)
                    .push_bind(event.kind.as_str())
                    .push_bind(event.run_id.clone())
                    .push_bind(event.session_id.clone())
                    .push_bind(event.session_key.clone())
                    .push_bind(event.task_id.clone())
                    .push_bind(event.agent_id.clone())
                    .push_bind(data)
                    .push_bind(raw);
            });
            // One statement's rows get consecutive sequence numbers (one
            // writer at a time): the last is the statement's rowid.
            let last = insert.build().execute(&mut *tx).await?.last_insert_rowid() as u64;
            let first = last + 1 - chunk.len() as u64;
            for (i, event) in chunk.iter_mut().enumerate() {
                event.id = (first + i as u64).to_string();
            }
        }
        tx.commit().await?;
        Ok(events)
    }

    /// Events after `cursor` (every event from the start when `None`)
    /// matching `filter`, oldest first, at most `limit` (capped at
    /// [`MAX_PAGE`]). A cursor older than what is kept is
    /// [`StoreError::CursorExpired`], never a shortened stream.
    pub async fn after(
        &self,
        cursor: Option<u64>,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<Event>> {
        let floor: i64 = sqlx::query("SELECT pruned_through FROM event_floor WHERE id = 1")
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?;
        let floor = floor as u64;
        let from = cursor.unwrap_or(0);
        if floor > 0 && from < floor {
            return Err(StoreError::CursorExpired {
                cursor: from,
                oldest: floor + 1,
            });
        }
        let types: Vec<&str> = filter.types.iter().map(|t| t.as_str()).collect();
        let types_json = serde_json::to_string(&types).map_err(corrupt)?;
        let rows = sqlx::query(
            "SELECT seq, ts, type, run_id, session_id, session_key, task_id, agent_id, data, raw FROM events \
             WHERE seq > $1 \
               AND ($2 IS NULL OR run_id = $2) \
               AND ($3 IS NULL OR session_key = $3) \
               AND ($4 IS NULL OR agent_id = $4) \
               AND ($5 = '[]' OR type IN (SELECT value FROM json_each($5))) \
             ORDER BY seq LIMIT $6",
        )
        .bind(from as i64)
        .bind(&filter.run_id)
        .bind(&filter.session_key)
        .bind(&filter.agent_id)
        .bind(types_json)
        .bind(i64::from(limit.min(MAX_PAGE)))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(event_of).collect()
    }

    /// The newest event's id (0 when the log has never held one).
    pub async fn last_event_id(&self) -> Result<u64> {
        let last: Option<i64> = sqlx::query("SELECT MAX(seq) FROM events")
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?;
        let floor: i64 = sqlx::query("SELECT pruned_through FROM event_floor WHERE id = 1")
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?;
        Ok(last.unwrap_or(floor).max(floor) as u64)
    }

    /// Removes events `retention` no longer keeps (as of `now`, epoch ms)
    /// and records how far, so older cursors answer `cursor_expired`.
    /// Returns how many were removed.
    pub async fn prune(&self, retention: Retention, now: u64) -> Result<u64> {
        let mut tx = self.pool.begin().await?;
        let mut through: i64 = 0;
        if let Some(age) = retention.max_age {
            let cutoff = now.saturating_sub(age.as_millis() as u64) as i64;
            let by_age: Option<i64> = sqlx::query("SELECT MAX(seq) FROM events WHERE ts < $1")
                .bind(cutoff)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
            through = through.max(by_age.unwrap_or(0));
        }
        if let Some(keep) = retention.max_events {
            let by_count: Option<i64> =
                sqlx::query("SELECT seq FROM events ORDER BY seq DESC LIMIT 1 OFFSET $1")
                    .bind(keep as i64)
                    .fetch_optional(&mut *tx)
                    .await?
                    .map(|row| row.try_get(0))
                    .transpose()?;
            through = through.max(by_count.unwrap_or(0));
        }
        if through == 0 {
            return Ok(0);
        }
        let removed = sqlx::query("DELETE FROM events WHERE seq <= $1")
            .bind(through)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("UPDATE event_floor SET pruned_through = MAX(pruned_through, $1) WHERE id = 1")
            .bind(through)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(removed)
    }

    /// Stores a new run under `idempotency_key`. The same key again with
    /// the same `request_hash` returns the first run (`false`: not
    /// created); with another hash it is
    /// [`StoreError::IdempotencyConflict`].
    pub async fn create_run(
        &self,
        run: &Run,
        idempotency_key: &str,
        request_hash: &str,
    ) -> Result<(Run, bool)> {
        let inserted = sqlx::query(
            "INSERT INTO runs (id, agent_id, session_id, session_key, status, created_at, idempotency_key, request_hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (idempotency_key) DO NOTHING",
        )
        .bind(&run.id)
        .bind(&run.agent_id)
        .bind(&run.session_id)
        .bind(&run.session_key)
        .bind(status_str(run.status)?)
        .bind(run.created_at as i64)
        .bind(idempotency_key)
        .bind(request_hash)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if inserted == 1 {
            return Ok((run.clone(), true));
        }
        let row = sqlx::query("SELECT request_hash, id FROM runs WHERE idempotency_key = $1")
            .bind(idempotency_key)
            .fetch_one(&self.pool)
            .await?;
        let (hash, id): (Option<String>, String) = (row.try_get(0)?, row.try_get(1)?);
        if hash.as_deref() != Some(request_hash) {
            return Err(StoreError::IdempotencyConflict {
                key: idempotency_key.to_owned(),
            });
        }
        let existing = self
            .run(&id)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("run {id} vanished")))?;
        Ok((existing, false))
    }

    /// One run.
    pub async fn run(&self, id: &str) -> Result<Option<Run>> {
        sqlx::query(
            "SELECT id, agent_id, session_id, session_key, status, created_at, started_at, ended_at, usage, error \
             FROM runs WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(run_of)
        .transpose()
    }

    /// Writes a run's state (status, times, usage, error).
    pub async fn update_run(&self, run: &Run) -> Result<bool> {
        let usage = run
            .usage
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(corrupt)?;
        let error = run
            .error
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(corrupt)?;
        let changed = sqlx::query(
            "UPDATE runs SET status = $2, started_at = $3, ended_at = $4, usage = $5, error = $6 WHERE id = $1",
        )
        .bind(&run.id)
        .bind(status_str(run.status)?)
        .bind(run.started_at.map(|t| t as i64))
        .bind(run.ended_at.map(|t| t as i64))
        .bind(usage)
        .bind(error)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Stores a token (its hash only).
    pub async fn insert_token(&self, token: &StoredToken) -> Result<()> {
        let scopes = serde_json::to_string(&token.scopes).map_err(corrupt)?;
        sqlx::query(
            "INSERT INTO tokens (id, hash, name, scopes, created_at, expires_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&token.id)
        .bind(&token.hash)
        .bind(&token.name)
        .bind(scopes)
        .bind(token.created_at as i64)
        .bind(token.expires_at.map(|t| t as i64))
        .bind(token.revoked_at.map(|t| t as i64))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The token whose secret hashes to `hash`.
    pub async fn token_by_hash(&self, hash: &str) -> Result<Option<StoredToken>> {
        sqlx::query("SELECT id, hash, name, scopes, created_at, expires_at, revoked_at FROM tokens WHERE hash = $1")
            .bind(hash)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(token_of)
            .transpose()
    }

    /// Every token, oldest first.
    pub async fn tokens(&self) -> Result<Vec<StoredToken>> {
        sqlx::query("SELECT id, hash, name, scopes, created_at, expires_at, revoked_at FROM tokens ORDER BY created_at, id")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(token_of)
            .collect()
    }

    /// Revokes a token; `false` when there is none with that id.
    pub async fn revoke_token(&self, id: &str, now: u64) -> Result<bool> {
        let changed =
            sqlx::query("UPDATE tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1")
                .bind(id)
                .bind(now as i64)
                .execute(&self.pool)
                .await?
                .rows_affected();
        Ok(changed == 1)
    }

    /// Closes the pool (waits for connections to finish).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

fn corrupt(e: serde_json::Error) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

fn status_str(status: RunStatus) -> Result<String> {
    match serde_json::to_value(status).map_err(corrupt)? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(StoreError::Corrupt(format!("run status {other}"))),
    }
}

fn json_column<T: serde::de::DeserializeOwned>(value: Option<String>) -> Result<Option<T>> {
    value
        .map(|text| serde_json::from_str(&text).map_err(corrupt))
        .transpose()
}

fn event_of(row: &SqliteRow) -> Result<Event> {
    let seq: i64 = row.try_get(0)?;
    let ts: i64 = row.try_get(1)?;
    let kind: String = row.try_get(2)?;
    let data: String = row.try_get(8)?;
    Ok(Event {
        version: 1,
        id: seq.to_string(),
        ts: ts as u64,
        kind: serde_json::from_value(serde_json::Value::String(kind)).map_err(corrupt)?,
        run_id: row.try_get(3)?,
        session_id: row.try_get(4)?,
        session_key: row.try_get(5)?,
        task_id: row.try_get(6)?,
        agent_id: row.try_get(7)?,
        data: serde_json::from_str(&data).map_err(corrupt)?,
        raw: json_column(row.try_get(9)?)?,
    })
}

fn run_of(row: &SqliteRow) -> Result<Run> {
    let status: String = row.try_get(4)?;
    let created: i64 = row.try_get(5)?;
    let started: Option<i64> = row.try_get(6)?;
    let ended: Option<i64> = row.try_get(7)?;
    Ok(Run {
        id: row.try_get(0)?,
        agent_id: row.try_get(1)?,
        session_id: row.try_get(2)?,
        session_key: row.try_get(3)?,
        status: serde_json::from_value(serde_json::Value::String(status)).map_err(corrupt)?,
        created_at: created as u64,
        started_at: started.map(|t| t as u64),
        ended_at: ended.map(|t| t as u64),
        usage: json_column::<Usage>(row.try_get(8)?)?,
        error: json_column::<ApiError>(row.try_get(9)?)?,
    })
}

fn token_of(row: &SqliteRow) -> Result<StoredToken> {
    let scopes: String = row.try_get(3)?;
    let created: i64 = row.try_get(4)?;
    let expires: Option<i64> = row.try_get(5)?;
    let revoked: Option<i64> = row.try_get(6)?;
    Ok(StoredToken {
        id: row.try_get(0)?,
        hash: row.try_get(1)?,
        name: row.try_get(2)?,
        scopes: serde_json::from_str::<Vec<Scope>>(&scopes).map_err(corrupt)?,
        created_at: created as u64,
        expires_at: expires.map(|t| t as u64),
        revoked_at: revoked.map(|t| t as u64),
    })
}
