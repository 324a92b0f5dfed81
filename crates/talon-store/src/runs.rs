//! Runs: created once per idempotency key, then updated as they move;
//! the owning node and the final result are kept with them.

use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;
use talon_protocol::gateway::bounded::{
    AgentId, EnvironmentId, RunId, SessionId, SessionKey, Subject,
};
use talon_protocol::gateway::run_list::folded;
use talon_protocol::gateway::{ApiError, Run, RunResult, RunStatus, Usage};

use crate::Store;
use crate::error::{Result, StoreError, corrupt};
use crate::records::{enum_str, json_column, json_text, ms, opt_ms};
use crate::request::{RunRequest, UnreadableRequest};

pub(crate) const COLUMNS: &str = "id, agent_id, session_id, session_key, status, created_at, started_at, ended_at, usage, error, subject, summary, model";

/// What a cancel asks of a live run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelMode {
    /// It ends `cancelled`; what it said stays in its session.
    Cancel,
    /// It ends `cancelled` and its messages are dropped from the session
    /// (the `rollback` multitask strategy).
    Rollback,
}

impl Store {
    /// Stores a new run, owned by `node`, under `idempotency_key`. The same
    /// key again with the same `request_hash` returns the first run
    /// (`false`: not created); with another hash it is
    /// [`StoreError::IdempotencyConflict`].
    ///
    /// `request` is what the run executes (kept so that any node can run
    /// it, and a restarted one can again).
    pub async fn create_run(
        &self,
        run: &Run,
        idempotency_key: Option<&str>,
        request_hash: &str,
        node: &str,
        request: Option<&RunRequest>,
    ) -> Result<(Run, bool)> {
        // The environment it works in: one live run at a time there, as in
        // a session.
        let environment = request
            .and_then(|r| r.environment_id.clone())
            .map(EnvironmentId::into_string);
        let request = request
            .map(|r| serde_json::to_value(r).map_err(corrupt))
            .transpose()?;
        let inserted = sqlx::query(
            "INSERT INTO runs (id, agent_id, session_id, session_key, status, created_at, idempotency_key, request_hash, node, request, environment_id, subject, summary, summary_folded, model) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT DO NOTHING",
        )
        .bind(run.id.to_string())
        .bind(run.agent_id.to_string())
        .bind(run.session_id.clone().map(SessionId::into_string))
        .bind(run.session_key.clone().map(SessionKey::into_string))
        .bind(enum_str(run.status)?)
        .bind(ms(run.created_at)?)
        .bind(idempotency_key.map(str::to_owned))
        .bind(request_hash.to_owned())
        .bind(node.to_owned())
        .bind(request.as_ref().map(json_text).transpose()?)
        .bind(environment)
        .bind(run.subject.clone().map(Subject::into_string))
        .bind(run.summary.clone())
        .bind(run.summary.as_deref().map(folded))
        .bind(run.model.clone())
        .execute(self.writes())
        .await?
        .rows_affected();
        if inserted == 1 {
            self.notify_runs().await;
            return Ok((run.clone(), true));
        }
        let Some(key) = idempotency_key else {
            return Err(StoreError::Exists {
                kind: "run",
                id: run.id.clone().into_string(),
            });
        };
        let row = sqlx::query("SELECT request_hash, id FROM runs WHERE idempotency_key = $1")
            .bind(key.to_owned())
            .fetch_optional(self.pool())
            .await?;
        let Some(row) = row else {
            // The conflict was on the run id, not on the key.
            return Err(StoreError::Exists {
                kind: "run",
                id: run.id.clone().into_string(),
            });
        };
        let (hash, id): (Option<String>, String) = (row.try_get(0)?, row.try_get(1)?);
        if hash.as_deref() != Some(request_hash) {
            return Err(StoreError::IdempotencyConflict {
                key: key.to_owned(),
            });
        }
        let existing = self
            .run(&RunId::new(&id))
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("run {id} vanished")))?;
        Ok((existing, false))
    }

    /// The run created under `key`, with the hash of the params that
    /// created it.
    pub async fn run_by_idempotency_key(&self, key: &str) -> Result<Option<(Run, String)>> {
        let row = sqlx::query(sql!(
            "SELECT {COLUMNS}, request_hash FROM runs WHERE idempotency_key = $1"
        ))
        .bind(key.to_owned())
        .fetch_optional(self.pool())
        .await?;
        match row {
            None => Ok(None),
            Some(row) => {
                let hash: Option<String> = row.try_get(13)?;
                Ok(Some((run_of(&row)?, hash.unwrap_or_default())))
            }
        }
    }

    /// The node that created or claimed a run.
    pub async fn run_node(&self, id: &str) -> Result<Option<String>> {
        let row = sqlx::query("SELECT node FROM runs WHERE id = $1")
            .bind(id.to_owned())
            .fetch_optional(self.pool())
            .await?;
        match row {
            None => Ok(None),
            Some(row) => Ok(row.try_get(0)?),
        }
    }

    /// One run.
    pub async fn run(&self, id: &talon_protocol::gateway::bounded::RunId) -> Result<Option<Run>> {
        sqlx::query(sql!("SELECT {COLUMNS} FROM runs WHERE id = $1"))
            .bind(id.as_str().to_owned())
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(run_of)
            .transpose()
    }

    /// A session's runs, oldest first.
    pub async fn session_runs(&self, session_id: &SessionId) -> Result<Vec<Run>> {
        sqlx::query(sql!(
            "SELECT {COLUMNS} FROM runs WHERE session_id = $1 ORDER BY created_at, id"
        ))
        .bind(session_id.as_str().to_owned())
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(run_of)
        .collect()
    }

    /// Runs owned by `node` still in one of `statuses` (what a restarted
    /// node must pick up again).
    pub async fn runs_of_node(&self, node: &str, statuses: &[RunStatus]) -> Result<Vec<Run>> {
        let wanted = statuses
            .iter()
            .map(|s| enum_str(*s))
            .collect::<Result<Vec<_>>>()?;
        let runs = sqlx::query(sql!(
            "SELECT {COLUMNS} FROM runs WHERE node = $1 ORDER BY created_at, id"
        ))
        .bind(node.to_owned())
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(run_of)
        .collect::<Result<Vec<_>>>()?;
        let mut out = Vec::new();
        for run in runs {
            if wanted.contains(&enum_str(run.status)?) {
                out.push(run);
            }
        }
        Ok(out)
    }

    /// Writes a run's state (status, times, usage, error); `false` when
    /// there is no such run.
    pub async fn update_run(&self, run: &Run) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE runs SET status = $2, started_at = $3, ended_at = $4, usage = $5, error = $6 WHERE id = $1",
        )
        .bind(run.id.to_string())
        .bind(enum_str(run.status)?)
        .bind(opt_ms(run.started_at)?)
        .bind(opt_ms(run.ended_at)?)
        .bind(run.usage.as_ref().map(json_text).transpose()?)
        .bind(run.error.as_ref().map(json_text).transpose()?)
        .execute(self.writes())
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Records the model a run runs on (from its `run.started` event);
    /// `false` when there is no such run.
    pub async fn set_run_model(&self, run_id: &RunId, model: &str) -> Result<bool> {
        let changed = sqlx::query("UPDATE runs SET model = $2 WHERE id = $1")
            .bind(run_id.as_str().to_owned())
            .bind(model.to_owned())
            .execute(self.writes())
            .await?
            .rows_affected();
        Ok(changed == 1)
    }

    /// Moves a running run to `waiting` (an approval or a question was
    /// asked), or a waiting one back to `running` once it has no pending
    /// approval or question left; a run in any other state is left as it
    /// is. Whether it changed.
    pub async fn set_run_waiting(&self, run_id: &RunId, waits: RunWaits) -> Result<bool> {
        let query = match waits {
            RunWaits::Asked => {
                "UPDATE runs SET status = 'waiting' WHERE id = $1 AND status = 'running'"
            }
            RunWaits::Answered => {
                "UPDATE runs SET status = 'running' WHERE id = $1 AND status = 'waiting' \
                 AND NOT EXISTS (SELECT 1 FROM approvals WHERE run_id = $1 AND status = 'pending') \
                 AND NOT EXISTS (SELECT 1 FROM questions WHERE run_id = $1 AND status = 'pending')"
            }
        };
        let changed = sqlx::query(query)
            .bind(run_id.as_str().to_owned())
            .execute(self.writes())
            .await?
            .rows_affected();
        Ok(changed == 1)
    }

    /// Records a run's final result; `false` when there is no such run.
    pub async fn set_run_result(&self, run_id: &RunId, result: &RunResult) -> Result<bool> {
        let changed = sqlx::query("UPDATE runs SET result = $2 WHERE id = $1")
            .bind(run_id.as_str().to_owned())
            .bind(json_text(result)?)
            .execute(self.writes())
            .await?
            .rows_affected();
        Ok(changed == 1)
    }

    /// A run's final result, once recorded.
    pub async fn run_result(&self, run_id: &RunId) -> Result<Option<RunResult>> {
        let row = sqlx::query("SELECT result FROM runs WHERE id = $1")
            .bind(run_id.as_str().to_owned())
            .fetch_optional(self.pool())
            .await?;
        match row {
            None => Ok(None),
            Some(row) => json_column(row.try_get(0)?),
        }
    }
}

