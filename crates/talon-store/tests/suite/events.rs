//! The event log: ids in order, filters, pages, retention and expired
//! cursors, reopening.

use std::time::Duration;

use serde_json::json;
use talon_protocol::{Event, EventType};
use talon_store::{EventFilter, Retention, SqliteStore, StoreConfig, StoreError};

pub fn event(run: &str, kind: EventType, ts: u64, n: u64) -> Event {
    Event {
        version: 1,
        id: String::new(),
        ts,
        kind,
        run_id: Some(run.into()),
        session_id: Some("s1".into()),
        session_key: Some(format!("key-{run}")),
        task_id: None,
        agent_id: Some("main".into()),
        data: json!({"text": format!("delta {n}")}),
        raw: None,
    }
}

pub async fn store(dir: &tempfile::TempDir) -> SqliteStore {
    talon_store::open(&StoreConfig::embedded(dir.path()))
        .await
        .unwrap()
}

#[tokio::test]
async fn appended_events_come_back_in_order_after_any_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let batch: Vec<Event> = (0..5)
        .map(|n| event("r1", EventType::AssistantDelta, 1000 + n, n))
        .collect();
    let stored = store.append(batch.clone()).await.unwrap();
    let ids: Vec<&str> = stored.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5"]);
    let all = store
        .after(None, &EventFilter::default(), 100)
        .await
        .unwrap();
    assert_eq!(all, stored);
    let tail = store
        .after(Some(3), &EventFilter::default(), 100)
        .await
        .unwrap();
    assert_eq!(tail, stored[3..].to_vec());
    let page = store
        .after(Some(1), &EventFilter::default(), 2)
        .await
        .unwrap();
    assert_eq!(page, stored[1..3].to_vec());
    assert!(
        store
            .after(Some(5), &EventFilter::default(), 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.last_event_id().await.unwrap(), 5);
}

#[tokio::test]
async fn filters_select_by_run_session_agent_and_type() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let stored = store
        .append(vec![
            event("r1", EventType::RunStarted, 1, 0),
            event("r2", EventType::RunStarted, 2, 1),
            event("r1", EventType::AssistantDelta, 3, 2),
            event("r1", EventType::RunCompleted, 4, 3),
        ])
        .await
        .unwrap();
    let by_run = EventFilter {
        run_id: Some("r1".into()),
        ..Default::default()
    };
    let got = store.after(None, &by_run, 100).await.unwrap();
    assert_eq!(
        got,
        vec![stored[0].clone(), stored[2].clone(), stored[3].clone()]
    );
    let by_key_and_type = EventFilter {
        session_key: Some("key-r1".into()),
        types: vec![EventType::RunStarted, EventType::RunCompleted],
        ..Default::default()
    };
    let got = store.after(None, &by_key_and_type, 100).await.unwrap();
    assert_eq!(got, vec![stored[0].clone(), stored[3].clone()]);
    let nobody = EventFilter {
        agent_id: Some("other".into()),
        ..Default::default()
    };
    assert!(store.after(None, &nobody, 100).await.unwrap().is_empty());
}

#[tokio::test]
async fn retention_expires_old_cursors_instead_of_shortening_streams() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let stored = store
        .append(
            (0..10)
                .map(|n| event("r1", EventType::AssistantDelta, 1_000 * n, n))
                .collect(),
        )
        .await
        .unwrap();
    // Keep the newest 6: events 1..=4 go.
    let removed = store
        .prune(
            Retention {
                max_age: None,
                max_events: Some(6),
            },
            10_000,
        )
        .await
        .unwrap();
    assert_eq!(removed, 4);
    match store.after(Some(2), &EventFilter::default(), 100).await {
        Err(StoreError::CursorExpired {
            cursor: 2,
            oldest: 5,
        }) => {}
        other => panic!("{other:?}"),
    }
    match store.after(None, &EventFilter::default(), 100).await {
        Err(StoreError::CursorExpired {
            cursor: 0,
            oldest: 5,
        }) => {}
        other => panic!("{other:?}"),
    }
    // A cursor at the floor still reads everything kept.
    let kept = store
        .after(Some(4), &EventFilter::default(), 100)
        .await
        .unwrap();
    assert_eq!(kept, stored[4..].to_vec());
    // By age: older than 3 s at t = 10 s removes ts < 7000 (events 5, 6).
    let removed = store
        .prune(
            Retention {
                max_age: Some(Duration::from_secs(3)),
                max_events: None,
            },
            10_000,
        )
        .await
        .unwrap();
    assert_eq!(removed, 3);
    assert!(matches!(
        store.after(Some(4), &EventFilter::default(), 100).await,
        Err(StoreError::CursorExpired { oldest: 8, .. })
    ));
    // Ids keep growing after pruning everything.
    store
        .prune(
            Retention {
                max_age: None,
                max_events: Some(0),
            },
            10_000,
        )
        .await
        .unwrap();
    assert_eq!(store.last_event_id().await.unwrap(), 10);
    let next = store
        .append(vec![event("r3", EventType::RunStarted, 20_000, 0)])
        .await
        .unwrap();
    assert_eq!(next[0].id, "11");
}

#[tokio::test]
async fn the_log_survives_reopening_and_migrations_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let stored = {
        let store = store(&dir).await;
        let stored = store
            .append(vec![event("r1", EventType::RunStarted, 1, 0)])
            .await
            .unwrap();
        store.close().await;
        stored
    };
    let store = store(&dir).await;
    assert_eq!(
        store
            .after(None, &EventFilter::default(), 10)
            .await
            .unwrap(),
        stored
    );
    assert!(dir.path().join("talon.db").is_file());
}

#[tokio::test]
async fn bad_locations_and_urls_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let under_a_file = StoreConfig::embedded(file.join("state"));
    assert!(matches!(
        talon_store::open(&under_a_file).await,
        Err(StoreError::Io { .. })
    ));
    let mysql = StoreConfig {
        url: Some("mysql://localhost/talon".into()),
        ..StoreConfig::embedded(dir.path())
    };
    assert!(matches!(
        talon_store::open(&mysql).await,
        Err(StoreError::UnsupportedUrl(_))
    ));
    // Not a database.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![0x55u8; 8192]).unwrap();
    let config = StoreConfig {
        url: Some(format!("sqlite:{}", junk.display())),
        ..StoreConfig::embedded(dir.path())
    };
    assert!(matches!(
        talon_store::open(&config).await,
        Err(StoreError::Database(_))
    ));
}
