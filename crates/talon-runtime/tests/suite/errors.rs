//! Why a run is refused at start, typed, with what it came from kept as
//! the error's source: a workspace that cannot be made, a bad `tools.codeMode`, and a
//! host whose cell store cannot open.

use std::error::Error as _;
use std::sync::Arc;

use serde_json::json;
use talon_config::Config;
use talon_mock_model::{MockModel, Script};
use talon_runtime::{Host, ModelRoute, RuntimeError};

use super::{Recorder, host, spec};

async fn mock() -> MockModel {
    MockModel::start(Script::from_json(&json!({"turns": [{"text": "never"}]})).unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_that_cannot_be_made_is_refused_with_the_io_error_as_its_source() {
    let mock = mock().await;
    let host = host("{}", mock.base_url());
    let dir = tempfile::tempdir().unwrap();
    // A regular file stands where the workspace would be made.
    let missing = dir.path().join("a-file");
    std::fs::write(&missing, "not a directory").unwrap();
    let recorder = Arc::new(Recorder::default());
    let error = host
        .start(spec("run_e1", &missing, &recorder, "hi"))
        .await
        .unwrap_err();
    let RuntimeError::Workspace { path, source } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(
        (path, source.kind()),
        (&missing, std::io::ErrorKind::AlreadyExists)
    );
    assert!(
        error
            .to_string()
            .starts_with(&format!("workspace {}: ", missing.display()))
    );
    assert!(error.source().is_some());
    assert_eq!(recorder.kinds(), Vec::<String>::new());
    host.shutdown().await;
}

#[test]
fn a_bad_code_mode_config_is_refused_as_such() {
    // The config's declaration refuses it when the host is made, before
    // any run reaches a model.
    let config = Config::parse(r#"{ tools: { codeMode: "yes please" } }"#, None).unwrap();
    let error = Host::new(Arc::new(config), ModelRoute::default()).unwrap_err();
    assert!(matches!(error, RuntimeError::Config(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "config key tools.codeMode: expected true or false or an object, found a string (\"yes please\")"
    );
}

/// The host's own error for a store it could not open.
#[derive(Debug, thiserror::Error)]
#[error("the cell store is full")]
struct Full;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cell_store_that_cannot_open_keeps_the_hosts_error() {
    let mock = mock().await;
    let host = host(
        r#"{ tools: { codeMode: { enabled: true } } }"#,
        mock.base_url(),
    );
    let dir = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let mut spec = spec("run_e3", dir.path(), &recorder, "hi");
    spec.cells = Box::new(|_| Err(Box::new(Full)));
    let error = host.start(spec).await.unwrap_err();
    assert!(matches!(error, RuntimeError::Cells(_)), "{error:?}");
    assert_eq!(error.to_string(), "the cell store is full");
    assert!(error.source().is_some_and(|s| s.is::<Full>()), "{error:?}");
    host.shutdown().await;
}
