//! A scripted mock model: a real HTTP server on 127.0.0.1 that speaks
//! OpenAI's Chat Completions (`POST /v1/chat/completions`, `openai.rs`)
//! and Anthropic's Messages (`POST /v1/messages`, `anthropic.rs`),
//! streamed as Server-Sent Events or not, replays scripted turns in order
//! (one script for both routes, `script.rs`), and records every request
//! body and its headers (`requests()`, `headers()`). The LLM is the one thing Talon's tests mock, and only this way.
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
//!    {"thinking": "It returned 1.", "text": "The answer is 1.",
//!     "usage": {"prompt": 120, "completion": 6, "cacheRead": 100, "cacheWrite": 0}},
//!    {"status": 429, "retryAfter": 1},
//!    {"status": 529, "errorType": "overloaded_error", "retryAfterMs": 20, "shouldRetry": true},
//!    {"delayMs": 50, "chunkDelayMs": 10, "text": "late and slow"}
//!  ]}
//! ```
//!
//! With `"replay": "perRun"`, every run replays the turns from the first
//! (a request's turn is the number of assistant messages after its last
//! user message), so concurrent runs each get the whole script; with
//! `"byInput": {"some text": [turns]}` too, a run whose user messages
//! contain that text replays those turns instead. With
//! `"record": false` the server keeps no request bodies or headers (long benchmarks).
//!
//! A string argument `"$lastTool:/runId"` is replaced by the value at that
//! JSON pointer in the request's last tool result (e.g. a suspended cell's
//! id, for `wait`).
//!
//! With `apiKey`, a request without the key (`Authorization: Bearer` on
//! the Chat Completions route, `x-api-key` on the Messages route) gets 401;
//! with `models`, an unknown model gets 404 (each route's error bodies);
//! neither takes a turn. When the turns run out, the server answers 500.
//!
//! An error turn (`status`) carries `retryAfter` (seconds),
//! `retryAfterMs` and `shouldRetry` as the `retry-after`, `retry-after-ms`
//! and `x-should-retry` headers, and on the Messages route `errorType` as
//! its `error.type` (default from the status, `overloaded_error` for 529);
//! with `raw` too, its body is that text (`text/html`, as a proxy's page).
//! `thinking` (with an optional `signature`) is streamed as Anthropic
//! thinking deltas or as Chat Completions `reasoning_content`.
//! `chunkDelayMs` writes a streamed reply one event at a time with that
//! pause before each (a slow stream); a raw body is written in pieces of
//! `chunkBytes` with that pause.
//!
//! Request bodies are accepted up to [`MAX_REQUEST_BYTES`] (64 MiB), as real APIs take long
//! histories. Besides the bodies it keeps each request's timing (`timings()`). A turn may also be a
//! raw `text/event-stream` body (`raw`). The crate has no Talon dependency.

use std::collections::BTreeMap;
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

mod anthropic;
mod openai;
mod script;

pub use script::{Replay, Script, ScriptedCall, Turn};

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

#[derive(Default)]
struct Shared {
    script: Script,
    next: usize,
    requests: Vec<Value>,
    headers: Vec<BTreeMap<String, String>>,
    timings: Vec<(std::time::Instant, Option<std::time::Instant>)>,
}

type SharedState = Arc<Mutex<Shared>>;

/// A running mock model server.
pub struct MockModel {
    addr: SocketAddr,
    shared: SharedState,
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
            .route(
                "/v1/chat/completions",
                post(|state, headers, body| serve(Wire::OpenAi, state, headers, body)),
            )
            .route(
                "/v1/messages",
                post(|state, headers, body| serve(Wire::Anthropic, state, headers, body)),
            )
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

    /// `http://127.0.0.1:PORT/v1`, the provider's `baseUrl` (for either
    /// wire: the Messages client posts to `{baseUrl}/messages` when the
    /// base ends in `/v1`).
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

    /// Every request's headers so far, in order: lower-case names, the
    /// values that are text (a repeated header keeps its last value).
    pub fn headers(&self) -> Vec<BTreeMap<String, String>> {
        self.shared
            .lock()
            .map(|s| s.headers.clone())
            .unwrap_or_default()
    }

    /// For each request: when it arrived and when its reply was ready
    /// (its first byte, for a slow stream). The step gap of an agent is
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

/// The two wires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    OpenAi,
    Anthropic,
}

