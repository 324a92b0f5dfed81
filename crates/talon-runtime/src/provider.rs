//! Which model a run talks to: the agent's `model.primary` (else
//! `agents.defaults.model.primary`), `provider/model`, at the provider
//! `models.providers` defines, with the client its `api` names
//! (`talon_provider::build`). A host may point every provider at another
//! base URL (the scripted mock of `--mock-script`, which answers both
//! wires); with no model configured, that override serves the model
//! `mock-model`.
//!
//! The model settings of a run ([`ModelSettings`]), OpenClaw's keys, each
//! the agent's (`agents.list[]`) first, then for the model
//! (`agents.defaults.models["provider/model"]`), then the defaults
//! (`agents.defaults`):
//! - `reasoningDefault` (`off`, `on`, `stream`; default `off`): whether
//!   reasoning is shown as `thinking.delta` events;
//! - `thinkingDefault` (a model entry's `params.thinking`; `off`, `minimal`, `low`,
//!   `medium`, `high`, `xhigh`, `max`, `adaptive`; budgets in
//!   `talon_provider::Thinking::from_level`): extended thinking, by default
//!   `medium` for a model whose row says `reasoning: true`, else off;
//! - `params.cacheRetention` (`none`, `short`, `long`): prompt-cache
//!   breakpoints, by default `short` for `anthropic-messages` at
//!   api.anthropic.com, else `none`.

use std::sync::Arc;

use talon_agent::Reasoning;
use talon_config::Config;
use talon_config::model as config;
use talon_provider::{
    CacheRetention, ModelCost, ModelInfo, ModelProvider, ModelRef, ProviderConfig, ProviderError,
    Thinking,
};

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
    let document = config.document().map_err(RuntimeError::config)?;
    Ok(provider_configs(&document.models, &lookup)?)
}

