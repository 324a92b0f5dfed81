//! The kept output of one background process: a ring of its latest
//! bytes (both streams as they arrived), how many came in all, where the
//! last `poll` stopped, and the first bytes of each stream for a command
//! answered in the foreground (it ended within its `yieldMs`).

use std::collections::VecDeque;

use crate::background::TAIL_BYTES;
use crate::shell::Capture;

/// The kept output of one process.
#[derive(Default)]
pub(crate) struct Output {
    ring: VecDeque<u8>,
    cap: usize,
    total: u64,
    /// Where the last `poll` stopped (bytes since the start).
    pub polled: u64,
    /// The first bytes of each stream, for a command that ends within its
    /// `yieldMs` (answered as a foreground one).
    pub out: Capture,
    pub err: Capture,
}

impl Output {
    /// An empty ring keeping the latest `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let keep = &bytes[bytes.len().saturating_sub(self.cap)..];
        let over = (self.ring.len() + keep.len()).saturating_sub(self.cap);
        self.ring.drain(..over);
        self.ring.extend(keep);
    }

    /// Bytes written in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes written that the ring no longer holds.
    pub fn dropped(&self) -> u64 {
        self.total - self.ring.len() as u64
    }

    /// Kept output from byte `from` (since the start) on, at most `max`
    /// bytes of its end, as text; and whether some was left out.
    pub fn since(&self, from: u64, max: usize) -> (String, bool) {
        let skip = usize::try_from(from.saturating_sub(self.dropped())).unwrap_or(usize::MAX);
        let len = self.ring.len().saturating_sub(skip);
        let take = len.min(max);
        let start = self.ring.len() - take;
        let bytes: Vec<u8> = self.ring.range(start..).copied().collect();
        (lossy_tail(&bytes), take < len || from < self.dropped())
    }

    /// The last [`TAIL_BYTES`] as text.
    pub fn tail(&self) -> String {
        self.since(0, TAIL_BYTES).0
    }

    /// All kept output as text.
    pub fn text(&self) -> String {
        self.since(0, usize::MAX).0
    }
}

/// `bytes` as text, a partial character at its start dropped.
fn lossy_tail(bytes: &[u8]) -> String {
    let start = bytes
        .iter()
        .take(4)
        .position(|b| (*b as i8) >= -0x40)
        .unwrap_or(0);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::Output;

    #[test]
    fn the_ring_keeps_the_latest_bytes_and_counts_the_rest() {
        let mut output = Output {
            cap: 8,
            ..Output::default()
        };
        output.push(b"0123456789");
        output.push(b"ab");
        assert_eq!(
            (output.text(), output.total(), output.dropped()),
            ("456789ab".to_owned(), 12, 4)
        );
        assert_eq!(output.since(10, 100), ("ab".to_owned(), false));
        assert_eq!(output.since(0, 3), ("9ab".to_owned(), true));
    }
}
