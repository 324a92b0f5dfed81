//! A Server-Sent Events reader for streamed Chat Completions: splits the
//! byte stream into events and yields each `data:` payload.

/// Collects bytes and hands out complete `data:` payloads.
#[derive(Debug, Default)]
pub(crate) struct SseReader {
    buffer: Vec<u8>,
}

/// Largest event accepted (a bound against a server that never ends one).
pub(crate) const MAX_EVENT_BYTES: usize = 16 << 20;

/// An event grew past [`MAX_EVENT_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an event exceeded {MAX_EVENT_BYTES} bytes")]
pub(crate) struct EventTooLarge;

impl SseReader {
    /// Adds bytes; returns the data of every event now complete, or an
    /// error when an event grows past [`MAX_EVENT_BYTES`].
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, EventTooLarge> {
        self.buffer.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            let end = find_event_end(&self.buffer);
            let Some((end, skip)) = end else { break };
            let event: Vec<u8> = self.buffer.drain(..end + skip).take(end).collect();
            let text = String::from_utf8_lossy(&event);
            let mut data = Vec::new();
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("data:") {
                    data.push(rest.strip_prefix(' ').unwrap_or(rest).to_owned());
                }
            }
            if !data.is_empty() {
                out.push(data.join("\n"));
            }
        }
        if self.buffer.len() > MAX_EVENT_BYTES {
            return Err(EventTooLarge);
        }
        Ok(out)
    }
}

/// The end of the first event (`\n\n` or `\r\n\r\n`) and the separator's
/// length.
fn find_event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buffer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
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
}
