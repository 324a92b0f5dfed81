//! A provider's runtime settings ([`ProviderConfig`]: base URL, resolved
//! key, wire, model rows, limits, headers) and model references
//! (`"provider/model"`, as in `agents.defaults.model.primary`). The config
//! keys (`models.providers.<id>`, OpenClaw's shape) are declared once, in
//! `talon_config::model::ProviderEntry`, with their bounds; talon-runtime
//! builds a [`ProviderConfig`] from that typed entry (resolving keys and
//! header values from the environment), so nothing here reads JSON.
//!
//! `api` picks the wire: [`OPENAI_COMPLETIONS`] (the default) or
//! [`ANTHROPIC_MESSAGES`]. A model row's `max_tokens` is the reply limit
//! Anthropic requires on every request (8192 when the row has none), and
//! its `reasoning: true` turns extended thinking on at `medium` when the
//! agent sets no `thinkingDefault`.
//!
//! Headers ([`ProviderConfig::add_header`]) are sent on every request of
//! either wire, e.g. `anthropic-beta`. Names the client owns
//! ([`OWNED_HEADERS`]) and names or values HTTP does not allow are
//! refused; values are never shown.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::error::{ProviderError, Result};

/// One model a provider lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// Its id at the provider.
    pub id: String,
    /// Display name.
    pub name: Option<String>,
    /// Context window in tokens.
    pub context_window: Option<u64>,
    /// Most output tokens.
    pub max_tokens: Option<u32>,
    /// Whether it reasons (OpenClaw's `reasoning`, default false).
    pub reasoning: bool,
    /// Its prices (OpenClaw's `cost`), when the config gives them.
    pub cost: Option<ModelCost>,
}

/// A model's prices, OpenClaw's `cost: { input, output, cacheRead,
/// cacheWrite }` in US dollars per million tokens, kept in millionths of
/// a dollar (so that a price compares exactly). `input` and `output` are
/// required; a cache price left out is unknown, never zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelCost {
    /// Uncached prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: Option<u64>,
    /// Prompt tokens written to the cache.
    pub cache_write: Option<u64>,
}

impl ModelCost {
    /// What `usage` cost in US dollars, or `None` when it holds tokens of
    /// a kind this model has no price for: never a guess.
    pub fn usd(&self, usage: &crate::Usage) -> Option<f64> {
        let priced = |tokens: u64, price: Option<u64>| match (tokens, price) {
            (0, _) => Some(0u128),
            (_, Some(price)) => Some(u128::from(tokens) * u128::from(price)),
            (_, None) => None,
        };
        let cached = usage.cache_read_tokens + usage.cache_write_tokens;
        let uncached = usage.input_tokens.saturating_sub(cached);
        let micro_per_million = priced(uncached, Some(self.input))?
            + priced(usage.output_tokens, Some(self.output))?
            + priced(usage.cache_read_tokens, self.cache_read)?
            + priced(usage.cache_write_tokens, self.cache_write)?;
        Some(micro_per_million as f64 / 1e12)
    }
}

/// The wire formats spoken.
pub const APIS: &[&str] = &[OPENAI_COMPLETIONS, ANTHROPIC_MESSAGES];
/// OpenAI's Chat Completions.
pub const OPENAI_COMPLETIONS: &str = "openai-completions";
/// Anthropic's Messages.
pub const ANTHROPIC_MESSAGES: &str = "anthropic-messages";

/// One provider.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// Its id (the part before `/` in model references).
    pub id: String,
    /// The API base, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// The resolved key, if any.
    pub api_key: Option<String>,
    /// The wire: one of [`APIS`].
    pub api: String,
    /// Listed models.
    pub models: Vec<ModelInfo>,
    /// Budget of one request (`timeoutMs`, default 120 s).
    pub timeout: Duration,
    /// Retries on 408, 409, 429 and 5xx (`maxRetries`, default 3).
    pub max_retries: u32,
    /// The longest silence inside a streamed reply (`idleTimeoutMs`,
    /// default 60 s; Anthropic's `ping` events count as traffic).
    pub idle_timeout: Duration,
    /// Extra headers sent on every request (`headers`), values marked
    /// sensitive.
    pub headers: HeaderMap,
}

/// Headers the client sets itself, refused in `headers`.
pub const OWNED_HEADERS: &[&str] = &[
    "authorization",
    "x-api-key",
    "anthropic-version",
    "content-type",
    "content-length",
    "host",
];

impl ProviderConfig {
    /// A provider of this id, wire and base URL with the defaults
    /// otherwise (no key, no model rows, 120 s, 3 retries, 60 s idle).
    pub fn new(id: &str, api: &str, base_url: &str) -> Self {
        Self {
            id: id.to_owned(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: None,
            api: api.to_owned(),
            models: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            max_retries: DEFAULT_RETRIES,
            idle_timeout: DEFAULT_IDLE,
            headers: HeaderMap::new(),
        }
    }

    /// Adds a header sent on every request (`headers.<name>` at `field`):
    /// a valid name the client does not own ([`OWNED_HEADERS`]) and a
    /// valid value, marked sensitive (never shown).
    pub fn add_header(&mut self, name: &str, value: &str, field: &str) -> Result<()> {
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| config_error(field, format!("{name:?} is not a valid header name")))?;
        if OWNED_HEADERS.contains(&parsed.as_str()) {
            return Err(config_error(
                field,
                format!("Talon sets {name:?} itself; it cannot be configured"),
            ));
        }
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| config_error(field, "the value is not a valid header value"))?;
        value.set_sensitive(true);
        self.headers.insert(parsed, value);
        Ok(())
    }

    /// The row of `model`, if listed.
    pub fn model(&self, model: &str) -> Option<&ModelInfo> {
        self.models.iter().find(|m| m.id == model)
    }
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const DEFAULT_RETRIES: u32 = 3;
const DEFAULT_IDLE: Duration = Duration::from_secs(60);

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api", &self.api)
            .field("models", &self.models)
            .field(
                "headers",
                &self
                    .headers
                    .keys()
                    .map(HeaderName::as_str)
                    .collect::<std::collections::BTreeSet<_>>(),
            )
            .finish_non_exhaustive()
    }
}

fn config_error(field: &str, message: impl Into<String>) -> ProviderError {
    ProviderError::Config {
        field: field.to_owned(),
        message: message.into(),
    }
}

/// A `provider/model` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    /// The provider id.
    pub provider: String,
    /// The model id at the provider.
    pub model: String,
}

impl ModelRef {
    /// Parses `provider/model` (the model id may contain more slashes).
    pub fn parse(text: &str, field: &str) -> Result<Self> {
        match text.split_once('/') {
            Some((provider, model)) if !provider.is_empty() && !model.is_empty() => Ok(Self {
                provider: provider.to_owned(),
                model: model.to_owned(),
            }),
            _ => Err(config_error(
                field,
                format!("expected \"provider/model\", got {text:?}"),
            )),
        }
    }
}
