//! What makes an interrupted run resumable: its last checkpoint (the
//! transcript at the end of a turn, written by the node executing it), and
//! putting it back in the queue when its node died, guarded so that of
//! several nodes noticing the death exactly one does.

use serde_json::Value;
use sqlx::Row;
use talon_protocol::gateway::bounded::RunId;

use crate::Store;
use crate::error::Result;
use crate::records::{json_text, ms};
use crate::runs::LIVE;

/// Whose runs [`Store::requeue_run`] may take back.
#[derive(Debug, Clone, Copy)]
pub enum Orphaned<'a> {
    /// Any live run (a single-node store at start).
    Any,
    /// A live run whose lease ended before this time (ms since the
    /// epoch).
    LeaseEnded {
        /// Now.
        now: u64,
    },
    /// A live run whose lease ended before this time (ms), or that this
    /// node held (it restarted).
    LeaseEndedOrHeldBy {
        /// Now, in ms since the epoch.
        now: u64,
        /// The restarted node.
        node: &'a str,
    },
}

impl Store {
    /// Stores `checkpoint` as `run_id`'s last, if `node` still executes
    /// it; `false` otherwise (it ended, or another node took it over).
    pub async fn set_run_checkpoint(
        &self,
        run_id: &RunId,
        node: &str,
        checkpoint: &Value,
    ) -> Result<bool> {
        let changed = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE runs SET checkpoint = $2 WHERE id = $1 AND node = $3 AND status IN {LIVE}"
        )))
        .bind(run_id.as_str().to_owned())
        .bind(json_text(checkpoint)?)
        .bind(node.to_owned())
        .execute(self.writes())
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    /// `run_id`'s last checkpoint.
    pub async fn run_checkpoint(&self, run_id: &RunId) -> Result<Option<Value>> {
        self.run_json(run_id, "checkpoint").await
    }

    /// Whether someone asked to cancel `run_id` (a run whose node died
    /// before it could: it is ended, not resumed).
    pub async fn cancel_requested(&self, run_id: &RunId) -> Result<bool> {
        let row = sqlx::query("SELECT cancel_requested FROM runs WHERE id = $1")
            .bind(run_id.as_str().to_owned())
            .fetch_optional(self.pool())
            .await?;
        match row {
            None => Ok(false),
            Some(row) => Ok(row.try_get::<i64, _>(0)? > 0),
        }
    }

    /// Puts a live run whose node died back in the queue, with
    /// `checkpoint` as where it resumes, if it is still `orphaned` as
    /// given; `false` when it is not (another node took it back first, or
    /// it ended).
    pub async fn requeue_run(
        &self,
        run_id: &RunId,
        orphaned: Orphaned<'_>,
        checkpoint: &Value,
    ) -> Result<bool> {
        let set = "UPDATE runs SET status = 'queued', node = NULL, lease_until = NULL, checkpoint = $2 \
                   WHERE id = $1 AND status IN ";
        let query = match orphaned {
            Orphaned::Any => sqlx::query(sqlx::AssertSqlSafe(format!("{set}{LIVE}")))
                .bind(run_id.as_str().to_owned())
                .bind(json_text(checkpoint)?),
            Orphaned::LeaseEnded { now } => sqlx::query(sqlx::AssertSqlSafe(format!(
                "{set}{LIVE} AND lease_until < $3"
            )))
            .bind(run_id.as_str().to_owned())
            .bind(json_text(checkpoint)?)
            .bind(ms(now)?),
            Orphaned::LeaseEndedOrHeldBy { now, node } => sqlx::query(sqlx::AssertSqlSafe(
                format!("{set}{LIVE} AND (lease_until < $3 OR node = $4)"),
            ))
            .bind(run_id.as_str().to_owned())
            .bind(json_text(checkpoint)?)
            .bind(ms(now)?)
            .bind(node.to_owned()),
        };
        let requeued = query.execute(self.writes()).await?.rows_affected() == 1;
        if requeued {
            self.notify_runs().await;
        }
        Ok(requeued)
    }
}
