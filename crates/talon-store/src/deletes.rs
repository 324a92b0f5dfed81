//! Deleting what a caller made, so that the store's quota recovers: a
//! session with its runs, or one ended run, each with its events,
//! approvals (and the rules they filed), questions, ended background tasks
//! (and their events), artifacts (and their
//! files) and suspended cells, in one transaction. The event log keeps
//! its numbering: a cursor across the gap reads on. The pages freed are
//! returned to the file on SQLite databases made with incremental
//! auto-vacuum, and never counted against the quota on any
//! ([`Store::stored_bytes`]).

use sqlx::Row;

use crate::error::{Result, StoreError};
use crate::{Backend, Store};

/// The states of a run that has not ended.
const LIVE: &str = "('queued', 'running', 'waiting')";

/// What a delete removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deleted {
    /// The runs removed, by id.
    pub run_ids: Vec<String>,
    /// How many events went with them.
    pub events: u64,
}

/// Which records a delete takes: a session's (and its runs'), or one
/// run's.
#[derive(Debug, Clone, Copy)]
enum Target<'a> {
    Session(&'a str),
    Run(&'a str),
}

impl Store {
    /// Deletes session `id`, its messages and its runs with everything
    /// they made. [`StoreError::NotFound`] when there is no such session;
    /// [`StoreError::Busy`] (nothing deleted) while one of its runs has
    /// not ended.
    pub async fn delete_session(&self, id: &str) -> Result<Deleted> {
        self.delete(Target::Session(id)).await
    }

    /// Deletes ended run `id` with its events, approvals, questions,
    /// artifacts and cells; its messages stay in its session's
    /// conversation (deleting the session removes them).
    /// [`StoreError::NotFound`] when there is no such run;
    /// [`StoreError::Busy`] while it has not ended.
    pub async fn delete_run(&self, id: &str) -> Result<Deleted> {
        self.delete(Target::Run(id)).await
    }

    async fn delete(&self, target: Target<'_>) -> Result<Deleted> {
        let (kind, id, runs) = match target {
            Target::Session(id) => ("session", id, "SELECT id FROM runs WHERE session_id = $1"),
            Target::Run(id) => ("run", id, "SELECT id FROM runs WHERE id = $1"),
        };
        let mut tx = self.backend().begin_write(self.writes()).await?;
        let exists = match target {
            Target::Session(_) => "SELECT COUNT(*) FROM sessions WHERE id = $1",
            Target::Run(_) => "SELECT COUNT(*) FROM runs WHERE id = $1",
        };
        let found: i64 = sqlx::query_scalar(exists)
            .bind(id.to_owned())
            .fetch_one(&mut *tx)
            .await?;
        if found == 0 {
            return Err(StoreError::NotFound {
                kind,
                id: id.to_owned(),
            });
        }
        let live: i64 = sqlx::query_scalar(sql!(
            "SELECT COUNT(*) FROM runs WHERE id IN ({runs}) AND status IN {LIVE}"
        ))
        .bind(id.to_owned())
        .fetch_one(&mut *tx)
        .await?;
        if live > 0 {
            return Err(StoreError::Busy {
                kind,
                id: id.to_owned(),
            });
        }
        // What belongs to the target: its runs', and a session's own.
        let (mine, of_session) = match target {
            Target::Session(_) => (format!("run_id IN ({runs}) OR session_id = $1"), true),
            Target::Run(_) => ("run_id = $1".to_owned(), false),
        };
        // The ended tasks its runs started go with them (their events
        // too); a task still live goes on, and tells no one when it ends
        // (`parent_missing`).
        let ended_tasks = match target {
            Target::Session(_) => format!(
                "SELECT id FROM tasks WHERE (run_id IN ({runs}) OR session_id = $1) AND status NOT IN ('queued', 'running')"
            ),
            Target::Run(_) => {
                "SELECT id FROM tasks WHERE run_id = $1 AND status NOT IN ('queued', 'running')"
                    .to_owned()
            }
        };
        let events = sqlx::query(sql!(
            "DELETE FROM events WHERE {mine} OR task_id IN ({ended_tasks})"
        ))
        .bind(id.to_owned())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let session_rule = if of_session {
            " OR scope = 'session:' || $1"
        } else {
            ""
        };
        sqlx::query(sql!(
            "DELETE FROM approval_rules WHERE approval_id IN (SELECT id FROM approvals WHERE {mine}){session_rule}"
        ))
        .bind(id.to_owned())
        .execute(&mut *tx)
        .await?;
        for table in ["approvals", "questions", "cells"] {
            sqlx::query(sql!("DELETE FROM {table} WHERE {mine}"))
                .bind(id.to_owned())
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(sql!("DELETE FROM tasks WHERE id IN ({ended_tasks})"))
            .bind(id.to_owned())
            .execute(&mut *tx)
            .await?;
        let files: Vec<String> =
            sqlx::query(sql!("DELETE FROM artifacts WHERE {mine} RETURNING path"))
                .bind(id.to_owned())
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .filter_map(|row| row.try_get::<Option<String>, _>(0).ok().flatten())
                .collect();
        let run_ids: Vec<String> =
            sqlx::query(sql!("DELETE FROM runs WHERE id IN ({runs}) RETURNING id"))
                .bind(id.to_owned())
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(|row| row.try_get::<String, _>(0))
                .collect::<std::result::Result<_, _>>()?;
        if of_session {
            for table in ["messages WHERE session_id = $1", "sessions WHERE id = $1"] {
                sqlx::query(sql!("DELETE FROM {table}"))
                    .bind(id.to_owned())
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        let dir = self.artifact_dir();
        for name in files {
            let path = dir.join(name);
            if let Err(error) = std::fs::remove_file(&path)
                && error.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(path = %path.display(), %error, "cannot remove a deleted artifact's file");
            }
        }
        self.reclaim().await;
        let mut run_ids = run_ids;
        run_ids.sort();
        Ok(Deleted { run_ids, events })
    }

    /// Returns free pages to the file (SQLite databases made with
    /// incremental auto-vacuum; a no-op elsewhere). Best effort: a
    /// failure leaves the pages free inside the file.
    pub async fn reclaim(&self) {
        if self.backend() != Backend::Sqlite {
            return;
        }
        if let Err(error) = sqlx::query("PRAGMA incremental_vacuum")
            .execute(self.writes())
            .await
        {
            tracing::debug!(%error, "free pages were not returned to the file");
        }
    }
}
