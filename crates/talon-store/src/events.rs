//! The event log: appends (through the group-commit writer), replay after
//! a cursor, retention.
//!
//! # The cursor under concurrent writers
//!
//! An event's id is its `seq`, taken from the one-row `event_counter`
//! inside the appending transaction (`UPDATE ... RETURNING`). The row lock
//! that update takes is held until commit, so a second appender (another
//! gateway node on PostgreSQL) gets its ids only after the first has
//! committed: ids become visible in increasing order, and a reader that
//! has seen id N will never later find a committed id below N. `after: N`
//! therefore returns every later event exactly once. A rolled-back append
//! leaves a gap, never a late arrival.

use sqlx::{AnyConnection, Row};
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::EventId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;
use talon_protocol::gateway::bounded::SessionKey;
use talon_protocol::gateway::bounded::TaskId;
use talon_protocol::{Event, EventType};

use crate::error::{Result, StoreError, corrupt};
use crate::records::{EventFilter, Retention};
use crate::{Backend, Store};

/// Rows per INSERT statement (10 parameters each: under SQLite's 32,766
/// and PostgreSQL's 65,535).
const ROWS_PER_INSERT: usize = 256;
/// Columns of one inserted event.
const COLUMN_COUNT: usize = 10;

/// The largest page of events one read returns.
pub const MAX_PAGE: u32 = 10_000;

/// The envelope's JSON starts with this for an event whose id is empty.
const HEAD: &str = "{\"version\":1,\"id\":\"\",";

/// An event as stored, ready to insert: its JSON already serialized, so a
/// value that cannot be stored fails its own append before any commit.
#[derive(Debug)]
pub(crate) struct Prepared {
    ts: i64,
    kind: &'static str,
    run_id: Option<String>,
    session_id: Option<String>,
    session_key: Option<String>,
    task_id: Option<String>,
    agent_id: Option<String>,
    /// The envelope's JSON after its id, without `raw` (`"ts":...}`).
    body: String,
    /// `raw`'s JSON.
    raw: Option<String>,
}

impl Prepared {
    pub(crate) fn of(event: &Event) -> Result<Self> {
        if event.kind == EventType::Unknown {
            return Err(StoreError::Corrupt(
                "an event of unknown type cannot be stored".into(),
            ));
        }
        if event.version != 1 {
            return Err(StoreError::Corrupt(format!(
                "event envelope version {} (this store keeps version 1)",
                event.version
            )));
        }
        // A session's key is stored once, with the session: an event of a
        // session keeps only its id, and the key is joined back in when
        // the event is read (`page`). The body is made without it; one
        // whose session is not stored under that key gets it back at
        // insert ([`insert`]).
        let keyed_by_session = event.session_id.is_some();
        // Nor its subject: the session's, spliced in as it is read.
        let unnumbered = Event {
            id: EventId::default(),
            raw: None,
            subject: None,
            session_key: if keyed_by_session {
                None
            } else {
                event.session_key.clone()
            },
            ..event.clone()
        };
        let json = serde_json::to_string(&unnumbered).map_err(corrupt)?;
        let body = json
            .strip_prefix(HEAD)
            .ok_or_else(|| StoreError::Corrupt(format!("unexpected envelope layout: {json:.40}")))?
            .to_owned();
        Ok(Self {
            ts: i64::try_from(event.ts).map_err(corrupt)?,
            kind: event.kind.as_str(),
            run_id: event.run_id.clone().map(RunId::into_string),
            session_id: event.session_id.clone().map(SessionId::into_string),
            session_key: event.session_key.clone().map(SessionKey::into_string),
            task_id: event.task_id.clone().map(TaskId::into_string),
            agent_id: event.agent_id.clone().map(AgentId::into_string),
            body,
            raw: event
                .raw
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(corrupt)?,
        })
    }
}

