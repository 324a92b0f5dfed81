//! `models.providers` and `agents` (defaults, the list, an agent's model,
//! parameters and sandbox).

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};

use super::{NOT_READ, SandboxSection, ToolSettings, openclaw};

/// Model providers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelsSection {
    /// Providers by id: the "provider" of "provider/model".
    pub providers: BTreeMap<String, ProviderEntry>,
}

/// One provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = provider_openclaw)]
pub struct ProviderEntry {
    /// The API's base URL (http:// or https://).
    #[schemars(with = "String", length(min = 1), regex(pattern = "^https?://"))]
    pub base_url: HttpUrl,
    /// The API key: a string, "${VARIABLE}" or {env: "VARIABLE"}.
    pub api_key: Option<SecretText>,
    /// The wire format: OpenAI's Chat Completions or Anthropic's Messages (default "openai-completions").
    pub api: Option<Api>,
    /// The models it serves.
    #[serde(default)]
    pub models: Vec<ProviderModel>,
    /// A request's time limit (default 120000).
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// Retries of a failed request, at most 10 (default 3).
    pub max_retries: Option<u64>,
    /// The longest silence inside a streamed reply (default 60000).
    #[schemars(range(min = 1))]
    pub idle_timeout_ms: Option<u64>,
    /// Headers sent on every request, by name (e.g. anthropic-beta); not authorization, x-api-key, anthropic-version, content-type, content-length or host.
    #[serde(default)]
    pub headers: BTreeMap<String, SecretText>,
}

/// An `http://` or `https://` URL (a provider's base URL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HttpUrl(String);

impl HttpUrl {
    /// The URL as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for HttpUrl {
    type Error = &'static str;
    fn try_from(url: String) -> Result<HttpUrl, &'static str> {
        if url.starts_with("http://") || url.starts_with("https://") {
            Ok(HttpUrl(url))
        } else {
            Err("expected an http:// or https:// URL")
        }
    }
}

impl From<HttpUrl> for String {
    fn from(url: HttpUrl) -> String {
        url.0
    }
}

/// The most retries of a failed request: a larger `maxRetries` is read as this.
pub const MAX_RETRIES: u32 = 10;

impl ProviderEntry {
    /// `maxRetries` as read: at most [`MAX_RETRIES`].
    pub fn max_retries(&self) -> Option<u32> {
        self.max_retries
            .map(|n| u32::try_from(n.min(u64::from(MAX_RETRIES))).unwrap_or(MAX_RETRIES))
    }
}

impl ProviderModel {
    /// `maxTokens` as read: at most `u32::MAX`.
    pub fn max_tokens(&self) -> Option<u32> {
        self.max_tokens
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }
}

fn provider_openclaw(schema: &mut Schema) {
    openclaw(schema, &["auth", "authHeader"], "OpenClaw's.");
}

/// A provider's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// OpenAI's Chat Completions.
    OpenaiCompletions,
    /// Anthropic's Messages.
    AnthropicMessages,
}

/// A string, "${VARIABLE}", or {env: "VARIABLE"}.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum SecretText {
    /// The value, or "${VARIABLE}".
    Text(String),
    /// {env: "VARIABLE"}.
    Env(EnvRef),
}

impl SecretText {
    /// Its value: the text, or the variable's value by `lookup`; `Err`
    /// names a variable that is not set.
    pub fn resolve(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
        match (self, self.variable()) {
            (_, Some(name)) => lookup(name).ok_or_else(|| name.to_owned()),
            (Self::Text(text), None) => Ok(text.clone()),
            (Self::Env(env), None) => Err(env.env.clone()),
        }
    }

    /// The variable it reads: `"${NAME}"` or `{env: "NAME"}`.
    pub fn variable(&self) -> Option<&str> {
        match self {
            Self::Text(s) => s.strip_prefix("${")?.strip_suffix('}'),
            Self::Env(e) => Some(&e.env),
        }
    }
}

/// {env: "VARIABLE"}.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnvRef {
    /// The variable.
    #[schemars(length(min = 1))]
    pub env: String,
}

