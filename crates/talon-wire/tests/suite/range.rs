//! `parse_range`: every single-range form against RFC 9110's reading over
//! small contents (an independent model, compared whole), the edges
//! (`bytes=0-0`, `bytes=-0`, empty content, `u64::MAX`), and what is
//! ignored (several or overlapping ranges, other units, garbage, numbers
//! past `u64`).

use talon_wire::range::{Span, Unsatisfiable, parse_range};

type Parsed = Result<Option<Span>, Unsatisfiable>;

fn span(start: u64, end: u64) -> Parsed {
    Ok(Some(Span { start, end }))
}

/// RFC 9110 §14.1.2-14.1.3 for one range over a `len`-byte content:
/// `first` and `last` are the positions, `None` where the form leaves one
/// out (`a-`, `-n`).
fn model(first: Option<u64>, last: Option<u64>, len: u64) -> Parsed {
    match (first, last) {
        (Some(a), Some(b)) if b < a => Ok(None),
        (Some(a), _) if a >= len => Err(Unsatisfiable),
        (Some(a), Some(b)) => span(a, b.min(len - 1)),
        (Some(a), None) => span(a, len - 1),
        (None, Some(0)) => Err(Unsatisfiable),
        (None, Some(_)) if len == 0 => Err(Unsatisfiable),
        (None, Some(n)) => span(len - n.min(len), len - 1),
        (None, None) => Ok(None),
    }
}

#[test]
fn every_small_range_is_read_as_rfc_9110_says() {
    let mut got = Vec::new();
    let mut expected = Vec::new();
    for len in 0..=12u64 {
        for a in 0..=14u64 {
            for (header, first, last) in [
                (format!("bytes={a}-"), Some(a), None),
                (format!("bytes=-{a}"), None, Some(a)),
            ] {
                got.push((header.clone(), len, parse_range(Some(&header), len)));
                expected.push((header, len, model(first, last, len)));
            }
            for b in 0..=14u64 {
                let header = format!("bytes={a}-{b}");
                got.push((header.clone(), len, parse_range(Some(&header), len)));
                expected.push((header, len, model(Some(a), Some(b), len)));
            }
        }
    }
    assert_eq!(got, expected);
}

#[test]
fn a_span_is_inside_the_content_and_len_counts_it() {
    for len in 1..=12u64 {
        for header in [
            "bytes=0-0",
            "bytes=-1",
            "bytes=3-",
            "bytes=2-100",
            "bytes=-100",
        ] {
            if let Ok(Some(s)) = parse_range(Some(header), len) {
                assert!(s.start <= s.end && s.end < len, "{header} of {len}: {s:?}");
                assert_eq!((s.len(), s.is_empty()), (s.end - s.start + 1, false));
            }
        }
    }
}

#[test]
fn the_edges() {
    let cases: Vec<(&str, u64, Parsed)> = vec![
        ("bytes=0-0", 10, span(0, 0)),
        ("bytes=0-0", 1, span(0, 0)),
        ("bytes=0-0", 0, Err(Unsatisfiable)),
        ("bytes=-0", 10, Err(Unsatisfiable)),
        ("bytes=-0", 0, Err(Unsatisfiable)),
        ("bytes=-1", 0, Err(Unsatisfiable)),
        ("bytes=5-", 10, span(5, 9)),
        ("bytes=5-", 6, span(5, 5)),
        ("bytes=5-", 5, Err(Unsatisfiable)),
        ("bytes=9-9", 10, span(9, 9)),
        ("bytes=10-10", 10, Err(Unsatisfiable)),
        ("bytes=10-20", 10, Err(Unsatisfiable)),
        // Reversed is invalid (ignored) before it is unsatisfiable.
        ("bytes=20-10", 10, Ok(None)),
        ("bytes=0-", u64::MAX, span(0, u64::MAX - 1)),
        ("bytes=-1", u64::MAX, span(u64::MAX - 1, u64::MAX - 1)),
        (
            "bytes=18446744073709551614-",
            u64::MAX,
            span(u64::MAX - 1, u64::MAX - 1),
        ),
        ("bytes=18446744073709551615-", u64::MAX, Err(Unsatisfiable)),
        ("bytes=18446744073709551615-", 10, Err(Unsatisfiable)),
        ("bytes=0-18446744073709551615", 10, span(0, 9)),
        ("bytes=-18446744073709551615", 10, span(0, 9)),
    ];
    let got: Vec<(&str, u64, Parsed)> = cases
        .iter()
        .map(|&(header, len, _)| (header, len, parse_range(Some(header), len)))
        .collect();
    assert_eq!(got, cases);
    assert_eq!(
        Span {
            start: 0,
            end: u64::MAX - 1
        }
        .len(),
        u64::MAX
    );
}

