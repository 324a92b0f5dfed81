//! `/v1/responses`: the request Talon reads, the `Response` object, and
//! [`ResponseFold`], the projection of a run's events into Responses
//! stream events.
//!
//! **Sequence numbers come from the event log.** The `k`-th stream event
//! made from the Talon event with id `e` is numbered `e * SEQ_STRIDE + k`.
//! The fold is deterministic over the run's committed events, so a replay
//! (after a cut, after a restart, on another node) numbers every event as
//! the first stream did, and `starting_after = n` is the log cursor
//! `n / SEQ_STRIDE` with the events numbered `<= n` skipped. Numbers grow
//! but are not dense.
//!
//! Items: assistant text is a `message` item per model turn; a server-side
//! tool call is an `mcp_call` item (OpenAI's item for a tool the server
//! ran, so no client runs it again) with `server_label: "talon"`; an
//! approval is an `mcp_approval_request` item; reasoning (where the
//! exposure policy lets `thinking.delta` through) a `reasoning` item; a
//! client tool the model called is a `function_call` item, answered by a
//! `function_call_output` input with `previous_response_id`.
//!
//! Terminal events: `response.completed`, `response.failed`, and
//! `response.incomplete` for a run that was cancelled (`status:
//! "cancelled"`: the Responses stream has no cancelled event) or timed out
//! (`status: "incomplete"`).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::event_data::{EventData, RunEndedData};
use crate::events::Event;
use crate::gateway::Usage;

/// Stream events one Talon event may make, at most.
pub const SEQ_STRIDE: u64 = 1024;
/// The longest tool output an `mcp_call` item carries, in characters.
pub const MAX_OUTPUT_CHARS: usize = 16 * 1024;

/// A Responses request (the fields Talon reads).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ResponseRequest {
    /// `talon/<agentId>`.
    pub model: String,
    /// Text, or input items.
    pub input: Value,
    /// Extra instructions for this response.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Continue the session of that response.
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// Answer at once, run in the background.
    #[serde(default)]
    pub background: Option<bool>,
    /// Stream events.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Refused unless true (Talon keeps every run).
    #[serde(default)]
    pub store: Option<bool>,
    /// Client function tools.
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// `auto` or `none`.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// Names the session when no header or previous response does.
    #[serde(default)]
    pub user: Option<String>,
    /// Refused: Talon's sessions are its conversations.
    #[serde(default)]
    pub conversation: Option<Value>,
    /// Echoed back.
    #[serde(default)]
    pub metadata: Option<Value>,
}

/// The response id of a run: `resp_<runId>`.
pub fn response_id(run_id: &str) -> String {
    format!("resp_{run_id}")
}

/// The run a response id names.
pub fn run_of(response_id: &str) -> Option<&str> {
    response_id.strip_prefix("resp_").filter(|r| !r.is_empty())
}

/// What the `Response` object says beside what the events say.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseHeader {
    /// `resp_<runId>`.
    pub id: String,
    /// Seconds since the epoch.
    pub created_at: u64,
    /// The model id.
    pub model: String,
    /// When known (the creating call): whether it ran in the background.
    pub background: Option<bool>,
    /// When known: the response it continued.
    pub previous_response_id: Option<String>,
    /// Echoed instructions, when known.
    pub instructions: Option<String>,
    /// Echoed metadata.
    pub metadata: Value,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    None,
    /// A message item at this output index.
    Message(usize),
    /// A reasoning item at this output index.
    Reasoning(usize),
}

/// The fold of a run's events into Responses stream events.
#[derive(Debug, Clone)]
pub struct ResponseFold {
    header: ResponseHeader,
    status: &'static str,
    output: Vec<Value>,
    open: Open,
    usage: Usage,
    error: Option<Value>,
    incomplete: Option<Value>,
    completed_at: Option<u64>,
    /// Output indexes of `mcp_call` items, by call id.
    calls: Vec<(String, usize)>,
    /// The open message's or reasoning item's text so far (written into
    /// the item when it closes: a delta costs its own length).
    open_text: String,
    ended: bool,
    out: Vec<(u64, Value)>,
    base: u64,
}