/// Inserts `rows` in the transaction `conn` is in, with consecutive ids
/// from the counter; returns the first id.
pub(crate) async fn insert(
    conn: &mut AnyConnection,
    backend: Backend,
    rows: &[&Prepared],
) -> Result<u64> {
    let count = i64::try_from(rows.len()).map_err(corrupt)?;
    let last: i64 =
        sqlx::query("UPDATE event_counter SET last = last + $1 WHERE id = 1 RETURNING last")
            .bind(count)
            .fetch_one(&mut *conn)
            .await?
            .try_get(0)?;
    let first = last - count + 1;
    let stored_keys = session_keys(conn, backend, rows).await?;
    for (chunk_no, chunk) in rows.chunks(ROWS_PER_INSERT).enumerate() {
        let base = first + (chunk_no * ROWS_PER_INSERT) as i64;
        let mut text = String::from(
            "INSERT INTO events (seq, ts, type, run_id, session_id, session_key, task_id, agent_id, body, raw) VALUES ",
        );
        for i in 0..chunk.len() {
            let p = i * COLUMN_COUNT;
            if i > 0 {
                text.push(',');
            }
            text.push('(');
            for c in 1..=COLUMN_COUNT {
                if c > 1 {
                    text.push(',');
                }
                backend.placeholder(&mut text, p + c);
            }
            text.push(')');
        }
        let mut insert = sqlx::query(sqlx::AssertSqlSafe(text));
        for (i, event) in chunk.iter().enumerate() {
            let (key, body) = match (&event.session_id, &event.session_key) {
                // Its session holds the key: the row names only the id.
                (Some(id), Some(key)) if stored_keys.get(id) == Some(key) => {
                    (None, event.body.clone())
                }
                // No such session under that key: the row keeps the key,
                // in its column and its body, as a keyless one does.
                (Some(id), Some(key)) => (Some(key.clone()), with_key(&event.body, id, key)?),
                (None, key) => (key.clone(), event.body.clone()),
                (Some(_), None) => (None, event.body.clone()),
            };
            insert = insert
                .bind(base + i as i64)
                .bind(event.ts)
                .bind(event.kind)
                .bind(event.run_id.clone())
                .bind(event.session_id.clone())
                .bind(key)
                .bind(event.task_id.clone())
                .bind(event.agent_id.clone())
                .bind(body)
                .bind(event.raw.clone());
        }
        insert.execute(&mut *conn).await?;
    }
    u64::try_from(first).map_err(corrupt)
}

/// `body` with `"sessionKey"` where the envelope has it, right after
/// `"sessionId"` (the fields before it are the envelope's own, and a
/// string in them has its quotes escaped, so the first match is the
/// field).
fn with_key(body: &str, session_id: &str, key: &str) -> Result<String> {
    let field = format!(
        "\"sessionId\":{}",
        serde_json::to_string(session_id).map_err(corrupt)?
    );
    let at = body
        .find(&field)
        .ok_or_else(|| StoreError::Corrupt("an event's body has no sessionId".into()))?
        + field.len();
    let quoted = serde_json::to_string(key).map_err(corrupt)?;
    Ok(format!(
        "{},\"sessionKey\":{quoted}{}",
        &body[..at],
        &body[at..]
    ))
}

/// The stored keys of the sessions `rows` name with a key.
async fn session_keys(
    conn: &mut AnyConnection,
    backend: Backend,
    rows: &[&Prepared],
) -> Result<std::collections::HashMap<String, String>> {
    let mut ids: Vec<&str> = rows
        .iter()
        .filter(|r| r.session_key.is_some())
        .filter_map(|r| r.session_id.as_deref())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut keys = std::collections::HashMap::new();
    for chunk in ids.chunks(ROWS_PER_INSERT) {
        let mut text =
            String::from("SELECT id, key FROM sessions WHERE key IS NOT NULL AND id IN (");
        for i in 0..chunk.len() {
            if i > 0 {
                text.push(',');
            }
            backend.placeholder(&mut text, i + 1);
        }
        text.push(')');
        let mut query = sqlx::query(sqlx::AssertSqlSafe(text));
        for id in chunk {
            query = query.bind((*id).to_owned());
        }
        for row in query.fetch_all(&mut *conn).await? {
            keys.insert(row.try_get::<String, _>(0)?, row.try_get::<String, _>(1)?);
        }
    }
    Ok(keys)
}