/// A model a provider serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = model_openclaw)]
pub struct ProviderModel {
    /// The model's id at the provider.
    #[schemars(length(min = 1))]
    pub id: String,
    /// A display name.
    pub name: Option<String>,
    /// Its context window, in tokens.
    #[schemars(range(min = 1))]
    pub context_window: Option<u64>,
    /// The most tokens it writes.
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    /// Whether it reasons: extended thinking at "medium" when the agent sets no thinkingDefault (default false).
    pub reasoning: Option<bool>,
    /// Its prices in US dollars per million tokens: runs report `usage.costUsd` and `/metrics` `talon_model_cost_usd_total` from them; without them, no cost.
    pub cost: Option<ModelCost>,
}

fn model_openclaw(schema: &mut Schema) {
    openclaw(schema, &["input", "compat", "headers"], "OpenClaw's.");
}

/// Prices in US dollars per million tokens (input and output required).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    /// Uncached prompt tokens.
    #[schemars(range(min = 0, max = 1e6))]
    pub input: f64,
    /// Completion tokens.
    #[schemars(range(min = 0, max = 1e6))]
    pub output: f64,
    /// Prompt tokens read from the cache.
    #[schemars(range(min = 0, max = 1e6))]
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the cache.
    #[schemars(range(min = 0, max = 1e6))]
    pub cache_write: Option<f64>,
}

/// Agents: defaults and the list.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentsSection {
    /// What every agent gets unless it says otherwise.
    pub defaults: AgentDefaults,
    /// The agents, by id.
    pub list: Vec<AgentEntry>,
}

/// The model: "provider/model" or {primary: "provider/model"}.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum ModelRef {
    /// "provider/model".
    Name(#[schemars(length(min = 1))] String),
    /// {primary: "provider/model"}.
    Primary(PrimaryModel),
}

impl ModelRef {
    /// The "provider/model" it names, if any.
    pub fn reference(&self) -> Option<&str> {
        match self {
            Self::Name(name) => Some(name),
            Self::Primary(p) => p.primary.as_deref(),
        }
    }
}

/// {primary: "provider/model"}.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(transform = primary_openclaw)]
pub struct PrimaryModel {
    /// "provider/model".
    #[schemars(length(min = 1))]
    pub primary: Option<String>,
}

fn primary_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &["fallbacks"],
        "OpenClaw's fallback models; Talon does not use them.",
    );
}

/// Whether the model's reasoning is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Reasoning {
    /// Not shown (the default).
    Off,
    /// Shown as thinking.delta events.
    On,
    /// Shown as thinking.delta events.
    Stream,
}

/// The levels of `thinkingDefault` and `params.thinking`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Thinking {
    /// No extended thinking.
    Off,
    /// 1024 tokens.
    Minimal,
    /// 1024 tokens.
    Low,
    /// 4096 tokens.
    Medium,
    /// 16384 tokens.
    High,
    /// 32768 tokens.
    Xhigh,
    /// 32768 tokens.
    Max,
    /// The model decides.
    Adaptive,
}

/// Prompt-cache breakpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetention {
    /// None.
    None,
    /// Five minutes.
    Short,
    /// An hour (api.anthropic.com only).
    Long,
}

/// Model parameters: Talon reads those listed; OpenClaw's others are not read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(extend("additionalProperties" = true))]
pub struct AgentParams {
    /// Prompt-cache breakpoints (anthropic-messages): five minutes (short) or an hour (long, api.anthropic.com only); default short at api.anthropic.com, else none.
    pub cache_retention: Option<CacheRetention>,
}

/// Model parameters: Talon reads those listed; OpenClaw's others are not read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(extend("additionalProperties" = true))]
pub struct ModelParams {
    /// Prompt-cache breakpoints (anthropic-messages): five minutes (short) or an hour (long, api.anthropic.com only); default short at api.anthropic.com, else none.
    pub cache_retention: Option<CacheRetention>,
    /// Extended thinking for this model (an agent's thinkingDefault wins over it; it wins over agents.defaults.thinkingDefault).
    pub thinking: Option<Thinking>,
}

