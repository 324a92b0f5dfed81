//! An OpenAI-compatible Chat Completions client.
//!
//! Cancellation is one `select!` in [`ModelProvider::complete`]: the
//! whole request (sending, retry waits, reading the stream) races the
//! run's token and is dropped, closing the connection, the moment it is
//! cancelled. Nothing polls. Retries follow the shared policy
//! (`retry.rs`); a stream silent for longer than the idle timeout is
//! [`ProviderError::Stalled`]. Reasoning (`delta.reasoning_content`, else
//! `delta.reasoning`; whole replies' `message.reasoning_content` or
//! `message.reasoning`) is passed on as [`StreamDelta::Thinking`] and is
//! never sent back. The provider's `headers` go with every request.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use crate::config::ProviderConfig;
use crate::error::{ProviderError, Result};
use crate::retry::{self, Backoff};
use crate::sse::SseReader;
use crate::types::{ChatRequest, ChatResponse, StreamDelta, ToolCallRequest, Usage};
use crate::{BoxFuture, CancellationToken, DeltaSink, ModelProvider, RawReply};

/// A provider speaking Chat Completions.
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    config: ProviderConfig,
    client: reqwest::Client,
    /// The last tool list sent and its JSON: a run sends the same list on
    /// every turn, so it is serialized once.
    tools_cache: std::sync::Arc<std::sync::Mutex<Option<ToolsCache>>>,
}

type ToolsCache = (
    std::sync::Arc<Vec<talon_protocol::ModelTool>>,
    std::sync::Arc<String>,
);

impl OpenAiCompatible {
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
        Ok(Self {
            config,
            client,
            tools_cache: Default::default(),
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The request's tools as JSON text, from the cache when the list is
    /// the one sent last (the same `Arc`).
    fn tools_text(&self, request: &ChatRequest) -> Option<std::sync::Arc<String>> {
        if request.tools.is_empty() {
            return None;
        }
        let mut cache = self.tools_cache.lock().ok()?;
        if let Some((tools, text)) = cache.as_ref()
            && std::sync::Arc::ptr_eq(tools, &request.tools)
        {
            return Some(text.clone());
        }
        let text = std::sync::Arc::new(crate::types::tools_json(&request.tools).to_string());
        *cache = Some((request.tools.clone(), text.clone()));
        Some(text)
    }

    fn provider(&self) -> String {
        self.config.id.clone()
    }

    /// A request that did not reach the provider (or broke on the way).
    fn unreachable(&self, error: reqwest::Error) -> ProviderError {
        ProviderError::Transport {
            provider: self.provider(),
            base_url: shown_url(&self.config.base_url),
            message: root_cause(&error),
            source: Some(Arc::new(error.without_url())),
        }
    }

    /// Checks the credentials with `GET {baseUrl}/models` (one attempt,
    /// bounded by `timeout`): `Ok` when the provider accepts them,
    /// [`ProviderError::Auth`] when it refuses them, another error when it
    /// cannot be asked. The key is sent, never reported.
    pub async fn check_auth(&self, timeout: Duration) -> Result<()> {
        let url = format!("{}/models", self.config.base_url.trim_end_matches('/'));
        let mut request = self
            .client
            .get(url)
            .timeout(timeout)
            .headers(self.config.headers.clone());
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| self.unreachable(e))?;
        let status = response.status().as_u16();
        match status {
            200..=299 => Ok(()),
            401 | 403 => Err(ProviderError::Auth {
                provider: self.provider(),
                status,
                message: "the provider refused the credentials".into(),
            }),
            _ => Err(ProviderError::Status {
                provider: self.provider(),
                status,
                message: "the provider could not check the credentials".into(),
            }),
        }
    }

    /// One request with its retries. Dropping it stops it (cancellation).
    async fn run(&self, request: &ChatRequest, sink: DeltaSink<'_>) -> Result<ChatResponse> {
        let tools = self.tools_text(request);
        let tool_bytes = tools.as_ref().map_or(0, |t| t.len() as u64);
        let body = request.to_openai_text(tools.as_deref().map(String::as_str));
        let url = format!("{}/chat/completions", self.config.base_url);
        let mut backoff = Backoff::default();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut builder = self
                .client
                .post(&url)
                .headers(self.config.headers.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            if let Some(key) = &self.config.api_key {
                builder = builder.bearer_auth(key);
            }
            let since = std::time::Instant::now();
            let response = builder.send().await.map_err(|e| self.unreachable(e))?;
            let status = response.status().as_u16();
            retry::log_transport(&self.config.id, &url, attempt, status, since);
            if response.status().is_success() {
                let reply = if request.stream {
                    self.read_stream(response, sink).await
                } else {
                    let bytes = response.bytes().await.map_err(|e| self.unreachable(e))?;
                    self.read_whole(&bytes, sink)
                };
                return reply.map(|reply| ChatResponse {
                    tool_bytes,
                    ..reply
                });
            }
            let headers = response.headers().clone();
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
                retry::error_message,
            )?;
            tokio::time::sleep(wait).await;
        }
    }

