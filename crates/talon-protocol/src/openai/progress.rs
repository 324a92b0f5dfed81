//! What a client of the OpenAI-compatible surface sees of the work Talon
//! does on the server: one text line per step of a server-side tool call
//! or approval, carried in `reasoning_content` (the field DeepSeek, vLLM,
//! LiteLLM and Open WebUI use for text that is not the answer), and the
//! same step as a small structured object, `talon`, beside it.
//!
//! ```text
//! → list {"path":"."}
//! ✓ list (3 ms)
//! ✗ exec: the command failed
//! ⏸ exec waits for approval apr_1 at /approve/apr_1
//! ? Which branch? (question qst_1)
//! ```
//!
//! Nested calls (inside a Code Mode cell) are indented. Client tools are
//! not shown here: they are the client's own `tool_calls`.

use serde_json::{Value, json};

use crate::event_data::EventData;
use crate::tools::ToolSource;

/// The longest arguments or error shown on a line, in characters.
pub const MAX_SHOWN: usize = 200;

/// One step of server-side work.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The line (ending in `\n`).
    pub line: String,
    /// The structured step.
    pub talon: Value,
}

/// The step an event shows, if it shows one.
pub fn step(data: &EventData) -> Option<Step> {
    let kind = data.kind().as_str();
    match data {
        EventData::ToolCallStarted(d) if d.source != Some(ToolSource::Client) => {
            let args = d
                .arguments
                .as_ref()
                .map(|a| format!(" {}", super::cut(&a.to_string(), MAX_SHOWN)))
                .unwrap_or_default();
            Some(Step {
                line: format!("{}→ {}{args}\n", indent(d.parent_id.as_deref()), d.name),
                talon: json!({"type": kind, "callId": d.call_id, "name": d.name}),
            })
        }
        EventData::ToolCallCompleted(d) => Some(Step {
            line: format!(
                "{}✓ {} ({} ms)\n",
                indent(d.parent_id.as_deref()),
                d.name,
                d.duration_ms
            ),
            talon: json!({"type": kind, "callId": d.call_id, "name": d.name,
                          "durationMs": d.duration_ms}),
        }),
        EventData::ToolCallFailed(d) => {
            let error = failure(d);
            Some(Step {
                line: format!(
                    "{}✗ {}: {}\n",
                    indent(d.parent_id.as_deref()),
                    d.name,
                    super::cut(&error, MAX_SHOWN)
                ),
                talon: json!({"type": kind, "callId": d.call_id, "name": d.name}),
            })
        }
        EventData::ApprovalRequested(a) => {
            let what = a.tool_name.as_deref().unwrap_or(&a.summary);
            Some(Step {
                line: format!("⏸ {what} waits for approval {} at {}\n", a.id, a.page()),
                talon: json!({"type": kind, "approvalId": a.id,
                              "toolName": a.tool_name}),
            })
        }
        EventData::QuestionRequested(q) => Some(Step {
            line: format!(
                "? {} (question {})\n",
                super::cut(&q.prompt, MAX_SHOWN),
                q.id
            ),
            talon: json!({"type": kind, "questionId": q.id}),
        }),
        EventData::QuestionAnswered(a) => Some(Step {
            line: format!("✓ answered: question {}\n", a.question_id),
            talon: json!({"type": kind, "questionId": a.question_id}),
        }),
        EventData::ApprovalResolved(r) => Some(Step {
            line: format!("{} approval {}\n", resolved_word(r), r.approval_id),
            talon: json!({"type": kind, "approvalId": r.approval_id,
                          "status": r.status}),
        }),
        _ => None,
    }
}

/// What a failed call's error says: its `message`, else the whole error.
pub fn failure(failed: &crate::event_data::ToolCallFailedData) -> String {
    failed
        .error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| failed.error.to_string())
}

fn resolved_word(r: &crate::event_data::ApprovalResolvedData) -> &'static str {
    match serde_json::to_value(r.status)
        .ok()
        .as_ref()
        .and_then(Value::as_str)
    {
        Some("approved") => "▶ approved:",
        Some("denied") => "■ denied:",
        _ => "■ closed:",
    }
}

fn indent(parent: Option<&str>) -> &'static str {
    if parent.is_some() { "  " } else { "" }
}
