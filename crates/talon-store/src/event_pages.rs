//! A page of events counted from the end of its window: a long run's
//! tail first, then the pages before it (`runs.events` with `last`). The
//! page's first event is found by counting back in the index; the page
//! itself is then read forward, as every other page is
//! ([`Store::after`]).

use talon_protocol::Event;

use crate::Store;
use crate::error::{Result, corrupt};
use crate::events::{MAX_PAGE, matches};
use crate::records::EventFilter;

impl Store {
    /// The last `last` events (at most [`MAX_PAGE`]) matching `filter`
    /// after `after` (and before its `before`), oldest first. A cursor older
    /// than what is kept is [`crate::StoreError::CursorExpired`], as for
    /// [`Store::after`].
    pub async fn last_before(
        &self,
        after: Option<u64>,
        filter: &EventFilter,
        last: u32,
    ) -> Result<Vec<Event>> {
        let last = last.min(MAX_PAGE);
        if last == 0 {
            self.check_cursor(after).await?;
            return Ok(Vec::new());
        }
        let types: Vec<&str> = filter.types.iter().map(|t| t.as_str()).collect();
        let (owner_subject, owner_agents) = filter.owner.binds()?;
        // The window's `last`-th event from its end: where the page starts.
        let first: Option<i64> = sqlx::query_scalar(sql!(
            "SELECT e.seq FROM events e WHERE {matches} \
             ORDER BY e.seq DESC LIMIT $7 OFFSET $6",
            matches = matches(&self.backend()),
        ))
        .bind(i64::try_from(after.unwrap_or(0)).map_err(corrupt)?)
        .bind(filter.run_id.clone())
        .bind(filter.session_key.clone())
        .bind(filter.agent_id.clone())
        .bind(serde_json::to_string(&types).map_err(corrupt)?)
        .bind(i64::from(last - 1))
        .bind(1_i64)
        .bind(owner_subject)
        .bind(owner_agents)
        .bind(filter.task_id.clone())
        .bind(filter.end())
        .fetch_optional(self.pool())
        .await?;
        // Fewer than `last` in the window: it is read from its start.
        let from = match first {
            Some(seq) => Some(u64::try_from(seq - 1).map_err(corrupt)?),
            None => after,
        };
        self.after(from, filter, last).await
    }
}
