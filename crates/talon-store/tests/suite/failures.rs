//! Failures that must read as what they are: a full disk, a read-only
//! database, a location or URL that cannot work. Nothing that returned is
//! lost, and the store keeps serving reads.

use talon_protocol::EventType;
use talon_store::{EventFilter, StoreConfig, StoreError};
use talon_testing::postgres::TestPostgres;

use super::events::{event, everything};

#[tokio::test]
async fn a_full_disk_is_a_clear_error_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        max_size_bytes: Some(384 << 10),
        ..StoreConfig::embedded(dir.path())
    };
    let store = talon_store::open(&config).await.unwrap();
    let mut confirmed = Vec::new();
    let full = loop {
        let batch = (0..50)
            .map(|n| {
                let mut e = event("r1", EventType::AssistantDelta, 1, n);
                e.data = serde_json::json!({"text": "x".repeat(200)});
                e
            })
            .collect();
        match store.append(batch).await {
            Ok(stored) => confirmed.extend(stored),
            Err(error) => break error,
        }
        assert!(confirmed.len() < 100_000, "the cap never hit");
    };
    assert!(matches!(full, StoreError::DiskFull(_)), "{full:?}");
    assert!(full.to_string().contains("disk is full"), "{full}");
    assert!(full.is_transient());
    // Everything that returned is there, and reads still work.
    assert_eq!(everything(&store, None).await, confirmed);
    // Retention frees room, and appends work again.
    store
        .prune(
            talon_store::Retention {
                max_age: None,
                max_events: Some(10),
            },
            0,
        )
        .await
        .unwrap();
    store
        .append(vec![event("r2", EventType::RunStarted, 2, 0)])
        .await
        .unwrap();
}

#[tokio::test]
async fn a_read_only_sqlite_database_reads_but_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("talon.db");
    let stored = {
        let store = talon_store::open(&StoreConfig::embedded(dir.path()))
            .await
            .unwrap();
        let stored = store
            .append(vec![event("r1", EventType::RunStarted, 1, 0)])
            .await
            .unwrap();
        store.close().await;
        stored
    };
    let config = StoreConfig::at(format!("sqlite:{}?mode=ro", path.display()), dir.path());
    let store = talon_store::open(&config).await.unwrap();
    assert_eq!(
        store
            .after(None, &EventFilter::default(), 10)
            .await
            .unwrap(),
        stored
    );
    let refused = store
        .append(vec![event("r1", EventType::RunCompleted, 2, 1)])
        .await
        .unwrap_err();
    assert!(matches!(refused, StoreError::ReadOnly(_)), "{refused:?}");
    assert!(refused.to_string().contains("read-only"), "{refused}");
}

#[tokio::test]
async fn a_read_only_postgres_database_reads_but_refuses_writes() {
    let pg = TestPostgres::shared().expect("PostgreSQL is required (scripts/setup.sh installs it)");
    let url = pg.fresh_database().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig::at(url.clone(), dir.path());
    let stored = {
        let store = talon_store::open(&config).await.unwrap();
        let stored = store
            .append(vec![event("r1", EventType::RunStarted, 1, 0)])
            .await
            .unwrap();
        // What a standby or a locked-down database does to new sessions.
        let name = url.rsplit('/').next().unwrap().to_owned();
        run_sql(
            pg,
            &format!("ALTER DATABASE \"{name}\" SET default_transaction_read_only = on"),
        )
        .await;
        store.close().await;
        stored
    };
    let store = talon_store::open(&config).await.unwrap();
    assert_eq!(
        store
            .after(None, &EventFilter::default(), 10)
            .await
            .unwrap(),
        stored
    );
    let refused = store
        .append(vec![event("r1", EventType::RunCompleted, 2, 1)])
        .await
        .unwrap_err();
    assert!(matches!(refused, StoreError::ReadOnly(_)), "{refused:?}");
}

/// Runs one statement as the server's superuser.
async fn run_sql(pg: &TestPostgres, statement: &str) {
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(pg.admin_url()).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(statement.to_owned()))
        .execute(&mut conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn bad_locations_and_urls_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    assert!(matches!(
        talon_store::open(&StoreConfig::embedded(file.join("state"))).await,
        Err(StoreError::Io { .. })
    ));
    for url in [
        "mysql://localhost/talon",
        "sqlite::memory:",
        "sqlite:/x.db?mode=memory",
    ] {
        assert!(
            matches!(
                talon_store::open(&StoreConfig::at(url, dir.path())).await,
                Err(StoreError::UnsupportedUrl(_))
            ),
            "{url}"
        );
    }
    // Not a database.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![0x55u8; 8192]).unwrap();
    let config = StoreConfig::at(format!("sqlite:{}", junk.display()), dir.path());
    let error = talon_store::open(&config).await.unwrap_err();
    assert!(matches!(error, StoreError::Connect { .. }), "{error:?}");
    // Nothing listening; the password never shows.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = StoreConfig {
        connect_timeout: std::time::Duration::from_secs(1),
        ..StoreConfig::at(
            format!("postgres://talon:hunter2@127.0.0.1:{port}/talon"),
            dir.path(),
        )
    };
    let error = talon_store::open(&config).await.unwrap_err();
    assert!(matches!(error, StoreError::Connect { .. }), "{error:?}");
    assert!(!error.to_string().contains("hunter2"), "{error}");
}