impl ResponseFold {
    /// A fold for one run.
    pub fn new(header: ResponseHeader) -> Self {
        Self {
            header,
            status: "queued",
            output: Vec::new(),
            open: Open::None,
            usage: Usage::default(),
            error: None,
            incomplete: None,
            completed_at: None,
            calls: Vec::new(),
            open_text: String::new(),
            ended: false,
            out: Vec::new(),
            base: 0,
        }
    }

    /// Whether the run's terminal event was folded.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The `Response` object as the events so far tell it.
    pub fn response(&self) -> Value {
        let mut items = self.output.clone();
        match self.open {
            Open::Message(index) => items[index]["content"][0]["text"] = json!(self.open_text),
            Open::Reasoning(index) => items[index]["summary"][0]["text"] = json!(self.open_text),
            Open::None => {}
        }
        let text: String = items
            .iter()
            .filter(|item| item["type"] == "message")
            .filter_map(|item| item["content"][0]["text"].as_str())
            .collect();
        let input = self.usage.input_tokens.unwrap_or(0);
        let output = self.usage.output_tokens.unwrap_or(0);
        json!({
            "id": self.header.id, "object": "response", "created_at": self.header.created_at,
            "status": self.status, "model": self.header.model, "output": items,
            "output_text": text,
            "error": self.error, "incomplete_details": self.incomplete,
            "instructions": self.header.instructions, "metadata": self.header.metadata,
            "background": self.header.background,
            "previous_response_id": self.header.previous_response_id,
            "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
            "temperature": null, "top_p": null, "store": true, "truncation": "disabled",
            "text": {"format": {"type": "text"}},
            "completed_at": self.completed_at,
            "usage": {
                "input_tokens": input,
                "input_tokens_details": {"cached_tokens": self.usage.cache_read_tokens.unwrap_or(0)},
                "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": self.usage.total_tokens.unwrap_or(input + output),
            },
        })
    }

    fn emit(&mut self, event: Value) {
        // The last number of a Talon event is kept for its terminal
        // snapshot: past it (more than 300 pending client calls in one
        // turn) events are dropped rather than numbered twice.
        if (self.out.len() as u64) < SEQ_STRIDE - 1 {
            self.push_numbered(event);
        }
    }

    fn push_numbered(&mut self, mut event: Value) {
        let k = self.out.len() as u64;
        event["sequence_number"] = json!(self.base + k);
        self.out.push((self.base + k, event));
    }

    fn snapshot(&mut self, kind: &str) {
        let response = self.response();
        self.push_numbered(json!({"type": kind, "response": response}));
    }

    /// The stream events one Talon event makes, with their numbers; `id`
    /// is the event's id in the log.
    pub fn push(&mut self, id: u64, event: &Event) -> Vec<(u64, Value)> {
        self.out.clear();
        self.base = id.saturating_mul(SEQ_STRIDE);
        if !self.ended
            && let Some(data) = event.typed()
        {
            self.fold(data, event.ts);
        }
        std::mem::take(&mut self.out)
    }