/// One model's settings in `agents.defaults.models`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(extend("additionalProperties" = true))]
pub struct ModelSettings {
    /// Model parameters: Talon reads those listed; OpenClaw's others are not read.
    pub params: ModelParams,
}

/// The keys an agent's entry and `agents.defaults` share.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCommon {
    /// The model: "provider/model" or {primary: "provider/model"}.
    pub model: Option<ModelRef>,
    /// Whether the model's reasoning is shown as thinking.delta events (on and stream: yes; default off).
    pub reasoning_default: Option<Reasoning>,
    /// Extended thinking: off, or a budget (minimal and low 1024 tokens, medium 4096, high 16384, xhigh and max 32768), or adaptive.
    pub thinking_default: Option<Thinking>,
    /// Model parameters: Talon reads those listed; OpenClaw's others are not read.
    pub params: Option<AgentParams>,
    /// The agent's working directory.
    #[schemars(length(min = 1))]
    pub workspace: Option<String>,
    /// The sandbox of every command the model runs (bubblewrap namespaces, a read-only system, seccomp, limits).
    pub sandbox: Option<SandboxSection>,
    /// This agent's tool settings (over the global ones).
    pub tools: ToolSettings,
    /// Sub-agents: with this section the agent's runs are offered sessions_spawn and subagents, within these bounds (an agent's own keys over agents.defaults.subagents, key by key); without it they are not.
    pub subagents: Option<SubagentsSection>,
}

/// What a parent run's cancel does to the sub-agents it spawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnParentCancel {
    /// Cancel them too (the default).
    Cancel,
    /// Let them finish; their results still reach the parent's session.
    Keep,
}

/// `agents.defaults.subagents` and `agents.list[].subagents`: how far an agent's runs may spawn sub-agents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = subagents_openclaw)]
pub struct SubagentsSection {
    /// How deep sub-agents may nest: 1 (default) lets a top-level run spawn children that cannot spawn themselves; at most 5.
    #[schemars(range(min = 1, max = 5))]
    pub max_spawn_depth: Option<u32>,
    /// Children one run may have unfinished at once (default 5, at most 20).
    #[schemars(range(min = 1, max = 20))]
    pub max_children_per_agent: Option<u32>,
    /// Sub-agent runs unfinished at once across the gateway's store, every node's (default 8).
    #[schemars(range(min = 1, max = 1000))]
    pub max_concurrent: Option<u32>,
    /// A child run's time limit in seconds (default 0: the run's own default).
    pub run_timeout_seconds: Option<u64>,
    /// The agents a run may spawn by id ("*": any); default only its own agent.
    pub allow_agents: Option<Vec<NonEmpty>>,
    /// What cancelling a run does to the sub-agents it spawned: cancel (default) or keep.
    pub on_parent_cancel: Option<OnParentCancel>,
}

fn subagents_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &[
            "archiveAfterMinutes",
            "announceTimeoutMs",
            "model",
            "thinking",
            "requireAgentId",
            "delegationMode",
        ],
        "OpenClaw's sub-agent setting; Talon does not read it.",
    );
}

impl SubagentsSection {
    /// This section over `base`, key by key.
    pub fn over(&self, base: &SubagentsSection) -> SubagentsSection {
        SubagentsSection {
            max_spawn_depth: self.max_spawn_depth.or(base.max_spawn_depth),
            max_children_per_agent: self.max_children_per_agent.or(base.max_children_per_agent),
            max_concurrent: self.max_concurrent.or(base.max_concurrent),
            run_timeout_seconds: self.run_timeout_seconds.or(base.run_timeout_seconds),
            allow_agents: self
                .allow_agents
                .clone()
                .or_else(|| base.allow_agents.clone()),
            on_parent_cancel: self.on_parent_cancel.or(base.on_parent_cancel),
        }
    }
}

impl AgentsSection {
    /// Agent `agent`'s sub-agent section (its own over the defaults'),
    /// `None` when neither is set: its runs spawn nothing.
    pub fn subagents(&self, agent: &str) -> Option<SubagentsSection> {
        let base = self.defaults.common.subagents.as_ref();
        let own = self
            .list
            .iter()
            .find(|a| a.id.as_deref() == Some(agent))
            .and_then(|a| a.common.subagents.as_ref());
        match (own, base) {
            (Some(own), Some(base)) => Some(own.over(base)),
            (own, base) => own.or(base).cloned(),
        }
    }
}