/// Events queued by [`Store::submit`], not yet known to be durable.
#[derive(Debug)]
#[must_use = "an append is only known to be durable once `durable` answers"]
pub struct Pending {
    events: Vec<Event>,
    answer: Option<tokio::sync::oneshot::Receiver<Result<u64>>>,
}

impl Pending {
    /// Waits for the commit and returns the events with their ids set.
    pub async fn durable(self) -> Result<Vec<Event>> {
        let mut events = self.events;
        let Some(answer) = self.answer else {
            return Ok(events);
        };
        let first = answer.await.map_err(|_| StoreError::Closed)??;
        for (i, event) in events.iter_mut().enumerate() {
            event.id = EventId::new((first + i as u64).to_string());
        }
        Ok(events)
    }
}

/// An event as JSON, exactly as the envelope serializes, built from the
/// stored columns without parsing its payload: what the streaming
/// transports send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvent {
    /// The id (the replay cursor).
    pub id: u64,
    /// The event type.
    pub kind: String,
    /// The envelope, as JSON text.
    pub json: String,
}

impl Store {
    /// Appends `events`, in order, and returns them with their ids (the
    /// replay cursor) set. All or none are stored; when this returns, they
    /// are durable. Concurrent appends share commits.
    pub async fn append(&self, events: Vec<Event>) -> Result<Vec<Event>> {
        self.submit(events).await?.durable().await
    }

    /// Queues `events` to be appended, in order, and returns once they are
    /// queued: [`Pending::durable`] answers when they are committed. A
    /// producer that must not wait for each commit (an agent streaming a
    /// delta per token) queues its events one after another, and they are
    /// committed in that order, several to a commit.
    pub async fn submit(&self, events: Vec<Event>) -> Result<Pending> {
        if events.is_empty() {
            return Ok(Pending {
                events,
                answer: None,
            });
        }
        let rows = events
            .iter()
            .map(Prepared::of)
            .collect::<Result<Vec<_>>>()?;
        let answer = self.inner.writer.submit(rows).await?;
        Ok(Pending {
            events,
            answer: Some(answer),
        })
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
        let page = self.page(cursor, filter, limit, None).await?;
        page.lines()
            .map(|line| serde_json::from_str(line).map_err(corrupt))
            .collect()
    }

