//! Which model a run talks to: the agent's `model.primary` (else
//! `agents.defaults.model.primary`), `provider/model`, at the provider
//! `models.providers` defines. A host may point every provider at another
//! base URL (the scripted mock of `--mock-script`); with no model
//! configured, that override serves the model `mock-model`.

use std::time::Duration;

use serde_json::Value;
use talon_config::Config;
use talon_provider::openai::OpenAiCompatible;
use talon_provider::{ModelRef, ProviderConfig, parse_providers};

use crate::RuntimeError;

/// The model id a host's override serves when no model is configured.
pub const MOCK_MODEL: &str = "mock-model";

/// Where a host sends model requests.
#[derive(Debug, Clone, Default)]
pub struct ModelRoute {
    /// Every provider's base URL replaced by this one (the scripted mock).
    pub base_url: Option<String>,
}

/// The configured providers, keys resolved from the environment.
pub fn providers(config: &Config) -> Result<Vec<ProviderConfig>, RuntimeError> {
    let lookup = |name: &str| std::env::var(name).ok();
    Ok(parse_providers(config.get("models.providers"), &lookup)?)
}

/// The secrets the config resolves (the providers' keys), for redaction
/// from what the host stores; an unreadable provider section has none.
pub fn secrets(config: &Config) -> Vec<String> {
    providers(config)
        .map(|all| {
            all.into_iter()
                .filter_map(|p| p.api_key)
                .filter(|k| k.len() >= 8)
                .collect()
        })
        .unwrap_or_default()
}

/// `agent`'s primary model, `provider/model`, when one is configured.
pub fn primary(config: &Config, agent: &str) -> Result<Option<ModelRef>, RuntimeError> {
    config
        .agent(agent)
        .and_then(|a| a.get("model"))
        .or_else(|| config.get("agents.defaults.model"))
        .and_then(|m| m.get("primary").or(Some(m)))
        .and_then(Value::as_str)
        .map(|s| ModelRef::parse(s, "agents.defaults.model.primary"))
        .transpose()
        .map_err(RuntimeError::from)
}

/// The provider client and model id for a run of `agent`.
pub fn select(
    config: &Config,
    agent: &str,
    route: &ModelRoute,
) -> Result<(OpenAiCompatible, String), RuntimeError> {
    let (mut provider, model) = match (primary(config, agent)?, &route.base_url) {
        (Some(reference), _) => {
            let provider = providers(config)?
                .into_iter()
                .find(|p| p.id == reference.provider)
                .ok_or_else(|| {
                    RuntimeError::Config(format!(
                        "agents.defaults.model.primary names provider {:?}, which models.providers does not define",
                        reference.provider
                    ))
                })?;
            (provider, reference.model)
        }
        (None, Some(_)) => (mock_provider(), MOCK_MODEL.to_owned()),
        (None, None) => {
            return Err(RuntimeError::Config(
                "no model: set agents.defaults.model.primary (\"provider/model\") or pass --mock-script".into(),
            ));
        }
    };
    if let Some(url) = &route.base_url {
        provider.base_url = url.clone();
    }
    let client = OpenAiCompatible::new(provider)?;
    Ok((client, model))
}

/// The provider that stands for the scripted mock.
pub fn mock_provider() -> ProviderConfig {
    ProviderConfig {
        id: "mock".into(),
        base_url: String::new(),
        api_key: None,
        api: "openai-completions".into(),
        models: Vec::new(),
        timeout: Duration::from_secs(120),
        max_retries: 3,
    }
}
