//! Environments count in the store's quota: a workspace (and its
//! baseline) takes its files' apparent size, sparse files and blobs that
//! compress well included; a source or checkout larger than what is left
//! is refused before it is copied, and environments made one after
//! another stop at the quota.

use serde_json::json;
use talon_gateway::Limits;

use super::super::env_support::{Sources, create_environment, git};
use super::super::{Options, TestGateway};

const QUOTA: u64 = 8 << 20;

async fn gateway(sources: &Sources) -> TestGateway {
    TestGateway::start_opts(Options {
        environments: sources.policy.clone(),
        limits: Limits {
            max_stored_bytes: Some(QUOTA),
            ..Limits::default()
        },
        ..Options::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspaces_count_in_the_quota_sparse_files_and_blobs_included() {
    let sources = Sources::new();
    // A 1 GiB sparse file: nothing on disk, 1 GiB in a copy.
    let sparse = sources.root("sparse");
    std::fs::File::create(sparse.join("hole.bin"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    // 32 MiB of zeros: a few KiB in git, 32 MiB in a checkout.
    let repo = sources.repo();
    std::fs::write(repo.join("zeros.bin"), vec![0u8; 32 << 20]).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "zeros"]);
    let g = gateway(&sources).await;
    for settings in [
        json!({"source": {"path": sparse}}),
        json!({"source": {"git": "app", "ref": "main"}}),
    ] {
        let made = create_environment(&g, "local", settings.clone())
            .await
            .unwrap();
        assert_eq!(made["status"], "failed", "{settings}: {made}");
        let detail = made["detail"].as_str().unwrap();
        assert!(detail.contains("quota"), "{detail}");
    }
    // Nothing of theirs was left on disk.
    assert!(g.running.store.stored_bytes().await.unwrap() < QUOTA);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environments_made_one_after_another_stop_at_the_quota() {
    let sources = Sources::new();
    let source = sources.root("mib");
    std::fs::write(source.join("data.bin"), vec![7u8; 1 << 20]).unwrap();
    let g = gateway(&sources).await;
    let mut ready = 0;
    for _ in 0..12 {
        match create_environment(&g, "local", json!({"source": {"path": source}})).await {
            Ok(made) if made["status"] == "ready" => ready += 1,
            Ok(made) => assert_eq!(made["status"], "failed", "{made}"),
            Err(error) => assert_eq!(error["code"], "quota_exceeded", "{error}"),
        }
    }
    // Each takes 2 MiB (workspace and baseline): at most four fit.
    assert!((1..=4).contains(&ready), "{ready} ready");
    let stored = g.running.store.stored_bytes().await.unwrap();
    assert!(stored <= QUOTA + QUOTA / 10, "{stored} stored");
    // Deleting one gives its room back.
    let listed = super::super::env_support::call(&g, "environments.list", json!({}))
        .await
        .unwrap();
    let first = listed["environments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["status"] == "ready")
        .unwrap()["id"]
        .clone();
    super::super::env_support::call(&g, "environments.delete", json!({"environmentId": first}))
        .await
        .unwrap();
    assert!(g.running.store.stored_bytes().await.unwrap() < stored);
}
