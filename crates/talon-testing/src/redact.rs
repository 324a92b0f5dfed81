//! Whole values for assertions. A test compares a whole response, or the
//! whole transcript of a run's events, instead of picking fields out of it;
//! what differs between two runs of the same test is replaced first by a
//! stable placeholder:
//!
//! - a generated id, `<prefix>_<24 hex digits>` (a run, session, approval,
//!   request id, ...), wherever it stands in a string, becomes `<prefix_N>`,
//!   numbered by first appearance, so two places that held the same id
//!   still hold the same placeholder (a message id `sess_….3` becomes
//!   `<sess_1>.3`, an error's "run run_… not found" names `<run_1>`);
//! - a clock reading (`ts`, or a number under a key ending in `At`)
//!   becomes `"<time>"`, and a measured duration (`durationMs`,
//!   `elapsedMs`, `latencyMs`) `"<ms>"`;
//! - an opaque paging cursor (`cursor`, `nextCursor`) becomes `"<cursor>"`
//!   and a bearer secret (`token`, `secret`) `"<secret>"`;
//! - an event's `raw` (a provider's native reply, which admin readers see)
//!   becomes `"<raw: N events>"`, or `"<raw withheld>"`.
//!
//! Everything else, event ids (the store numbers them in order) included,
//! is kept as it is. [`Redactor`] numbers ids across several values (a
//! response and the events it caused); [`redacted`] and [`transcript`]
//! each start their own numbering.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Keys whose numbers are measured durations.
const DURATIONS: &[&str] = &["durationMs", "elapsedMs", "latencyMs"];
/// Keys whose strings are opaque paging cursors.
const CURSORS: &[&str] = &["cursor", "nextCursor"];
/// Keys whose strings are secrets minted per run of a test.
const SECRETS: &[&str] = &["token", "secret"];

/// Numbers generated ids by first appearance, across every value it is
/// given.
#[derive(Debug, Default)]
pub struct Redactor {
    ids: HashMap<String, String>,
    per_prefix: HashMap<String, usize>,
    literals: Vec<(String, String)>,
}

impl Redactor {
    /// A redactor that has seen no id yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also replaces `literal` (a test's temporary directory, a port)
    /// wherever it stands in a string with `placeholder`. Literals are
    /// replaced before ids, the longest first.
    pub fn with(mut self, literal: impl Into<String>, placeholder: impl Into<String>) -> Self {
        let literal = literal.into();
        if !literal.is_empty() {
            self.literals.push((literal, placeholder.into()));
            self.literals
                .sort_by_key(|(l, _)| std::cmp::Reverse(l.len()));
        }
        self
    }

    /// A run's events (see [`transcript`]) with this redactor's numbering.
    pub fn transcript(&mut self, events: &[Value]) -> Value {
        Value::Array(
            events
                .iter()
                .filter(|e| !e["type"].as_str().is_some_and(|t| t.ends_with(".delta")))
                .map(|e| self.value(e))
                .collect(),
        )
    }

