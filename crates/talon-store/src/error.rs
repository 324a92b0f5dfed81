//! The store's errors.

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened, read or written.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A migration failed or the database is newer than this build.
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// The state directory could not be created.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A cursor older than what the store keeps.
    #[error("event cursor {cursor} has expired; the oldest event kept is {oldest}")]
    CursorExpired {
        /// The cursor asked for.
        cursor: u64,
        /// The oldest event id still kept (the next one to be appended when
        /// the log is empty).
        oldest: u64,
    },
    /// An idempotency key reused with other parameters.
    #[error("idempotency key {key:?} was used for a different request")]
    IdempotencyConflict {
        /// The key.
        key: String,
    },
    /// The store URL names no backend this build has.
    #[error("unsupported store URL {0:?} (sqlite:PATH or postgres://...)")]
    UnsupportedUrl(String),
    /// A stored value does not decode.
    #[error("corrupt record: {0}")]
    Corrupt(String),
}

/// The store's result.
pub type Result<T> = std::result::Result<T, StoreError>;