impl Wire {
    /// An error reply of this wire for `status`.
    fn error(self, status: StatusCode, message: &str, code: &str) -> Response {
        match self {
            Self::OpenAi => openai::error(status, message, code),
            Self::Anthropic => {
                anthropic::error(status, anthropic::error_type(status.as_u16()), message)
            }
        }
    }

    fn key(self, headers: &HeaderMap) -> Option<&str> {
        match self {
            Self::OpenAi => openai::key(headers),
            Self::Anthropic => anthropic::key(headers),
        }
    }
}

/// `GET /v1/models`: the script's models, behind its key (either header).
async fn models(State(shared): State<SharedState>, headers: HeaderMap) -> Response {
    let (api_key, models) = match shared.lock() {
        Ok(s) => (s.script.api_key.clone(), s.script.models.clone()),
        Err(_) => {
            return openai::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "lock poisoned",
                "internal",
            );
        }
    };
    let given = openai::key(&headers).or_else(|| anthropic::key(&headers));
    if api_key.is_some() && given != api_key.as_deref() {
        return openai::error(
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

async fn serve(
    wire: Wire,
    State(shared): State<SharedState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    // Arrival: the body is in; parsing it is the mock's own time.
    let arrived = std::time::Instant::now();
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return wire.error(
                StatusCode::BAD_REQUEST,
                &format!("invalid JSON: {e}"),
                "invalid_json",
            );
        }
    };
    let given = wire.key(&headers);
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    let (turn, number) = {
        let Ok(mut s) = shared.lock() else {
            return wire.error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "lock poisoned",
                "internal",
            );
        };
        if !s.script.forget_requests {
            s.requests.push(request.clone());
            s.headers.push(
                headers
                    .iter()
                    .filter_map(|(name, value)| {
                        Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
                    })
                    .collect(),
            );
            s.timings.push((arrived, None));
        }
        // A refused request (the key, the model) takes no turn.
        if let Some(key) = &s.script.api_key
            && given != Some(key.as_str())
        {
            return wire.error(
                StatusCode::UNAUTHORIZED,
                "Incorrect API key provided.",
                "invalid_api_key",
            );
        }
        if let Some(models) = &s.script.models
            && !models.contains(&model)
        {
            return wire.error(
                StatusCode::NOT_FOUND,
                &format!("The model `{model}` does not exist or you do not have access to it."),
                "model_not_found",
            );
        }
        let index = match (s.script.replay, wire) {
            (Replay::Sequential, _) => s.next,
            (Replay::PerRun, Wire::OpenAi) => openai::turn_in_run(&request),
            (Replay::PerRun, Wire::Anthropic) => anthropic::turn_in_run(&request),
        };
        let turn = match s.script.replay {
            Replay::Sequential => s.script.turns.get(index).cloned(),
            Replay::PerRun => s.script.turns_for(&user_text(&request)).get(index).cloned(),
        };
        s.next += 1;
        (turn, s.next)
    };
    let Some(mut turn) = turn else {
        return wire.error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the mock script has no more turns",
            "script_exhausted",
        );
    };
    let last_tool = match wire {
        Wire::OpenAi => openai::last_tool(&request),
        Wire::Anthropic => anthropic::last_tool(&request),
    };
    for call in &mut turn.tool_calls {
        script::fill_from_last_tool(&mut call.arguments, last_tool.as_ref());
    }
    if !turn.delay.is_zero() {
        tokio::time::sleep(turn.delay).await;
    }
    if let Some(status) = turn.status {
        return error_turn(wire, &turn, status);
    }
    let response = if let Some(raw) = turn.raw.take() {
        let pieces = match turn.chunk_bytes {
            Some(n) => raw.as_bytes().chunks(n).map(<[u8]>::to_vec).collect(),
            None => vec![raw.into_bytes()],
        };
        event_stream(pieces, turn.chunk_delay)
    } else if request["stream"].as_bool() == Some(true) {
        let events = match wire {
            Wire::OpenAi => openai::events(&turn, &model),
            Wire::Anthropic => anthropic::events(&turn, &model, number),
        };
        event_stream(
            events.into_iter().map(String::into_bytes).collect(),
            turn.chunk_delay,
        )
    } else {
        let value = match wire {
            Wire::OpenAi => openai::whole(&turn, &model),
            Wire::Anthropic => anthropic::whole(&turn, &model, number),
        };
        axum::Json(value).into_response()
    };
    if let Ok(mut s) = shared.lock()
        && let Some(last) = s.timings.last_mut()
    {
        last.1 = Some(std::time::Instant::now());
    }
    response
}

