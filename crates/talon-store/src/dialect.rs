//! The two backends: how each is connected and configured, its embedded
//! migrations, and the few SQL fragments the two dialects spell
//! differently. Everything else is one SQL text for both (`$n`
//! placeholders, `ON CONFLICT`, `RETURNING`, JSON kept as TEXT, times as
//! 64-bit integers).

use std::path::PathBuf;
use std::str::FromStr;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyPool, ConnectOptions as _, Executor as _};

use crate::StoreConfig;
use crate::error::{Result, StoreError};

static SQLITE: sqlx::migrate::Migrator = sqlx_macros::migrate!("./migrations/sqlite");
static POSTGRES: sqlx::migrate::Migrator = sqlx_macros::migrate!("./migrations/postgres");

/// Which database the store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One SQLite file (the embedded default).
    Sqlite,
    /// A PostgreSQL server, possibly shared by several gateway nodes.
    Postgres,
}

impl Backend {
    /// The backend's embedded migrations.
    pub(crate) fn migrator(self) -> &'static sqlx::migrate::Migrator {
        match self {
            Self::Sqlite => &SQLITE,
            Self::Postgres => &POSTGRES,
        }
    }

    /// `type IN (...)` for a JSON array of type names bound at `$n`.
    pub(crate) fn types_in(self, n: u8) -> String {
        match self {
            Self::Sqlite => format!("type IN (SELECT value FROM json_each(${n}))"),
            Self::Postgres => format!("type IN (SELECT json_array_elements_text(${n}::json))"),
        }
    }

    /// Writes the placeholder of the `n`th (1-based) bound value. SQLite
    /// gets anonymous `?`s, bound in order: numbered ones make binding
    /// quadratic in their count (SQLite finds a parameter's name by a
    /// linear scan, and sqlx asks for every one), which a multi-row insert
    /// of a few thousand values pays heavily.
    pub(crate) fn placeholder(self, out: &mut String, n: usize) {
        match self {
            Self::Sqlite => out.push('?'),
            Self::Postgres => {
                out.push('$');
                out.push_str(&n.to_string());
            }
        }
    }

    /// Moves committed pages from the write-ahead log into the database
    /// (SQLite; PostgreSQL checkpoints by itself). The writer runs it off
    /// the commit path: a checkpoint inside a commit (SQLite's automatic
    /// one) made that commit several times slower. `PASSIVE` never waits
    /// for readers or writers.
    pub(crate) async fn checkpoint(self, pool: &AnyPool) -> Result<()> {
        if self == Self::Sqlite {
            pool.execute("PRAGMA wal_checkpoint(PASSIVE)").await?;
        }
        Ok(())
    }

    /// `column`'s text as a JSON string literal (NULL stays NULL).
    pub(crate) fn json_quote(self, column: &str) -> String {
        match self {
            // json_quote(NULL) is the text `null`.
            Self::Sqlite => {
                format!("CASE WHEN {column} IS NULL THEN NULL ELSE json_quote({column}) END")
            }
            Self::Postgres => format!("to_json({column})::text"),
        }
    }

    /// A newline character as an SQL expression.
    pub(crate) fn newline(self) -> &'static str {
        match self {
            Self::Sqlite => "char(10)",
            Self::Postgres => "chr(10)",
        }
    }

    /// Begins a transaction that will write. On SQLite it takes the write
    /// lock at once (`BEGIN IMMEDIATE`): a deferred transaction that reads
    /// first cannot wait for the lock when it later writes (it fails with
    /// `SQLITE_BUSY` at once), while an immediate one waits the busy
    /// timeout.
    pub(crate) async fn begin_write(
        self,
        pool: &AnyPool,
    ) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        Ok(match self {
            Self::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await?,
            Self::Postgres => pool.begin().await?,
        })
    }

    /// A name for logs and benchmarks.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// Where `config` points, as a backend and a connection URL.
