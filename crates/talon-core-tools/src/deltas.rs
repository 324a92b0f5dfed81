//! A running command's output as it arrives: `tool.call.delta` updates
//! (`{stream: "stdout" | "stderr", text}`) through the run's update sink,
//! so an app shows a long command's progress before its result.
//!
//! A live view, bounded three ways, whatever the command prints:
//! - **Rate.** Each stream sends at most one delta per [`DELTA_INTERVAL`]
//!   (the shell's tick), of at most [`DELTA_CHUNK`] bytes of text. Output
//!   that arrives faster is left out from the oldest end, as a terminal
//!   scrolls: each delta holds the newest output, and says how much of
//!   its stream was left out before it (`omittedBytes`).
//! - **Total.** A call streams at most [`MAX_DELTA_BYTES`] of text; past
//!   that, each stream's last delta is `{stream, omittedBytes}`.
//! - **Whole lines after a gap.** Text after a left-out stretch starts at
//!   a line start (output up to the next line end is left out too), so a
//!   value the host redacts (a bound secret) is never shown in part after
//!   a gap; consecutive deltas are one text, which the host redacts across
//!   their boundary.
//!
//! The whole output is in the result (capped) and the command's log.
//! A burst of megabytes therefore costs a run a few deltas, not hundreds
//! (measured in `docs/benchmarks.md`).

use std::time::Duration;

use serde_json::{Value, json};
use talon_tools::UpdateSink;

/// Most bytes of text in one delta.
pub const DELTA_CHUNK: usize = 8 * 1024;

/// How often a stream may send a delta: output waits at most this long.
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

/// One stream's output not yet sent.
#[derive(Default)]
struct Pending {
    /// The newest output, at most [`DELTA_CHUNK`] bytes (plus a character
    /// cut at its end).
    text: Vec<u8>,
    /// Bytes left out since the last delta.
    omitted: u64,
    /// Output is being left out up to the next line end.
    to_line_end: bool,
}

impl Pending {
    /// Takes `bytes`, leaving out the oldest output past one chunk.
    fn push(&mut self, mut bytes: &[u8]) {
        if self.to_line_end {
            match bytes.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.omitted += end as u64 + 1;
                    bytes = &bytes[end + 1..];
                    self.to_line_end = false;
                }
                None => {
                    self.omitted += bytes.len() as u64;
                    return;
                }
            }
        }
        self.text.extend_from_slice(bytes);
        let over = self.text.len().saturating_sub(DELTA_CHUNK);
        if over == 0 {
            return;
        }
        // The oldest `over` bytes go, and the rest of their line with them.
        match self.text[over..].iter().position(|&b| b == b'\n') {
            Some(end) => {
                let cut = over + end + 1;
                self.omitted += cut as u64;
                self.text.drain(..cut);
            }
            None => {
                self.omitted += self.text.len() as u64;
                self.text.clear();
                self.to_line_end = true;
            }
        }
    }
}

/// A call's output not yet sent, and what was.
pub(crate) struct Deltas<'a> {
    to: Updates<'a>,
    pending: [Pending; 2],
    /// Bytes of text sent so far.
    sent: usize,
}

impl<'a> Deltas<'a> {
    pub fn new(to: Updates<'a>) -> Self {
        Self {
            to,
            pending: [Pending::default(), Pending::default()],
            sent: 0,
        }
    }

    /// Takes output of `stream`; it is sent by the next [`Deltas::flush`].
    pub fn push(&mut self, stream: Stream, bytes: &[u8]) {
        let pending = &mut self.pending[stream as usize];
        if self.sent >= MAX_DELTA_BYTES {
            pending.omitted += bytes.len() as u64;
            return;
        }
        pending.push(bytes);
    }

    /// Whether output waits to be sent.
    pub fn waiting(&self) -> bool {
        self.sent < MAX_DELTA_BYTES && self.pending.iter().any(|p| !p.text.is_empty())
    }

    /// Sends what waits, one delta per stream (keeping a character cut at
    /// its end): called at most once per [`DELTA_INTERVAL`].
    pub fn flush(&mut self) {
        for stream in [Stream::Out, Stream::Err] {
            self.send(stream, End::Char);
        }
    }

    /// Sends everything left, and what was left out after the last delta.
    pub fn finish(mut self) {
        for stream in [Stream::Out, Stream::Err] {
            self.send(stream, End::Any);
            let omitted = std::mem::take(&mut self.pending[stream as usize].omitted);
            if omitted > 0 {
                self.update(json!({"stream": stream.name(), "omittedBytes": omitted}));
            }
        }
    }

