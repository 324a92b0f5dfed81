//! The WebSocket frames: a request decodes with any non-null id and null
//! params by default; anything else (not JSON, not an object, the wrong
//! type, a missing or wrong-typed field, nesting past the JSON parser's
//! limit) is refused with the frame's id; binary frames are refused; the
//! answer frames are compared as whole JSON values.

use serde_json::{Value, json};
use talon_protocol::gateway::{ApiError, ErrorCode};
use talon_wire::ws::{Refusal, Request, answer, binary_refusal, decode_request};

const SHAPE: &str = "a request is {\"type\":\"req\",\"id\":..,\"method\":..,\"params\":{..}}";

fn invalid(id: Value, message: &str) -> Result<Request, Refusal> {
    Err((id, ApiError::new(ErrorCode::InvalidRequest, message)))
}

fn request(id: Value, method: &str, params: Value) -> Result<Request, Refusal> {
    Ok(Request {
        id,
        method: method.to_owned(),
        params,
    })
}

#[test]
fn a_request_decodes_with_any_id_but_null() {
    for id in [
        json!(7),
        json!(-1),
        json!(1.5),
        json!("a"),
        json!(""),
        json!(false),
        json!([]),
        json!({"nested": [1, {"x": null}]}),
    ] {
        let text = json!({"type": "req", "id": id, "method": "agents.list", "params": {"a": 1}})
            .to_string();
        assert_eq!(
            decode_request(&text),
            request(id.clone(), "agents.list", json!({"a": 1})),
            "{text}"
        );
    }
}

#[test]
fn params_default_to_null_and_are_kept_as_sent() {
    for (params, expected) in [
        (None, Value::Null),
        (Some(json!(null)), Value::Null),
        (Some(json!([1, 2])), json!([1, 2])),
        (Some(json!("s")), json!("s")),
    ] {
        let mut frame = json!({"type": "req", "id": 1, "method": "m"});
        if let Some(params) = params {
            frame["params"] = params;
        }
        assert_eq!(
            decode_request(&frame.to_string()),
            request(json!(1), "m", expected)
        );
    }
}

