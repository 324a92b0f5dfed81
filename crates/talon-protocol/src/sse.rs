//! The one Server-Sent Events decoder, shared by both of Talon's SSE
//! clients: the model providers' streamed replies (`talon-provider`) and
//! the App SDK's event streams (`talon-sdk`). Pure bytes in, frames out:
//! no I/O, so the callers keep their own transports, timeouts and caps.
//!
//! It follows the WHATWG event-stream parser: lines end with CRLF, LF or
//! CR (even split across pushes); a leading UTF-8 BOM is dropped; `:`
//! lines are comments; `data:` lines are joined with LF; `event:`, `id:`
//! (ignored when it holds NUL) and `retry:` (ASCII digits only) are kept;
//! one space after the colon is dropped; unknown fields are ignored; a
//! blank line ends a frame. Invalid UTF-8 is replaced, never an error.
//! Unlike a browser, a frame's `id` is that frame's own (no "last event
//! id" carried over), and a frame with fields but no `data:` is still
//! handed out (`data: None`) so a caller can see a bare `id:`.
//!
//! Hand-written on purpose: the kept Rust SSE crates (`eventsource-stream`,
//! `sse-stream`) cannot bound how much one unfinished line or frame
//! buffers, so a server that never ends a line grows the client without
//! limit; `sse-stream` also fails on unknown fields and invalid UTF-8.
//! Here [`Decoder::new`] takes the caller's cap on one frame's bytes and
//! [`Decoder::push`] refuses past it ([`FrameTooLarge`]).
//!
//! Linear in the bytes received: each push scans only its own bytes, and
//! an unfinished line is appended to, never rescanned.

use std::collections::VecDeque;

/// One decoded frame (an "event" in the SSE spec).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The `id:` field of this frame.
    pub id: Option<String>,
    /// The `event:` field (the event's type).
    pub event: Option<String>,
    /// The `data:` lines joined by LF; `None` when the frame had none.
    pub data: Option<String>,
    /// The `retry:` field, in milliseconds.
    pub retry: Option<u64>,
}

/// A frame grew past the decoder's cap without ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an event exceeded {max} bytes")]
pub struct FrameTooLarge {
    /// The cap, in bytes.
    pub max: usize,
}

/// The UTF-8 byte order mark, dropped at the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Splits a byte stream, pushed in chunks of any size, into frames.
#[derive(Debug)]
pub struct Decoder {
    /// Most bytes one frame may take on the wire before it ends.
    max_frame: usize,
    /// The unfinished line's bytes.
    line: Vec<u8>,
    /// The last push ended with CR: a leading LF of the next is its pair.
    after_cr: bool,
    /// No line has ended yet (the BOM is looked for on the first).
    first_line: bool,
    /// The frame being read.
    frame: Frame,
    /// Whether `frame` has any field yet.
    started: bool,
    /// The wire bytes of the frame being read, its unfinished line
    /// included.
    pending: usize,
    /// Frames complete and not yet taken.
    ready: VecDeque<Frame>,
}

