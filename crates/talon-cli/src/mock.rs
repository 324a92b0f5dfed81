//! `--mock-script FILE` of `talon agent` and `talon gateway`: the
//! scripted mock model (a real HTTP server on 127.0.0.1 speaking Chat
//! Completions) serves the model instead of the configured provider.
//! Built with the `mock-model` feature; without it there is no mock.

use std::path::Path;

#[cfg(feature = "mock-model")]
use talon_mock_model::{MockModel, Script};

/// A scripted mock model serving this process.
#[cfg(feature = "mock-model")]
pub type Mock = MockModel;
/// Without the `mock-model` feature there is no mock.
#[cfg(not(feature = "mock-model"))]
pub type Mock = std::convert::Infallible;

/// Starts the mock model the script at `path` describes, if one is given.
#[cfg(feature = "mock-model")]
pub async fn start(path: Option<&Path>) -> Result<Option<Mock>, String> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = talon_fs::read_capped_to_string(
        path,
        talon_config::MAX_CONFIG_BYTES,
        talon_fs::Symlinks::Follow,
    )
    .map_err(|e| e.to_string())?;
    let value: serde_json::Value =
        talon_config::parse_json5(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let script = Script::from_json(&value).map_err(|e| e.to_string())?;
    Ok(Some(
        MockModel::start(script).await.map_err(|e| e.to_string())?,
    ))
}

/// Built without the `mock-model` feature: never a mock.
#[cfg(not(feature = "mock-model"))]
pub async fn start(_: Option<&Path>) -> Result<Option<Mock>, String> {
    Ok(None)
}

/// The mock's address, the providers' base URL.
#[cfg(feature = "mock-model")]
pub fn url(mock: &Mock) -> String {
    mock.base_url()
}

/// Without the feature there is no mock to address.
#[cfg(not(feature = "mock-model"))]
pub fn url(mock: &Mock) -> String {
    match *mock {}
}
