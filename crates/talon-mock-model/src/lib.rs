//! A scripted mock model: a real HTTP server on 127.0.0.1 that speaks
//! OpenAI's Chat Completions (`POST /v1/chat/completions`, streamed as
//! Server-Sent Events or not), replays scripted turns in order, and
//! records every request body. The LLM is the one thing Talon's tests
//! mock, and only this way.
//!
//! Its own crate, so that the binary's `mock-model` feature (`talon agent
//! --mock-script`, the cookbook, the benchmarks) compiles this file and no
//! test harness.
//!
//! A script (also the JSON file `talon agent --mock-script FILE` reads):
//!
//! ```json
//! {"apiKey": "sk-test", "models": ["mock-model"],
//!  "turns": [
//!    {"toolCalls": [{"name": "exec", "arguments": {"code": "return 1"}}]},
//!    {"text": "The answer is 1.", "usage": {"prompt": 120, "completion": 6}},
//!    {"status": 429, "retryAfter": 1},
//!    {"delayMs": 50, "text": "late"}
//!  ]}
//! ```
//!
//! With `"replay": "perRun"`, every run replays the turns from the first
//! (a request's turn is the number of assistant messages after its last
//! user message), so concurrent runs each get the whole script. With
//! `"record": false` the server keeps no request bodies (long benchmarks).
//!
//! A string argument `"$lastTool:/runId"` is replaced by the value at that
//! JSON pointer in the request's last tool result (e.g. a suspended cell's
//! id, for `wait`).
//!
//! With `apiKey`, a request without `Authorization: Bearer <apiKey>` gets
//! 401; with `models`, an unknown model gets 404 (OpenAI's error bodies);
//! neither takes a turn.
//! When the turns run out, the server answers 500.
//!
//! Request bodies are accepted up to [`MAX_REQUEST_BYTES`] (64 MiB), as real APIs take long
//! histories. Besides the bodies it keeps each request's timing (`timings()`). A turn may also be a
//! raw `text/event-stream` body (`raw`). The crate has no Talon dependency.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// The largest request body the mock accepts.
pub const MAX_REQUEST_BYTES: usize = 64 << 20;

/// Mock server failures.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// The script is not valid.
    #[error("mock script: {0}")]
    Script(String),
    /// The listener could not start.
    #[error("mock model server: {0}")]
    Io(#[from] std::io::Error),
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedCall {
    /// The tool name.
    pub name: String,
    /// Its arguments (sent as a JSON string, as the API does).
    pub arguments: Value,
}

/// One scripted reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    /// Assistant text.
    pub text: Option<String>,
    /// Tool calls (several make a parallel call).
    pub tool_calls: Vec<ScriptedCall>,
    /// An HTTP error status instead of a reply.
    pub status: Option<u16>,
    /// `Retry-After` seconds with an error status.
    pub retry_after: Option<u64>,
    /// Wait this long before answering.
    pub delay: Duration,
    /// Prompt and completion tokens reported.
    pub usage: (u64, u64),
    /// A raw response body (as `text/event-stream`) instead of a reply:
    /// for malformed-stream tests.
    pub raw: Option<String>,
}

/// A whole script.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    /// Required bearer key, if any.
    pub api_key: Option<String>,
    /// Known models, if restricted.
    pub models: Option<Vec<String>>,
    /// Replies, in order.
    pub turns: Vec<Turn>,
    /// How a request picks its reply.
    pub replay: Replay,
    /// Keep no request bodies (`"record": false`): for long benchmarks,
    /// whose memory figures would otherwise count the mock's log.
    pub forget_requests: bool,
}

/// How a request picks its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replay {
    /// The turns in order, across every request the server receives.
    #[default]
    Sequential,
    /// Every run from the first turn: a request gets the turn numbered by
    /// the assistant messages after its last user message, so concurrent
    /// runs each replay the whole script (`"replay": "perRun"`).
    PerRun,
}

/// The turn a request is on within its run: the assistant messages after
/// its last user message.
fn turn_in_run(request: &Value) -> usize {
    let Some(messages) = request["messages"].as_array() else {
        return 0;
    };
    messages
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "assistant")
        .count()
}

