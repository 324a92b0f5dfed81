//! A Server-Sent Events reader for streamed replies (both providers):
//! splits the byte stream into events and yields each `data:` payload.
//!
//! Linear in the bytes received: each push scans only the bytes not
//! scanned before (a server dripping one huge event in tiny chunks costs
//! no rescans), and complete events are cut off the buffer once per push.
//! `DEBUG_SSE=events|peek` logs each event's type, or the first five
//! events' data with credentials redacted (target `talon::model_sse`).

use serde_json::Value;
use talon_protocol::debug::{DebugSwitch, SSE_PEEK_EVENTS, redact_credentials};

use crate::raw::RawReply;

/// Collects bytes and hands out complete `data:` payloads.
#[derive(Debug, Default)]
pub(crate) struct SseReader {
    buffer: Vec<u8>,
    /// How far `buffer` was searched for an event's end without finding
    /// one.
    scanned: usize,
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
            debug,
            ..Self::default()
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

/// An event grew past [`MAX_EVENT_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an event exceeded {MAX_EVENT_BYTES} bytes")]
pub(crate) struct EventTooLarge;

impl SseReader {
    /// The payloads read so far (bounded), for the reply's `raw`.
    pub fn take_raw(&mut self) -> RawReply {
        std::mem::take(&mut self.raw)
    }

    /// Adds bytes; returns the data of every event now complete, or an
    /// error when an event grows past [`MAX_EVENT_BYTES`].
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, EventTooLarge> {
        self.buffer.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        // A separator may straddle the previous push: back up 3 bytes.
        let mut from = self.scanned.saturating_sub(3);
        while let Some((end, skip)) = find_event_end(&self.buffer[start..], from) {
            let text = String::from_utf8_lossy(&self.buffer[start..start + end]);
            let mut data = Vec::new();
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("data:") {
                    data.push(rest.strip_prefix(' ').unwrap_or(rest).to_owned());
                }
            }
            if !data.is_empty() {
                let data = data.join("\n");
                self.show(&data);
                self.raw.push(&data);
                out.push(data);
            }
            start += end + skip;
            from = 0;
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        if self.buffer.len() > MAX_EVENT_BYTES {
            return Err(EventTooLarge);
        }
        Ok(out)
    }
}

/// The end of the first event (`\n\n` or `\r\n\r\n`) at or after `from`,
/// and the separator's length.
fn find_event_end(buffer: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut i = from;
    while i + 1 < buffer.len() {
        if buffer[i] == b'\n' && buffer[i + 1] == b'\n' {
            return Some((i, 2));
        }
        if buffer[i..].starts_with(b"\r\n\r\n") {
            return Some((i, 4));
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]
    use super::*;

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut reader = SseReader::default();
        assert!(reader.push(b"data: {\"a\"").unwrap().is_empty());
        assert_eq!(
            reader
                .push(b":1}\n\n: comment\n\ndata: x\r\n\r\ndata: [DONE]\n\n")
                .unwrap(),
            vec!["{\"a\":1}".to_owned(), "x".to_owned(), "[DONE]".to_owned()]
        );
        assert_eq!(
            reader.push(&vec![b'x'; MAX_EVENT_BYTES + 1]),
            Err(EventTooLarge)
        );
    }

    #[test]
    fn a_huge_event_dripped_in_small_pieces_costs_linear_time() {
        // 16 thousand pushes of 1 KiB: rescanning the buffer on each push
        // would compare about 128 GB; scanning only new bytes, 16 MiB.
        let mut reader = SseReader::default();
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
        let mut reader = SseReader::default();
        let mut got = Vec::new();
        for byte in b"event: ping\r\ndata: a\r\n\r\ndata: b\n\ndata: c\n" {
            got.extend(reader.push(&[*byte]).unwrap());
        }
        got.extend(reader.push(b"\n").unwrap());
        assert_eq!(got, vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]);
    }
}