    /// [`Store::after`], each event as its envelope's JSON text, as the
    /// streaming transports send it (never parsed on the way).
    pub async fn after_json(
        &self,
        cursor: Option<u64>,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<RawEvent>> {
        let page = self.page(cursor, filter, limit, None).await?;
        page.lines().map(raw_of).collect()
    }

    /// [`Store::after_json`] bounded in bytes too: events are kept while
    /// the bodies before them (with `raw` when the filter asks for it)
    /// hold fewer than `max_bytes`, so the first event always is, whatever
    /// its size. The sizes are summed in the database, and only the kept
    /// bodies are read: a page of large events costs a stream its budget,
    /// not 500 events.
    pub async fn after_json_within(
        &self,
        cursor: Option<u64>,
        filter: &EventFilter,
        limit: u32,
        max_bytes: u64,
    ) -> Result<Vec<RawEvent>> {
        let page = self.page(cursor, filter, limit, Some(max_bytes)).await?;
        page.lines().map(raw_of).collect()
    }

    /// One page as one row: the envelopes, oldest first, one per line. A
    /// page of 10,000 events is one value to move, not 10,000 rows.
    async fn page(
        &self,
        cursor: Option<u64>,
        filter: &EventFilter,
        limit: u32,
        max_bytes: Option<u64>,
    ) -> Result<String> {
        let from = cursor.unwrap_or(0);
        let types: Vec<&str> = filter.types.iter().map(|t| t.as_str()).collect();
        let types_json = serde_json::to_string(&types).map_err(corrupt)?;
        let backend: Backend = self.backend();
        let (owner_subject, owner_agents) = filter.owner.binds()?;
        // The envelope is the stored body with, before its closing brace,
        // the session's key (kept once, in `sessions`; rows written before
        // that kept it in the body and in `session_key`), its subject
        // (never stored with the event) and then `raw` (last, where the
        // live tail looks for it).
        let query = sqlx::query_scalar(sql!(
            "SELECT string_agg('{{\"version\":1,\"id\":\"' || seq || '\",' || \
                CASE WHEN sk IS NULL AND sj IS NULL AND rw IS NULL THEN body \
                     ELSE substr(body, 1, length(body) - 1) \
                          || CASE WHEN sk IS NULL THEN '' ELSE ',\"sessionKey\":' || sk END \
                          || CASE WHEN sj IS NULL THEN '' ELSE ',\"subject\":' || sj END \
                          || CASE WHEN rw IS NULL THEN '' ELSE ',\"raw\":' || rw END \
                          || '}}' END, \
                {newline} ORDER BY seq) \
             FROM (SELECT e.seq, e.body, \
                          CASE WHEN $7 = 1 THEN e.raw END AS rw, \
                          CASE WHEN e.session_key IS NULL THEN {quoted} END AS sk, \
                          {subject} AS sj \
                   FROM {rows} \
                   LEFT JOIN sessions s ON s.id = e.session_id \
                   {kept} \
                   ORDER BY e.seq LIMIT $6) page",
            newline = backend.newline(),
            quoted = backend.json_quote("s.key"),
            subject = backend.json_quote("s.subject"),
            rows = if max_bytes.is_some() {
                // The sizes first, then the bodies of the events under
                // the budget. `octet_length` of a column reads its size
                // from the row's header (SQLite and PostgreSQL alike), not
                // the value, so a large event is not read to be skipped.
                format!(
                    "(SELECT seq, SUM(size) OVER (ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before \
                      FROM (SELECT e.seq, octet_length(e.body) \
                                   + CASE WHEN $7 = 1 THEN COALESCE(octet_length(e.raw), 0) ELSE 0 END AS size \
                            FROM events e WHERE {matches} ORDER BY e.seq LIMIT $6) sized) budget \
                     JOIN events e ON e.seq = budget.seq",
                    matches = matches(&backend),
                )
            } else {
                "events e".to_owned()
            },
            kept = if max_bytes.is_some() {
                "WHERE COALESCE(budget.before, 0) < $12".to_owned()
            } else {
                format!("WHERE {}", matches(&backend))
            },
        ))
        .bind(i64::try_from(from).map_err(corrupt)?)
        .bind(filter.run_id.clone())
        .bind(filter.session_key.clone())
        .bind(filter.agent_id.clone())
        .bind(types_json)
        .bind(i64::from(limit.min(MAX_PAGE)))
        .bind(i64::from(filter.raw))
        .bind(owner_subject)
        .bind(owner_agents)
        .bind(filter.task_id.clone())
        .bind(filter.end());
        let query = match max_bytes {
            Some(max) => query.bind(i64::try_from(max).unwrap_or(i64::MAX)),
            None => query,
        };
        let page: Option<String> = query.fetch_one(self.pool()).await?;
        // The floor is read after the page: a prune that committed before
        // the read moved it past `from` and is caught here; one that
        // commits after it removed nothing this read returned.
        let floor = self.floor().await?;
        if floor > 0 && from < floor {
            return Err(StoreError::CursorExpired {
                cursor: from,
                oldest: floor + 1,
            });
        }
        Ok(page.unwrap_or_default())
    }

    /// [`StoreError::CursorExpired`] when retention removed events after
    /// `cursor`: what a page read after it would answer, without reading
    /// one.
    pub async fn check_cursor(&self, cursor: Option<u64>) -> Result<()> {
        let from = cursor.unwrap_or(0);
        let floor = self.floor().await?;
        if floor > 0 && from < floor {
            return Err(StoreError::CursorExpired {
                cursor: from,
                oldest: floor + 1,
            });
        }
        Ok(())
    }

    async fn floor(&self) -> Result<u64> {
        let floor: i64 = sqlx::query("SELECT pruned_through FROM event_floor WHERE id = 1")
            .fetch_one(self.pool())
            .await?
            .try_get(0)?;
        u64::try_from(floor).map_err(corrupt)
    }

    /// The newest committed event's id (0 when the log has never held
    /// one).
    pub async fn last_event_id(&self) -> Result<u64> {
        let last: i64 = sqlx::query("SELECT last FROM event_counter WHERE id = 1")
            .fetch_one(self.pool())
            .await?
            .try_get(0)?;
        u64::try_from(last).map_err(corrupt)
    }

    /// Removes events `retention` no longer keeps (as of `now`, epoch ms)
    /// and records how far, so older cursors answer `cursor_expired`.
    /// Returns how many were removed.
    pub async fn prune(&self, retention: Retention, now: u64) -> Result<u64> {
        let mut tx = self.backend().begin_write(self.writes()).await?;
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
                    .bind(i64::try_from(keep).unwrap_or(i64::MAX))
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
        sqlx::query(
            "UPDATE event_floor SET pruned_through = \
             CASE WHEN pruned_through > $1 THEN pruned_through ELSE $1 END WHERE id = 1",
        )
        .bind(through)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(removed)
    }
}

/// The condition an event of the page meets (on `e`, with the filter's
/// parameters `$1` to `$5`, its owner's at `$8` and `$9`, its task at `$10`
/// and its end ([`EventFilter::end`]) at `$11`). A key names
/// a session in each subject that has one: the owner's condition picks the
/// caller's.
pub(crate) fn matches(backend: &Backend) -> String {
    format!(
        "e.seq > $1 AND e.seq < $11 \
         AND ($2 IS NULL OR e.run_id = $2) \
         AND ($3 IS NULL OR e.session_key = $3 \
              OR e.session_id IN (SELECT id FROM sessions WHERE key = $3)) \
         AND ($4 IS NULL OR e.agent_id = $4) \
         AND ($5 = '[]' OR e.{types}) \
         AND ($8 IS NULL OR e.session_id IN (SELECT id FROM sessions WHERE subject = $8)) \
         AND ($10 IS NULL OR e.task_id = $10 \
              OR e.run_id IN (SELECT child_run_id FROM tasks WHERE id = $10)) \
         AND {agents}",
        types = backend.types_in(5),
        agents = crate::Owner::agents_in(*backend, 9, "e.agent_id"),
    )
}

/// The id and type of an envelope line, read from its fixed opening
/// (`{"version":1,"id":"<seq>","ts":<ts>,"type":"<type>"`): type names
/// never need escaping.
fn raw_of(line: &str) -> Result<RawEvent> {
    let bad = || StoreError::Corrupt(format!("stored event: {line:.60}"));
    let rest = line
        .strip_prefix("{\"version\":1,\"id\":\"")
        .ok_or_else(bad)?;
    let (id, rest) = rest.split_once('"').ok_or_else(bad)?;
    let rest = rest.strip_prefix(",\"ts\":").ok_or_else(bad)?;
    let (_, rest) = rest.split_once(",\"type\":\"").ok_or_else(bad)?;
    let (kind, _) = rest.split_once('"').ok_or_else(bad)?;
    Ok(RawEvent {
        id: id.parse().map_err(|_| bad())?,
        kind: kind.to_owned(),
        json: line.to_owned(),
    })
}