    /// `value` with its run-to-run differences replaced (see the module's
    /// docs).
    pub fn value(&mut self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.string(text)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => {
                let mut out = Map::new();
                for (key, item) in map {
                    let redacted = self.by_key(key, item).unwrap_or_else(|| self.value(item));
                    out.insert(key.clone(), redacted);
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    fn by_key(&mut self, key: &str, item: &Value) -> Option<Value> {
        if let (Value::Object(raw), "raw") = (item, key) {
            // A provider's native reply: its own test reads it whole.
            return Some(Value::String(
                match raw.get("events").and_then(Value::as_array) {
                    Some(events) => format!("<raw: {} events>", events.len()),
                    None => "<raw withheld>".to_owned(),
                },
            ));
        }
        let placeholder = match item {
            Value::Number(_) if key == "ts" || key.ends_with("At") => "<time>",
            Value::Number(_) if DURATIONS.contains(&key) => "<ms>",
            Value::String(_) if CURSORS.contains(&key) => "<cursor>",
            Value::String(_) if SECRETS.contains(&key) => "<secret>",
            _ => return None,
        };
        Some(Value::String(placeholder.to_owned()))
    }

    /// `text` with its literals and every generated id in it replaced.
    fn string(&mut self, text: &str) -> String {
        let replaced;
        let text = if self.literals.iter().any(|(l, _)| text.contains(l.as_str())) {
            let mut owned = text.to_owned();
            for (literal, placeholder) in &self.literals {
                owned = owned.replace(literal.as_str(), placeholder);
            }
            replaced = owned;
            replaced.as_str()
        } else {
            text
        };
        let mut out = String::with_capacity(text.len());
        let mut from = 0;
        while let Some((start, end)) = next_id(text, from) {
            out.push_str(&text[from..start]);
            let placeholder = self.placeholder(&text[start..end]);
            out.push_str(&placeholder);
            from = end;
        }
        out.push_str(&text[from..]);
        out
    }

    fn placeholder(&mut self, id: &str) -> String {
        if let Some(known) = self.ids.get(id) {
            return known.clone();
        }
        let prefix = id.split('_').next().unwrap_or_default();
        let n = self.per_prefix.entry(prefix.to_owned()).or_default();
        *n += 1;
        let placeholder = format!("<{prefix}_{n}>");
        self.ids.insert(id.to_owned(), placeholder.clone());
        placeholder
    }
}

/// Where the next generated id (`<lowercase prefix>_<24 hex digits>`, a
/// word of its own) at or after `from` in `text` is.
fn next_id(text: &str, from: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = from;
    while let Some(offset) = text.get(at..)?.find('_') {
        let underscore = at + offset;
        let mut start = underscore;
        while start > from && bytes[start - 1].is_ascii_lowercase() {
            start -= 1;
        }
        let end = underscore + 1 + 24;
        let prefixed = start < underscore && (start == 0 || !word(bytes[start - 1]));
        let hex = bytes
            .get(underscore + 1..end)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        let bounded = bytes.get(end).is_none_or(|&b| !word(b));
        if prefixed && hex && bounded {
            return Some((start, end));
        }
        at = underscore + 1;
    }
    None
}

/// `value` with the size of every trajectory artifact in it replaced by
/// `"<bytes>"`: a trajectory holds its events' measured durations, whose
/// digits vary from run to run.
pub fn trajectory_sizes(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str) == Some("trajectory")
                    && map.get("sizeBytes").is_some_and(Value::is_u64)
                {
                    map.insert("sizeBytes".into(), Value::String("<bytes>".into()));
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

/// `value` with its run-to-run differences replaced, numbered on its own.
pub fn redacted(value: &Value) -> Value {
    Redactor::new().value(value)
}

/// A run's events as one whole value to assert on: each event redacted
/// with one numbering, the streamed `*.delta` events left out (how a
/// stream is cut into deltas is not the run's behaviour; their text is in
/// the events that complete them).
pub fn transcript(events: &[Value]) -> Value {
    Redactor::new().transcript(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_numbered_by_first_appearance_and_stay_equal() {
        let run = "run_0123456789abcdef01234567";
        let other = "run_fedcba9876543210fedcba98";
        let session = "sess_00112233445566778899aabb";
        let got = redacted(&json!({
            "id": run,
            "runs": [run, other],
            "sessionId": session,
            "messageId": format!("{session}.3"),
            "ts": 1_764_000_000_000u64,
            "createdAt": 5,
            "expiresAt": null,
            "durationMs": 12,
            "timeoutMs": 30_000,
            "nextCursor": "opaque",
            "token": "tk_secret",
            "name": "run_not_an_id",
            "text": format!("run {run} was not found; Xrun_{}", &other[4..]),
        }));
        assert_eq!(
            got,
            json!({
                "id": "<run_1>",
                "runs": ["<run_1>", "<run_2>"],
                "sessionId": "<sess_1>",
                "messageId": "<sess_1>.3",
                "ts": "<time>",
                "createdAt": "<time>",
                "expiresAt": null,
                "durationMs": "<ms>",
                "timeoutMs": 30_000,
                "nextCursor": "<cursor>",
                "token": "<secret>",
                "name": "run_not_an_id",
                "text": format!("run <run_1> was not found; Xrun_{}", &other[4..]),
            })
        );
    }

    #[test]
    fn only_a_trajectorys_size_is_replaced() {
        let got = trajectory_sizes(json!([
            {"type": "trajectory", "sizeBytes": 2397},
            {"type": "file", "sizeBytes": 5},
        ]));
        assert_eq!(
            got,
            json!([
                {"type": "trajectory", "sizeBytes": "<bytes>"},
                {"type": "file", "sizeBytes": 5},
            ])
        );
    }

    #[test]
    fn literals_are_replaced_longest_first_before_ids() {
        let mut redactor = Redactor::new()
            .with("/tmp/.tmpAbC", "<dir>")
            .with("/tmp/.tmpAbC/ws", "<workspace>");
        let got = redactor.value(&json!({
            "path": "/tmp/.tmpAbC/ws/a.txt",
            "log": "/tmp/.tmpAbC/store run_0123456789abcdef01234567",
        }));
        assert_eq!(
            got,
            json!({"path": "<workspace>/a.txt", "log": "<dir>/store <run_1>"})
        );
    }

    #[test]
    fn a_transcript_leaves_deltas_out_and_numbers_across_events() {
        let run = "run_0123456789abcdef01234567";
        let events = [
            json!({"id": "1", "type": "run.started", "runId": run, "ts": 1}),
            json!({"id": "2", "type": "message.delta", "runId": run, "data": {"text": "he"}}),
            json!({"id": "3", "type": "run.completed", "runId": run, "ts": 2}),
        ];
        assert_eq!(
            transcript(&events),
            json!([
                {"id": "1", "type": "run.started", "runId": "<run_1>", "ts": "<time>"},
                {"id": "3", "type": "run.completed", "runId": "<run_1>", "ts": "<time>"},
            ])
        );
    }
}