#[test]
fn whitespace_around_the_header_and_the_positions_is_tolerated() {
    for header in [" bytes=2-4 ", "bytes= 2 - 4", "\tbytes=2-4\t", "bytes=2 -4"] {
        assert_eq!(parse_range(Some(header), 10), span(2, 4), "{header:?}");
    }
    // Pinned: `str::trim` trims Unicode whitespace too (a header that
    // reached `&str` through `HeaderValue::to_str` holds none).
    assert_eq!(parse_range(Some("bytes=\u{a0}2-4\u{3000}"), 10), span(2, 4));
}

#[test]
fn several_ranges_other_units_and_garbage_send_the_whole_content() {
    let ignored = [
        // Several ranges, overlapping or not, or a stray comma.
        "bytes=0-1,3-4",
        "bytes=0-5,3-8",
        "bytes=0-0,-1",
        "bytes=0-1,",
        "bytes=,0-1",
        "bytes=0-1, 0-1",
        // Another unit, or bytes in another case (RFC 9110 allows ignoring).
        "items=0-1",
        "Bytes=0-1",
        "bytes 0-1",
        "bytes:0-1",
        "=0-1",
        // Malformed.
        "",
        "bytes",
        "bytes=",
        "bytes=-",
        "bytes=5",
        "bytes=--1",
        "bytes=1--2",
        "bytes=1-2-3",
        "bytes=a-b",
        "bytes=a-",
        "bytes=-a",
        "bytes=0x1-2",
        "bytes=1.0-2",
        "bytes=1e2-",
        "bytes=-1-",
        "bytes=١-٢",
        "bytes=0-1\0",
        // Numbers past u64: ignored rather than clamped or refused.
        "bytes=0-18446744073709551616",
        "bytes=18446744073709551616-",
        "bytes=-18446744073709551616",
        "bytes=99999999999999999999999999999999-",
    ];
    let got: Vec<(&str, Parsed)> = ignored
        .iter()
        .map(|&h| (h, parse_range(Some(h), 10)))
        .collect();
    let expected: Vec<(&str, Parsed)> = ignored.iter().map(|&h| (h, Ok(None))).collect();
    assert_eq!(got, expected);
    assert_eq!(parse_range(None, 10), Ok(None));
    assert_eq!(parse_range(None, 0), Ok(None));
}

#[test]
fn a_leading_plus_on_a_position_is_accepted_as_rusts_parser_does() {
    // Pinned: RFC 9110's positions are `1*DIGIT`, but `u64::from_str`
    // takes a leading `+`, and so does this parser.
    let cases: Vec<(&str, Parsed)> = vec![
        ("bytes=+1-2", span(1, 2)),
        ("bytes=1-+3", span(1, 3)),
        ("bytes=-+3", span(7, 9)),
    ];
    let got: Vec<(&str, Parsed)> = cases
        .iter()
        .map(|&(h, _)| (h, parse_range(Some(h), 10)))
        .collect();
    assert_eq!(got, cases);
}

#[test]
fn a_huge_header_is_read_without_trouble() {
    let long = format!("bytes=0-{}", "9".repeat(1 << 20));
    assert_eq!(parse_range(Some(&long), 10), Ok(None));
    let many = format!("bytes={}", vec!["0-0"; 100_000].join(","));
    assert_eq!(parse_range(Some(&many), 10), Ok(None));
    let zeros = format!("bytes={}5-", "0".repeat(1 << 16));
    assert_eq!(parse_range(Some(&zeros), 10), span(5, 9));
}