fn target(config: &StoreConfig) -> Result<(Backend, String)> {
    let url = config.url.as_deref().map(str::trim);
    let mut read_only = false;
    let path = match url {
        None | Some("") => config.state_dir.join("talon.db"),
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            return Ok((Backend::Postgres, url.to_owned()));
        }
        Some(url) => {
            let (path, query) = url.split_once('?').unwrap_or((url, ""));
            match (path.strip_prefix("sqlite:"), query) {
                (Some(path), "" | "mode=rwc" | "mode=ro")
                    if !path.trim_start_matches('/').is_empty() && !path.contains(":memory:") =>
                {
                    read_only = query == "mode=ro";
                    PathBuf::from(path.strip_prefix("//").unwrap_or(path))
                }
                _ => return Err(StoreError::UnsupportedUrl(redact(url))),
            }
        }
    };
    if config.on_missing == crate::OnMissing::Refuse && !path.exists() {
        return Err(StoreError::Missing(describe(config)));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.to_owned(),
            source,
        })?;
    }
    let url = SqliteConnectOptions::from_str("sqlite:")?
        .filename(&path)
        .create_if_missing(!read_only)
        .read_only(read_only)
        .to_url_lossy();
    Ok((Backend::Sqlite, url.to_string()))
}

/// Where `config` points, for a person: the SQLite file, or the
/// PostgreSQL URL without its password.
pub(crate) fn describe(config: &StoreConfig) -> String {
    match config.url.as_deref().map(str::trim) {
        None | Some("") => format!(
            "the database {} does not exist or is empty",
            config.state_dir.join("talon.db").display()
        ),
        Some(url) => format!("the database {} does not exist or is empty", redact(url)),
    }
}

/// Whether the database holds Talon's schema (any migration applied).
pub(crate) async fn has_schema(backend: Backend, pool: &AnyPool) -> Result<bool> {
    let query = match backend {
        Backend::Sqlite => {
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
        }
        Backend::Postgres => {
            "SELECT count(*) FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'"
        }
    };
    let count: i64 = sqlx::query_scalar(query).fetch_one(pool).await?;
    Ok(count > 0)
}

/// A URL without its password, for errors and logs.
pub(crate) fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(_) => url.to_owned(),
        Err(_) => "<unparsable URL>".to_owned(),
    }
}

/// Connects a pool to the database `config` names.
/// The pools of a store: `reads`, and `writes`, which on SQLite is a
/// pool of one connection (SQLite has one writer at a time; a pool's
/// queue is fair, where SQLite's busy handler lets a waiting writer
/// starve under load), and on PostgreSQL the same pool.
pub(crate) struct Pools {
    pub(crate) backend: Backend,
    pub(crate) reads: AnyPool,
    pub(crate) writes: AnyPool,
    /// PostgreSQL: the URL the notification listener connects to.
    pub(crate) listen_url: Option<String>,
}

/// Connects the pools `config` names.
pub(crate) async fn connect(config: &StoreConfig) -> Result<Pools> {
    let (backend, reads) = connect_pool(config, config.max_connections.max(2)).await?;
    let (writes, listen_url) = match backend {
        Backend::Sqlite => (connect_pool(config, 1).await?.1, None),
        Backend::Postgres => (reads.clone(), Some(target(config)?.1)),
    };
    Ok(Pools {
        backend,
        reads,
        writes,
        listen_url,
    })
}

