//! W3C Trace Context: the `traceparent` header
//! (`00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`) a caller
//! sends to put the gateway's spans inside its own trace, and that the
//! gateway keeps with a run so the run's spans join the request's trace
//! wherever and whenever the run executes.

use std::fmt;
use std::sync::OnceLock;

/// The header's name.
pub const TRACEPARENT: &str = "traceparent";

/// A span's place in a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace (never all zeros).
    pub trace_id: [u8; 16],
    /// The span (never all zeros).
    pub span_id: [u8; 8],
    /// Whether the trace is recorded (`sampled`, flag bit 0).
    pub sampled: bool,
}

fn hex_into(text: &str, out: &mut [u8]) -> Option<()> {
    // Lowercase only, as the recommendation requires.
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    hex::decode_to_slice(text, out).ok()
}

impl TraceContext {
    /// Reads a `traceparent` value; `None` for anything the
    /// recommendation says to ignore (wrong length or case, version
    /// `ff`, all-zero ids). A later version is read by its first four
    /// fields, as the recommendation asks.
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        let mut parts = value.splitn(5, '-');
        let version = parts.next()?;
        let trace = parts.next()?;
        let span = parts.next()?;
        let flags = parts.next()?;
        let rest = parts.next();
        let mut version_byte = [0u8; 1];
        hex_into(version, &mut version_byte)?;
        if version_byte[0] == 0xff || (version_byte[0] == 0 && rest.is_some()) {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        let mut flag_byte = [0u8; 1];
        hex_into(trace, &mut trace_id)?;
        hex_into(span, &mut span_id)?;
        hex_into(flags, &mut flag_byte)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            sampled: flag_byte[0] & 1 == 1,
        })
    }

    /// The trace id in lowercase hex.
    pub fn trace_hex(&self) -> String {
        hex::encode(self.trace_id)
    }

    /// The span id in lowercase hex.
    pub fn span_hex(&self) -> String {
        hex::encode(self.span_id)
    }
}

/// How the process's tracing backend tells the current span's context.
static CURRENT: OnceLock<fn() -> Option<TraceContext>> = OnceLock::new();

/// Registers how to read the current span's context (the binary does,
/// once, when it installs an exporter); later calls are ignored.
pub fn install(current: fn() -> Option<TraceContext>) {
    let _ = CURRENT.set(current);
}

/// The context of the span the caller is inside, when traces are
/// exported and that span is traced: what a run keeps so its own spans
/// join the request's trace.
pub fn current() -> Option<TraceContext> {
    CURRENT.get().and_then(|current| current())
}

impl fmt::Display for TraceContext {
    /// The `traceparent` value (version 00).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            self.trace_hex(),
            self.span_hex(),
            u8::from(self.sampled)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_header_round_trips_and_bad_ones_are_ignored() {
        let value = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parsed = TraceContext::parse(value).unwrap();
        assert_eq!(parsed.to_string(), value);
        assert!(parsed.sampled);
        let unsampled =
            TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        assert_eq!(unsampled.map(|c| c.sampled), Some(false));
        // A future version with more fields is read by its first four.
        assert!(
            TraceContext::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz")
                .is_some()
        );
        for bad in [
            "",
            "00",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad}");
        }
        let huge = "0".repeat(1 << 20);
        assert_eq!(TraceContext::parse(&huge), None);
    }
}
