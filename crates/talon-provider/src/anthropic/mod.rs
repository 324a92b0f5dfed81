//! An Anthropic Messages client (`api: "anthropic-messages"`): Anthropic
//! and the services that speak its wire (MiniMax, Synthetic, ...).
//!
//! `POST {baseUrl}/v1/messages` (`{baseUrl}/messages` when the base URL
//! already ends in `/v1`) with `x-api-key` and `anthropic-version:
//! 2023-06-01`, never `Authorization`, and the provider's `headers`. The body is built by `wire.rs`,
//! the reply read by `stream.rs`. Failed replies are retried by the shared
//! policy (`retry.rs`: 429, 529 `overloaded_error`, `retry-after-ms`,
//! `retry-after`, `x-should-retry`), and so is an `error` event inside a
//! 200 stream while nothing of the reply has reached the sink. A stream
//! silent for longer than the idle timeout is
//! [`ProviderError::Stalled`]; `ping` events keep it alive. Cancellation
//! is one `select!` over the whole request, retry waits included.

mod stream;
mod wire;

pub use wire::DEFAULT_MAX_TOKENS;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use crate::config::ProviderConfig;
use crate::error::{ProviderError, Result};
use crate::openai::{root_cause, shown_url};
use crate::retry::{self, Backoff};
use crate::sse::SseReader;
use crate::types::{ChatRequest, ChatResponse};
use crate::{BoxFuture, CancellationToken, DeltaSink, ModelProvider, RawReply};

/// The API version sent with every request.
pub const VERSION: &str = "2023-06-01";

/// A provider speaking Anthropic's Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    config: ProviderConfig,
    client: reqwest::Client,
}