#[test]
fn unknown_fields_are_ignored_and_the_method_is_taken_as_sent() {
    assert_eq!(
        decode_request(r#"{"extra":true,"method":"","id":"x","type":"req","params":{}}"#),
        request(json!("x"), "", json!({}))
    );
    assert_eq!(
        decode_request(r#"{"type":"req","id":1,"method":"../../etc/passwd \u0000"}"#),
        request(json!(1), "../../etc/passwd \0", Value::Null)
    );
}

#[test]
fn a_frame_missing_or_mistyping_a_field_is_refused_with_its_id() {
    let cases = [
        (r#"{"id":1,"method":"m"}"#, json!(1)),
        (r#"{"type":"res","id":1,"method":"m"}"#, json!(1)),
        (r#"{"type":"REQ","id":1,"method":"m"}"#, json!(1)),
        (r#"{"type":["req"],"id":1,"method":"m"}"#, json!(1)),
        (r#"{"type":"req","id":1}"#, json!(1)),
        (r#"{"type":"req","id":1,"method":null}"#, json!(1)),
        (r#"{"type":"req","id":1,"method":5}"#, json!(1)),
        (
            r#"{"type":"req","id":{"k":"v"},"method":["m"]}"#,
            json!({"k": "v"}),
        ),
        // No id, or a null one: refused, answered with null.
        (r#"{"type":"req","method":"m"}"#, Value::Null),
        (r#"{"type":"req","id":null,"method":"m"}"#, Value::Null),
        (r#"{}"#, Value::Null),
    ];
    for (text, id) in cases {
        assert_eq!(decode_request(text), invalid(id, SHAPE), "{text}");
    }
}

#[test]
fn json_that_is_not_an_object_is_refused_with_no_id() {
    for text in [
        "null",
        "7",
        "\"req\"",
        "true",
        "[]",
        r#"[{"type":"req","id":1,"method":"m"}]"#,
    ] {
        assert_eq!(decode_request(text), invalid(Value::Null, SHAPE), "{text}");
    }
}

#[test]
fn text_that_is_not_json_is_refused_saying_why() {
    let cases = [
        ("", "not JSON: EOF while parsing a value at line 1 column 0"),
        ("nope", "not JSON: expected ident at line 1 column 2"),
        (
            "{\"type\":\"req\"",
            "not JSON: EOF while parsing an object at line 1 column 13",
        ),
        (
            r#"{"type":"req","id":1,"method":"m"} {}"#,
            "not JSON: trailing characters at line 1 column 36",
        ),
        (
            r#"{"type":"req","id":1,"method":"\ud800"}"#,
            "not JSON: unexpected end of hex escape at line 1 column 38",
        ),
        (
            "{'type':'req'}",
            "not JSON: key must be a string at line 1 column 2",
        ),
        ("{\"a\":NaN}", "not JSON: expected value at line 1 column 6"),
    ];
    for (text, message) in cases {
        assert_eq!(
            decode_request(text),
            invalid(Value::Null, message),
            "{text}"
        );
    }
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    // serde_json stops at 128 levels; a frame nested deeper, whole or in
    // its params, is refused rather than recursed into.
    for depth in [129, 10_000, 1_000_000] {
        let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(
            decode_request(&arrays),
            invalid(
                Value::Null,
                "not JSON: recursion limit exceeded at line 1 column 128"
            ),
            "depth {depth}"
        );
        let params = format!(
            r#"{{"type":"req","id":1,"method":"m","params":{}{}}}"#,
            "{\"a\":".repeat(depth),
            "}".repeat(depth)
        );
        let (id, error) = decode_request(&params).unwrap_err();
        assert_eq!(
            (
                id,
                error.code,
                error
                    .message
                    .starts_with("not JSON: recursion limit exceeded")
            ),
            (Value::Null, ErrorCode::InvalidRequest, true),
            "depth {depth}: {}",
            error.message
        );
    }
    // Just inside the limit decodes.
    let depth = 126;
    let inner = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let text = format!(r#"{{"type":"req","id":1,"method":"m","params":{inner}}}"#);
    assert_eq!(
        decode_request(&text),
        request(json!(1), "m", serde_json::from_str(&inner).unwrap())
    );
}

#[test]
fn a_huge_frame_decodes_whole() {
    // Size limits belong to the transport; the decoder keeps every byte.
    let big = "x".repeat(16 << 20);
    let many: Vec<Value> = (0..100_000).map(|i| json!({"i": i})).collect();
    let text = json!({"type": "req", "id": 1, "method": "m", "params": {"big": big, "many": many}})
        .to_string();
    assert_eq!(
        decode_request(&text),
        request(json!(1), "m", json!({"big": big, "many": many}))
    );
}

#[test]
fn a_huge_id_is_echoed_whole() {
    let id = json!("i".repeat(1 << 20));
    let text = json!({"type": "res", "id": id}).to_string();
    assert_eq!(decode_request(&text), invalid(id, SHAPE));
}

#[test]
fn a_binary_frame_is_refused_with_no_id() {
    assert_eq!(
        binary_refusal(),
        (
            Value::Null,
            ApiError::new(ErrorCode::InvalidRequest, "binary frames are not requests")
        )
    );
}

fn parsed(frame: &str) -> Value {
    serde_json::from_str(frame).unwrap()
}

#[test]
fn a_success_answer_echoes_the_id_and_carries_the_result() {
    for (id, result) in [
        (json!(1), json!({"agents": []})),
        (json!("req-1"), Value::Null),
        (json!({"k": [1]}), json!([1, "two"])),
        (Value::Null, json!("s")),
    ] {
        assert_eq!(
            parsed(&answer(&id, Ok(result.clone()))),
            json!({"type": "res", "id": id, "ok": true, "result": result})
        );
    }
}

#[test]
fn a_failure_answer_carries_the_error_shape_whole() {
    let error = ApiError::new(ErrorCode::RateLimited, "slow down")
        .with_retry_after_ms(1500)
        .with_details(talon_protocol::gateway::ErrorDetails {
            limit: Some("maxRequestsPerToken".into()),
            value: Some(10),
            ..Default::default()
        });
    assert_eq!(
        parsed(&answer(&json!(9), Err(error))),
        json!({"type": "res", "id": 9, "ok": false, "error": {
            "code": "rate_limited",
            "message": "slow down",
            "retryable": true,
            "retryAfterMs": 1500,
            "details": {"limit": "maxRequestsPerToken", "value": 10},
        }})
    );
}

#[test]
fn a_refusal_answers_as_a_failure_with_the_frames_id() {
    let (id, error) = decode_request(r#"{"type":"res","id":"a1"}"#).unwrap_err();
    assert_eq!(
        parsed(&answer(&id, Err(error))),
        json!({"type": "res", "id": "a1", "ok": false, "error": {
            "code": "invalid_request", "message": SHAPE, "retryable": false,
        }})
    );
    let (id, error) = binary_refusal();
    assert_eq!(
        parsed(&answer(&id, Err(error))),
        json!({"type": "res", "id": null, "ok": false, "error": {
            "code": "invalid_request",
            "message": "binary frames are not requests",
            "retryable": false,
        }})
    );
}

#[test]
fn an_answer_is_one_line_of_json_whatever_it_holds() {
    let frame = answer(&json!("a\nb"), Ok(json!({"text": "line\r\nbreak\u{2028}"})));
    assert!(!frame.contains(['\n', '\r']), "{frame}");
    assert_eq!(
        parsed(&frame),
        json!({"type": "res", "id": "a\nb", "ok": true, "result": {"text": "line\r\nbreak\u{2028}"}})
    );
}

#[test]
fn each_kind_of_frame_is_one_outcome_for_the_connection() {
    use axum::extract::ws::Message;
    use talon_wire::ws::{Incoming, incoming};
    let text = r#"{"type":"req","id":1,"method":"agents.list"}"#;
    assert_eq!(
        incoming(Ok(Message::Text(text.into()))),
        Incoming::Request(
            Request {
                id: json!(1),
                method: "agents.list".into(),
                params: Value::Null
            },
            text.len()
        )
    );
    let (id, error) = binary_refusal();
    assert_eq!(
        incoming(Ok(Message::Binary(vec![1, 2].into()))),
        Incoming::Refused(id, error)
    );
    assert_eq!(
        incoming(Ok(Message::Text("[1]".into()))),
        match decode_request("[1]") {
            Err((id, error)) => Incoming::Refused(id, error),
            Ok(request) => panic!("decoded {request:?}"),
        }
    );
    assert_eq!(
        incoming(Ok(Message::Ping(vec![].into()))),
        Incoming::Control
    );
    assert_eq!(
        incoming(Ok(Message::Pong(vec![].into()))),
        Incoming::Control
    );
    assert_eq!(incoming(Ok(Message::Close(None))), Incoming::End);
    assert_eq!(
        incoming(Err(axum::Error::new(std::io::Error::other("reset")))),
        Incoming::End
    );
}