/// What [`Store::set_run_waiting`] is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunWaits {
    /// An approval or a question was asked.
    Asked,
    /// One was answered (the run may still wait on others).
    Answered,
}

/// Statuses of a run that holds its session's lane and a node's lease.
pub(crate) const LIVE: &str = "('running', 'waiting')";

/// The live runs one node holds ([`Store::leases`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLeases {
    /// The node.
    pub node: String,
    /// How many live runs it holds.
    pub runs: u64,
    /// The earliest of their leases (epoch ms).
    pub lease_until: Option<u64>,
}

/// A run a node has claimed to execute.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The run, now `running` on the node.
    pub run: Run,
    /// What it executes (as `create_run` stored it), or why that cannot
    /// be read: the run is claimed either way, so that it ends.
    pub request: std::result::Result<RunRequest, UnreadableRequest>,
    /// Where it resumes from, when an earlier execution was interrupted
    /// (as [`Store::set_run_checkpoint`] or [`Store::requeue_run`] left
    /// it).
    pub checkpoint: Option<Value>,
}

impl Store {
    /// What `run_id` executes, as `create_run` stored it; a stored request
    /// that does not decode is [`StoreError::Corrupt`], naming the run.
    pub async fn run_request(&self, run_id: &RunId) -> Result<Option<RunRequest>> {
        let Some(value) = self.run_json(run_id, "request").await? else {
            return Ok(None);
        };
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| StoreError::Corrupt(format!("run {run_id}'s stored request: {e}")))
    }

    /// One JSON column of a run (`request`, `checkpoint`).
    pub(crate) async fn run_json(
        &self,
        run_id: &RunId,
        column: &'static str,
    ) -> Result<Option<Value>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {column} FROM runs WHERE id = $1"
        )))
        .bind(run_id.as_str().to_owned())
        .fetch_optional(self.pool())
        .await?;
        match row {
            None => Ok(None),
            Some(row) => json_column(row.try_get(0)?),
        }
    }

    /// Claims the oldest queued run whose session has no live run (or
    /// `run_id` when given, if it is still queued and its lane free) for
    /// `node`: it becomes `running`, started at `now`, leased until
    /// `lease_until`. At most one node ever claims a run: PostgreSQL skips
    /// rows another node's claim has locked (`FOR UPDATE SKIP LOCKED`);
    /// SQLite's writes are serialized.
    pub async fn claim_run(
        &self,
        node: &str,
        run_id: Option<&RunId>,
        now: u64,
        lease_until: u64,
    ) -> Result<Option<Claimed>> {
        let lock = match self.backend() {
            crate::Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            crate::Backend::Sqlite => "",
        };
        let only = if run_id.is_some() {
            " AND q.id = $4"
        } else {
            ""
        };
        let sql = format!(
            "UPDATE runs SET status = 'running', node = $1, started_at = COALESCE(started_at, $2), lease_until = $3 \
             WHERE id = (SELECT q.id FROM runs q WHERE q.status = 'queued'{only} \
               AND NOT EXISTS (SELECT 1 FROM runs l WHERE l.session_id = q.session_id AND l.status IN {LIVE}) \
               AND (q.environment_id IS NULL OR NOT EXISTS (SELECT 1 FROM runs e \
                    WHERE e.environment_id = q.environment_id AND e.status IN {LIVE})) \
               ORDER BY q.created_at, q.id LIMIT 1{lock}) \
             AND status = 'queued' RETURNING id"
        );
        let mut tx = self.backend().begin_write(self.writes()).await?;
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(node.to_owned())
            .bind(ms(now)?)
            .bind(ms(lease_until)?);
        if let Some(id) = run_id {
            query = query.bind(id.as_str().to_owned());
        }
        let claimed = match query.fetch_optional(&mut *tx).await? {
            Some(row) => Some(RunId::new(row.try_get::<String, _>(0)?)),
            None => None,
        };
        tx.commit().await?;
        let Some(id) = claimed else {
            return Ok(None);
        };
        let run = self
            .run(&id)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("claimed run {id} vanished")))?;
        let request = match self.run_request(&id).await {
            Ok(Some(request)) => Ok(request),
            Ok(None) => Err(UnreadableRequest::Missing),
            Err(StoreError::Corrupt(why)) => Err(UnreadableRequest::Corrupt(why)),
            Err(other) => return Err(other),
        };
        let checkpoint = self.run_checkpoint(&id).await?;
        Ok(Some(Claimed {
            run,
            request,
            checkpoint,
        }))
    }

    /// The nodes holding live runs now: each node, how many it holds, and
    /// the earliest of their leases (epoch ms; past it, another node takes
    /// those runs back), by node.
    pub async fn leases(&self) -> Result<Vec<NodeLeases>> {
        sqlx::query(sql!(
            "SELECT node, COUNT(*), MIN(lease_until) FROM runs \
             WHERE status IN {LIVE} AND node IS NOT NULL GROUP BY node ORDER BY node"
        ))
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(|row| {
            let runs: i64 = row.try_get(1)?;
            let until: Option<i64> = row.try_get(2)?;
            Ok(NodeLeases {
                node: row.try_get(0)?,
                runs: runs.max(0) as u64,
                lease_until: until.map(|t| t.max(0) as u64),
            })
        })
        .collect()
    }

    /// Extends the lease of every live run `node` holds; returns how many.
    pub async fn renew_leases(&self, node: &str, lease_until: u64) -> Result<u64> {
        Ok(sqlx::query(sql!(
            "UPDATE runs SET lease_until = $2 WHERE node = $1 AND status IN {LIVE}"
        ))
        .bind(node.to_owned())
        .bind(ms(lease_until)?)
        .execute(self.writes())
        .await?
        .rows_affected())
    }

    /// Live runs whose lease ended before `now` (their node died), or,
    /// with `node`, every live run that node held (it restarted).
    pub async fn orphaned_runs(&self, now: u64, node: Option<&str>) -> Result<Vec<Run>> {
        let rows = match node {
            Some(node) => {
                sqlx::query(sql!(
                    "SELECT {COLUMNS} FROM runs WHERE status IN {LIVE} AND (lease_until < $1 OR node = $2) ORDER BY created_at, id"
                ))
                .bind(ms(now)?)
                .bind(node.to_owned())
                .fetch_all(self.pool())
                .await?
            }
            None => {
                sqlx::query(sql!(
                    "SELECT {COLUMNS} FROM runs WHERE status IN {LIVE} AND lease_until < $1 ORDER BY created_at, id"
                ))
                .bind(ms(now)?)
                .fetch_all(self.pool())
                .await?
            }
        };
        rows.iter().map(run_of).collect()
    }

    /// Every live run, whichever node holds it (a single-node store at
    /// start: none of them is running any more).
    pub async fn live_runs(&self) -> Result<Vec<Run>> {
        sqlx::query(sql!(
            "SELECT {COLUMNS} FROM runs WHERE status IN {LIVE} ORDER BY created_at, id"
        ))
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(run_of)
        .collect()
    }

    /// Whether a run of environment `environment_id` is live or queued
    /// ahead (a new run there then waits for the workspace).
    pub async fn environment_busy(&self, environment_id: &EnvironmentId) -> Result<bool> {
        let row = sqlx::query(
            "SELECT COUNT(*) FROM runs WHERE environment_id = $1 AND status IN ('queued', 'running', 'waiting')",
        )
        .bind(environment_id.as_str().to_owned())
        .fetch_one(self.pool())
        .await?;
        let count: i64 = row.try_get(0)?;
        Ok(count > 0)
    }

    /// Queued runs, oldest first, at most `limit`.
    pub async fn queued_runs(&self, limit: u32) -> Result<Vec<Run>> {
        sqlx::query(sql!(
            "SELECT {COLUMNS} FROM runs WHERE status = 'queued' ORDER BY created_at, id LIMIT $1"
        ))
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(run_of)
        .collect()
    }

    /// Asks the node executing `run_id` to cancel it (and, with
    /// [`CancelMode::Rollback`], to drop its messages); `false` when the run
    /// has ended (or does not exist).
    pub async fn request_cancel(&self, run_id: &RunId, mode: CancelMode) -> Result<bool> {
        let asked = sqlx::query(
            "UPDATE runs SET cancel_requested = $2 WHERE id = $1 AND status IN ('queued', 'running', 'waiting')",
        )
        .bind(run_id.as_str().to_owned())
        .bind(match mode {
            CancelMode::Cancel => 1i64,
            CancelMode::Rollback => 2i64,
        })
        .execute(self.writes())
        .await?
        .rows_affected()
            == 1;
        if asked {
            self.notify_runs().await;
        }
        Ok(asked)
    }

    /// Live runs of `node` that another node asked to cancel, each with
    /// how.
    pub async fn cancel_requests(&self, node: &str) -> Result<Vec<(String, CancelMode)>> {
        let rows = sqlx::query(sql!(
            "SELECT id, cancel_requested FROM runs WHERE node = $1 AND cancel_requested > 0 AND status IN {LIVE}"
        ))
        .bind(node.to_owned())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get(0)?;
                let mode: i64 = row.try_get(1)?;
                let mode = if mode == 2 {
                    CancelMode::Rollback
                } else {
                    CancelMode::Cancel
                };
                Ok((id, mode))
            })
            .collect()
    }
}

pub(crate) fn run_of(row: &AnyRow) -> Result<Run> {
    let status: String = row.try_get(4)?;
    let created: i64 = row.try_get(5)?;
    let started: Option<i64> = row.try_get(6)?;
    let ended: Option<i64> = row.try_get(7)?;
    Ok(Run {
        subject: row.try_get::<Option<String>, _>(10)?.map(Subject::new),
        id: RunId::new(row.try_get::<String, _>(0)?),
        agent_id: AgentId::new(row.try_get::<String, _>(1)?),
        session_id: row.try_get::<Option<String>, _>(2)?.map(SessionId::new),
        session_key: row.try_get::<Option<String>, _>(3)?.map(SessionKey::new),
        status: serde_json::from_value(serde_json::Value::String(status)).map_err(corrupt)?,
        created_at: created.max(0) as u64,
        started_at: started.map(|t| t.max(0) as u64),
        ended_at: ended.map(|t| t.max(0) as u64),
        usage: json_column::<Usage>(row.try_get(8)?)?,
        error: json_column::<ApiError>(row.try_get(9)?)?,
        summary: row.try_get(11)?,
        model: row.try_get(12)?,
    })
}
