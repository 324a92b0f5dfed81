//! What the store keeps besides protocol types: event filters, retention,
//! tokens.

use std::time::Duration;

use crate::error::{Result, StoreError, corrupt};

use talon_protocol::EventType;
use talon_protocol::gateway::Scope;

/// Which events a reader wants.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventFilter {
    /// Only this run's.
    pub run_id: Option<String>,
    /// Only this session's (by key).
    pub session_key: Option<String>,
    /// Only this agent's.
    pub agent_id: Option<String>,
    /// Only this task's: its `task.updated` events and the events of the
    /// run it tracks.
    pub task_id: Option<String>,
    /// Only these types (all when empty).
    pub types: Vec<EventType>,
    /// Only events before this id (`runs.events`' `before`): the window's
    /// end, bound in the query as its start is by the cursor.
    pub before: Option<u64>,
    /// Include each event's runtime-native payload (`raw`): for readers
    /// allowed to see it (`admin` tokens).
    pub raw: bool,
    /// Whose: a subject's are its sessions' events (an event of no
    /// session is no subject's), an agent's those naming it.
    pub owner: crate::Owner,
}

impl EventFilter {
    /// The first id past the window, as the queries bind it: `before`, or
    /// past every id when there is none.
    pub(crate) fn end(&self) -> i64 {
        self.before
            .map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX))
    }
}

/// How long events are kept: by age and by count, whichever removes more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Events older than this are removed.
    pub max_age: Option<Duration>,
    /// At most this many events are kept.
    pub max_events: Option<u64>,
}

/// An access token as stored: never the secret, only its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    /// The token's public id (shown by `talon token list`).
    pub id: String,
    /// The SHA-256 of the secret, hex.
    pub hash: String,
    /// A name for people.
    pub name: Option<String>,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// When it was created.
    pub created_at: u64,
    /// When it stops working.
    pub expires_at: Option<u64>,
    /// When it was revoked.
    pub revoked_at: Option<u64>,
    /// The token that minted it through `tokens.create` (none for the
    /// CLI's and the first admin): revoking that one revokes this one.
    pub parent_id: Option<String>,
    /// The subject it is bound to: it sees only that subject's records.
    pub subject: Option<String>,
    /// The agents it is bound to: it sees and runs only theirs.
    pub agents: Option<Vec<String>>,
}

/// A stream ticket as stored: never the ticket, only its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTicket {
    /// The SHA-256 of the ticket, hex.
    pub hash: String,
    /// The token that minted it (its revocation ends the ticket's stream).
    pub token_id: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// When it expires (epoch ms).
    pub expires_at: u64,
    /// The one stream it opens.
    pub stream: talon_protocol::gateway::TicketStream,
}

impl StoredToken {
    /// Whether it can be used at `now` (epoch ms).
    pub fn is_live(&self, now: u64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| now < at)
    }
}

/// A time (epoch ms) as a column value.
pub(crate) fn ms(t: u64) -> Result<i64> {
    i64::try_from(t).map_err(|_| StoreError::Corrupt(format!("time {t} out of range")))
}

/// An optional time as a column value.
pub(crate) fn opt_ms(t: Option<u64>) -> Result<Option<i64>> {
    t.map(ms).transpose()
}

/// A value as the JSON text a column holds.
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(corrupt)
}

/// A JSON column back as a value.
pub(crate) fn json_column<T: serde::de::DeserializeOwned>(
    value: Option<String>,
) -> Result<Option<T>> {
    value
        .map(|text| serde_json::from_str(&text).map_err(corrupt))
        .transpose()
}

/// A JSON document column back as a value.
pub(crate) fn doc<T: serde::de::DeserializeOwned>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(corrupt)
}

/// The JSON document in a row's first column, as a value.
pub(crate) fn doc_of<T: serde::de::DeserializeOwned>(row: &sqlx::any::AnyRow) -> Result<T> {
    use sqlx::Row as _;
    doc(&row.try_get::<String, _>(0)?)
}

/// A unit enum's wire spelling (`"pending"`), the column value.
pub(crate) fn enum_str<T: serde::Serialize>(value: T) -> Result<String> {
    match serde_json::to_value(value).map_err(corrupt)? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(StoreError::Corrupt(format!("not a unit enum: {other}"))),
    }
}