async fn connect_pool(config: &StoreConfig, connections: u32) -> Result<(Backend, AnyPool)> {
    sqlx::any::install_default_drivers();
    let (backend, url) = target(config)?;
    let options = AnyConnectOptions::from_str(&url)
        .map_err(|_| StoreError::UnsupportedUrl(redact(&url)))?
        .disable_statement_logging();
    let busy_ms = config.busy_timeout.as_millis().min(i32::MAX as u128);
    // SQLite's default page size; a cap below one page still allows one.
    let max_pages = config
        .max_size_bytes
        .map(|bytes| (bytes / 4096).clamp(1, u64::from(u32::MAX)));
    let pool = AnyPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(config.connect_timeout)
        .after_connect(move |conn, _meta| {
            Box::pin(async move {
                match backend {
                    // busy_timeout first: switching to WAL may wait for
                    // another connection.
                    Backend::Sqlite => {
                        // A new database (not one page written yet)
                        // vacuums incrementally, so that the pages deletes
                        // free go back to the file. The mode is fixed once
                        // the file has its first page (switching to WAL
                        // writes it), and an existing database is never
                        // written here (it may be read-only).
                        let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
                            .fetch_one(&mut *conn)
                            .await?;
                        if pages == 0 {
                            conn.execute("PRAGMA auto_vacuum = INCREMENTAL").await?;
                        }
                        conn.execute(sql!(
                            "PRAGMA busy_timeout = {busy_ms}; PRAGMA journal_mode = WAL; \
                             PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; \
                             PRAGMA wal_autocheckpoint = 0;"
                        ))
                        .await?;
                        if let Some(pages) = max_pages {
                            conn.execute(sql!("PRAGMA max_page_count = {pages}"))
                                .await?;
                        }
                    }
                    Backend::Postgres => {
                        conn.execute("SET synchronous_commit = on").await?;
                    }
                }
                Ok(())
            })
        })
        // A connection sqlx still counts as inside a transaction when it
        // comes back (a COMMIT or ROLLBACK that failed, as on a full disk,
        // leaves SQLite's and sqlx's idea of it apart) is closed, never
        // handed out again: every later `BEGIN` on it would fail. (A
        // transaction dropped on an error path may still have its rollback
        // queued: that connection is closed too, which is only slower.)
        .after_release(|conn, _meta| {
            Box::pin(async move {
                use sqlx::Connection as _;
                Ok(!conn.is_in_transaction())
            })
        })
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Connect {
            url: redact(&url),
            source,
        })?;
    Ok((backend, pool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_choose_the_backend() {
        let config = |url: Option<&str>| StoreConfig {
            url: url.map(str::to_owned),
            ..StoreConfig::embedded(std::env::temp_dir().join("talon-dialect-test"))
        };
        assert_eq!(target(&config(None)).unwrap().0, Backend::Sqlite);
        let url = target(&config(None)).unwrap().1;
        assert!(
            url.contains("talon-dialect-test/talon.db?mode=rwc"),
            "{url}"
        );
        assert_eq!(
            target(&config(Some("postgres://u:p@h:5/db"))).unwrap(),
            (Backend::Postgres, "postgres://u:p@h:5/db".to_owned())
        );
        for bad in ["mysql://x", "sqlite::memory:", "sqlite:", "nonsense"] {
            assert!(
                matches!(
                    target(&config(Some(bad))),
                    Err(StoreError::UnsupportedUrl(_))
                ),
                "{bad}"
            );
        }
    }

    /// The two backends' migrations declare the same schema: the
    /// PostgreSQL file is the SQLite one with 64-bit integer and byte
    /// types spelled its way.
    #[test]
    fn the_migrations_stay_in_step() {
        let sqlite = include_str!("../migrations/sqlite/0001_init.sql");
        let postgres = include_str!("../migrations/postgres/0001_init.sql");
        let spelled = sqlite
            .replace(" INTEGER", " BIGINT")
            .replace(" BLOB", " BYTEA")
            .replace("(SQLite)", "(PostgreSQL)")
            .replace(
                "migrations/postgres/0001_init.sql",
                "migrations/sqlite/0001_init.sql",
            );
        assert_eq!(spelled, postgres);
        assert_eq!(
            include_str!("../migrations/sqlite/0002_checkpoint.sql"),
            include_str!("../migrations/postgres/0002_checkpoint.sql")
        );
        assert_eq!(
            include_str!("../migrations/sqlite/0003_environments.sql"),
            include_str!("../migrations/postgres/0003_environments.sql")
        );
        assert_eq!(
            include_str!("../migrations/sqlite/0005_hardening.sql"),
            include_str!("../migrations/postgres/0005_hardening.sql")
        );
        assert_eq!(
            include_str!("../migrations/sqlite/0006_runs_list.sql"),
            include_str!("../migrations/postgres/0006_runs_list.sql")
        );
        assert_eq!(SQLITE.iter().count(), POSTGRES.iter().count());
    }

    #[test]
    fn passwords_never_reach_errors() {
        assert_eq!(
            redact("postgres://talon:s3cret@db:5432/talon"),
            "postgres://talon:***@db:5432/talon"
        );
        assert_eq!(redact("not a url"), "<unparsable URL>");
    }
}
