//! One `Range` request of artifact content, as RFC 9110 reads it:
//! `bytes=a-b`, `bytes=a-` and `bytes=-n` are honoured; several ranges, a
//! unit other than bytes or a malformed header are ignored (the whole
//! content is sent, which RFC 9110 allows); a range wholly outside the
//! content is unsatisfiable (`416`).

/// A byte range of a content, inclusive at both ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The first byte.
    pub start: u64,
    /// The last byte.
    pub end: u64,
}

impl Span {
    /// How many bytes it covers.
    pub fn len(&self) -> u64 {
        self.end - self.start + 1
    }

    /// Never: a span covers at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The range lies outside the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsatisfiable;

/// Reads a `Range` header for a content `len` bytes long: `Ok(None)` for
/// the whole content (no header, or one not honoured).
pub fn parse_range(header: Option<&str>, len: u64) -> Result<Option<Span>, Unsatisfiable> {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((first, last)) = spec.split_once('-') else {
        return Ok(None);
    };
    let (first, last) = (first.trim(), last.trim());
    let span = if first.is_empty() {
        // The last n bytes.
        let Ok(n) = last.parse::<u64>() else {
            return Ok(None);
        };
        if n == 0 || len == 0 {
            return Err(Unsatisfiable);
        }
        Span {
            start: len.saturating_sub(n),
            end: len - 1,
        }
    } else {
        let Ok(start) = first.parse::<u64>() else {
            return Ok(None);
        };
        let end = if last.is_empty() {
            len.saturating_sub(1)
        } else {
            match last.parse::<u64>() {
                Ok(end) if end >= start => end.min(len.saturating_sub(1)),
                _ => return Ok(None),
            }
        };
        if start >= len {
            return Err(Unsatisfiable);
        }
        Span { start, end }
    };
    Ok(Some(span))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_read_as_rfc_9110_says() {
        let span = |start, end| Ok(Some(Span { start, end }));
        assert_eq!(parse_range(None, 10), Ok(None));
        assert_eq!(parse_range(Some("bytes=0-3"), 10), span(0, 3));
        assert_eq!(parse_range(Some("bytes=4-"), 10), span(4, 9));
        assert_eq!(parse_range(Some("bytes=-3"), 10), span(7, 9));
        assert_eq!(parse_range(Some("bytes=-30"), 10), span(0, 9));
        assert_eq!(parse_range(Some("bytes=8-100"), 10), span(8, 9));
        assert_eq!(parse_range(Some("bytes=10-"), 10), Err(Unsatisfiable));
        assert_eq!(parse_range(Some("bytes=-0"), 10), Err(Unsatisfiable));
        assert_eq!(parse_range(Some("bytes=0-"), 0), Err(Unsatisfiable));
        // Ignored: not bytes, several ranges, malformed, reversed.
        for ignored in [
            "items=0-1",
            "bytes=0-1,3-4",
            "bytes=a-b",
            "bytes=5-2",
            "bytes=5",
        ] {
            assert_eq!(parse_range(Some(ignored), 10), Ok(None), "{ignored}");
        }
        assert_eq!(Span { start: 2, end: 4 }.len(), 3);
    }
}
