//! A Server-Sent Events reader for streamed replies (both providers):
//! the shared decoder (`talon_protocol::sse`, linear in the bytes
//! received) capped at [`MAX_EVENT_BYTES`] an event, yielding each
//! event's `data:` payload and keeping them for the reply's `raw`.
//! `DEBUG_SSE=events|peek` logs each event's type, or the first five
//! events' data with credentials redacted (target `talon::model_sse`).

use serde_json::Value;
use talon_protocol::debug::{DebugSwitch, SSE_PEEK_EVENTS, redact_credentials};
use talon_protocol::sse::{Decoder, FrameTooLarge};

use crate::raw::RawReply;

/// Collects bytes and hands out complete `data:` payloads.
#[derive(Debug)]
pub(crate) struct SseReader {
    /// The shared decoder, capped at [`MAX_EVENT_BYTES`].
    decoder: Decoder,
    /// What `DEBUG_SSE` shows of this stream, and how many it showed.
    debug: Option<(SseDebug, usize)>,
    /// The events' payloads, kept for diagnostics.
    raw: RawReply,
}

/// `DEBUG_SSE`'s modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SseDebug {
    /// Each event's type and size.
    Events,
    /// The first few events' data, redacted.
    Peek,
}

/// Most characters of an event `DEBUG_SSE=peek` shows.
const PEEK_CHARS: usize = 2048;

impl SseReader {
    /// A reader that shows its events as `DEBUG_SSE` asks.
    pub fn new() -> Self {
        let debug = match DebugSwitch::Sse.value().as_deref() {
            Some("events") => Some((SseDebug::Events, 0)),
            Some("peek") => Some((SseDebug::Peek, 0)),
            _ => None,
        };
        Self {
            decoder: Decoder::new(MAX_EVENT_BYTES),
            debug,
            raw: RawReply::default(),
        }
    }

    fn show(&mut self, data: &str) {
        let Some((mode, shown)) = &mut self.debug else {
            return;
        };
        let parsed: Option<Value> = serde_json::from_str(data).ok();
        match mode {
            SseDebug::Events => {
                let kind = parsed
                    .as_ref()
                    .and_then(|v| v.get("type").or_else(|| v.get("object")))
                    .and_then(Value::as_str)
                    .unwrap_or(if data.trim() == "[DONE]" {
                        "[DONE]"
                    } else {
                        "data"
                    });
                tracing::info!(target: "talon::model_sse", event = kind, bytes = data.len(), "stream event");
            }
            SseDebug::Peek if *shown < SSE_PEEK_EVENTS => {
                *shown += 1;
                let text = match parsed {
                    Some(mut value) => {
                        redact_credentials(&mut value);
                        value.to_string()
                    }
                    None => data.to_owned(),
                };
                let text: String = text.chars().take(PEEK_CHARS).collect();
                tracing::info!(target: "talon::model_sse", n = *shown, data = %text, "stream event (redacted)");
            }
            SseDebug::Peek => {}
        }
    }
}

/// Largest event accepted (a bound against a server that never ends one).
pub(crate) const MAX_EVENT_BYTES: usize = 16 << 20;

impl SseReader {
    /// The payloads read so far (bounded), for the reply's `raw`.
    pub fn take_raw(&mut self) -> RawReply {
        std::mem::take(&mut self.raw)
    }

    /// Adds bytes; returns the data of every event now complete, or an
    /// error when an event grows past [`MAX_EVENT_BYTES`].
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, FrameTooLarge> {
        self.decoder.push(bytes)?;
        let mut out = Vec::new();
        while let Some(frame) = self.decoder.next_frame() {
            // Frames without data (a bare `event:` or `id:`) carry nothing.
            if let Some(data) = frame.data {
                self.show(&data);
                self.raw.push(&data);
                out.push(data);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]
    use super::*;

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut reader = SseReader::new();
        assert!(reader.push(b"data: {\"a\"").unwrap().is_empty());
        assert_eq!(
            reader
                .push(b":1}\n\n: comment\n\ndata: x\r\n\r\ndata: [DONE]\n\n")
                .unwrap(),
            vec!["{\"a\":1}".to_owned(), "x".to_owned(), "[DONE]".to_owned()]
        );
        assert_eq!(
            reader.push(&vec![b'x'; MAX_EVENT_BYTES + 1]),
            Err(FrameTooLarge {
                max: MAX_EVENT_BYTES
            })
        );
    }

    #[test]
    fn a_huge_event_dripped_in_small_pieces_costs_linear_time() {
        // 16 thousand pushes of 1 KiB: rescanning the buffer on each push
        // would compare about 128 GB; scanning only new bytes, 16 MiB.
        let mut reader = SseReader::new();
        let piece = vec![b'x'; 1024];
        let started = std::time::Instant::now();
        assert_eq!(reader.push(b"data: ").unwrap(), Vec::<String>::new());
        for _ in 0..(MAX_EVENT_BYTES / 1024 - 1) {
            assert!(reader.push(&piece).unwrap().is_empty());
        }
        let events = reader.push(b"\n\n").unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].len(), MAX_EVENT_BYTES - 1024);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn separators_split_across_pushes_are_found() {
        let mut reader = SseReader::new();
        let mut got = Vec::new();
        for byte in b"event: ping\r\ndata: a\r\n\r\ndata: b\n\ndata: c\n" {
            got.extend(reader.push(&[*byte]).unwrap());
        }
        got.extend(reader.push(b"\n").unwrap());
        assert_eq!(got, vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]);
    }
}
