//! Model providers. [`ModelProvider`] is the interface the agent loop
//! drives; [`build`] makes the client a provider's `api` names:
//! [`anthropic::AnthropicMessages`] speaks Anthropic's Messages API
//! (`anthropic-messages`: streamed content blocks, parallel tool use,
//! extended thinking replayed with its signatures, prompt-cache
//! breakpoints, cache token counts, 529 `overloaded_error` retries);
//! [`openai::OpenAiCompatible`] speaks OpenAI's Chat Completions
//! (OpenAI, vLLM, Ollama, llama.cpp and others): streamed replies as
//! Server-Sent Events, tool calls (parallel ones too), usage, retries with
//! backoff on 429 and 5xx honouring `Retry-After`, a request timeout,
//! cancellation by the run's [`CancellationToken`] (awaited, never
//! polled: the request is dropped the moment the token is cancelled), and
//! clear errors for bad keys and unknown models.
//!
//! # Parts
//!
//! `ModelProvider::complete(request, sink, cancel)` is the interface. `OpenAiCompatible`
//! (`openai.rs`) is a Chat Completions client over reqwest: streamed replies parsed from
//! Server-Sent Events (`sse.rs`, bounded events, linear in the bytes), parallel tool calls
//! assembled by index, usage (`stream_options.include_usage`), reasoning deltas
//! (`reasoning_content`/`reasoning`) as [`StreamDelta::Thinking`], a per-request timeout, an idle
//! timeout inside streams, cancellation by one `select!` over the whole request, and errors that
//! say what to do (a rejected key, an unknown model) without showing the key.
//! `AnthropicMessages` (`anthropic/`: `wire.rs` the request body, `stream.rs` the reply's state
//! machine) has the same shape. Both retry by one policy (`retry.rs`: 408, 409, 429, 5xx and 529,
//! `retry-after-ms`, `retry-after`, `x-should-retry`, backoff with jitter). `config` holds a
//! provider's runtime settings ([`ProviderConfig`]) and `provider/model` references
//! ([`ModelRef`]); the config keys (`models.providers.<id>`) are declared in `talon_config::model`
//! and turned into a [`ProviderConfig`] by talon-runtime.
//!
//! Deliberately absent: images, server tools, `<think>` tags inside Chat Completions text, and
//! replaying Chat Completions reasoning to the provider.

pub mod anthropic;
pub mod config;
mod error;
pub mod openai;
mod raw;
mod retry;
mod sse;
mod types;

pub use config::{ModelCost, ModelInfo, ModelRef, ProviderConfig};
pub use error::{ErrorSource, ProviderError, Result};
pub use raw::{MAX_RAW_BYTES, RawReply};
pub use types::{
    CacheRetention, ChatRequest, ChatResponse, Message, ReasoningBlock, StreamDelta, Thinking,
    ToolCallRequest, Usage, tools_json,
};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

pub use tokio_util::sync::CancellationToken;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Receives streamed deltas while a reply is produced.
pub type DeltaSink<'a> = &'a (dyn Fn(StreamDelta) + Send + Sync);

/// A chat model behind some API.
pub trait ModelProvider: Send + Sync {
    /// Produces one assistant reply to `request`, streaming deltas to
    /// `sink` as they arrive. Cancelling `cancel` ends the request at once
    /// with [`ProviderError::Cancelled`] (an already cancelled token sends
    /// nothing).
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        sink: DeltaSink<'a>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ChatResponse>>;

    /// Checks the credentials (one request, bounded by `timeout`): `Ok`
    /// when the provider accepts them, [`ProviderError::Auth`] when it
    /// refuses them, another error when it cannot be asked.
    fn check_auth(&self, timeout: Duration) -> BoxFuture<'_, Result<()>>;
}

/// The client for `config`'s `api`.
pub fn build(config: ProviderConfig) -> Result<Arc<dyn ModelProvider>> {
    Ok(match config.api.as_str() {
        config::ANTHROPIC_MESSAGES => Arc::new(anthropic::AnthropicMessages::new(config)?),
        config::OPENAI_COMPLETIONS => Arc::new(openai::OpenAiCompatible::new(config)?),
        other => {
            return Err(ProviderError::Config {
                field: format!("models.providers.{}.api", config.id),
                message: format!(
                    "{other:?} is not supported; use \"{}\" or \"{}\"",
                    config::OPENAI_COMPLETIONS,
                    config::ANTHROPIC_MESSAGES
                ),
            });
        }
    })
}
