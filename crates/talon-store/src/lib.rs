//! Talon's durable store: the event log (append-only, a monotonic cursor,
//! retention that never shortens a stream silently), runs with their
//! idempotency keys, and access tokens (hashed). SQLite is the embedded
//! default (`$TALON_STATE_DIR/talon.db`, WAL, a busy timeout, migrations
//! applied at open).
//!
//! Every write that returns is durable: SQLite runs with
//! `synchronous=FULL` in WAL mode, so a commit survives a crash of the
//! process or the machine.

mod error;
mod records;
mod sqlite;

use std::path::PathBuf;
use std::time::Duration;

pub use error::{Result, StoreError};
pub use records::{EventFilter, Retention, StoredToken};
pub use sqlite::SqliteStore;

/// Where the store lives and how it behaves.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `sqlite:PATH`; absent: `<state_dir>/talon.db`.
    pub url: Option<String>,
    /// The state directory (`$TALON_STATE_DIR`, default `~/.talon/`).
    pub state_dir: PathBuf,
    /// How long a writer waits for another to finish.
    pub busy_timeout: Duration,
}

impl StoreConfig {
    /// The embedded default under `state_dir`.
    pub fn embedded(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            url: None,
            state_dir: state_dir.into(),
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// Opens the store `config` names, creating and migrating it as needed.
pub async fn open(config: &StoreConfig) -> Result<SqliteStore> {
    let path = match config.url.as_deref() {
        None => config.state_dir.join("talon.db"),
        Some(url) => match url.strip_prefix("sqlite:") {
            Some(path) => PathBuf::from(path.trim_start_matches("//")),
            None => return Err(StoreError::UnsupportedUrl(url.to_owned())),
        },
    };
    SqliteStore::open(&path, config.busy_timeout).await
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
