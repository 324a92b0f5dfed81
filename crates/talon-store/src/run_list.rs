//! `runs.list`'s query: runs newest first, filtered by status, agent,
//! session and creation time, a page at a time after a cursor (the last
//! run of the previous page).

use talon_protocol::gateway::{Run, RunStatus};

use crate::error::Result;
use crate::records::{enum_str, ms};
use crate::{Owner, Store};

/// A caller's time as a column value: past the column's range is the same
/// as its end (no run was created then).
fn saturating_ms(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}
use crate::runs::{COLUMNS, run_of};

/// Which runs [`Store::list_runs`] returns; every filter given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// In one of these states (none: any).
    pub statuses: Vec<RunStatus>,
    /// This agent's.
    pub agent_id: Option<String>,
    /// This session's.
    pub session_id: Option<String>,
    /// Created at or after (epoch ms).
    pub created_after: Option<u64>,
    /// Created before (epoch ms).
    pub created_before: Option<u64>,
    /// Whose (every run when unrestricted).
    pub owner: Owner,
}

/// Where a page of [`Store::list_runs`] starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunCursor<'a> {
    /// The last run of the previous page.
    pub id: &'a str,
    /// When it was created.
    pub created_at: u64,
}

impl Store {
    /// At most `limit` runs that `filter` lets through, newest first
    /// (ties by id, descending), after `cursor`.
    pub async fn list_runs(
        &self,
        filter: &RunFilter,
        cursor: Option<RunCursor<'_>>,
        limit: u32,
    ) -> Result<Vec<Run>> {
        let (subject, agents) = filter.owner.binds()?;
        // One placeholder per status: the values are bound, never spliced.
        let statuses = if filter.statuses.is_empty() {
            String::new()
        } else {
            let marks: Vec<String> = (0..filter.statuses.len())
                .map(|i| format!("${}", i + 10))
                .collect();
            format!("AND status IN ({}) ", marks.join(", "))
        };
        let mut query = sqlx::query(sql!(
            "SELECT {COLUMNS} FROM runs \
             WHERE ($1 IS NULL OR agent_id = $1) \
               AND ($2 IS NULL OR session_id = $2) \
               AND ($3 IS NULL OR created_at >= $3) \
               AND ($4 IS NULL OR created_at < $4) \
               AND ($5 IS NULL OR created_at < $5 OR (created_at = $5 AND id < $6)) \
               AND {owned} \
               {statuses}\
             ORDER BY created_at DESC, id DESC LIMIT $7",
            owned = Owner::condition(self.backend(), 8, "subject", "agent_id"),
        ))
        .bind(filter.agent_id.clone())
        .bind(filter.session_id.clone())
        .bind(filter.created_after.map(saturating_ms))
        .bind(filter.created_before.map(saturating_ms))
        .bind(cursor.map(|c| ms(c.created_at)).transpose()?)
        .bind(cursor.map(|c| c.id.to_owned()))
        .bind(i64::from(limit))
        .bind(subject)
        .bind(agents);
        for status in &filter.statuses {
            query = query.bind(enum_str(*status)?);
        }
        query
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(run_of)
            .collect()
    }
}
