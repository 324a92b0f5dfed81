//! Every store test runs on both backends: [`on_both!`] turns one test
//! body into a `sqlite` and a `postgres` test. PostgreSQL is a real server
//! the harness starts (`talon_testing::postgres`); a missing PostgreSQL
//! fails the tests, it never skips them.

use talon_store::{Store, StoreConfig};
use talon_testing::postgres::TestPostgres;

/// Which backend a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// A store for one test: its own SQLite directory or PostgreSQL database.
pub struct TestStore {
    pub kind: Kind,
    pub store: Store,
    pub config: StoreConfig,
    pub dir: tempfile::TempDir,
}

impl TestStore {
    pub async fn open(kind: Kind) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = config_for(kind, &dir);
        let store = talon_store::open(&config).await.unwrap();
        Self {
            kind,
            store,
            config,
            dir,
        }
    }

    /// Another store on the same database (another gateway node, or the
    /// same one after a restart).
    pub async fn reopen(&self) -> Store {
        talon_store::open(&self.config).await.unwrap()
    }
}

/// A fresh database for `kind`, with `dir` as the state directory.
pub fn config_for(kind: Kind, dir: &tempfile::TempDir) -> StoreConfig {
    match kind {
        Kind::Sqlite => StoreConfig::embedded(dir.path()),
        Kind::Postgres => {
            let pg = TestPostgres::shared().expect(
                "PostgreSQL is required for the store tests (scripts/setup.sh installs it)",
            );
            let url = pg.fresh_database().expect("a fresh PostgreSQL database");
            StoreConfig::at(url, dir.path())
        }
    }
}

/// `on_both! { async fn name(t) { ... } }`: the body as `name::sqlite` and
/// `name::postgres`, `t` being a [`TestStore`].
macro_rules! on_both {
    ($(#[doc = $doc:literal])* async fn $name:ident($t:ident) $body:block) => {
        mod $name {
            #[allow(unused_imports, reason = "the body uses what its module imports")]
            use super::*;
            $(#[doc = $doc])*
            async fn body($t: $crate::suite::backend::TestStore) $body
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                body($crate::suite::backend::TestStore::open($crate::suite::backend::Kind::Sqlite).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                body($crate::suite::backend::TestStore::open($crate::suite::backend::Kind::Postgres).await).await
            }
        }
    };
}