impl Script {
    /// Parses the JSON form shown in the crate documentation.
    pub fn from_json(value: &Value) -> Result<Self, MockError> {
        let bad = |what: &str| MockError::Script(what.to_owned());
        let turns = value["turns"]
            .as_array()
            .ok_or_else(|| bad("`turns` must be a list"))?
            .iter()
            .map(|t| {
                let tool_calls = match t.get("toolCalls") {
                    None => Vec::new(),
                    Some(Value::Array(calls)) => calls
                        .iter()
                        .map(|c| {
                            Ok(ScriptedCall {
                                name: c["name"]
                                    .as_str()
                                    .ok_or_else(|| bad("a tool call needs a name"))?
                                    .to_owned(),
                                arguments: c.get("arguments").cloned().unwrap_or(json!({})),
                            })
                        })
                        .collect::<Result<_, MockError>>()?,
                    Some(_) => return Err(bad("`toolCalls` must be a list")),
                };
                Ok(Turn {
                    text: t["text"].as_str().map(str::to_owned),
                    tool_calls,
                    status: t["status"].as_u64().map(|s| s as u16),
                    retry_after: t["retryAfter"].as_u64(),
                    delay: Duration::from_millis(t["delayMs"].as_u64().unwrap_or(0)),
                    usage: (
                        t["usage"]["prompt"].as_u64().unwrap_or(10),
                        t["usage"]["completion"].as_u64().unwrap_or(5),
                    ),
                    raw: t["raw"].as_str().map(str::to_owned),
                })
            })
            .collect::<Result<_, MockError>>()?;
        let replay = match value.get("replay").and_then(Value::as_str) {
            None | Some("sequential") => Replay::Sequential,
            Some("perRun") => Replay::PerRun,
            Some(other) => {
                return Err(bad(&format!(
                    "`replay` must be \"sequential\" or \"perRun\", not {other:?}"
                )));
            }
        };
        Ok(Self {
            replay,
            forget_requests: value.get("record").and_then(Value::as_bool) == Some(false),
            api_key: value["apiKey"].as_str().map(str::to_owned),
            models: value["models"].as_array().map(|m| {
                m.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            }),
            turns,
        })
    }

    /// A script of text replies.
    pub fn texts(texts: &[&str]) -> Self {
        Self {
            turns: texts
                .iter()
                .map(|t| Turn {
                    text: Some((*t).to_owned()),
                    usage: (10, 5),
                    ..Turn::default()
                })
                .collect(),
            ..Self::default()
        }
    }
}

#[derive(Default)]
struct Shared {
    script: Script,
    next: usize,
    requests: Vec<Value>,
    timings: Vec<(std::time::Instant, Option<std::time::Instant>)>,
}

