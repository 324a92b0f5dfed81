//! Runs: created once per idempotency key, then updated as they move;
//! the owning node and the final result are kept with them.

use sqlx::Row;
use sqlx::any::AnyRow;
use talon_protocol::gateway::{ApiError, Run, RunResult, RunStatus, Usage};

use crate::Store;
use crate::error::{Result, StoreError, corrupt};
use crate::records::{enum_str, json_column, json_text, ms, opt_ms};

const COLUMNS: &str =
    "id, agent_id, session_id, session_key, status, created_at, started_at, ended_at, usage, error";

impl Store {
    /// Stores a new run, owned by `node`, under `idempotency_key`. The same
    /// key again with the same `request_hash` returns the first run
    /// (`false`: not created); with another hash it is
    /// [`StoreError::IdempotencyConflict`].
    pub async fn create_run(
        &self,
        run: &Run,
        idempotency_key: Option<&str>,
        request_hash: &str,
        node: &str,
    ) -> Result<(Run, bool)> {
        let inserted = sqlx::query(
            "INSERT INTO runs (id, agent_id, session_id, session_key, status, created_at, idempotency_key, request_hash, node) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
        )
        .bind(run.id.clone())
        .bind(run.agent_id.clone())
        .bind(run.session_id.clone())
        .bind(run.session_key.clone())
        .bind(enum_str(run.status)?)
        .bind(ms(run.created_at)?)
        .bind(idempotency_key.map(str::to_owned))
        .bind(request_hash.to_owned())
        .bind(node.to_owned())
        .execute(self.pool())
        .await?
        .rows_affected();
        if inserted == 1 {
            return Ok((run.clone(), true));
        }
        let Some(key) = idempotency_key else {
            return Err(StoreError::Exists {
                kind: "run",
                id: run.id.clone(),
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
                id: run.id.clone(),
            });
        };
        let (hash, id): (Option<String>, String) = (row.try_get(0)?, row.try_get(1)?);
        if hash.as_deref() != Some(request_hash) {
            return Err(StoreError::IdempotencyConflict {
                key: key.to_owned(),
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
        sqlx::query(sql!("SELECT {COLUMNS} FROM runs WHERE id = $1"))
            .bind(id.to_owned())
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(run_of)
            .transpose()
    }

    /// A session's runs, oldest first.
    pub async fn session_runs(&self, session_id: &str) -> Result<Vec<Run>> {
        sqlx::query(sql!(
            "SELECT {COLUMNS} FROM runs WHERE session_id = $1 ORDER BY created_at, id"
        ))
        .bind(session_id.to_owned())
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
        .bind(run.id.clone())
        .bind(enum_str(run.status)?)
        .bind(opt_ms(run.started_at)?)
        .bind(opt_ms(run.ended_at)?)
        .bind(run.usage.as_ref().map(json_text).transpose()?)
        .bind(run.error.as_ref().map(json_text).transpose()?)
        .execute(self.pool())
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Records a run's final result; `false` when there is no such run.
    pub async fn set_run_result(&self, run_id: &str, result: &RunResult) -> Result<bool> {
        let changed = sqlx::query("UPDATE runs SET result = $2 WHERE id = $1")
            .bind(run_id.to_owned())
            .bind(json_text(result)?)
            .execute(self.pool())
            .await?
            .rows_affected();
        Ok(changed == 1)
    }

    /// A run's final result, once recorded.
    pub async fn run_result(&self, run_id: &str) -> Result<Option<RunResult>> {
        let row = sqlx::query("SELECT result FROM runs WHERE id = $1")
            .bind(run_id.to_owned())
            .fetch_optional(self.pool())
            .await?;
        match row {
            None => Ok(None),
            Some(row) => json_column(row.try_get(0)?),
        }
    }
}

fn run_of(row: &AnyRow) -> Result<Run> {
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
        created_at: created.max(0) as u64,
        started_at: started.map(|t| t.max(0) as u64),
        ended_at: ended.map(|t| t.max(0) as u64),
        usage: json_column::<Usage>(row.try_get(8)?)?,
        error: json_column::<ApiError>(row.try_get(9)?)?,
    })
}