    /// Sends `stream`'s pending text (up to the call's cap), ending where
    /// `end` allows, with how much was left out before it.
    fn send(&mut self, stream: Stream, end: End) {
        let room = MAX_DELTA_BYTES.saturating_sub(self.sent);
        let pending = &mut self.pending[stream as usize];
        let max = pending.text.len().min(room);
        let cut = match std::str::from_utf8(&pending.text[..max]) {
            Ok(_) => max,
            // A character cut at the end waits for its rest; bytes that
            // are not UTF-8 go as replacement characters.
            Err(e) if e.error_len().is_none() && end == End::Char => e.valid_up_to(),
            Err(_) => max,
        };
        if cut == 0 {
            return;
        }
        let text = String::from_utf8_lossy(&pending.text[..cut]).into_owned();
        let omitted = std::mem::take(&mut pending.omitted);
        pending.text.drain(..cut);
        if max < pending.text.len() + cut {
            // The cap: the rest is left out.
            pending.omitted += pending.text.len() as u64;
            pending.text.clear();
        }
        self.sent += cut;
        let mut update = json!({"stream": stream.name(), "text": text});
        if omitted > 0 {
            update["omittedBytes"] = Value::from(omitted);
        }
        self.update(update);
    }

    fn update(&self, update: Value) {
        self.to.sink.update(self.to.call_id, update);
    }
}

/// Where a delta may end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
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

    /// Bytes of text and bytes said to be left out, in all.
    fn accounted(sent: &[Value]) -> (usize, u64) {
        let text = sent
            .iter()
            .filter_map(|v| v["text"].as_str())
            .map(str::len)
            .sum();
        let omitted = sent.iter().filter_map(|v| v["omittedBytes"].as_u64()).sum();
        (text, omitted)
    }

    #[test]
    fn output_slower_than_the_rate_is_sent_whole() {
        let sent = run(|d| {
            d.push(Stream::Out, b"one\ntw");
            d.flush();
            d.push(Stream::Out, b"o\n");
            d.push(Stream::Err, b"oops\n");
            d.flush();
        });
        assert_eq!(
            sent,
            vec![
                json!({"stream": "stdout", "text": "one\ntw"}),
                json!({"stream": "stdout", "text": "o\n"}),
                json!({"stream": "stderr", "text": "oops\n"}),
            ]
        );
    }

    #[test]
    fn a_flood_keeps_the_newest_whole_lines_and_says_what_it_left_out() {
        let line = "x".repeat(99) + "\n";
        let flood = line.repeat(3 * DELTA_CHUNK / 100);
        let sent = run(|d| {
            d.push(Stream::Out, flood.as_bytes());
            d.flush();
        });
        let kept = DELTA_CHUNK / 100;
        assert_eq!(
            sent,
            vec![json!({
                "stream": "stdout",
                "text": line.repeat(kept),
                "omittedBytes": flood.len() - kept * 100,
            })]
        );
    }

    #[test]
    fn after_a_gap_text_resumes_at_a_line_start() {
        // A line longer than a chunk goes, up to its end, even across
        // reads.
        let long = "s".repeat(DELTA_CHUNK + 1);
        let sent = run(|d| {
            d.push(Stream::Out, long.as_bytes());
            d.push(Stream::Out, b"ecret\nnext\n");
            d.flush();
        });
        assert_eq!(
            sent,
            vec![json!({
                "stream": "stdout",
                "text": "next\n",
                "omittedBytes": long.len() + "ecret\n".len(),
            })]
        );
    }

    #[test]
    fn a_cut_character_waits_for_its_rest() {
        let sent = run(|d| {
            d.push(Stream::Err, "é".as_bytes().get(..1).unwrap());
            d.flush();
            d.push(Stream::Err, "é".as_bytes().get(1..).unwrap());
        });
        assert_eq!(sent, vec![json!({"stream": "stderr", "text": "é"})]);
    }

    #[test]
    fn the_call_cap_holds_and_every_byte_is_accounted_for() {
        let line = "y".repeat(63) + "\n";
        let piece = line.repeat(DELTA_CHUNK / 64);
        let rounds = MAX_DELTA_BYTES / DELTA_CHUNK + 5;
        let sent = run(|d| {
            for _ in 0..rounds {
                d.push(Stream::Out, piece.as_bytes());
                d.flush();
            }
            d.push(Stream::Out, b"tail\n");
        });
        assert_eq!(
            accounted(&sent),
            (
                MAX_DELTA_BYTES,
                (rounds * piece.len() + 5 - MAX_DELTA_BYTES) as u64
            )
        );
        assert_eq!(
            sent.last().unwrap(),
            &json!({"stream": "stdout", "omittedBytes": 5 * piece.len() + 5})
        );
        assert!(
            sent.iter()
                .all(|v| v["text"].as_str().is_none_or(|t| t.len() <= DELTA_CHUNK))
        );
    }

    #[test]
    fn a_burst_of_megabytes_is_a_few_deltas() {
        let line = "0123456789abcdefghijklmnopqrstuvwxyz\n";
        let read = line.repeat(65536 / line.len());
        let total = 10_000_000 / read.len() * read.len();
        let sent = run(|d| {
            d.push(Stream::Out, read.as_bytes());
            d.flush();
            for _ in 1..10_000_000 / read.len() {
                d.push(Stream::Out, read.as_bytes());
            }
        });
        let (text, omitted) = accounted(&sent);
        assert_eq!((sent.len(), text as u64 + omitted), (2, total as u64));
    }
}
