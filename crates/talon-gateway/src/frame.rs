//! Events ready to send. A [`Delivery`] holds an event's Server-Sent
//! Events frame (`id:`, `event:`, `data:`), rendered once and shared by
//! every stream that sends it: the live tail renders each envelope when it
//! reads it, so a thousand subscribers of one run send one buffer a
//! thousand times instead of formatting it a thousand times. The
//! envelope's JSON is a slice of that frame, for the WebSocket transport.

use bytes::Bytes;
use talon_protocol::EventType;
use talon_store::RawEvent;

/// The comment sent on an idle stream.
pub(crate) const HEARTBEAT: &[u8] = b":\n\n";

/// One event, rendered (cheap to clone).
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    id: u64,
    terminal: bool,
    frame: Bytes,
    /// A slice of `frame` unless the JSON held a line break.
    json: Bytes,
    /// Whether `json` is a buffer of its own.
    copied: bool,
}

impl Delivery {
    /// Renders an envelope: `id: <id>`, `event: <type>`, then `data:`
    /// with the JSON exactly as stored (one `data:` line per line of it,
    /// should it ever hold a line break).
    pub(crate) fn new(id: u64, kind: &str, json: &str) -> Self {
        let frame = talon_wire::sse_event_frame(id, kind, json);
        let one_line = !json.contains(['\n', '\r']);
        // On one line the JSON ends the frame, before its blank line.
        let json = if one_line {
            let end = frame.len() - 2;
            frame.slice(end - json.len()..end)
        } else {
            Bytes::copy_from_slice(json.as_bytes())
        };
        Self {
            id,
            terminal: is_terminal(kind),
            frame,
            json,
            copied: !one_line,
        }
    }

    /// The event id (the stream's cursor).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Whether the event ends its run.
    pub(crate) fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// The SSE frame.
    pub(crate) fn sse(&self) -> Bytes {
        self.frame.clone()
    }

    /// The envelope's JSON.
    pub(crate) fn json(&self) -> &str {
        // Built from a `&str` in `new`; never fails.
        std::str::from_utf8(&self.json).unwrap_or_default()
    }

    /// The memory it holds, roughly.
    pub(crate) fn size(&self) -> usize {
        let own = if self.copied { self.json.len() } else { 0 };
        std::mem::size_of::<Self>() + self.frame.len() + own
    }
}

impl From<RawEvent> for Delivery {
    fn from(event: RawEvent) -> Self {
        Self::new(event.id, &event.kind, &event.json)
    }
}

fn is_terminal(kind: &str) -> bool {
    serde_json::from_value::<EventType>(serde_json::Value::String(kind.to_owned()))
        .is_ok_and(EventType::is_terminal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_rendered_once_as_its_sse_frame_and_its_json() {
        let d = Delivery::new(42, "run.completed", r#"{"type":"run.completed"}"#);
        assert_eq!(
            (d.id(), d.is_terminal(), &d.sse()[..], d.json()),
            (
                42,
                true,
                &b"id: 42\nevent: run.completed\ndata: {\"type\":\"run.completed\"}\n\n"[..],
                r#"{"type":"run.completed"}"#
            )
        );
        let started = Delivery::new(7, "run.started", "{}");
        assert!(!started.is_terminal());
        assert!(started.size() < std::mem::size_of::<Delivery>() + 64);
    }

    #[test]
    fn line_breaks_never_break_the_frame() {
        let d = Delivery::new(1, "run.\nstarted", "{\"a\":\n1}");
        assert_eq!(
            (&d.sse()[..], d.json()),
            (
                &b"id: 1\nevent: run.started\ndata: {\"a\":\ndata: 1}\n\n"[..],
                "{\"a\":\n1}"
            )
        );
    }
}
