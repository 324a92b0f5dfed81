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
    CacheRetention, ModelProvider, ModelRef, ProviderConfig, Thinking, parse_providers,
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
    let providers = document.models.providers_json();
    Ok(parse_providers(Some(&providers), &lookup)?)
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
