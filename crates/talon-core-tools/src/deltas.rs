//! A running command's output as it arrives: `tool.call.delta` updates
//! (`{stream: "stdout" | "stderr", text}`) through the run's update sink,
//! so an app shows a long command's progress before its result.
//!
//! Bounded three ways: each delta holds at most [`DELTA_CHUNK`] bytes (the
//! event's own cap is 16 KiB of JSON, and escaping can double text);
//! output waits at most [`DELTA_INTERVAL`] and is sent at most that often
//! unless a chunk fills, and a call streams at most [`MAX_DELTA_BYTES`] in
//! all: past that only `{omittedBytes}` is said at the end, and the whole
//! output is in the result (capped) and the command's log. Text is split
//! on character boundaries, and where it can on line ends, so a value the
//! host redacts (a bound secret) is not cut between two deltas unless a
//! line is longer than a chunk.

use std::time::Duration;

use serde_json::json;
use talon_tools::UpdateSink;

/// Most bytes of text in one delta.
pub const DELTA_CHUNK: usize = 8 * 1024;

/// How long output waits before it is sent, and so how often a command
/// that prints little sends a delta.
pub const DELTA_INTERVAL: Duration = Duration::from_millis(100);

/// Most bytes of output one call streams as deltas.
pub const MAX_DELTA_BYTES: usize = 1024 * 1024;

/// Which stream a piece of output came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stream {
    Out = 0,
    Err = 1,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Self::Out => "stdout",
            Self::Err => "stderr",
        }
    }
}

/// Where a call's deltas go.
#[derive(Clone, Copy)]
pub struct Updates<'a> {
    /// The run's update sink.
    pub sink: &'a dyn UpdateSink,
    /// The call they belong to.
    pub call_id: &'a str,
}

/// A call's output not yet sent, and what was.
pub(crate) struct Deltas<'a> {
    to: Updates<'a>,
    pending: [Vec<u8>; 2],
    /// Bytes taken for deltas so far (sent or pending).
    taken: usize,
    omitted: u64,
}

impl<'a> Deltas<'a> {
    pub fn new(to: Updates<'a>) -> Self {
        Self {
            to,
            pending: [Vec::new(), Vec::new()],
            taken: 0,
            omitted: 0,
        }
    }

    /// Takes output of `stream`; sends whole chunks at once.
    pub fn push(&mut self, stream: Stream, bytes: &[u8]) {
        let room = MAX_DELTA_BYTES.saturating_sub(self.taken);
        let take = bytes.len().min(room);
        self.taken += take;
        self.omitted += (bytes.len() - take) as u64;
        self.pending[stream as usize].extend_from_slice(&bytes[..take]);
        while self.pending[stream as usize].len() >= DELTA_CHUNK {
            self.send(stream, DELTA_CHUNK, End::Line);
        }
    }

    /// Whether output waits to be sent.
    pub fn waiting(&self) -> bool {
        self.pending.iter().any(|p| !p.is_empty())
    }

    /// Sends what waits (keeping a character cut at its end).
    pub fn flush(&mut self) {
        for stream in [Stream::Out, Stream::Err] {
            let len = self.pending[stream as usize].len();
            if len > 0 {
                self.send(stream, len, End::Char);
            }
        }
    }

    /// Sends everything left, then how much output was not streamed.
    pub fn finish(mut self) {
        for stream in [Stream::Out, Stream::Err] {
            let len = self.pending[stream as usize].len();
            if len > 0 {
                self.send(stream, len, End::Any);
            }
        }
        if self.omitted > 0 {
            self.to
                .sink
                .update(self.to.call_id, json!({"omittedBytes": self.omitted}));
        }
    }

    /// Sends up to `max` bytes of `stream`'s pending output, ending where
    /// `end` allows.
    fn send(&mut self, stream: Stream, max: usize, end: End) {
        let pending = &mut self.pending[stream as usize];
        let max = max.min(pending.len());
        let mut cut = match std::str::from_utf8(&pending[..max]) {
            Ok(_) => max,
            // A character cut at the end waits for its rest; bytes that
            // are not UTF-8 go as replacement characters.
            Err(e) if e.error_len().is_none() && end != End::Any => e.valid_up_to(),
            Err(_) => max,
        };
        if end == End::Line
            && let Some(line) = pending[..cut].iter().rposition(|&b| b == b'\n')
        {
            cut = line + 1;
        }
        if cut == 0 {
            if end == End::Char {
                // Only a cut character waits: it goes with its rest.
                return;
            }
            cut = max;
        }
        let text = String::from_utf8_lossy(&pending[..cut]).into_owned();
        pending.drain(..cut);
        self.to.sink.update(
            self.to.call_id,
            json!({"stream": stream.name(), "text": text}),
        );
    }
}

/// Where a delta may end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// At the last line end in it, else at a character boundary.
    Line,
    /// At a character boundary.
    Char,
    /// Anywhere (the output has ended).
    Any,
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::Value;

    use super::*;

    #[derive(Default)]
    struct Seen(Mutex<Vec<Value>>);

    impl UpdateSink for Seen {
        fn update(&self, _call_id: &str, update: Value) {
            self.0.lock().unwrap().push(update);
        }
    }

    fn run(steps: impl FnOnce(&mut Deltas<'_>)) -> Vec<Value> {
        let seen = Seen::default();
        let mut deltas = Deltas::new(Updates {
            sink: &seen,
            call_id: "c",
        });
        steps(&mut deltas);
        deltas.finish();
        seen.0.into_inner().unwrap()
    }

    #[test]
    fn chunks_end_on_lines_and_characters_and_the_cap_holds() {
        // A full chunk goes at once, cut after its last line.
        let line = "x".repeat(99) + "\n";
        let many = line.repeat(DELTA_CHUNK / 100 + 1);
        let sent = run(|d| d.push(Stream::Out, many.as_bytes()));
        let lines_per_chunk = DELTA_CHUNK / 100;
        assert_eq!(
            sent,
            vec![
                json!({"stream": "stdout", "text": line.repeat(lines_per_chunk)}),
                json!({"stream": "stdout", "text": line.repeat(many.len() / 100 - lines_per_chunk)}),
            ]
        );
        // A character cut by a read waits for its rest.
        let sent = run(|d| {
            d.push(Stream::Err, "é".as_bytes().get(..1).unwrap());
            d.flush();
            d.push(Stream::Err, "é".as_bytes().get(1..).unwrap());
        });
        assert_eq!(sent, vec![json!({"stream": "stderr", "text": "é"})]);
        // Past the cap, only how much was left out.
        let big = vec![b'y'; MAX_DELTA_BYTES + 10];
        let sent = run(|d| d.push(Stream::Out, &big));
        let text: usize = sent
            .iter()
            .filter_map(|v| v["text"].as_str())
            .map(str::len)
            .sum();
        assert_eq!(
            (text, sent.last().unwrap().clone()),
            (MAX_DELTA_BYTES, json!({"omittedBytes": 10}))
        );
        assert!(
            sent.iter()
                .all(|v| v["text"].as_str().is_none_or(|t| t.len() <= DELTA_CHUNK))
        );
    }
}
