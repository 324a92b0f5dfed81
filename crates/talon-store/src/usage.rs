//! What each subject and each token holds in the store, for their
//! stored-bytes quotas: a session's document, messages, runs (their
//! request and result), events and artifacts count for the subject and
//! the token that made the session, and an environment's footprint for
//! its own. Each row also counts what it costs beside its text (its keys,
//! its indexes, the slack of its pages), per table as measured on SQLite
//! (`dbstat`, docs/benchmarks.md "Stored-bytes quotas"), so that many
//! empty rows are not free and the count follows the file. A recount
//! reads every row: the gateway runs it only when such a quota is set.

use std::collections::HashMap;

use sqlx::Row;

use crate::Store;
use crate::error::Result;

/// What a row costs beside its text (keys, indexes, page slack), for an
/// estimate made before it is written.
pub const ROW_OVERHEAD: u64 = 256;

/// What a row of each table costs beside its text, as measured: a run has
/// eight indexes, an event one.
const SESSION_ROW: u64 = 256;
const MESSAGE_ROW: u64 = 240;
const RUN_ROW: u64 = 680;
const EVENT_ROW: u64 = 160;
const ARTIFACT_ROW: u64 = 256;
/// A row over this many bytes has a page of its own: a page holds one row
/// past half its size, so an inline artifact of 2 KB costs a page.
const ROW_FILLS_PAGE: u64 = 1_800;
const PAGE: u64 = 4_096;

/// Stored bytes by subject and by token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// By subject.
    pub subjects: HashMap<String, u64>,
    /// By the token that made the records.
    pub tokens: HashMap<String, u64>,
}

impl Usage {
    fn add(&mut self, subject: Option<String>, token: Option<String>, bytes: i64) {
        let bytes = u64::try_from(bytes).unwrap_or(0);
        if let Some(subject) = subject {
            *self.subjects.entry(subject).or_default() += bytes;
        }
        if let Some(token) = token {
            *self.tokens.entry(token).or_default() += bytes;
        }
    }
}

impl Store {
    /// Recounts what every subject and token holds. A run that has not
    /// ended counts at least `unended_run` bytes more than it holds yet:
    /// what it will store as it runs, so that a recount made while runs
    /// wait in the queue does not forget them.
    pub async fn usage(&self, unended_run: u64) -> Result<Usage> {
        let rows = sqlx::query(sql!(
            "SELECT s.subject, s.token_id, CAST(SUM(u.bytes) AS BIGINT) FROM ( \
                 SELECT id AS sid, octet_length(doc) + {SESSION_ROW} AS bytes FROM sessions \
                 UNION ALL SELECT session_id, octet_length(doc) + {MESSAGE_ROW} FROM messages \
                 UNION ALL SELECT session_id, COALESCE(octet_length(request), 0) \
                     + COALESCE(octet_length(result), 0) + 2 * COALESCE(octet_length(summary), 0) \
                     + COALESCE(octet_length(model), 0) + {RUN_ROW} \
                     + CASE WHEN status IN ('queued', 'running', 'waiting') THEN $1 ELSE 0 END FROM runs \
                 UNION ALL SELECT session_id, octet_length(body) \
                     + COALESCE(octet_length(raw), 0) + {EVENT_ROW} FROM events \
                 UNION ALL SELECT session_id, CASE \
                     WHEN path IS NULL AND size + octet_length(doc) > {ROW_FILLS_PAGE} \
                     THEN (size + octet_length(doc) + {PAGE} - 1) / {PAGE} * {PAGE} + {ARTIFACT_ROW} \
                     ELSE size + octet_length(doc) + {ARTIFACT_ROW} END FROM artifacts \
             ) u JOIN sessions s ON s.id = u.sid \
             WHERE s.subject IS NOT NULL OR s.token_id IS NOT NULL \
             GROUP BY s.subject, s.token_id"
        ))
        .bind(i64::try_from(unended_run).unwrap_or(i64::MAX))
        .fetch_all(self.pool())
        .await?;
        let mut usage = Usage::default();
        for row in &rows {
            usage.add(row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        }
        let rows = sqlx::query(
            "SELECT subject, token_id, CAST(SUM(footprint) AS BIGINT) FROM environments \
             WHERE subject IS NOT NULL OR token_id IS NOT NULL GROUP BY subject, token_id",
        )
        .fetch_all(self.pool())
        .await?;
        for row in &rows {
            usage.add(row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        }
        Ok(usage)
    }
}
