//! One agent run: the system prompt and the user's message, the model's
//! replies streamed from the provider, the tool calls they ask for run
//! through the chosen surface (direct, Code Mode, or Tool Search) and the
//! catalog's single execution path, until the model answers without
//! calling tools, the turn limit, an abort, or the run's timeout. Every
//! step is an event.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_codemode::{CodeModeConfig, CodeModeRun};
use talon_protocol::{CodeModeResult, EventType, ModelTool};
use talon_provider::{ChatRequest, Message, ModelProvider, StreamDelta, ToolCallRequest, Usage};
use talon_tools::{Caller, RunContext, ToolCall, ToolRunner};
use talon_toolsearch::ToolSearch;

use crate::events::{MAX_EVENT_RESULT, RunEvents};

/// The surface a run shows the model, with its handlers.
pub enum Surface {
    /// Every tool by name.
    Direct {
        /// The tool definitions.
        tools: Vec<ModelTool>,
        /// Name → catalog id.
        names: BTreeMap<String, String>,
    },
    /// `exec` and `wait` (and direct-only tools).
    CodeMode(Box<CodeModeRun>),
    /// Tool Search's control tools (and direct-only tools).
    ToolSearch(Arc<ToolSearch>),
}

impl Surface {
    /// The direct surface of a runner's catalog: cataloged and direct-only
    /// tools by name (the first of two same-named tools keeps the name).
    pub fn direct(runner: &ToolRunner) -> Self {
        let catalog = runner.catalog();
        let mut tools = Vec::new();
        let mut names = BTreeMap::new();
        for entry in catalog.entries().iter().chain(catalog.direct_only()) {
            if names.contains_key(&entry.tool.name) {
                continue;
            }
            names.insert(entry.tool.name.clone(), entry.id.clone());
            tools.push(ModelTool {
                name: entry.tool.name.clone(),
                description: entry.tool.description.clone(),
                parameters: entry.tool.parameters.clone(),
            });
        }
        Self::Direct { tools, names }
    }

    /// The model-visible tool definitions.
    pub fn tools(&self) -> Vec<ModelTool> {
        match self {
            Self::Direct { tools, .. } => tools.clone(),
            Self::CodeMode(run) => run.surface().tools.clone(),
            Self::ToolSearch(ts) => ts.surface().tools.clone(),
        }
    }

    /// Extra system prompt text (Tool Search's directory).
    pub fn prompt(&self) -> Option<String> {
        match self {
            Self::ToolSearch(ts) => ts.surface().prompt.clone(),
            _ => None,
        }
    }

    /// `direct`, `code_mode`, or the Tool Search mode.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Direct { .. } => "direct",
            Self::CodeMode(_) => "code_mode",
            Self::ToolSearch(ts) => ts.surface().mode.map_or("direct", |m| m.as_str()),
        }
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
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// The model answered.
    Completed,
    /// An error ended it.
    Failed,
    /// It was aborted.
    Cancelled,
    /// It ran out of time.
    TimedOut,
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// How it ended.
    pub status: RunStatus,
    /// The final answer (or the last text).
    pub text: String,
    /// Model requests made.
    pub turns: u32,
    /// Tool calls the model made (not counting nested ones).
    pub tool_calls: u32,
    /// Tokens used.
    pub usage: Usage,
    /// Wall time.
    pub duration: Duration,
    /// The error, when it failed.
    pub error: Option<String>,
}

/// Runs one user message through the loop.
pub struct AgentRun<'a> {
    /// The model.
    pub provider: &'a dyn ModelProvider,
    /// The run's single execution path.
    pub runner: Arc<ToolRunner>,
    /// The surface.
    pub surface: Surface,
    /// The run's context.
    pub ctx: RunContext,
    /// Where events go.
    pub events: Arc<RunEvents>,
    /// Settings.
    pub options: RunOptions,
}

/// Code Mode's config when it takes the surface; `None` leaves Tool Search
/// or direct exposure (Code Mode wins over Tool Search).
pub fn code_mode_wins(
    code_mode: Option<CodeModeConfig>,
    runner: &ToolRunner,
    tools_disabled: bool,
) -> Option<CodeModeConfig> {
    talon_codemode::applies(code_mode.as_ref(), runner.catalog(), tools_disabled)
        .then_some(code_mode)
        .flatten()
}

