//! A reply's native payload as the provider sent it, kept for diagnostics
//! (the envelope's `raw` on the model call's `assistant.message`, which
//! the gateway shows to admin callers only): a whole reply's body, or a
//! streamed reply's events, bounded to [`MAX_RAW_BYTES`] and with
//! credential-like fields redacted. A long stream keeps its first events
//! and its last ones (where the stop reason and the usage are), counting
//! those between. Kept as text while the reply streams (a copy, never a
//! second parse) and parsed once at the end; only an event whose text
//! could hold a credential-like key is walked for one.

use std::collections::VecDeque;

use serde_json::{Value, json};
use talon_protocol::debug::{may_hold_credentials, redact_credentials};

/// Most bytes of native payload kept per reply (half for its first
/// events, half for its last); the others are counted.
pub const MAX_RAW_BYTES: usize = 16 * 1024;

/// Bytes kept of the first events, and of the last.
const HALF: usize = MAX_RAW_BYTES / 2;

/// A reply's native payload, bounded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawReply {
    /// The first payloads: a streamed reply's `data:` payloads, or a whole
    /// reply's body.
    head: Vec<String>,
    head_bytes: usize,
    /// The last payloads after the head, newest last.
    tail: VecDeque<String>,
    tail_bytes: usize,
    /// Payloads left out between the head and the tail.
    omitted: u64,
}

impl RawReply {
    /// Keeps one payload: in the head while it has room, then in the tail,
    /// which lets its oldest go (counted) to make room.
    pub fn push(&mut self, data: &str) {
        if self.tail.is_empty() && self.head_bytes + data.len() <= HALF {
            self.head_bytes += data.len();
            self.head.push(data.to_owned());
            return;
        }
        if data.len() > HALF {
            self.omitted += 1 + self.tail.len() as u64;
            self.tail.clear();
            self.tail_bytes = 0;
            return;
        }
        self.tail_bytes += data.len();
        self.tail.push_back(data.to_owned());
        while self.tail_bytes > HALF
            && let Some(old) = self.tail.pop_front()
        {
            self.tail_bytes -= old.len();
            self.omitted += 1;
        }
    }

    /// A whole reply's body (kept when it fits in [`MAX_RAW_BYTES`]).
    pub fn body(bytes: &[u8]) -> Self {
        let text = String::from_utf8_lossy(bytes);
        let mut raw = Self::default();
        if text.len() <= MAX_RAW_BYTES {
            raw.head_bytes = text.len();
            raw.head.push(text.into_owned());
        } else {
            raw.omitted = 1;
        }
        raw
    }

    /// Whether nothing was seen.
    pub fn is_empty(&self) -> bool {
        self.head.is_empty() && self.omitted == 0
    }

    /// The payload as the envelope's `raw` carries it:
    /// `{"events": [...], "omittedEvents"?: n, "omittedAt"?: i}`, each
    /// event its JSON (a string when it is not JSON) with credentials
    /// redacted; `n` events were left out before `events[i]`.
    pub fn to_json(&self) -> Value {
        let events: Vec<Value> = self
            .head
            .iter()
            .chain(&self.tail)
            .map(|text| event(text))
            .collect();
        let mut out = json!({ "events": events });
        if self.omitted > 0 {
            out["omittedEvents"] = json!(self.omitted);
            out["omittedAt"] = json!(self.head.len());
        }
        out
    }
}

/// One kept payload as JSON, its credentials redacted.
fn event(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(mut value) => {
            if may_hold_credentials(text) {
                redact_credentials(&mut value);
            }
            value
        }
        Err(_) => Value::String(text.to_owned()),
    }
}
