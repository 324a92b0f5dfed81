//! The store's errors. Database failures are classified here, once, so
//! that a full disk or a read-only database reads as what it is on both
//! backends.

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached or opened.
    #[error("cannot connect to the store at {url}: {source}")]
    Connect {
        /// The URL, password redacted.
        url: String,
        /// Why.
        source: sqlx::Error,
    },
    /// The disk (or the database's quota) is full: nothing was written.
    /// The database's error is the source.
    #[error("the store's disk is full; nothing was written ({})", said(.0))]
    DiskFull(#[source] sqlx::Error),
    /// The database is read-only (file permissions, a read-only mount, a
    /// standby server): nothing was written. The database's error is the
    /// source.
    #[error("the store is read-only; nothing was written ({})", said(.0))]
    ReadOnly(#[source] sqlx::Error),
    /// Any other database failure.
    #[error("database error: {0}")]
    Database(sqlx::Error),
    /// A migration failed or the database is newer than this build.
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// A file under the state directory could not be read or written.
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
    /// A record with this id or key exists already.
    #[error("{kind} {id:?} already exists")]
    Exists {
        /// What kind of record.
        kind: &'static str,
        /// Its id or key.
        id: String,
    },
    /// The record is in use (a session or run whose runs have not
    /// ended): nothing was changed.
    #[error("{kind} {id:?} has a run that has not ended")]
    Busy {
        /// What kind of record.
        kind: &'static str,
        /// Its id.
        id: String,
    },
    /// No record with this id.
    #[error("{kind} {id:?} not found")]
    NotFound {
        /// What kind of record.
        kind: &'static str,
        /// Its id.
        id: String,
    },
    /// The store URL names no backend this build has.
    #[error("unsupported store URL {0:?} (sqlite:PATH or postgres://...)")]
    UnsupportedUrl(String),
    /// A stored value does not decode, or a value cannot be stored.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// A stored value does not convert (JSON that does not decode, a
    /// number out of range), or a value cannot be stored; the conversion's
    /// error is the source.
    #[error("corrupt record: {0}")]
    Conversion(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// There is no database yet (or an empty one), and the store was
    /// opened with [`crate::OnMissing::Refuse`].
    #[error("{0}")]
    Missing(String),
    /// The group-commit writer is gone (the store is closing).
    #[error("the store is closed")]
    Closed,
}

/// What the database said (its message), or the whole error.
fn said(error: &sqlx::Error) -> String {
    match error.as_database_error() {
        Some(db) => db.message().to_owned(),
        None => error.to_string(),
    }
}

/// A full disk or a read-only database, as the database said it.
#[derive(Clone, Copy)]
enum Unwritable {
    DiskFull,
    ReadOnly,
}

fn unwritable(error: &sqlx::Error) -> Option<Unwritable> {
    let code = error.as_database_error()?.code()?;
    // SQLite's primary result codes (the extended ones keep them in the
    // low byte) and PostgreSQL's SQLSTATEs.
    let sqlite = code.parse::<i32>().ok().map(|c| c & 0xff);
    match (sqlite, &*code) {
        (Some(13), _) | (_, "53100") => Some(Unwritable::DiskFull),
        (Some(8), _) | (_, "25006") => Some(Unwritable::ReadOnly),
        _ => None,
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match unwritable(&error) {
            Some(Unwritable::DiskFull) => Self::DiskFull(error),
            Some(Unwritable::ReadOnly) => Self::ReadOnly(error),
            None => Self::Database(error),
        }
    }
}

impl StoreError {
    /// Whether trying again later may succeed (a busy or unreachable
    /// database, a full disk), as opposed to a request that is wrong.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Connect { .. } | Self::DiskFull(_) | Self::Database(_) | Self::Closed
        )
    }

    /// The stable word for why the store cannot write (`disk_full`,
    /// `read_only`, `unreachable`), when that is what this error says.
    pub fn unwritable_reason(&self) -> Option<&'static str> {
        match self {
            Self::DiskFull(_) => Some("disk_full"),
            Self::ReadOnly(_) => Some("read_only"),
            Self::Connect { .. } => Some("unreachable"),
            Self::Database(
                sqlx::Error::Io(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::Tls(_)
                | sqlx::Error::Protocol(_)
                | sqlx::Error::WorkerCrashed,
            ) => Some("unreachable"),
            _ => None,
        }
    }
}

/// The store's result.
pub type Result<T> = std::result::Result<T, StoreError>;

/// A conversion that failed: [`StoreError::Conversion`].
pub(crate) fn corrupt(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Conversion(Box::new(e))
}
