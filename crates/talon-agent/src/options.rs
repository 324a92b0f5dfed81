//! The settings of one run ([`RunOptions`]) and the reasoning exposure
//! policy ([`Reasoning`], OpenClaw's `reasoningDefault`).

use std::collections::BTreeSet;
use std::time::Duration;

use talon_provider::{CacheRetention, Thinking};

/// Whether the model's reasoning is shown as `thinking.delta` events
/// (OpenClaw's `reasoningDefault`). Whatever it says, the reasoning is
/// kept on the assistant message and replayed to the provider unchanged
/// (visibility never changes what the model is sent back), and it never
/// appears in `assistant.*` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reasoning {
    /// No `thinking.delta` events (the default).
    #[default]
    Off,
    /// `thinking.delta` events. The protocol has no event for a whole
    /// reasoning message, so this is `Stream` under OpenClaw's name.
    On,
    /// `thinking.delta` events as the reasoning streams.
    Stream,
}

impl Reasoning {
    /// `off`, `on` or `stream`; `None` for another word.
    pub fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "off" => Self::Off,
            "on" => Self::On,
            "stream" => Self::Stream,
            _ => return None,
        })
    }
}

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The provider's model id.
    pub model: String,
    /// The system prompt.
    pub system_prompt: String,
    /// Most model requests.
    pub max_turns: u32,
    /// The whole run's time limit.
    pub timeout: Duration,
    /// Most tokens per reply.
    pub max_tokens: Option<u32>,
    /// Stream replies.
    pub stream: bool,
    /// Model-visible names of the run's client tools: tools the app
    /// answers between runs. A turn that calls one runs its other calls,
    /// then ends the run `completed` with the client calls pending
    /// ([`crate::RunResult::pending`]); the app's next run on the session
    /// answers them ([`crate::AgentRun::proceed`]).
    pub client_tools: BTreeSet<String>,
    /// Whether reasoning is shown as `thinking.delta` events.
    pub reasoning: Reasoning,
    /// Extended thinking asked of the model.
    pub thinking: Thinking,
    /// Prompt-cache breakpoints asked of the provider.
    pub cache: CacheRetention,
    /// The model's prices: each reply's usage is priced with them
    /// ([`crate::RunResult::cost_usd`]); `None`, no cost is reported.
    pub cost: Option<talon_provider::ModelCost>,
    /// Client calls earlier runs left for the app that this run's input
    /// settles: their ends are emitted right after `run.started`.
    pub settled: Vec<crate::SettledCall>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            model: String::new(),
            system_prompt:
                "You are a helpful agent. Use the tools when they help; answer concisely.".into(),
            max_turns: 16,
            timeout: Duration::from_secs(600),
            max_tokens: None,
            stream: true,
            client_tools: BTreeSet::new(),
            reasoning: Reasoning::Off,
            thinking: Thinking::Off,
            cache: CacheRetention::None,
            cost: None,
            settled: Vec::new(),
        }
    }
}
