//! A run's end: its row's final state and the events that tell it (its
//! terminal event last) written in one commit, so that a reader who sees
//! the terminal event and reads the run finds it ended, and a run whose
//! row says it ended has its terminal event in the log. Exactly one
//! ending wins: the row is written only while the run has not ended, and
//! the events only with it.
//!
//! The commit goes through the event writer ([`crate::writer`]), in order
//! with every append queued before it, alone in its transaction.

use sqlx::AnyConnection;
use talon_protocol::Event;
use talon_protocol::gateway::bounded::EventId;
use talon_protocol::gateway::{Run, RunResult};

use crate::Store;
use crate::error::{Result, StoreError};
use crate::events::Prepared;
use crate::records::{enum_str, json_text, opt_ms};

/// A run's row as its end leaves it, ready to write.
#[derive(Debug)]
pub(crate) struct RunEnding {
    id: String,
    status: String,
    started_at: Option<i64>,
    ended_at: Option<i64>,
    usage: Option<String>,
    error: Option<String>,
    result: String,
}

impl RunEnding {
    fn of(run: &Run, result: &RunResult) -> Result<Self> {
        Ok(Self {
            id: run.id.to_string(),
            status: enum_str(run.status)?,
            started_at: opt_ms(run.started_at)?,
            ended_at: opt_ms(run.ended_at)?,
            usage: run.usage.as_ref().map(json_text).transpose()?,
            error: run.error.as_ref().map(json_text).transpose()?,
            result: json_text(result)?,
        })
    }

    /// Writes the row in the transaction `conn` is in, if the run has not
    /// ended; whether it had not.
    pub(crate) async fn write(&self, conn: &mut AnyConnection) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE runs SET status = $2, started_at = $3, ended_at = $4, usage = $5, error = $6, result = $7, lease_until = NULL \
             WHERE id = $1 AND status IN ('queued', 'running', 'waiting')",
        )
        .bind(self.id.clone())
        .bind(self.status.clone())
        .bind(self.started_at)
        .bind(self.ended_at)
        .bind(self.usage.clone())
        .bind(self.error.clone())
        .bind(self.result.clone())
        .execute(conn)
        .await?
        .rows_affected();
        Ok(changed == 1)
    }
}

impl Store {
    /// Ends a run that has not ended: its final state and result, and
    /// `events` (what tells its end, the terminal event last), in one
    /// commit. Returns the events with their ids, or `None` when the run
    /// had already ended (another node, or a cancel, got there first):
    /// then nothing is written.
    pub async fn end_run(
        &self,
        run: &Run,
        result: &RunResult,
        events: Vec<Event>,
    ) -> Result<Option<Vec<Event>>> {
        let ending = RunEnding::of(run, result)?;
        let rows = events
            .iter()
            .map(Prepared::of)
            .collect::<Result<Vec<_>>>()?;
        let answer = self.inner.writer.end(ending, rows).await?;
        let Some(first) = answer.await.map_err(|_| StoreError::Closed)?? else {
            return Ok(None);
        };
        self.notify_runs().await;
        let mut events = events;
        for (i, event) in events.iter_mut().enumerate() {
            event.id = EventId::new((first + i as u64).to_string());
        }
        Ok(Some(events))
    }
}
