//! Model providers. [`ModelProvider`] is the interface the agent loop
//! drives; [`openai::OpenAiCompatible`] speaks OpenAI's Chat Completions
//! (OpenAI, vLLM, Ollama, llama.cpp and others): streamed replies as
//! Server-Sent Events, tool calls (parallel ones too), usage, retries with
//! backoff on 429 and 5xx honouring `Retry-After`, a request timeout,
//! cancellation by the run's [`CancellationToken`] (awaited, never
//! polled: the request is dropped the moment the token is cancelled), and
//! clear errors for bad keys and unknown models.

pub mod config;
mod error;
pub mod openai;
mod sse;
mod types;

pub use config::{ModelRef, ProviderConfig, parse_providers};
pub use error::{ProviderError, Result};
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
