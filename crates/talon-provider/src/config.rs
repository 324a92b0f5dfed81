//! `models.providers.<id>` in OpenClaw's shape and model references
//! (`"provider/model"`, as in `agents.defaults.model.primary`). `apiKey`
//! may be a literal, `"${VAR}"` or `{env: "VAR"}`; it is resolved when the
//! provider is built and never shown.
//!
//! `api` picks the wire: `"openai-completions"` (the default) or
//! `"anthropic-messages"`. A model row's `maxTokens` is the reply limit
//! Anthropic requires on every request (8192 when the row has none), and
//! its `reasoning: true` turns extended thinking on at `medium` when the
//! agent sets no `thinkingDefault`.
//!
//! `headers` maps header names to values (each a literal, `"${VAR}"` or
//! `{env: "VAR"}`, like `apiKey`), sent on every request of either wire,
//! e.g. `anthropic-beta`. Names the client owns ([`OWNED_HEADERS`]) and
//! names or values HTTP does not allow are refused; values are never shown.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

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

    /// Reads `models[].cost`: `invalid_config` naming the price at fault.
    fn parse(value: &Value, at: &str) -> Result<Option<Self>> {
        let Some(object) = value.as_object() else {
            return match value {
                Value::Null => Ok(None),
                _ => Err(config_error(at, "expected an object of prices")),
            };
        };
        let price = |key: &str| -> Result<Option<u64>> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => match v.as_f64() {
                    Some(usd) if usd.is_finite() && (0.0..=1e6).contains(&usd) => {
                        Ok(Some((usd * 1e6).round() as u64))
                    }
                    _ => Err(config_error(
                        &format!("{at}.{key}"),
                        "expected US dollars per million tokens, 0 to 1,000,000",
                    )),
                },
            }
        };
        let required = |key: &str| {
            price(key)?.ok_or_else(|| {
                config_error(
                    &format!("{at}.{key}"),
                    "a model's cost needs its input and output prices",
                )
            })
        };
        Ok(Some(Self {
            input: required("input")?,
            output: required("output")?,
            cache_read: price("cacheRead")?,
            cache_write: price("cacheWrite")?,
        }))
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

/// Resolves a secret: a literal, `"${VAR}"`, or `{env: "VAR"}`.
pub fn resolve_secret(
    value: &Value,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String> {
    let env_name = match value {
        Value::String(text) => match text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
            Some(name) => Some(name.to_owned()),
            None => return Ok(text.clone()),
        },
        Value::Object(map) => map.get("env").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    };
    let Some(name) = env_name else {
        return Err(config_error(
            field,
            "expected a string, \"${VAR}\" or {env: \"VAR\"}",
        ));
    };
    lookup(&name)
        .ok_or_else(|| config_error(field, format!("environment variable {name} is not set")))
}

/// Reads a provider's `headers` (at `field`): valid names the client
/// does not own, values resolved like `apiKey`.
fn parse_headers(
    value: Option<&Value>,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    let map = match value {
        None | Some(Value::Null) => return Ok(headers),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(config_error(
                field,
                "expected an object of header values by name",
            ));
        }
    };
    for (name, value) in map {
        let at = format!("{field}.{name}");
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| config_error(&at, format!("{name:?} is not a valid header name")))?;
        if OWNED_HEADERS.contains(&parsed.as_str()) {
            return Err(config_error(
                &at,
                format!("Talon sets {name:?} itself; it cannot be configured"),
            ));
        }
        let text = resolve_secret(value, &at, lookup)?;
        let mut value = HeaderValue::from_str(&text)
            .map_err(|_| config_error(&at, "the value is not a valid header value"))?;
        value.set_sensitive(true);
        headers.insert(parsed, value);
    }
    Ok(headers)
}

/// Reads `models.providers`.
pub fn parse_providers(
    providers: Option<&Value>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ProviderConfig>> {
    let Some(providers) = providers.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let map = providers
        .as_object()
        .ok_or_else(|| config_error("models.providers", "expected an object of providers by id"))?;
    let mut out = Vec::new();
    for (id, value) in map {
        let root = format!("models.providers.{id}");
        let field = |key: &str| format!("{root}.{key}");
        let object = value
            .as_object()
            .ok_or_else(|| config_error(&root, "expected an object"))?;
        const KNOWN: &[&str] = &[
            "baseUrl",
            "apiKey",
            "api",
            "models",
            "timeoutMs",
            "maxRetries",
            "idleTimeoutMs",
            "headers",
            "auth",
        ];
        for key in object.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
            tracing::warn!(field = %field(key), "unknown provider setting ignored");
        }
        let base_url = object
            .get("baseUrl")
            .and_then(Value::as_str)
            .ok_or_else(|| config_error(&field("baseUrl"), "required: the API's base URL"))?
            .trim_end_matches('/')
            .to_owned();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(config_error(
                &field("baseUrl"),
                "expected an http:// or https:// URL",
            ));
        }
        let api_key = match object.get("apiKey") {
            None | Some(Value::Null) => None,
            Some(v) => Some(resolve_secret(v, &field("apiKey"), lookup)?),
        };
        let api = object
            .get("api")
            .and_then(Value::as_str)
            .unwrap_or(OPENAI_COMPLETIONS)
            .to_owned();
        if !APIS.contains(&api.as_str()) {
            return Err(config_error(
                &field("api"),
                format!(
                    "{api:?} is not supported; use \"{OPENAI_COMPLETIONS}\" or \"{ANTHROPIC_MESSAGES}\""
                ),
            ));
        }
        let models = match object.get("models") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|m| {
                    Ok(ModelInfo {
                        id: m["id"]
                            .as_str()
                            .ok_or_else(|| {
                                config_error(&field("models"), "every model needs an id")
                            })?
                            .to_owned(),
                        name: m["name"].as_str().map(str::to_owned),
                        context_window: m["contextWindow"].as_u64(),
                        max_tokens: m["maxTokens"]
                            .as_u64()
                            .map(|t| t.min(u64::from(u32::MAX)) as u32),
                        reasoning: m["reasoning"].as_bool().unwrap_or(false),
                        cost: ModelCost::parse(&m["cost"], &field("models[].cost"))?,
                    })
                })
                .collect::<Result<_>>()?,
            Some(_) => return Err(config_error(&field("models"), "expected a list")),
        };
        let timeout = match object.get("timeoutMs").and_then(Value::as_u64) {
            Some(ms) if ms > 0 => Duration::from_millis(ms),
            _ => DEFAULT_TIMEOUT,
        };
        let idle_timeout = match object.get("idleTimeoutMs").and_then(Value::as_u64) {
            Some(ms) if ms > 0 => Duration::from_millis(ms),
            _ => DEFAULT_IDLE,
        };
        let headers = parse_headers(object.get("headers"), &field("headers"), lookup)?;
        let max_retries = object
            .get("maxRetries")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_RETRIES, |n| n.min(10) as u32);
        out.push(ProviderConfig {
            id: id.clone(),
            base_url,
            api_key,
            api,
            models,
            timeout,
            max_retries,
            idle_timeout,
            headers,
        });
    }
    Ok(out)
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
