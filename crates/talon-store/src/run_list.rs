//! `runs.list`'s query: runs newest first, filtered by status, agent,
//! session, creation time and a text in their summary, a page at a time
//! after a cursor (the last run of the previous page); and
//! `usage.summary`'s, the same runs of a window fed to its tally.

use futures::TryStreamExt;
use sqlx::Row;
use talon_protocol::gateway::run_list::folded;
use talon_protocol::gateway::{Run, RunStatus, Usage, UsageTally};

use crate::error::Result;
use crate::records::{enum_str, json_column, ms};
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
    /// Whose summary holds this text, ASCII case aside
    /// ([`folded`](talon_protocol::gateway::run_list::folded)).
    pub text: Option<String>,
    /// Whose (every run when unrestricted).
    pub owner: Owner,
}

/// `text` as a `LIKE` pattern that matches it anywhere, its own `%`, `_`
/// and `\` taken literally.
fn contains_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for c in folded(text).chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
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
                .map(|i| format!("${}", i + 11))
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
               AND ($10 IS NULL OR summary_folded LIKE $10 ESCAPE '\\') \
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
        .bind(agents)
        .bind(filter.text.as_deref().map(contains_pattern));
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

/// Which runs [`Store::tally_usage`] counts: created in
/// `[created_after, created_before)`, of `agent_id` when given, owned as
/// `owner` allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageFilter {
    /// Created at or after (epoch ms).
    pub created_after: u64,
    /// Created before (epoch ms).
    pub created_before: u64,
    /// This agent's.
    pub agent_id: Option<String>,
    /// Whose (every run when unrestricted).
    pub owner: Owner,
}

impl Store {
    /// Feeds every run `filter` lets through to `tally`, a row at a time
    /// (the runs are streamed, never held together).
    pub async fn tally_usage(&self, filter: &UsageFilter, tally: &mut UsageTally) -> Result<()> {
        let (subject, agents) = filter.owner.binds()?;
        let mut rows = sqlx::query(sql!(
            "SELECT created_at, agent_id, model, usage FROM runs \
             WHERE created_at >= $1 AND created_at < $2 \
               AND ($3 IS NULL OR agent_id = $3) \
               AND {owned}",
            owned = Owner::condition(self.backend(), 4, "subject", "agent_id"),
        ))
        .bind(saturating_ms(filter.created_after))
        .bind(saturating_ms(filter.created_before))
        .bind(filter.agent_id.clone())
        .bind(subject)
        .bind(agents)
        .fetch(self.pool());
        while let Some(row) = rows.try_next().await? {
            let created: i64 = row.try_get(0)?;
            let agent: String = row.try_get(1)?;
            let model: Option<String> = row.try_get(2)?;
            let usage = json_column::<Usage>(row.try_get(3)?)?;
            tally.add(
                u64::try_from(created).unwrap_or(0),
                &agent,
                model.as_deref(),
                usage.as_ref(),
            );
        }
        Ok(())
    }
}