/// `models.providers` as the providers' runtime settings: each typed
/// entry (its required keys, bounds and clamps are the declaration's,
/// checked at load) with its key and header values resolved by `lookup`;
/// what the config cannot say (valid headers, variables set) refused by
/// key.
pub fn provider_configs(
    models: &config::ModelsSection,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ProviderConfig>, ProviderError> {
    models
        .providers
        .iter()
        .map(|(id, entry)| provider_config(id, entry, lookup))
        .collect()
}

fn provider_config(
    id: &str,
    entry: &config::ProviderEntry,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ProviderConfig, ProviderError> {
    let field = |key: &str| format!("models.providers.{id}.{key}");
    let base_url = entry.base_url.as_str();
    let api = match entry.api {
        None | Some(config::Api::OpenaiCompletions) => talon_provider::config::OPENAI_COMPLETIONS,
        Some(config::Api::AnthropicMessages) => talon_provider::config::ANTHROPIC_MESSAGES,
    };
    let mut provider = ProviderConfig::new(id, api, base_url);
    if let Some(key) = &entry.api_key {
        provider.api_key = Some(secret(key, &field("apiKey"), lookup)?);
    }
    provider.models = entry.models.iter().map(model_info).collect();
    if let Some(ms) = entry.timeout_ms {
        provider.timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(ms) = entry.idle_timeout_ms {
        provider.idle_timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(retries) = entry.max_retries() {
        provider.max_retries = retries;
    }
    for (name, value) in &entry.headers {
        let at = field(&format!("headers.{name}"));
        let value = secret(value, &at, lookup)?;
        provider.add_header(name, &value, &at)?;
    }
    Ok(provider)
}

fn model_info(model: &config::ProviderModel) -> ModelInfo {
    ModelInfo {
        id: model.id.clone(),
        name: model.name.clone(),
        context_window: model.context_window,
        max_tokens: model.max_tokens(),
        reasoning: model.reasoning.unwrap_or(false),
        cost: model.cost.as_ref().map(|cost| ModelCost {
            input: micro(cost.input),
            output: micro(cost.output),
            cache_read: cost.cache_read.map(micro),
            cache_write: cost.cache_write.map(micro),
        }),
    }
}

/// US dollars per million tokens (within the declaration's 0 to
/// 1,000,000, checked at load) in millionths of a dollar.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "the price is checked at load to be within 0 and 1e6, so 1e12 at most"
)]
fn micro(usd: f64) -> u64 {
    (usd * 1e6).round() as u64
}

/// A key or header value: the literal, or the variable's value.
fn secret(
    value: &config::SecretText,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ProviderError> {
    value.resolve(lookup).map_err(|name| {
        config_error(
            field.to_owned(),
            format!("environment variable {name} is not set"),
        )
    })
}

fn config_error(field: String, message: impl Into<String>) -> ProviderError {
    ProviderError::Config {
        field,
        message: message.into(),
    }
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
        .document()
        .map_err(RuntimeError::config)?
        .model(agent)
        .and_then(|m| m.reference())
        .map(|s| ModelRef::parse(s, "agents.defaults.model.primary"))
        .transpose()
        .map_err(RuntimeError::from)
}

/// A run's model: the client, the model id and its settings.
#[derive(Clone)]
pub struct Selected {
    /// The client of the provider's `api`.
    pub provider: Arc<dyn ModelProvider>,
    /// The model id at the provider.
    pub model: String,
    /// What the run asks of it.
    pub settings: ModelSettings,
    /// Its prices, when the provider's `models` list gives them.
    pub cost: Option<talon_provider::ModelCost>,
}

impl std::fmt::Debug for Selected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selected")
            .field("model", &self.model)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The reasoning and caching settings of a run (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModelSettings {
    /// Whether reasoning is shown (`reasoningDefault`).
    pub reasoning: Reasoning,
    /// Extended thinking (`thinkingDefault`, `params.thinking`).
    pub thinking: Thinking,
    /// Prompt-cache breakpoints (`params.cacheRetention`).
    pub cache: CacheRetention,
}

/// The provider client, model id and settings for a run of `agent`.
pub fn select(config: &Config, agent: &str, route: &ModelRoute) -> Result<Selected, RuntimeError> {
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
    let settings = settings(config, agent, &provider, &model)?;
    if let Some(url) = &route.base_url {
        provider.base_url = url.clone();
    }
    let cost = provider
        .models
        .iter()
        .find(|m| m.id == model)
        .and_then(|m| m.cost);
    Ok(Selected {
        provider: talon_provider::build(provider)?,
        model,
        settings,
        cost,
    })
}

/// The settings of a run of `agent` on `model` at `provider`.
pub fn settings(
    config: &Config,
    agent: &str,
    provider: &ProviderConfig,
    model: &str,
) -> Result<ModelSettings, RuntimeError> {
    let document = config.document().map_err(RuntimeError::config)?;
    let reference = format!("{}/{model}", provider.id);
    let reasoning =
        match document.model_setting(agent, &reference, |a| a.reasoning_default, |_| None) {
            None | Some(config::Reasoning::Off) => Reasoning::Off,
            Some(config::Reasoning::On) => Reasoning::On,
            Some(config::Reasoning::Stream) => Reasoning::Stream,
        };
    let thinking =
        document.model_setting(agent, &reference, |a| a.thinking_default, |p| p.thinking);
    let thinking = match thinking.map(|t| Thinking::from_level(t.word())) {
        Some(Some(thinking)) => thinking,
        Some(None) | None if provider.model(model).is_some_and(|m| m.reasoning) => {
            Thinking::Budget(4096)
        }
        Some(None) | None => Thinking::Off,
    };
    let cache = match document.cache_retention(agent, &reference) {
        Some(config::CacheRetention::None) => CacheRetention::None,
        Some(config::CacheRetention::Short) => CacheRetention::Short,
        Some(config::CacheRetention::Long) => CacheRetention::Long,
        None if provider.api == talon_provider::config::ANTHROPIC_MESSAGES
            && provider.base_url.contains("://api.anthropic.com") =>
        {
            CacheRetention::Short
        }
        None => CacheRetention::None,
    };
    Ok(ModelSettings {
        reasoning,
        thinking,
        cache,
    })
}

/// The provider that stands for the scripted mock.
pub fn mock_provider() -> ProviderConfig {
    ProviderConfig::new("mock", talon_provider::config::OPENAI_COMPLETIONS, "")
}