/// OpenClaw's agent keys Talon does not read.
const OPENCLAW_AGENT: &[&str] = &[
    "default",
    "identity",
    "groupChat",
    "skills",
    "heartbeat",
    "humanDelay",
    "agentDir",
    "memorySearch",
    "contextTokens",
    "verboseDefault",
    "elevatedDefault",
    "timeoutSeconds",
    "compaction",
    "contextPruning",
    "userTimezone",
    "envelopeTimezone",
    "imageModel",
    "blockStreamingDefault",
    "blockStreamingBreak",
    "blockStreamingChunk",
    "maxConcurrent",
    "skipBootstrap",
    "bootstrapMaxChars",
    "repoRoot",
    "typingMode",
    "typingIntervalSeconds",
    "cliBackends",
    "mediaMaxMb",
];

fn agent_openclaw(schema: &mut Schema) {
    openclaw(schema, OPENCLAW_AGENT, NOT_READ);
}

fn entry_openclaw(schema: &mut Schema) {
    agent_openclaw(schema);
    openclaw(
        schema,
        &["models"],
        "OpenClaw's; Talon reads agents.defaults.models.",
    );
}

/// What every agent gets unless it says otherwise.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = agent_openclaw)]
pub struct AgentDefaults {
    /// The keys every agent's entry also has.
    #[serde(flatten)]
    pub common: AgentCommon,
    /// Per model ("provider/model"): its params (cacheRetention, thinking).
    pub models: BTreeMap<String, ModelSettings>,
}

/// One agent.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = entry_openclaw)]
pub struct AgentEntry {
    /// The agent's id (required, unique).
    #[schemars(length(min = 1))]
    pub id: Option<String>,
    /// A display name.
    pub name: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// The keys `agents.defaults` also has.
    #[serde(flatten)]
    pub common: AgentCommon,
}

/// A string that holds something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct NonEmpty(#[schemars(length(min = 1))] pub String);

impl Thinking {
    /// The word, as written in the config.
    pub fn word(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
            Self::Adaptive => "adaptive",
        }
    }
}

impl AgentCommon {
    /// Its `params.cacheRetention`.
    fn cache_retention(&self) -> Option<CacheRetention> {
        self.params.as_ref().and_then(|p| p.cache_retention)
    }
}

impl super::Document {
    /// One of OpenClaw's model settings for a run of `agent` on
    /// `reference` ("provider/model"): the agent's entry, then the model's
    /// entry in `agents.defaults.models`, then `agents.defaults`.
    pub fn model_setting<T: Copy>(
        &self,
        agent: &str,
        reference: &str,
        of_agent: impl Fn(&AgentCommon) -> Option<T>,
        of_model: impl Fn(&ModelParams) -> Option<T>,
    ) -> Option<T> {
        self.agent(agent)
            .and_then(|a| of_agent(&a.common))
            .or_else(|| {
                self.agents
                    .defaults
                    .models
                    .get(reference)
                    .and_then(|m| of_model(&m.params))
            })
            .or_else(|| of_agent(&self.agents.defaults.common))
    }

    /// `agent`'s model: its own `model`, else `agents.defaults.model`.
    pub fn model(&self, agent: &str) -> Option<&ModelRef> {
        self.agent(agent)
            .and_then(|a| a.common.model.as_ref())
            .or(self.agents.defaults.common.model.as_ref())
    }

    /// `agent`'s `params.cacheRetention` (see [`Self::model_setting`]).
    pub fn cache_retention(&self, agent: &str, reference: &str) -> Option<CacheRetention> {
        self.model_setting(agent, reference, AgentCommon::cache_retention, |p| {
            p.cache_retention
        })
    }
}

super::scalar_or_object!(ModelRef, Name, Primary);

super::scalar_or_object!(SecretText, Text, Env);
