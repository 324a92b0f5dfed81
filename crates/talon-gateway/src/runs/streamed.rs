//! Redaction of streamed text across its pieces. A run's deltas
//! (`assistant.delta`, `thinking.delta`, and a call's output in
//! `tool.call.delta`) each carry a piece of a longer text; a secret split
//! between two pieces is in neither, so redacting each piece alone would
//! store it in halves. Each stream keeps back the end of its text that
//! could begin a secret ([`Redactor::open_end`]) and sends it with the
//! next piece, or, redacted, before the run's next event of any other
//! kind. With no secrets bound, pieces pass as they are. A call's output
//! that left a stretch out (`omittedBytes`, a flood the delta rate could
//! not carry) does not continue its held end: that end is left out too and
//! counted, so no secret's beginning is stored before a gap.

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
        // A stream that left output out (`omittedBytes`) does not go on
        // from its held end, which could be a secret's beginning: that end
        // is left out too, and counted.
        if let Some(omitted) = omitted_of(&mut event)
            && let Some((_, held)) = self.held.remove(&key)
        {
            let count = omitted.as_u64().unwrap_or(0) + held.len() as u64;
            *omitted = Value::from(count);
        }
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
        vec![with_text(event, text, secrets)]
    }

    /// Every held end, redacted, in the delta that last carried it.
    fn flush(&mut self, secrets: &Redactor) -> Vec<Event> {
        std::mem::take(&mut self.held)
            .into_values()
            .map(|(event, held)| with_text(event, held, secrets))
            .collect()
    }
}

/// A call's output delta's count of output left out before it.
fn omitted_of(event: &mut Event) -> Option<&mut Value> {
    if event.kind != EventType::ToolCallDelta {
        return None;
    }
    event.data.get_mut("update")?.get_mut("omittedBytes")
}

/// `event` carrying `text`, redacted by `secrets`.
fn with_text(mut event: Event, text: String, secrets: &Redactor) -> Event {
    if let Some(slot) = text_of(&mut event) {
        *slot = Value::String(text);
    }
    event.data = secrets.value(&event.data);
    event
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SECRET: &str = "sk-bound-secret-42";

    fn delta(update: Value) -> Event {
        Event {
            subject: None,
            version: 1,
            id: Default::default(),
            ts: 1,
            kind: EventType::ToolCallDelta,
            run_id: Some(talon_protocol::gateway::bounded::RunId::new("r")),
            session_id: None,
            session_key: None,
            task_id: None,
            agent_id: None,
            request_id: None,
            data: json!({"callId": "c", "update": update}),
            raw: None,
        }
    }

    fn updates(streams: &mut Streams, secrets: &Redactor, pieces: Vec<Value>) -> Vec<Value> {
        pieces
            .into_iter()
            .flat_map(|update| streams.take(delta(update), secrets))
            .map(|event| event.data["update"].clone())
            .collect()
    }

    #[test]
    fn a_secret_across_two_pieces_is_redacted_whole() {
        let secrets = Redactor::new(&[SECRET.to_owned()]);
        let got = updates(
            &mut Streams::default(),
            &secrets,
            vec![
                json!({"stream": "stdout", "text": "token=sk-bound-"}),
                json!({"stream": "stdout", "text": "secret-42\n"}),
            ],
        );
        assert_eq!(
            got,
            vec![
                json!({"stream": "stdout", "text": "token="}),
                json!({"stream": "stdout", "text": "[redacted]\n"}),
            ]
        );
    }

    #[test]
    fn a_held_end_before_a_gap_is_left_out_and_counted() {
        let secrets = Redactor::new(&[SECRET.to_owned()]);
        let mut streams = Streams::default();
        let got = updates(
            &mut streams,
            &secrets,
            vec![
                json!({"stream": "stdout", "text": "token=sk-bou"}),
                json!({"stream": "stdout", "text": "next\n", "omittedBytes": 100}),
                json!({"stream": "stdout", "text": "last sk-b"}),
                json!({"stream": "stdout", "omittedBytes": 7}),
            ],
        );
        assert_eq!(
            got,
            vec![
                json!({"stream": "stdout", "text": "token="}),
                json!({"stream": "stdout", "text": "next\n", "omittedBytes": 106}),
                json!({"stream": "stdout", "text": "last "}),
                json!({"stream": "stdout", "omittedBytes": 11}),
            ]
        );
        assert!(streams.held.is_empty());
    }
}