/// A scripted error reply with its retry headers.
fn error_turn(wire: Wire, turn: &Turn, status: u16) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match (wire, &turn.error_type, &turn.raw) {
        (_, _, Some(raw)) => {
            (code, [(header::CONTENT_TYPE, "text/html")], raw.clone()).into_response()
        }
        (Wire::Anthropic, Some(kind), None) => anthropic::error(code, kind, "scripted failure"),
        _ => wire.error(code, "scripted failure", "scripted"),
    };
    let headers = response.headers_mut();
    let mut set = |name: &'static str, value: String| {
        if let Ok(value) = value.parse() {
            headers.insert(name, value);
        }
    };
    if let Some(seconds) = turn.retry_after {
        set(header::RETRY_AFTER.as_str(), seconds.to_string());
    }
    if let Some(ms) = turn.retry_after_ms {
        set("retry-after-ms", ms.to_string());
    }
    if let Some(retry) = turn.should_retry {
        set("x-should-retry", retry.to_string());
    }
    response
}

/// A `text/event-stream` body of these pieces: at once, or each after
/// `pause`.
fn event_stream(pieces: Vec<Vec<u8>>, pause: Duration) -> Response {
    let body = if pause.is_zero() {
        Body::from(pieces.concat())
    } else {
        let stream = futures::stream::unfold(pieces.into_iter(), move |mut rest| async move {
            let piece = rest.next()?;
            tokio::time::sleep(pause).await;
            Some((Ok::<_, std::convert::Infallible>(piece), rest))
        });
        Body::from_stream(stream)
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The text of a request's user messages, joined (a string content, or
/// its `text` blocks; both wires).
fn user_text(request: &serde_json::Value) -> String {
    let mut out = String::new();
    for message in request["messages"].as_array().into_iter().flatten() {
        if message["role"] != "user" {
            continue;
        }
        match &message["content"] {
            serde_json::Value::String(text) => out.push_str(text),
            serde_json::Value::Array(blocks) => {
                for block in blocks {
                    if let Some(text) = block["text"].as_str() {
                        out.push_str(text);
                    }
                }
            }
            _ => {}
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_whose_user_messages_name_a_text_replays_its_turns() {
        let script = Script::from_json(&json!({
            "replay": "perRun",
            "turns": [{"text": "plain"}],
            "byInput": {"fan out": [{"text": "spawning"}]},
        }))
        .unwrap();
        let asked = |content: Value| {
            let request = json!({"messages": [{"role": "system", "content": "fan out"}, {"role": "user", "content": content}]});
            script.turns_for(&user_text(&request))[0].text.clone()
        };
        assert_eq!(
            (
                asked(json!("please fan out now")),
                asked(json!([{"type": "text", "text": "fan out"}])),
                asked(json!("a plain question")),
            ),
            (
                Some("spawning".into()),
                Some("spawning".into()),
                Some("plain".into())
            )
        );
    }

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
        script::fill_from_last_tool(&mut arguments, openai::last_tool(&request).as_ref());
        assert_eq!(
            arguments,
            json!({"runId": "cell_7", "nested": [2, "$lastTool:/missing", "plain"]})
        );
        let mut untouched = json!({"runId": "$lastTool:/runId"});
        script::fill_from_last_tool(
            &mut untouched,
            openai::last_tool(&json!({"messages": []})).as_ref(),
        );
        assert_eq!(untouched, json!({"runId": "$lastTool:/runId"}));
    }

    #[test]
    fn the_messages_route_reads_runs_and_tool_results_from_content_blocks() {
        let request = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "{\"runId\": \"cell_1\"}"},
                {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "{\"runId\": \"cell_2\"}"}]}]},
            {"role": "assistant", "content": [{"type": "text", "text": "more"}]},
        ]});
        assert_eq!(
            (
                anthropic::turn_in_run(&request),
                anthropic::last_tool(&request)
            ),
            (2, Some(json!({"runId": "cell_2"})))
        );
        let fresh = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(
            (anthropic::turn_in_run(&fresh), anthropic::last_tool(&fresh)),
            (0, None)
        );
    }
}