impl Decoder {
    /// A decoder refusing any frame longer than `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        Self {
            max_frame,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            frame: Frame::default(),
            started: false,
            pending: 0,
            ready: VecDeque::new(),
        }
    }

    /// Adds bytes, completing any frames they end. Fails when the frame
    /// still unfinished after them is longer than the cap (the decoder
    /// should then be dropped).
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), FrameTooLarge> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                self.pending += 1;
                bytes = &bytes[1..];
            }
        }
        while let Some(at) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            let mut used = at + 1;
            if bytes[at] == b'\r' {
                match bytes.get(at + 1) {
                    Some(b'\n') => used += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.pending += used;
            if self.line.is_empty() {
                self.end_line(&bytes[..at]);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..at]);
                self.end_line(&line);
                line.clear();
                self.line = line;
            }
            bytes = &bytes[used..];
        }
        self.line.extend_from_slice(bytes);
        self.pending += bytes.len();
        if self.pending > self.max_frame {
            return Err(FrameTooLarge {
                max: self.max_frame,
            });
        }
        Ok(())
    }

    /// The next complete frame, in order.
    pub fn next_frame(&mut self) -> Option<Frame> {
        self.ready.pop_front()
    }

    /// Interprets one whole line (without its end).
    fn end_line(&mut self, mut line: &[u8]) {
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            if std::mem::take(&mut self.started) {
                self.ready.push_back(std::mem::take(&mut self.frame));
            }
            self.pending = 0;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        let text = || String::from_utf8_lossy(value).into_owned();
        match field {
            b"data" => {
                match &mut self.frame.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(&String::from_utf8_lossy(value));
                    }
                    None => self.frame.data = Some(text()),
                }
                self.started = true;
            }
            b"event" => {
                self.frame.event = Some(text());
                self.started = true;
            }
            b"id" if !value.contains(&0) => {
                self.frame.id = Some(text());
                self.started = true;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits past u64 are a server's nonsense: kept as the most.
                self.frame.retry = Some(text().parse().unwrap_or(u64::MAX));
                self.started = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]
    use super::*;

    fn frames_of(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut decoder = Decoder::new(max);
        let mut frames = Vec::new();
        for chunk in chunks {
            decoder.push(chunk).unwrap();
            while let Some(frame) = decoder.next_frame() {
                frames.push(frame);
            }
        }
        frames
    }

    fn data(text: &str) -> Frame {
        Frame {
            data: Some(text.into()),
            ..Frame::default()
        }
    }

    #[test]
    fn fields_comments_and_every_line_end() {
        let text = b"\xEF\xBB\xBF: hello\r\nid: 7\revent: delta\r\nretry: 1500\ndata: a\r\ndata:b\rdata\n\n\
            data: x\r\r: comment only\n\nid: only\n\nretry: soon\nfoo: bar\nevent\n\n";
        let frames = frames_of(1 << 20, &[text]);
        assert_eq!(
            frames,
            vec![
                Frame {
                    id: Some("7".into()),
                    event: Some("delta".into()),
                    data: Some("a\nb\n".into()),
                    retry: Some(1500),
                },
                data("x"),
                Frame {
                    id: Some("only".into()),
                    ..Frame::default()
                },
                Frame {
                    event: Some(String::new()),
                    ..Frame::default()
                },
            ]
        );
    }

    #[test]
    fn any_split_of_the_bytes_gives_the_same_frames() {
        let text = "\u{feff}:hb\n\nid: 1\r\nevent: run.started\r\ndata: {\"a\":1}\r\n\r\n\
            id: 9\ndata: a\ndata: b\n\n\n\ndata: é\r\rdata: [DONE]\n\n";
        let bytes = text.as_bytes();
        let whole = frames_of(1 << 20, &[bytes]);
        assert_eq!(whole.len(), 4);
        assert_eq!(whole[1].data.as_deref(), Some("a\nb"));
        assert_eq!(whole[2], data("é"));
        for i in 0..bytes.len() {
            for j in i..bytes.len() {
                let split = frames_of(1 << 20, &[&bytes[..i], &bytes[i..j], &bytes[j..]]);
                assert_eq!(split, whole, "split at {i} and {j}");
            }
        }
    }

    #[test]
    fn invalid_utf8_and_nul_ids_do_not_fail() {
        let frames = frames_of(1 << 10, &[b"id: a\0b\ndata: \xff\xfe\n\n"]);
        assert_eq!(frames, vec![data("\u{fffd}\u{fffd}")]);
    }

    #[test]
    fn a_line_that_never_ends_is_refused_past_the_cap() {
        let mut decoder = Decoder::new(64 << 20);
        let chunk = vec![b'x'; 1 << 20];
        let mut refused = None;
        for i in 0..80 {
            if let Err(e) = decoder.push(&chunk) {
                refused = Some((i, e));
                break;
            }
            assert_eq!(decoder.next_frame(), None);
        }
        let (at, error) = refused.unwrap();
        assert_eq!(at, 64);
        assert_eq!(error.to_string(), "an event exceeded 67108864 bytes");
    }

    #[test]
    fn a_flood_of_lines_without_a_blank_one_is_refused() {
        // Comments and data lines that never end their frame.
        for line in [&b": keep-alive\n"[..], b"data: x\r\n", b"event: e\r"] {
            let mut decoder = Decoder::new(1 << 16);
            let flood = line.repeat((1 << 16) / line.len() + 1);
            assert_eq!(decoder.push(&flood), Err(FrameTooLarge { max: 1 << 16 }));
        }
        // The same bytes as many small frames are fine.
        let mut decoder = Decoder::new(1 << 16);
        let frames = b"data: x\n\n".repeat(1 << 14);
        decoder.push(&frames).unwrap();
        assert_eq!(std::iter::from_fn(|| decoder.next_frame()).count(), 1 << 14);
    }

    #[test]
    fn the_cap_counts_only_the_unfinished_frame() {
        let mut decoder = Decoder::new(32);
        let mut bytes = b"data: 0123456789012345678\n\n".to_vec();
        bytes.extend_from_slice(b"data: 0123456789");
        decoder.push(&bytes).unwrap();
        assert_eq!(decoder.next_frame(), Some(data("0123456789012345678")));
        decoder.push(b"012345678\n").unwrap();
        assert!(decoder.push(b"\n").is_ok());
        assert!(decoder.next_frame().is_some());
        assert_eq!(
            decoder.push(&[b'y'; 33]).unwrap_err().to_string(),
            "an event exceeded 32 bytes"
        );
    }

    #[test]
    fn a_huge_frame_dripped_in_small_pieces_costs_linear_time() {
        // 16 thousand pushes of 1 KiB: rescanning on each push would
        // compare about 128 GB; scanning only new bytes, 16 MiB.
        const MAX: usize = 16 << 20;
        let mut decoder = Decoder::new(MAX);
        let piece = vec![b'x'; 1024];
        let started = std::time::Instant::now();
        decoder.push(b"data: ").unwrap();
        for _ in 0..(MAX / 1024 - 1) {
            decoder.push(&piece).unwrap();
            assert_eq!(decoder.next_frame(), None);
        }
        decoder.push(b"\n\n").unwrap();
        let frame = decoder.next_frame().unwrap();
        assert_eq!(frame.data.unwrap().len(), MAX - 1024);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // And one byte at a time, with line ends straddling pushes.
        let mut decoder = Decoder::new(MAX);
        let mut got = Vec::new();
        for byte in b"event: ping\r\ndata: a\r\n\r\ndata: b\n\ndata: c\r\r" {
            decoder.push(&[*byte]).unwrap();
            got.extend(std::iter::from_fn(|| decoder.next_frame()));
        }
        let data: Vec<_> = got.into_iter().map(|f| f.data.unwrap()).collect();
        assert_eq!(data, ["a", "b", "c"]);
    }
}