/// A running mock model server.
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for MockModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockModel")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockModel {
    /// Starts serving `script` on `127.0.0.1:0`.
    pub async fn start(script: Script) -> Result<Self, MockError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared {
            script,
            ..Shared::default()
        }));
        // Real APIs take requests of many megabytes (long histories, large
        // tool results); axum's 2 MiB default would refuse them.
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/v1/models", axum::routing::get(models))
            .layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST_BYTES))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::warn!(%error, "mock model server stopped");
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT/v1`, the provider's `baseUrl`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    /// For each request: when it arrived and when its reply was ready
    /// (the whole body is written at once). The step gap of an agent is
    /// the time from one reply to the next request.
    pub fn timings(&self) -> Vec<(std::time::Instant, Option<std::time::Instant>)> {
        self.shared
            .lock()
            .map(|s| s.timings.clone())
            .unwrap_or_default()
    }

    /// Replies not yet used.
    pub fn remaining(&self) -> usize {
        self.shared
            .lock()
            .map(|s| s.script.turns.len().saturating_sub(s.next))
            .unwrap_or(0)
    }
}

fn error(status: StatusCode, message: &str, code: &str) -> Response {
    let body =
        json!({"error": {"message": message, "type": "invalid_request_error", "code": code}});
    (status, axum::Json(body)).into_response()
}

/// `GET /v1/models`: the script's models, behind its key.
async fn models(State(shared): State<Arc<Mutex<Shared>>>, headers: HeaderMap) -> Response {
    let (api_key, models) = match shared.lock() {
        Ok(s) => (s.script.api_key.clone(), s.script.models.clone()),
        Err(_) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "lock poisoned",
                "internal",
            );
        }
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if api_key.is_some() && given != api_key.as_deref() {
        return error(
            StatusCode::UNAUTHORIZED,
            "Incorrect API key provided.",
            "invalid_api_key",
        );
    }
    let data: Vec<Value> = models
        .unwrap_or_else(|| vec!["mock-model".to_owned()])
        .into_iter()
        .map(|id| json!({"id": id, "object": "model", "owned_by": "mock"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

async fn completions(
    State(shared): State<Arc<Mutex<Shared>>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    // Arrival: the body is in; parsing it is the mock's own time.
    let arrived = std::time::Instant::now();
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("invalid JSON: {e}"),
                "invalid_json",
            );
        }
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    let turn = {
        let Ok(mut s) = shared.lock() else {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "lock poisoned",
                "internal",
            );
        };
        if !s.script.forget_requests {
            s.requests.push(request.clone());
            s.timings.push((arrived, None));
        }
        // A refused request (the key, the model) takes no turn.
        if let Some(key) = &s.script.api_key
            && given != Some(key.as_str())
        {
            return error(
                StatusCode::UNAUTHORIZED,
                "Incorrect API key provided.",
                "invalid_api_key",
            );
        }
        if let Some(models) = &s.script.models
            && !models.contains(&model)
        {
            return error(
                StatusCode::NOT_FOUND,
                &format!("The model `{model}` does not exist or you do not have access to it."),
                "model_not_found",
            );
        }
        let index = match s.script.replay {
            Replay::Sequential => s.next,
            Replay::PerRun => turn_in_run(&request),
        };
        let turn = s.script.turns.get(index).cloned();
        s.next += 1;
        turn
    };
    let Some(mut turn) = turn else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the mock script has no more turns",
            "script_exhausted",
        );
    };
    for call in &mut turn.tool_calls {
        fill_from_last_tool(&mut call.arguments, &request);
    }
    if !turn.delay.is_zero() {
        tokio::time::sleep(turn.delay).await;
    }
    if let Some(status) = turn.status {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = error(status, "scripted failure", "scripted");
        if let Some(seconds) = turn.retry_after
            && let Ok(value) = seconds.to_string().parse()
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    if let Some(raw) = turn.raw {
        return Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from(raw))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
    }
    let response = if request["stream"].as_bool() == Some(true) {
        stream(&turn, &model)
    } else {
        whole(&turn, &model)
    };
    if let Ok(mut s) = shared.lock()
        && let Some(last) = s.timings.last_mut()
    {
        last.1 = Some(std::time::Instant::now());
    }
    response
}

/// Replaces every string argument `"$lastTool:<JSON pointer>"` with the
/// value at that pointer in the request's last tool message (its content
/// read as JSON), so a script can pass on what a tool returned, such as a
/// suspended cell's id to `wait`. Left as it is when there is none.
fn fill_from_last_tool(arguments: &mut Value, request: &Value) {
    match arguments {
        Value::String(text) => {
            let Some(pointer) = text.strip_prefix("$lastTool:") else {
                return;
            };
            let last = request["messages"]
                .as_array()
                .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
                .and_then(|m| m["content"].as_str())
                .and_then(|content| serde_json::from_str::<Value>(content).ok());
            if let Some(value) = last.as_ref().and_then(|v| v.pointer(pointer)) {
                *arguments = value.clone();
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| fill_from_last_tool(v, request)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| fill_from_last_tool(v, request)),
        _ => {}
    }
}

fn tool_calls_json(turn: &Turn) -> Vec<Value> {
    turn.tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"id": format!("call_{}", i + 1), "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments.to_string()}})
        })
        .collect()
}

fn usage(turn: &Turn) -> Value {
    json!({"prompt_tokens": turn.usage.0, "completion_tokens": turn.usage.1,
           "total_tokens": turn.usage.0 + turn.usage.1})
}

fn finish_reason(turn: &Turn) -> &'static str {
    if turn.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

fn whole(turn: &Turn, model: &str) -> Response {
    let mut message = json!({"role": "assistant", "content": turn.text});
    if !turn.tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls_json(turn));
    }
    axum::Json(json!({
        "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(turn)}],
        "usage": usage(turn),
    }))
    .into_response()
}

/// The reply as chunks: text in a few deltas, each tool call's arguments
/// split in two, usage in the last chunk, then `[DONE]`.
fn stream(turn: &Turn, model: &str) -> Response {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if let Some(text) = &turn.text {
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(8) {
            events.push(chunk(
                json!({"content": piece.iter().collect::<String>()}),
                None,
            ));
        }
    }
    for (i, call) in tool_calls_json(turn).into_iter().enumerate() {
        let arguments = call["function"]["arguments"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let split = arguments
            .char_indices()
            .nth(arguments.chars().count() / 2)
            .map_or(0, |(at, _)| at);
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                   "function": {"name": call["function"]["name"], "arguments": &arguments[..split]}}]}),
            None,
        ));
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "function": {"arguments": &arguments[split..]}}]}),
            None,
        ));
    }
    let mut last = chunk(json!({}), Some(finish_reason(turn)));
    last["usage"] = usage(turn);
    events.push(last);
    let mut body = String::new();
    for event in events {
        body.push_str("data: ");
        body.push_str(&event.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_take_values_from_the_last_tool_result() {
        let request = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "content": "{\"runId\": \"old\"}"},
            {"role": "assistant", "content": null},
            {"role": "tool", "content": "{\"runId\": \"cell_7\", \"n\": [1, 2]}"},
        ]});
        let mut arguments = json!({
            "runId": "$lastTool:/runId",
            "nested": ["$lastTool:/n/1", "$lastTool:/missing", "plain"],
        });
        fill_from_last_tool(&mut arguments, &request);
        assert_eq!(
            arguments,
            json!({"runId": "cell_7", "nested": [2, "$lastTool:/missing", "plain"]})
        );
        let mut untouched = json!({"runId": "$lastTool:/runId"});
        fill_from_last_tool(&mut untouched, &json!({"messages": []}));
        assert_eq!(untouched, json!({"runId": "$lastTool:/runId"}));
    }
}
