//! A reply's native payload as the provider sent it, kept for diagnostics
//! (the envelope's `raw` on the model call's `assistant.message`, which
//! the gateway shows to admin callers only): a whole reply's body, or a
//! streamed reply's events, bounded to [`MAX_RAW_BYTES`] and with
//! credential-like fields redacted. Kept as text while the reply streams
//! (a copy, never a second parse) and parsed once at the end.

use serde_json::{Value, json};
use talon_protocol::debug::redact_credentials;

/// Most bytes of native payload kept per reply; later events are counted.
pub const MAX_RAW_BYTES: usize = 16 * 1024;

/// A reply's native payload, bounded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawReply {
    /// What was kept: a streamed reply's `data:` payloads, or a whole
    /// reply's body.
    kept: Vec<String>,
    bytes: usize,
    /// Payloads left out past the bound.
    omitted: u64,
}

impl RawReply {
    /// Keeps one payload, or counts it past the bound.
    pub fn push(&mut self, data: &str) {
        if self.bytes + data.len() > MAX_RAW_BYTES {
            self.omitted += 1;
            return;
        }
        self.bytes += data.len();
        self.kept.push(data.to_owned());
    }

    /// A whole reply's body.
    pub fn body(bytes: &[u8]) -> Self {
        let mut raw = Self::default();
        raw.push(&String::from_utf8_lossy(bytes));
        raw
    }

    /// Whether nothing was seen.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.omitted == 0
    }

    /// The payload as the envelope's `raw` carries it:
    /// `{"events": [...], "omittedEvents"?: n}`, each event its JSON
    /// (a string when it is not JSON) with credentials redacted.
    pub fn to_json(&self) -> Value {
        let events: Vec<Value> = self
            .kept
            .iter()
            .map(|text| match serde_json::from_str::<Value>(text) {
                Ok(mut value) => {
                    redact_credentials(&mut value);
                    value
                }
                Err(_) => Value::String(text.clone()),
            })
            .collect();
        let mut out = json!({ "events": events });
        if self.omitted > 0 {
            out["omittedEvents"] = json!(self.omitted);
        }
        out
    }
}