    fn malformed(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::Malformed {
            provider: self.provider(),
            message: message.into(),
            source: None,
        }
    }

    /// A reply `error` found malformed, said as `message`.
    fn undecodable(
        &self,
        message: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> ProviderError {
        ProviderError::Malformed {
            provider: self.provider(),
            message: message.into(),
            source: Some(Arc::new(error)),
        }
    }

    fn read_whole(&self, bytes: &[u8], sink: DeltaSink<'_>) -> Result<ChatResponse> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| self.undecodable(e.to_string(), e))?;
        let choice = &value["choices"][0];
        if !choice.is_object() {
            return Err(self.malformed("no choices"));
        }
        let message = &choice["message"];
        let tool_calls = match &message["tool_calls"] {
            Value::Array(calls) => calls
                .iter()
                .map(|c| {
                    Ok(ToolCallRequest {
                        id: c["id"]
                            .as_str()
                            .ok_or_else(|| self.malformed("a tool call has no id"))?
                            .to_owned(),
                        name: c["function"]["name"]
                            .as_str()
                            .ok_or_else(|| self.malformed("a tool call has no name"))?
                            .to_owned(),
                        arguments: c["function"]["arguments"]
                            .as_str()
                            .unwrap_or("{}")
                            .to_owned(),
                    })
                })
                .collect::<Result<_>>()?,
            _ => Vec::new(),
        };
        if let Some(thinking) = reasoning_text(message) {
            sink(StreamDelta::Thinking(thinking.to_owned()));
        }
        Ok(ChatResponse {
            text: message["content"].as_str().unwrap_or_default().to_owned(),
            tool_calls,
            usage: usage(&value["usage"]),
            finish_reason: choice["finish_reason"]
                .as_str()
                .unwrap_or("stop")
                .to_owned(),
            reasoning: Vec::new(),
            raw: RawReply::body(bytes),
            tool_bytes: 0,
        })
    }

    async fn read_stream(
        &self,
        response: reqwest::Response,
        sink: DeltaSink<'_>,
    ) -> Result<ChatResponse> {
        let mut reader = SseReader::new();
        let mut stream = response.bytes_stream();
        let mut out = ChatResponse::default();
        let mut calls: Vec<ToolCallRequest> = Vec::new();
        let mut done = false;
        while !done {
            let next = tokio::time::timeout(self.config.idle_timeout, stream.next()).await;
            let Ok(next) = next else {
                return Err(ProviderError::Stalled {
                    provider: self.provider(),
                    idle_ms: self.config.idle_timeout.as_millis() as u64,
                });
            };
            let Some(chunk) = next else {
                break;
            };
            let chunk = chunk.map_err(|e| self.unreachable(e))?;
            for data in reader
                .push(&chunk)
                .map_err(|e| self.undecodable(e.to_string(), e))?
            {
                if data.trim() == "[DONE]" {
                    done = true;
                    break;
                }
                let value: Value = serde_json::from_str(&data)
                    .map_err(|e| self.undecodable(format!("{e} in {data:.120}"), e))?;
                if let Some(error) = value.get("error") {
                    return Err(self.malformed(format!("error in stream: {error}")));
                }
                if value["usage"].is_object() {
                    out.usage = usage(&value["usage"]);
                }
                let Some(choice) = value["choices"].get(0) else {
                    continue;
                };
                if let Some(reason) = choice["finish_reason"].as_str() {
                    out.finish_reason = reason.to_owned();
                }
                let delta = &choice["delta"];
                if let Some(thinking) = reasoning_text(delta) {
                    sink(StreamDelta::Thinking(thinking.to_owned()));
                }
                if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                    out.text.push_str(text);
                    sink(StreamDelta::Text(text.to_owned()));
                }
                if let Some(deltas) = delta["tool_calls"].as_array() {
                    for d in deltas {
                        let index = d["index"].as_u64().map_or(calls.len(), |i| i as usize);
                        if index > calls.len() || index > 256 {
                            return Err(
                                self.malformed(format!("tool call index {index} out of order"))
                            );
                        }
                        if index == calls.len() {
                            let id = d["id"].as_str().unwrap_or_default().to_owned();
                            let name = d["function"]["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned();
                            sink(StreamDelta::ToolCallStarted {
                                index,
                                id: id.clone(),
                                name: name.clone(),
                            });
                            calls.push(ToolCallRequest {
                                id,
                                name,
                                arguments: String::new(),
                            });
                        } else if let Some(name) = d["function"]["name"].as_str() {
                            calls[index].name.push_str(name);
                        }
                        if let Some(text) = d["function"]["arguments"]
                            .as_str()
                            .filter(|t| !t.is_empty())
                        {
                            calls[index].arguments.push_str(text);
                            sink(StreamDelta::ToolCallArguments {
                                index,
                                text: text.to_owned(),
                            });
                        }
                    }
                }
            }
        }
        if !done && out.finish_reason.is_empty() {
            return Err(self.malformed("the stream ended before the reply did"));
        }
        for (i, call) in calls.iter_mut().enumerate() {
            if call.name.is_empty() {
                return Err(self.malformed(format!("tool call {i} has no name")));
            }
            if call.id.is_empty() {
                call.id = format!("call_{i}");
            }
            if call.arguments.trim().is_empty() {
                call.arguments = "{}".into();
            }
        }
        out.tool_calls = calls;
        if out.finish_reason.is_empty() {
            out.finish_reason = "stop".into();
        }
        out.raw = reader.take_raw();
        Ok(out)
    }
}

impl ModelProvider for OpenAiCompatible {
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
        Box::pin(OpenAiCompatible::check_auth(self, timeout))
    }
}

fn usage(value: &Value) -> Usage {
    Usage {
        input_tokens: value["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: value["completion_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: value["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        cache_write_tokens: 0,
    }
}

/// A delta's or message's reasoning: `reasoning_content` (DeepSeek,
/// SGLang), else `reasoning` (vLLM, OpenRouter); empty or non-string
/// values are none.
fn reasoning_text(value: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|key| value[*key].as_str().filter(|t| !t.is_empty()))
}

/// What a transport error comes down to ("Connection refused (os error
/// 111)"), without the request's URL (which could carry credentials).
pub(crate) fn root_cause(error: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let mut text = cause.to_string();
    if let Some(url) = error.url() {
        text = text.replace(url.as_str(), "<url>");
    }
    if error.is_timeout() && !text.contains("timed out") {
        text = format!("timed out ({text})");
    }
    text
}

/// A base URL as messages show it: no user, password or query.
pub(crate) fn shown_url(base: &str) -> String {
    match reqwest::Url::parse(base) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.as_str().trim_end_matches('/').to_owned()
        }
        Err(_) => "<an unparsable URL>".to_owned(),
    }
}