impl AnthropicMessages {
    /// A client for `config`.
    pub fn new(config: ProviderConfig) -> Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| ProviderError::Transport {
                provider: config.id.clone(),
                base_url: shown_url(&config.base_url),
                message: e.to_string(),
                source: Some(Arc::new(e)),
            })?;
        Ok(Self { config, client })
    }

    /// Its configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// `{base}/v1/<path>`, or `{base}/<path>` when the base ends in `/v1`.
    fn url(&self, path: &str) -> String {
        let base = self.config.base_url.trim_end_matches('/');
        if base.ends_with("/v1") {
            format!("{base}/{path}")
        } else {
            format!("{base}/v1/{path}")
        }
    }

    fn unreachable(&self, error: reqwest::Error) -> ProviderError {
        ProviderError::Transport {
            provider: self.config.id.clone(),
            base_url: shown_url(&self.config.base_url),
            message: root_cause(&error),
            source: Some(Arc::new(error.without_url())),
        }
    }

    fn headers(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let builder = builder
            .headers(self.config.headers.clone())
            .header("anthropic-version", VERSION);
        match &self.config.api_key {
            Some(key) => builder.header("x-api-key", key),
            None => builder,
        }
    }

    /// Checks the credentials with `GET .../v1/models` (one attempt):
    /// `Ok` when accepted, [`ProviderError::Auth`] when refused.
    pub async fn check_auth(&self, timeout: Duration) -> Result<()> {
        let request = self.headers(self.client.get(self.url("models")).timeout(timeout));
        let response = request.send().await.map_err(|e| self.unreachable(e))?;
        let status = response.status().as_u16();
        match status {
            200..=299 => Ok(()),
            401 | 403 => Err(ProviderError::Auth {
                provider: self.config.id.clone(),
                status,
                message: "the provider refused the credentials".into(),
            }),
            _ => Err(ProviderError::Status {
                provider: self.config.id.clone(),
                status,
                message: "the provider could not check the credentials".into(),
            }),
        }
    }

    /// One request with its retries. Dropping it stops it.
    async fn run(&self, request: &ChatRequest, sink: DeltaSink<'_>) -> Result<ChatResponse> {
        let model_max = self.config.model(&request.model).and_then(|m| m.max_tokens);
        let long_ttl = self.config.base_url.contains("://api.anthropic.com");
        let body = wire::body(request, model_max, long_ttl);
        let tool_bytes = counted(&body["tools"]);
        let body = body.to_string();
        let url = self.url("messages");
        let mut backoff = Backoff::default();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let builder = self
                .client
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            let since = std::time::Instant::now();
            let response = self
                .headers(builder)
                .send()
                .await
                .map_err(|e| self.unreachable(e))?;
            let status = response.status().as_u16();
            retry::log_transport(&self.config.id, &url, attempt, status, since);
            let headers = response.headers().clone();
            if let Some(id) = headers.get("request-id").and_then(|v| v.to_str().ok()) {
                tracing::debug!(provider = %self.config.id, request_id = id, status, "model reply");
            }
            if response.status().is_success() {
                let outcome = if request.stream {
                    self.read_stream(response, &request.model, sink, attempt)
                        .await
                } else {
                    let bytes = response.bytes().await.map_err(|e| self.unreachable(e))?;
                    let value =
                        serde_json::from_slice(&bytes).map_err(|e| ProviderError::Malformed {
                            provider: self.config.id.clone(),
                            message: e.to_string(),
                            source: Some(Arc::new(e)),
                        })?;
                    stream::whole(&self.config.id, &request.model, &value, sink)
                        .map(|mut reply| {
                            reply.raw = RawReply::body(&bytes);
                            reply
                        })
                        .map_err(|e| (e, false))
                };
                match outcome {
                    Ok(reply) => {
                        return Ok(ChatResponse {
                            tool_bytes,
                            ..reply
                        });
                    }
                    Err((error @ ProviderError::Unavailable { status, .. }, false))
                        if attempt <= self.config.max_retries =>
                    {
                        let wait = backoff.next(&reqwest::header::HeaderMap::new());
                        tracing::warn!(provider = %self.config.id, status, attempt, %error, "error event before the reply; retrying");
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    Err((error, _)) => return Err(error),
                }
            }
            let text = response.text().await.unwrap_or_default();
            let wait = retry::after_failure(
                &self.config.id,
                &request.model,
                status,
                &headers,
                &text,
                attempt,
                self.config.max_retries,
                &mut backoff,
                error_message,
            )?;
            tokio::time::sleep(wait).await;
        }
    }

    /// The streamed reply; an error says whether deltas were forwarded.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        model: &str,
        sink: DeltaSink<'_>,
        attempt: u32,
    ) -> std::result::Result<ChatResponse, (ProviderError, bool)> {
        let mut reader = SseReader::new();
        let mut bytes = response.bytes_stream();
        let mut reply = stream::Reply::new(&self.config.id, model, attempt);
        let idle = self.config.idle_timeout;
        loop {
            let forwarded = reply.forwarded;
            let next = tokio::time::timeout(idle, bytes.next()).await;
            let Ok(next) = next else {
                let error = ProviderError::Stalled {
                    provider: self.config.id.clone(),
                    idle_ms: idle.as_millis() as u64,
                };
                return Err((error, true));
            };
            let Some(chunk) = next else { break };
            let chunk = chunk.map_err(|e| (self.unreachable(e), true))?;
            let events = reader.push(&chunk).map_err(|e| {
                let error = ProviderError::Malformed {
                    provider: self.config.id.clone(),
                    message: e.to_string(),
                    source: Some(Arc::new(e)),
                };
                (error, true)
            })?;
            for data in events {
                match reply.event(&data, sink) {
                    Ok(true) => return finish(reply, &mut reader),
                    Ok(false) => {}
                    Err(error) => return Err((error, forwarded || reply.forwarded)),
                }
            }
        }
        finish(reply, &mut reader)
    }
}

/// A streamed reply's end, with the events it came in.
fn finish(
    reply: stream::Reply,
    reader: &mut SseReader,
) -> std::result::Result<ChatResponse, (ProviderError, bool)> {
    let mut out = reply.finish().map_err(|e| (e, true))?;
    out.raw = reader.take_raw();
    Ok(out)
}

/// An Anthropic error body's `error.type: error.message`, else the text;
/// at most about 500 characters.
fn error_message(text: &str) -> String {
    let value = serde_json::from_str::<serde_json::Value>(text).ok();
    match value.as_ref().and_then(|v| v["error"]["type"].as_str()) {
        Some(kind) => format!("{kind}: {}", retry::error_message(text)),
        None => retry::error_message(text),
    }
}

impl ModelProvider for AnthropicMessages {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        sink: DeltaSink<'a>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ChatResponse>> {
        Box::pin(retry::bounded(
            &self.config.id,
            self.config.timeout,
            cancel,
            self.run(request, sink),
        ))
    }

    fn check_auth(&self, timeout: Duration) -> BoxFuture<'_, Result<()>> {
        Box::pin(AnthropicMessages::check_auth(self, timeout))
    }
}

/// Bytes of `value` as JSON text (0 for none), counted without writing it.
fn counted(value: &serde_json::Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    if value.is_null() {
        return 0;
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}
