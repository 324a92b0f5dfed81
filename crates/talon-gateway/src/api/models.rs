//! `models.list` (the configured providers' models, and the agents'
//! primary models) and `models.status` (per provider: whether the
//! gateway holds credentials and whether the provider accepts them; never
//! a key's value).

use std::time::Duration;

use talon_protocol::gateway::*;
use talon_provider::openai::OpenAiCompatible;
use talon_runtime::Host;
use talon_runtime::provider::{MOCK_MODEL, mock_provider, primary, providers};

/// How long a provider gets to answer the credential check.
const AUTH_CHECK: Duration = Duration::from_secs(5);

fn config_error(error: talon_runtime::RuntimeError) -> ApiError {
    ApiError::new(ErrorCode::Unavailable, error.to_string())
}

/// The providers as this gateway reaches them (every one pointed at the
/// scripted mock under `--mock-script`, which also stands alone when no
/// provider is configured).
fn reached(host: &Host) -> Result<Vec<talon_provider::ProviderConfig>, ApiError> {
    let mut list = providers(host.config()).map_err(config_error)?;
    if let Some(url) = &host.route().base_url {
        if list.is_empty() {
            list.push(mock_provider());
        }
        for provider in &mut list {
            provider.base_url = url.clone();
        }
    }
    Ok(list)
}

/// `models.list`.
pub(super) fn list(host: &Host) -> Result<params::ModelsListResult, ApiError> {
    let mut models = Vec::new();
    for provider in reached(host)? {
        for model in &provider.models {
            models.push(Model {
                id: format!("{}/{}", provider.id, model.id),
                provider: provider.id.clone(),
                name: model.name.clone().unwrap_or_else(|| model.id.clone()),
                context_window: model.context_window,
            });
        }
        if provider.id == "mock" && provider.models.is_empty() {
            models.push(Model {
                id: format!("mock/{MOCK_MODEL}"),
                provider: "mock".into(),
                name: MOCK_MODEL.into(),
                context_window: None,
            });
        }
    }
    if let Some(reference) = primary(host.config(), super::DEFAULT_AGENT).map_err(config_error)? {
        let id = format!("{}/{}", reference.provider, reference.model);
        if !models.iter().any(|m| m.id == id) {
            models.push(Model {
                id,
                provider: reference.provider,
                name: reference.model,
                context_window: None,
            });
        }
    }
    Ok(params::ModelsListResult { models })
}

/// `models.status`: every provider checked at once.
pub(super) async fn status(host: &Host) -> Result<params::ModelsStatusResult, ApiError> {
    let checks = reached(host)?.into_iter().map(|provider| async move {
        let id = provider.id.clone();
        let keyless = provider.api_key.is_none() && id != "mock";
        let outcome = match OpenAiCompatible::new(provider) {
            Err(error) => Err(error.to_string()),
            Ok(client) => client
                .check_auth(AUTH_CHECK)
                .await
                .map_err(|error| error.to_string()),
        };
        let (authenticated, detail) = match outcome {
            Ok(()) => (true, None),
            Err(_) if keyless => (
                false,
                Some(format!(
                    "no API key is configured (models.providers.{id}.apiKey)"
                )),
            ),
            Err(error) => (false, Some(error)),
        };
        ProviderStatus {
            provider: id,
            authenticated,
            detail,
        }
    });
    Ok(params::ModelsStatusResult {
        providers: futures::future::join_all(checks).await,
    })
}