impl AgentRun<'_> {
    /// Runs `message`; the conversation so far is `history`.
    pub async fn run(&self, history: Vec<Message>, message: &str) -> RunResult {
        let started = Instant::now();
        self.events.emit(
            EventType::RunStarted,
            json!({"model": self.options.model, "surface": self.surface.kind(),
                   "tools": self.surface.tools().iter().map(|t| t.name.clone()).collect::<Vec<_>>()}),
        );
        let mut result = RunResult {
            status: RunStatus::Completed,
            text: String::new(),
            turns: 0,
            tool_calls: 0,
            usage: Usage::default(),
            duration: Duration::ZERO,
            error: None,
        };
        let outcome = tokio::time::timeout(
            self.options.timeout,
            self.turns(history, message, &mut result),
        )
        .await;
        result.duration = started.elapsed();
        let (kind, status) = match outcome {
            Err(_) => {
                result.error = Some(format!(
                    "the run exceeded its time limit of {} ms",
                    self.options.timeout.as_millis()
                ));
                (EventType::RunTimedOut, RunStatus::TimedOut)
            }
            Ok(Ok(())) => (EventType::RunCompleted, RunStatus::Completed),
            Ok(Err(error)) if self.ctx.abort.load(Ordering::Relaxed) => {
                result.error = Some(error);
                (EventType::RunCancelled, RunStatus::Cancelled)
            }
            Ok(Err(error)) => {
                result.error = Some(error);
                (EventType::RunFailed, RunStatus::Failed)
            }
        };
        result.status = status;
        self.events.emit(
            kind,
            json!({"text": result.text, "error": result.error, "turns": result.turns, "toolCalls": result.tool_calls,
                   "usage": {"inputTokens": result.usage.input_tokens, "outputTokens": result.usage.output_tokens,
                             "totalTokens": result.usage.input_tokens + result.usage.output_tokens},
                   "durationMs": result.duration.as_millis() as u64}),
        );
        result
    }

    async fn turns(
        &self,
        history: Vec<Message>,
        message: &str,
        result: &mut RunResult,
    ) -> Result<(), String> {
        let mut system = self.options.system_prompt.clone();
        if let Some(prompt) = self.surface.prompt() {
            system.push_str("\n\n");
            system.push_str(&prompt);
        }
        let mut messages = vec![Message::System(system)];
        messages.extend(history);
        messages.push(Message::User(message.to_owned()));
        let tools = Arc::new(self.surface.tools());
        loop {
            if self.ctx.abort.load(Ordering::Relaxed) {
                return Err("the run was aborted".into());
            }
            if result.turns >= self.options.max_turns {
                return Err(format!(
                    "the turn limit of {} was reached",
                    self.options.max_turns
                ));
            }
            result.turns += 1;
            let request = ChatRequest {
                model: self.options.model.clone(),
                messages: messages.clone(),
                tools: tools.clone(),
                max_tokens: self.options.max_tokens,
                stream: self.options.stream,
            };
            debug_payload(&request);
            let events = self.events.clone();
            let sink = move |delta: StreamDelta| {
                if let StreamDelta::Text(text) = delta {
                    events.emit(EventType::AssistantDelta, json!({"text": text}));
                }
            };
            let reply = self
                .provider
                .complete(&request, &sink, &self.ctx.abort)
                .await
                .map_err(|e| e.to_string())?;
            result.usage += reply.usage;
            if !reply.text.is_empty() {
                result.text = reply.text.clone();
                self.events.emit(
                    EventType::AssistantMessage,
                    json!({"text": reply.text, "toolCalls": reply.tool_calls.len(), "finishReason": reply.finish_reason}),
                );
            }
            messages.push(Message::Assistant {
                text: (!reply.text.is_empty()).then(|| reply.text.clone()),
                tool_calls: reply.tool_calls.clone(),
            });
            if reply.tool_calls.is_empty() {
                return Ok(());
            }
            result.tool_calls += reply.tool_calls.len() as u32;
            let outputs =
                futures::future::join_all(reply.tool_calls.iter().map(|call| self.call(call)))
                    .await;
            for (call, content) in reply.tool_calls.iter().zip(outputs) {
                messages.push(Message::Tool {
                    call_id: call.id.clone(),
                    content,
                });
            }
        }
    }

    /// One tool call the model made; returns the tool message content.
    async fn call(&self, call: &ToolCallRequest) -> String {
        let started = Instant::now();
        let args: Value = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(e) => {
                let error = format!("the arguments are not JSON: {e}");
                self.events.emit(
                    EventType::ToolCallStarted,
                    json!({"callId": call.id, "name": call.name}),
                );
                self.events.emit(
                    EventType::ToolCallFailed,
                    json!({"callId": call.id, "name": call.name, "error": error}),
                );
                return json!({"error": error, "status": "invalid_input"}).to_string();
            }
        };
        self.events.emit(
            EventType::ToolCallStarted,
            json!({"callId": call.id, "name": call.name, "arguments": args}),
        );
        let (value, ok) = self.dispatch(&call.id, &call.name, args).await;
        let ms = started.elapsed().as_millis() as u64;
        if ok {
            self.events.emit(
                EventType::ToolCallCompleted,
                json!({"callId": call.id, "name": call.name, "durationMs": ms,
                       "result": talon_tools::runner::cap(value.clone(), MAX_EVENT_RESULT)}),
            );
        } else {
            self.events.emit(
                EventType::ToolCallFailed,
                json!({"callId": call.id, "name": call.name, "durationMs": ms, "error": value}),
            );
        }
        value.to_string()
    }

    /// Runs a model call by name on the surface; the value and whether it
    /// succeeded.
    async fn dispatch(&self, call_id: &str, name: &str, args: Value) -> (Value, bool) {
        match &self.surface {
            Surface::CodeMode(run) => {
                if let Some(result) = run.handle(call_id, name, args.clone()).await {
                    let ok = !matches!(result, CodeModeResult::Failed { .. });
                    return (serde_json::to_value(&result).unwrap_or(Value::Null), ok);
                }
                self.direct_only(call_id, name, args).await
            }
            Surface::ToolSearch(ts) => {
                let value = ts.handle(&self.ctx, call_id, name, args).await;
                let ok = value.get("error").is_none();
                (value, ok)
            }
            Surface::Direct { names, .. } => match names.get(name) {
                Some(id) => self.runner_call(call_id, id, args).await,
                None => (
                    json!({"error": format!("unknown tool {name:?}"), "status": "not_found"}),
                    false,
                ),
            },
        }
    }

    async fn direct_only(&self, call_id: &str, name: &str, args: Value) -> (Value, bool) {
        let catalog = self.runner.catalog();
        match catalog.direct_only().iter().find(|e| e.tool.name == name) {
            Some(entry) => self.runner_call(call_id, &entry.id.clone(), args).await,
            None => (
                json!({"error": format!("unknown tool {name:?}"), "status": "not_found"}),
                false,
            ),
        }
    }

    async fn runner_call(&self, call_id: &str, id: &str, args: Value) -> (Value, bool) {
        let outcome = self
            .runner
            .call(
                &self.ctx,
                ToolCall {
                    call_id: call_id.to_owned(),
                    id: id.to_owned(),
                    args,
                    caller: Caller::Direct,
                },
            )
            .await;
        let ok = matches!(outcome, talon_tools::CallOutcome::Ok(_));
        (outcome.to_json(id), ok)
    }
}