    fn fold(&mut self, data: EventData, ts: u64) {
        match data {
            EventData::RunCreated(_) => self.snapshot("response.created"),
            // Also a run put back in the queue (its node stopped): it goes
            // from in progress back to queued, then in progress again.
            EventData::RunQueued(_) => {
                self.status = "queued";
                self.snapshot("response.queued");
            }
            EventData::RunStarted(_) if self.status != "in_progress" => {
                self.status = "in_progress";
                self.snapshot("response.in_progress");
            }
            EventData::AssistantDelta(d) if !d.text.is_empty() => self.text(&d.text),
            EventData::AssistantMessage(m) => {
                if let (Open::None, Some(text)) = (self.open, m.text.as_deref())
                    && !text.is_empty()
                {
                    self.text(text);
                }
                self.close();
            }
            EventData::ThinkingDelta(d) if !d.text.is_empty() => self.thinking(&d.text),
            EventData::ToolCallStarted(d) if d.source != Some(crate::tools::ToolSource::Client) => {
                self.close();
                let index = self.output.len();
                let item_id = format!("mcp_{}_{index}", self.header.id.trim_start_matches("resp_"));
                let item = json!({
                    "id": item_id, "type": "mcp_call", "server_label": "talon",
                    "name": d.name,
                    "arguments": d.arguments.as_ref().map(Value::to_string).unwrap_or_else(|| "{}".into()),
                    "output": null, "error": null, "status": "in_progress",
                });
                self.output.push(item.clone());
                self.calls.push((d.call_id.clone(), index));
                self.emit(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
                self.emit(
                    json!({"type": "response.mcp_call.in_progress", "output_index": index,
                                 "item_id": format!("mcp_{}", d.call_id)}),
                );
            }
            EventData::ToolCallCompleted(d) => {
                let output = super::cut(&d.result.to_string(), MAX_OUTPUT_CHARS);
                self.finish_call(&d.call_id, "completed", json!(output), Value::Null);
            }
            EventData::ToolCallFailed(d) => {
                let error = super::progress::failure(&d);
                self.finish_call(
                    &d.call_id,
                    "failed",
                    Value::Null,
                    json!(super::cut(&error, MAX_OUTPUT_CHARS)),
                );
            }
            EventData::ApprovalRequested(a) => {
                self.close();
                let index = self.output.len();
                let item = json!({
                    "id": format!("mcpr_{}", a.id), "type": "mcp_approval_request",
                    "server_label": "talon",
                    "name": a.tool_name.clone().unwrap_or_else(|| a.summary.clone()),
                    "arguments": a.arguments.as_ref().map(Value::to_string).unwrap_or_else(|| "{}".into()),
                });
                self.output.push(item.clone());
                self.emit(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
                self.emit(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
            }
            EventData::RunCompleted(end) => self.end(&end, "completed", ts),
            EventData::RunFailed(end) => self.end(&end, "failed", ts),
            EventData::RunCancelled(end) => self.end(&end, "cancelled", ts),
            EventData::RunTimedOut(end) => self.end(&end, "incomplete", ts),
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        if let Open::Reasoning(_) = self.open {
            self.close();
        }
        let index = match self.open {
            Open::Message(index) => index,
            _ => {
                let index = self.output.len();
                let id = format!("msg_{}_{index}", self.header.id.trim_start_matches("resp_"));
                let item = json!({"id": id, "type": "message", "role": "assistant",
                                  "status": "in_progress", "content": []});
                self.output.push(item.clone());
                self.open = Open::Message(index);
                self.open_text.clear();
                self.emit(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
                let part =
                    json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
                self.output[index]["content"] = json!([part]);
                self.emit(json!({"type": "response.content_part.added", "item_id": id,
                                 "output_index": index, "content_index": 0, "part": part}));
                index
            }
        };
        self.open_text.push_str(text);
        let id = self.output[index]["id"].clone();
        self.emit(
            json!({"type": "response.output_text.delta", "item_id": id, "output_index": index,
                         "content_index": 0, "delta": text, "logprobs": []}),
        );
    }

    fn thinking(&mut self, text: &str) {
        if let Open::Message(_) = self.open {
            self.close();
        }
        let index = match self.open {
            Open::Reasoning(index) => index,
            _ => {
                let index = self.output.len();
                let id = format!("rs_{}_{index}", self.header.id.trim_start_matches("resp_"));
                let item =
                    json!({"id": id, "type": "reasoning", "summary": [], "status": "in_progress"});
                self.output.push(item.clone());
                self.open = Open::Reasoning(index);
                self.open_text.clear();
                self.emit(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
                let part = json!({"type": "summary_text", "text": ""});
                self.output[index]["summary"] = json!([part]);
                self.emit(
                    json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                                 "output_index": index, "summary_index": 0, "part": part}),
                );
                index
            }
        };
        self.open_text.push_str(text);
        let id = self.output[index]["id"].clone();
        self.emit(
            json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                         "output_index": index, "summary_index": 0, "delta": text}),
        );
    }

    /// Ends the open message or reasoning item.
    fn close(&mut self) {
        let text = std::mem::take(&mut self.open_text);
        match std::mem::replace(&mut self.open, Open::None) {
            Open::None => {}
            Open::Message(index) => {
                self.output[index]["content"][0]["text"] = json!(text);
                let id = self.output[index]["id"].clone();
                let part = self.output[index]["content"][0].clone();
                self.emit(json!({"type": "response.output_text.done", "item_id": id, "output_index": index,
                                 "content_index": 0, "text": text, "logprobs": []}));
                self.emit(json!({"type": "response.content_part.done", "item_id": id, "output_index": index,
                                 "content_index": 0, "part": part}));
                self.output[index]["status"] = json!("completed");
                let item = self.output[index].clone();
                self.emit(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
            }
            Open::Reasoning(index) => {
                self.output[index]["summary"][0]["text"] = json!(text);
                let id = self.output[index]["id"].clone();
                let part = self.output[index]["summary"][0].clone();
                self.emit(
                    json!({"type": "response.reasoning_summary_text.done", "item_id": id,
                                 "output_index": index, "summary_index": 0, "text": text}),
                );
                self.emit(
                    json!({"type": "response.reasoning_summary_part.done", "item_id": id,
                                 "output_index": index, "summary_index": 0, "part": part}),
                );
                self.output[index]["status"] = json!("completed");
                let item = self.output[index].clone();
                self.emit(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
            }
        }
    }

    fn finish_call(&mut self, call_id: &str, status: &str, output: Value, error: Value) {
        // Call ids repeat (a provider's per-turn ids, a resumed turn's
        // calls): the latest item of the id still running is this one.
        let Some(&(_, index)) =
            self.calls.iter().rev().find(|(id, index)| {
                id == call_id && self.output[*index]["status"] == "in_progress"
            })
        else {
            return;
        };
        self.output[index]["status"] = json!(status);
        self.output[index]["output"] = output;
        self.output[index]["error"] = error;
        let item = self.output[index].clone();
        let kind = if status == "completed" {
            "response.mcp_call.completed"
        } else {
            "response.mcp_call.failed"
        };
        self.emit(json!({"type": kind, "output_index": index, "item_id": item["id"]}));
        self.emit(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }

    fn end(&mut self, end: &RunEndedData, status: &'static str, ts: u64) {
        self.close();
        self.ended = true;
        self.usage = end.usage.clone();
        self.completed_at = Some(super::seconds(ts));
        if status == "completed" {
            if self.output.iter().all(|item| item["type"] != "message")
                && let Some(text) = end.text.as_deref().filter(|t| !t.is_empty())
            {
                self.text(text);
                self.close();
            }
            for call in &end.pending_tool_calls {
                let index = self.output.len();
                let item = json!({
                    "id": format!("fc_{}", call.id), "type": "function_call", "call_id": call.id,
                    "name": call.name, "arguments": call.arguments.to_string(), "status": "completed",
                });
                self.output.push(item.clone());
                self.emit(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
                self.emit(json!({"type": "response.function_call_arguments.done", "item_id": item["id"],
                                 "output_index": index, "name": call.name, "arguments": item["arguments"]}));
                self.emit(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
            }
        }
        self.status = status;
        let message = end
            .error
            .clone()
            .unwrap_or_else(|| format!("the run {status}"));
        match status {
            "completed" => self.snapshot("response.completed"),
            "failed" => {
                self.error = Some(json!({"code": "server_error", "message": message}));
                self.snapshot("response.failed");
            }
            "cancelled" => {
                self.incomplete = Some(json!({"reason": "cancelled"}));
                self.snapshot("response.incomplete");
            }
            _ => {
                self.incomplete = Some(json!({"reason": "timeout"}));
                self.error = Some(json!({"code": "timeout", "message": message}));
                self.snapshot("response.incomplete");
            }
        }
    }
}
