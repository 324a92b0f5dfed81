//! The script: its turns, how requests pick them, and its JSON form
//! (documented in the crate's doc and `examples/mock-model.json5`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::MockError;

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
    /// Reasoning before the text (`thinking`): Anthropic `thinking_delta`s
    /// and a `signature_delta`; Chat Completions `delta.reasoning_content`
    /// (`message.reasoning_content` when not streamed).
    pub thinking: Option<String>,
    /// The thinking block's signature (`signature`; default `"sig-<n>"`,
    /// n the request's number from 1).
    pub signature: Option<String>,
    /// Tool calls (several make a parallel call).
    pub tool_calls: Vec<ScriptedCall>,
    /// An HTTP error status instead of a reply.
    pub status: Option<u16>,
    /// The Anthropic `error.type` of an error reply (`errorType`; default
    /// from the status: `overloaded_error` for 529, ...).
    pub error_type: Option<String>,
    /// `Retry-After` seconds with an error status.
    pub retry_after: Option<u64>,
    /// `retry-after-ms` with an error status (`retryAfterMs`).
    pub retry_after_ms: Option<u64>,
    /// `x-should-retry` with an error status (`shouldRetry`).
    pub should_retry: Option<bool>,
    /// Wait this long before answering.
    pub delay: Duration,
    /// Wait this long before each event of a streamed reply, and before
    /// each piece of a raw body (`chunkDelayMs`).
    pub chunk_delay: Duration,
    /// Pieces a raw body is written in, in bytes (`chunkBytes`; default:
    /// the whole body at once, or one piece per event with a delay).
    pub chunk_bytes: Option<usize>,
    /// Prompt and completion tokens reported (Anthropic: the uncached
    /// `input_tokens` and `output_tokens`).
    pub usage: (u64, u64),
    /// Prompt tokens read from and written to the cache
    /// (`usage.cacheRead`, `usage.cacheWrite`; Anthropic only).
    pub cache: (u64, u64),
    /// A raw response body (as `text/event-stream`) instead of a reply:
    /// for malformed-stream tests. With `status`, the error's body (as
    /// `text/html`).
    pub raw: Option<String>,
}

/// A whole script.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    /// Required key, if any (`Authorization: Bearer` on the Chat
    /// Completions route, `x-api-key` on the Messages route).
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
    /// With `perRun`: a run whose user messages contain one of these texts
    /// replays that text's turns instead of `turns` (`"byInput": {"text":
    /// [turns]}`; the first that matches, in order).
    pub by_input: Vec<(String, Vec<Turn>)>,
}

impl Script {
    /// The turns a run replays whose user messages say `user_text`.
    pub(crate) fn turns_for(&self, user_text: &str) -> &[Turn] {
        self.by_input
            .iter()
            .find(|(text, _)| user_text.contains(text.as_str()))
            .map_or(&self.turns, |(_, turns)| turns)
    }
}

/// How a request picks its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replay {
    /// The turns in order, across every request the server receives.
    #[default]
    Sequential,
    /// Every run from the first turn: a request gets the turn numbered by
    /// the assistant messages after its last user message (on the Messages
    /// route, a user message of tool results only does not count as one),
    /// so concurrent runs each replay the whole script (`"replay": "perRun"`).
    PerRun,
}

fn millis(value: &Value) -> Duration {
    Duration::from_millis(value.as_u64().unwrap_or(0))
}

fn turn(t: &Value) -> Result<Turn, MockError> {
    let bad = |what: &str| MockError::Script(what.to_owned());
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
    let text = |key: &str| t[key].as_str().map(str::to_owned);
    Ok(Turn {
        text: text("text"),
        thinking: text("thinking"),
        signature: text("signature"),
        tool_calls,
        status: t["status"].as_u64().map(|s| s as u16),
        error_type: text("errorType"),
        retry_after: t["retryAfter"].as_u64(),
        retry_after_ms: t["retryAfterMs"].as_u64(),
        should_retry: t["shouldRetry"].as_bool(),
        delay: millis(&t["delayMs"]),
        chunk_delay: millis(&t["chunkDelayMs"]),
        chunk_bytes: t["chunkBytes"]
            .as_u64()
            .filter(|n| *n > 0)
            .map(|n| n as usize),
        usage: (
            t["usage"]["prompt"].as_u64().unwrap_or(10),
            t["usage"]["completion"].as_u64().unwrap_or(5),
        ),
        cache: (
            t["usage"]["cacheRead"].as_u64().unwrap_or(0),
            t["usage"]["cacheWrite"].as_u64().unwrap_or(0),
        ),
        raw: text("raw"),
    })
}

impl Script {
    /// Parses the JSON form shown in the crate documentation.
    pub fn from_json(value: &Value) -> Result<Self, MockError> {
        let bad = |what: &str| MockError::Script(what.to_owned());
        let turns = value["turns"]
            .as_array()
            .ok_or_else(|| bad("`turns` must be a list"))?
            .iter()
            .map(turn)
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
        let mut by_input = Vec::new();
        for (text, turns) in value["byInput"].as_object().into_iter().flatten() {
            let turns = turns
                .as_array()
                .ok_or_else(|| bad("each of `byInput`'s values must be a list of turns"))?
                .iter()
                .map(turn)
                .collect::<Result<_, MockError>>()?;
            by_input.push((text.clone(), turns));
        }
        Ok(Self {
            by_input,
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

/// Replaces every string argument `"$lastTool:<JSON pointer>"` with the
/// value at that pointer in `last_tool` (the request's last tool result,
/// read as JSON), so a script can pass on what a tool returned, such as a
/// suspended cell's id to `wait`. Left as it is when there is none.
pub(crate) fn fill_from_last_tool(arguments: &mut Value, last_tool: Option<&Value>) {
    match arguments {
        Value::String(text) => {
            let Some(pointer) = text.strip_prefix("$lastTool:") else {
                return;
            };
            if let Some(value) = last_tool.and_then(|v| v.pointer(pointer)) {
                *arguments = value.clone();
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| fill_from_last_tool(v, last_tool)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| fill_from_last_tool(v, last_tool)),
        _ => {}
    }
}
