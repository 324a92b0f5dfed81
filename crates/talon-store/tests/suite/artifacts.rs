//! Artifacts: inline below the size, files above it, listing, expiry and
//! the purge.

use talon_protocol::gateway::bounded::ArtifactId;
use talon_protocol::gateway::bounded::{RunId, SessionId};
use talon_protocol::gateway::{ArtifactSummary, ArtifactType};
use talon_store::{ArtifactContent, NewArtifact, StoreError};

fn artifact(
    id: &str,
    run: &str,
    created_ms: u64,
    expires_ms: Option<u64>,
    content: Vec<u8>,
) -> NewArtifact {
    NewArtifact {
        summary: ArtifactSummary {
            id: ArtifactId::new(id),
            run_id: Some(RunId::new(run)),
            session_id: Some(SessionId::new("s1")),
            kind: ArtifactType::Log,
            title: Some(format!("{id}.log")),
            mime_type: Some("text/plain".into()),
            size_bytes: None,
            created_at: created_ms,
            expires_at: expires_ms,
        },
        content,
    }
}

async fn bytes_of(content: &ArtifactContent) -> Vec<u8> {
    match content {
        ArtifactContent::Inline(bytes) => bytes.clone(),
        ArtifactContent::File(path) => std::fs::read(path).unwrap(),
    }
}

on_both! {
    async fn small_contents_are_inline_and_large_ones_are_files(t) {
        let store = &t.store;
        let small = b"hello".to_vec();
        let large: Vec<u8> = (0..(300u32 << 10)).map(|i| (i % 251) as u8).collect();
        let a = store.put_artifact(artifact("a1", "r1", 1, None, small.clone())).await.unwrap();
        assert_eq!(a.size_bytes, Some(5));
        store.put_artifact(artifact("a2", "r1", 2, None, large.clone())).await.unwrap();
        let inline = store.artifact_content("a1", 0).await.unwrap().unwrap();
        assert_eq!(inline.content, ArtifactContent::Inline(small.clone()));
        assert_eq!(inline.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        let file = store.artifact_content("a2", 0).await.unwrap().unwrap();
        let ArtifactContent::File(path) = &file.content else { panic!("{file:?}") };
        assert!(path.starts_with(t.dir.path().join("artifacts")));
        assert_eq!(bytes_of(&file.content).await, large);
        assert_eq!(file.size, large.len() as u64);
        // The same id again is refused and leaves the first one's content.
        assert!(matches!(
            store.put_artifact(artifact("a2", "r1", 3, None, vec![0; 400 << 10])).await,
            Err(StoreError::Exists { kind: "artifact", .. })
        ));
        assert_eq!(bytes_of(&store.artifact_content("a2", 0).await.unwrap().unwrap().content).await, large);
        assert_eq!(std::fs::read_dir(t.dir.path().join("artifacts")).unwrap().count(), 1);
        assert_eq!(store.artifact_content("nope", 0).await.unwrap(), None);
        // Replaced: the same id and times, new bytes, size and type; the
        // old file goes, inline or file whichever the new size asks.
        let replaced = store.replace_artifact("a2", "text/markdown", small.clone()).await.unwrap();
        let stored = store.artifact("a2", 0).await.unwrap().unwrap();
        assert_eq!(
            (replaced.clone(), stored.created_at, stored.mime_type.as_deref(), stored.size_bytes),
            (stored.clone(), 2, Some("text/markdown"), Some(5))
        );
        assert_eq!(store.artifact_content("a2", 0).await.unwrap().unwrap().content, ArtifactContent::Inline(small.clone()));
        assert_eq!(std::fs::read_dir(t.dir.path().join("artifacts")).unwrap().count(), 0);
        store.replace_artifact("a1", "text/plain", large.clone()).await.unwrap();
        assert_eq!(bytes_of(&store.artifact_content("a1", 0).await.unwrap().unwrap().content).await, large);
        assert_eq!(std::fs::read_dir(t.dir.path().join("artifacts")).unwrap().count(), 1);
        assert!(matches!(
            store.replace_artifact("nope", "text/plain", small).await,
            Err(StoreError::NotFound { kind: "artifact", .. })
        ));
        assert_eq!(std::fs::read_dir(t.dir.path().join("artifacts")).unwrap().count(), 1);
    }
}

on_both! {
    async fn artifacts_are_listed_by_run_and_expire(t) {
        let store = &t.store;
        store.put_artifact(artifact("a1", "r1", 1, Some(100), b"one".to_vec())).await.unwrap();
        store.put_artifact(artifact("a2", "r2", 2, None, b"two".to_vec())).await.unwrap();
        store.put_artifact(artifact("a3", "r1", 3, Some(100), vec![7; 300 << 10])).await.unwrap();
        let ids = |list: Vec<ArtifactSummary>| list.into_iter().map(|a| a.id.into_string()).collect::<Vec<_>>();
        assert_eq!(ids(store.artifacts((Some("r1"), None), &talon_store::Owner::default(), None, 10, 50).await.unwrap()), ["a1", "a3"]);
        assert_eq!(ids(store.artifacts((None, Some("s1")), &talon_store::Owner::default(), Some("a1"), 1, 50).await.unwrap()), ["a2"]);
        assert_eq!(ids(store.artifacts((None, None), &talon_store::Owner::default(), None, 10, 100).await.unwrap()), ["a2"]);
        // Expired: gone from every read before the purge runs.
        // Times are the rows' epoch milliseconds.
        let mut expected = artifact("a1", "r1", 1, Some(100), Vec::new()).summary;
        expected.size_bytes = Some(3);
        assert_eq!(store.artifact("a1", 50).await.unwrap(), Some(expected));
        assert_eq!(store.artifact("a1", 100).await.unwrap(), None);
        assert_eq!(store.artifact_content("a3", 100).await.unwrap(), None);
        assert_eq!(store.purge_artifacts(99).await.unwrap(), 0);
        assert_eq!(store.purge_artifacts(100).await.unwrap(), 2);
        assert_eq!(std::fs::read_dir(t.dir.path().join("artifacts")).unwrap().count(), 0);
        assert_eq!(store.artifact("a1", 0).await.unwrap(), None);
        assert!(store.artifact("a2", u64::MAX >> 2).await.unwrap().is_some());
    }
}

/// A summary stored before times were epoch milliseconds (its document
/// held RFC 3339 strings) reads back with the rows' times.
#[tokio::test]
async fn a_summary_stored_with_date_strings_reads_back_in_epoch_milliseconds() {
    use sqlx::Connection as _;
    let t = super::backend::TestStore::open(super::backend::Kind::Sqlite).await;
    t.store
        .put_artifact(artifact(
            "a1",
            "r1",
            1_796_137_445_006,
            Some(1_796_137_446_000),
            b"x".to_vec(),
        ))
        .await
        .unwrap();
    let url = format!("sqlite:{}", t.dir.path().join("talon.db").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query(
        "UPDATE artifacts SET doc = json_set(doc, '$.createdAt', '2026-12-01T15:04:05.006Z', \
         '$.expiresAt', '2026-12-01T15:04:06.000Z') WHERE id = 'a1'",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let mut expected = artifact(
        "a1",
        "r1",
        1_796_137_445_006,
        Some(1_796_137_446_000),
        Vec::new(),
    )
    .summary;
    expected.size_bytes = Some(1);
    assert_eq!(
        t.store.artifact("a1", 0).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        t.store
            .artifacts(
                (Some("r1"), None),
                &talon_store::Owner::default(),
                None,
                10,
                0
            )
            .await
            .unwrap(),
        [expected]
    );
}
