//! What the store keeps besides protocol types: event filters, retention,
//! tokens.

use std::time::Duration;

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
    /// Only these types (all when empty).
    pub types: Vec<EventType>,
}

/// How long events are kept: by age and by count, whichever removes more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Events older than this are removed.
    pub max_age: Option<Duration>,
    /// At most this many events are kept.
    pub max_events: Option<u64>,
}

/// An access token as stored: never the secret, only its keyed hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    /// The token's public id (shown by `talon token list`).
    pub id: String,
    /// The keyed hash of the secret, hex.
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
}

impl StoredToken {
    /// Whether it can be used at `now` (epoch ms).
    pub fn is_live(&self, now: u64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| now < at)
    }
}
