//! `stream_cursor`: `Last-Event-ID` wins over `after`, blanks are no
//! cursor, and anything but a decimal `u64` is `invalid_request` naming
//! the text.

use axum::http::{HeaderMap, HeaderValue};
use talon_protocol::gateway::{ApiError, ErrorCode};
use talon_wire::stream_cursor;

fn with_header(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("last-event-id", HeaderValue::from_str(value).unwrap());
    headers
}

fn not_an_id(text: &str) -> Result<Option<u64>, ApiError> {
    Err(ApiError::new(
        ErrorCode::InvalidRequest,
        format!("{text:?} is not an event id"),
    ))
}

#[test]
fn after_alone_is_the_cursor() {
    let none = HeaderMap::new();
    let got: Vec<_> = [
        None,
        Some(""),
        Some("  "),
        Some("0"),
        Some(" 12 "),
        Some("18446744073709551615"),
    ]
    .into_iter()
    .map(|after| stream_cursor(&none, after))
    .collect();
    assert_eq!(
        got,
        [
            Ok(None),
            Ok(None),
            Ok(None),
            Ok(Some(0)),
            Ok(Some(12)),
            Ok(Some(u64::MAX))
        ]
    );
}

#[test]
fn the_header_wins_over_after_even_a_bad_one() {
    assert_eq!(stream_cursor(&with_header("9"), Some("7")), Ok(Some(9)));
    assert_eq!(stream_cursor(&with_header("9"), Some("junk")), Ok(Some(9)));
    assert_eq!(
        stream_cursor(&with_header("junk"), Some("7")),
        not_an_id("junk")
    );
    // A header sent blank is a cursor of none: `after` is not consulted.
    assert_eq!(stream_cursor(&with_header(""), Some("7")), Ok(None));
    assert_eq!(stream_cursor(&with_header("  "), None), Ok(None));
}

#[test]
fn the_first_of_several_headers_is_the_cursor() {
    let mut headers = HeaderMap::new();
    headers.append("last-event-id", HeaderValue::from_static("3"));
    headers.append("last-event-id", HeaderValue::from_static("junk"));
    assert_eq!(stream_cursor(&headers, None), Ok(Some(3)));
}

#[test]
fn garbage_is_invalid_request_naming_the_trimmed_text() {
    for (text, named) in [
        ("-1", "-1"),
        ("1.5", "1.5"),
        ("0x10", "0x10"),
        ("1e3", "1e3"),
        (" 4 2 ", "4 2"),
        ("18446744073709551616", "18446744073709551616"),
        ("99999999999999999999999999", "99999999999999999999999999"),
        ("\"5\"", "\"5\""),
        ("５", "５"),
    ] {
        assert_eq!(
            stream_cursor(&HeaderMap::new(), Some(text)),
            not_an_id(named),
            "{text:?}"
        );
    }
    for (text, named) in [("x1", "x1"), (" -3 ", "-3"), ("1,2", "1,2")] {
        assert_eq!(
            stream_cursor(&with_header(text), Some("1")),
            not_an_id(named),
            "{text:?}"
        );
    }
}

#[test]
fn a_leading_plus_is_accepted_as_rusts_parser_does() {
    // Pinned: `u64::from_str` takes `+5`, so the cursor does.
    assert_eq!(stream_cursor(&HeaderMap::new(), Some("+5")), Ok(Some(5)));
    assert_eq!(stream_cursor(&with_header("+0"), None), Ok(Some(0)));
}

#[test]
fn a_non_ascii_header_is_refused_not_ignored() {
    // The doc: "`Last-Event-ID` when the request sends it, else the `after`
    // query parameter". A header with obs-text bytes is sent, so it is
    // refused, never passed over for `after` (here a replay from 0 instead
    // of resuming after the client's last event).
    let mut headers = HeaderMap::new();
    headers.insert("last-event-id", HeaderValue::from_bytes(b"\xff42").unwrap());
    let got = stream_cursor(&headers, Some("0"));
    assert_eq!(
        got.as_ref().map_err(|e| e.code),
        Err(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        stream_cursor(&headers, None).map_err(|e| e.code),
        Err(ErrorCode::InvalidRequest)
    );
}
