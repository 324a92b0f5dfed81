//! Server-Sent Events frames: an event's frame holds its id, its type (line
//! breaks dropped) and its JSON as given, one `data:` line per line, so no
//! input can end a frame early or forge a field; an error's frame carries
//! the protocol's error shape.

use serde_json::json;
use talon_protocol::gateway::{ApiError, ErrorCode};
use talon_wire::{sse_error_frame, sse_event_frame};

fn text(frame: &[u8]) -> &str {
    std::str::from_utf8(frame).unwrap()
}

/// The lines of a frame as an SSE parser splits them: at CRLF, LF or a
/// lone CR.
fn sse_lines(frame: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = frame;
    while let Some(at) = rest.find(['\r', '\n']) {
        lines.push(&rest[..at]);
        let skip = if rest[at..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[at + skip..];
    }
    lines.push(rest);
    lines
}

#[test]
fn an_event_frame_is_id_event_and_data() {
    assert_eq!(
        text(&sse_event_frame(0, "run.started", r#"{"seq":0}"#)),
        "id: 0\nevent: run.started\ndata: {\"seq\":0}\n\n"
    );
    assert_eq!(
        text(&sse_event_frame(u64::MAX, "x", "{}")),
        "id: 18446744073709551615\nevent: x\ndata: {}\n\n"
    );
}

#[test]
fn line_breaks_in_the_type_are_dropped() {
    assert_eq!(
        text(&sse_event_frame(
            3,
            "run.\r\ncompleted\n\ndata: forged\r",
            "{}"
        )),
        "id: 3\nevent: run.completeddata: forged\ndata: {}\n\n"
    );
    assert_eq!(
        text(&sse_event_frame(3, "", "{}")),
        "id: 3\nevent: \ndata: {}\n\n"
    );
}

#[test]
fn a_multi_line_payload_gets_one_data_line_per_line() {
    let cases = [
        ("{\n\"a\": 1\n}", "data: {\ndata: \"a\": 1\ndata: }"),
        ("{\r\n\"a\": 1\r\n}", "data: {\ndata: \"a\": 1\ndata: }"),
        // A blank line inside would end the frame: it becomes an empty
        // `data:` line instead.
        ("{\n\n}", "data: {\ndata: \ndata: }"),
        // A forged field on its own line stays data.
        ("{}\nevent: forged", "data: {}\ndata: event: forged"),
    ];
    for (json, data) in cases {
        assert_eq!(
            text(&sse_event_frame(1, "t", json)),
            format!("id: 1\nevent: t\n{data}\n\n"),
            "{json:?}"
        );
    }
}

#[test]
fn an_empty_payload_is_one_empty_data_line() {
    assert_eq!(
        text(&sse_event_frame(1, "t", "")),
        "id: 1\nevent: t\ndata: \n\n"
    );
}

#[test]
fn no_payload_ends_a_frame_early_or_forges_a_field() {
    // The frame, split as an SSE parser splits it, is exactly the id, the
    // event and data lines, then the blank line that ends it.
    for json in ["{\"a\":\n1}", "{\"a\":\r\n1}", "{\n\n\n}", "a\n"] {
        let frame = sse_event_frame(1, "t", json);
        let lines = sse_lines(text(&frame));
        let fields: Vec<&str> = lines
            .iter()
            .map(|l| l.split(':').next().unwrap_or(""))
            .collect();
        let mut expected = vec!["id", "event"];
        expected.resize(lines.len() - 2, "data");
        expected.extend(["", ""]);
        assert_eq!(fields, expected, "{json:?}: {lines:?}");
    }
}

#[test]
fn a_lone_carriage_return_in_the_payload_cannot_break_the_frame() {
    // `\r` is JSON whitespace, and an event stream ends a line at a lone
    // CR too: each part is a `data:` line of its own, so a client rebuilds
    // the payload and no part is read as a field (it was, once:
    // `str::lines` splits at `\n` only).
    assert_eq!(
        text(&sse_event_frame(1, "t", "{\"a\":\r1}")),
        "id: 1\nevent: t\ndata: {\"a\":\ndata: 1}\n\n"
    );
    let frame = sse_event_frame(1, "t", "{}\revent: forged\r\rdata: x");
    let lines = sse_lines(text(&frame));
    assert!(
        lines[2..lines.len() - 2]
            .iter()
            .all(|l| l.starts_with("data: ")),
        "{lines:?}"
    );
}

/// The data of an error frame that is exactly `event: error`, one `data:`
/// line and the blank line ending it, as JSON.
fn error_frame_data(frame: &[u8]) -> serde_json::Value {
    let frame = text(frame);
    let lines = sse_lines(frame);
    let [event, data, "", ""] = lines[..] else {
        panic!("not a one-line error frame: {frame:?}");
    };
    assert_eq!(event, "event: error");
    let data = data
        .strip_prefix("data: ")
        .unwrap_or_else(|| panic!("no data line: {frame:?}"));
    serde_json::from_str(data).unwrap()
}

#[test]
fn an_error_frame_carries_the_error_shape_whole() {
    let error = ApiError::new(ErrorCode::CursorExpired, "older than kept").with_details(
        talon_protocol::gateway::ErrorDetails {
            oldest_id: Some("41".to_owned()),
            ..Default::default()
        },
    );
    assert_eq!(
        error_frame_data(&sse_error_frame(&error)),
        json!({"error": {
            "code": "cursor_expired",
            "message": "older than kept",
            "retryable": false,
            "details": {"oldestId": "41"},
        }})
    );
}

#[test]
fn an_error_frame_stays_one_data_line_whatever_the_message() {
    // Line breaks in a message are escaped by JSON, never raw in the frame.
    let message = "line one\nline two\r\n\ndata: forged\r";
    let error = ApiError::new(ErrorCode::Internal, message).with_retry_after_ms(5);
    assert_eq!(
        error_frame_data(&sse_error_frame(&error)),
        json!({"error": {
            "code": "internal",
            "message": message,
            "retryable": true,
            "retryAfterMs": 5,
        }})
    );
}
