//! The contract as a gateway drives it: find the provider by id, check
//! the settings against the admin's policy, prepare, bind, collect,
//! release; capabilities said truthfully.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::json;
use talon_environments::{Binding, Context, EnvironmentPolicy, Providers, SecretSource, dir_of};
use talon_jail::Network;
use talon_protocol::gateway::{EnvironmentCapabilities, ErrorCode};

fn policy(root: &std::path::Path) -> EnvironmentPolicy {
    EnvironmentPolicy {
        source_roots: vec![root.to_path_buf()],
        repositories: BTreeMap::new(),
        secrets: BTreeMap::from([(
            "DEPLOY_TOKEN".to_owned(),
            SecretSource::File(root.join("token")),
        )]),
        forges: BTreeMap::new(),
    }
}

#[test]
fn an_unknown_provider_is_not_found_naming_those_there_are() {
    let err = Providers::builtin().get("cloud").err().unwrap();
    assert_eq!(
        (err.code, err.message.as_str(), err.details),
        (
            ErrorCode::NotFound,
            "no environment provider \"cloud\"; this gateway has [\"local\"]",
            Some(serde_json::from_value(json!({"providers": ["local"]})).unwrap())
        )
    );
}

#[tokio::test]
async fn local_prepares_binds_collects_and_releases_a_workspace() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let source = root_path.join("app");
    std::fs::create_dir(&source).unwrap();
    std::fs::write(source.join("main.txt"), "one\n").unwrap();
    std::fs::write(root_path.join("token"), "s3cret\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let policy = policy(&root_path);
    let context = Context {
        room: None,
        policy: &policy,
        state_dir: state.path(),
        sandboxed: true,
    };
    let local = Providers::builtin().get("local").unwrap();
    assert_eq!(
        local.capabilities(context),
        EnvironmentCapabilities {
            checkout: Some(true),
            sandbox: Some(true),
            network_policy: Some(true),
            secrets: Some(true),
            artifacts: Some(true),
            logs: Some(true),
            pull_requests: Some(false),
            long_running: Some(true),
        }
    );
    let settings =
        json!({"source": {"path": source}, "secrets": ["DEPLOY_TOKEN"], "network": "host"});
    local.check(&settings, context).unwrap();
    let outside = json!({"source": {"path": "/etc"}});
    assert_eq!(
        local.check(&outside, context).unwrap_err().code,
        ErrorCode::Forbidden
    );
    let dir = dir_of(state.path(), "env_1");
    let workspace = local.prepare(&settings, &dir, context).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(workspace.join("main.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(
        local.bind(&settings, context).unwrap(),
        Binding {
            env: vec![("DEPLOY_TOKEN".into(), "s3cret".into())],
            network: Some(Network::Host),
            secrets: vec!["s3cret".into()],
        }
    );
    std::fs::write(workspace.join("main.txt"), "two\n").unwrap();
    let collected = local.collect(&dir).await.unwrap();
    assert_eq!(
        collected.diff.as_deref(),
        Some("--- a/main.txt\n+++ b/main.txt\n@@ -1 +1 @@\n-one\n+two\n")
    );
    let released = local.release(&settings, &dir).await.unwrap();
    assert_eq!(
        (released.as_str(), dir.exists()),
        ("the workspace was removed", false)
    );
}