/// `TALON_DEBUG_MODEL_PAYLOAD=tools` logs the model-visible tool names;
/// `full-redacted` logs the request body, bounded, with credential-like
/// fields redacted (prompts and message text still show: debugging only).
fn debug_payload(request: &ChatRequest) {
    let Ok(mode) = std::env::var("TALON_DEBUG_MODEL_PAYLOAD") else {
        return;
    };
    match mode.as_str() {
        "tools" => {
            let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            tracing::info!(target: "talon::model_payload", model = %request.model, tools = ?names, "model-visible tools");
        }
        "full-redacted" => {
            let mut body = request.to_openai();
            redact(&mut body);
            let text: String = body.to_string().chars().take(DEBUG_PAYLOAD_CHARS).collect();
            tracing::info!(target: "talon::model_payload", body = %text, "model request (redacted)");
        }
        _ => {}
    }
}

/// Characters of a request body `full-redacted` logs.
pub const DEBUG_PAYLOAD_CHARS: usize = 16 * 1024;

/// Replaces the values of credential-like keys with `<redacted>`.
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                let k = key.to_ascii_lowercase().replace(['_', '-'], "");
                if [
                    "apikey",
                    "authorization",
                    "token",
                    "secret",
                    "password",
                    "accesstoken",
                ]
                .iter()
                .any(|s| k.contains(s))
                {
                    *v = Value::String("<redacted>".into());
                } else {
                    redact(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}
