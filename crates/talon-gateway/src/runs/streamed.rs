//! Redaction of streamed text across its pieces. A run's deltas
//! (`assistant.delta`, `thinking.delta`, and a call's output in
//! `tool.call.delta`) each carry a piece of a longer text; a secret split
//! between two pieces is in neither, so redacting each piece alone would
//! store it in halves. Each stream keeps back the end of its text that
//! could begin a secret ([`Redactor::open_end`]) and sends it with the
//! next piece, or, redacted, before the run's next event of any other
//! kind. With no secrets bound, pieces pass as they are.

use std::collections::BTreeMap;

use serde_json::Value;
use talon_protocol::{Event, EventType};
use talon_tools::redact::Redactor;

/// Which text a delta continues: its type, and for a call's output, the
/// call and its stream.
type StreamKey = (&'static str, String, String);

/// The held-back ends of a run's streams, each with the last delta that
/// carried it (the envelope a flushed end is sent in).
#[derive(Debug, Default)]
pub(crate) struct Streams {
    held: BTreeMap<StreamKey, (Event, String)>,
}

/// Where a delta's text is: `data.text`, or `data.update.text`.
fn text_of(event: &mut Event) -> Option<&mut Value> {
    match event.kind {
        EventType::AssistantDelta | EventType::ThinkingDelta => event.data.get_mut("text"),
        EventType::ToolCallDelta => event.data.get_mut("update")?.get_mut("text"),
        _ => None,
    }
    .filter(|text| text.is_string())
}

fn key_of(event: &Event) -> StreamKey {
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(&event.data, |v, k| v.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (
        event.kind.as_str(),
        field(&["callId"]),
        field(&["update", "stream"]),
    )
}

impl Streams {
    /// The events to store for `event`, redacted by `secrets`: a delta's
    /// text up to where a secret could begin (none if that is all of it),
    /// or, for any other event, the streams' held ends and then it.
    pub(crate) fn take(&mut self, mut event: Event, secrets: &Redactor) -> Vec<Event> {
        let key = key_of(&event);
        let Some(Value::String(piece)) = text_of(&mut event).cloned() else {
            let mut out = self.flush(secrets);
            event.data = secrets.value(&event.data);
            out.push(event);
            return out;
        };
        let mut text = self
            .held
            .remove(&key)
            .map(|(_, held)| held)
            .unwrap_or_default();
        text.push_str(&piece);
        let open = secrets.open_end(&text);
        let held = text.split_off(text.len() - open);
        if open > 0 {
            self.held.insert(key, (event.clone(), held));
        }
        if text.is_empty() {
            return Vec::new();
        }
        if let Some(slot) = text_of(&mut event) {
            *slot = Value::String(text);
        }
        event.data = secrets.value(&event.data);
        vec![event]
    }

    /// Every held end, redacted, in the delta that last carried it.
    fn flush(&mut self, secrets: &Redactor) -> Vec<Event> {
        std::mem::take(&mut self.held)
            .into_values()
            .map(|(mut event, held)| {
                if let Some(slot) = text_of(&mut event) {
                    *slot = Value::String(held);
                }
                event.data = secrets.value(&event.data);
                event
            })
            .collect()
    }
}
