//! Model providers. [`ModelProvider`] is the interface the agent loop
//! drives; [`openai::OpenAiCompatible`] speaks OpenAI's Chat Completions
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
//! Server-Sent Events (`sse.rs`, bounded events), parallel tool calls assembled by index, usage
//! (`stream_options.include_usage`), retries on 429 and 5xx with exponential backoff or the
//! server's `Retry-After`, a per-request timeout, cancellation by one `select!` over the whole
//! request, and errors that say what to do (a rejected key, an unknown model) without showing the
//! key. `config` reads `models.providers.<id>` in OpenClaw's shape (`baseUrl`, `apiKey` literal or
//! `${VAR}`/`{env}`, `api: "openai-completions"`, `models[]`) and `provider/model` references
//! (`parse_providers`).
//!
//! Deliberately absent: Anthropic Messages and reasoning deltas.

pub mod config;
mod error;
pub mod openai;
mod sse;
mod types;

pub use config::{ModelRef, ProviderConfig, parse_providers};
pub use error::{ErrorSource, ProviderError, Result};
pub use types::{
    ChatRequest, ChatResponse, Message, StreamDelta, ToolCallRequest, Usage, tools_json,
};

use std::future::Future;
use std::pin::Pin;

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
}
