//! The WebSocket transport's frames: a request
//! (`{"type":"req","id":..,"method":..,"params":..}`) and its answer
//! (`{"type":"res","id":..,"ok":true,"result":..}` or
//! `{"type":"res","id":..,"ok":false,"error":{..}}`), and an event of a
//! subscription (`{"type":"event","subscriptionId":..,"event":{..}}`).

use serde_json::{Value, json};
use talon_protocol::gateway::{ApiError, ErrorCode};

/// A request frame, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The client's id for it (any JSON but null), echoed in the answer.
    pub id: Value,
    /// The method's name.
    pub method: String,
    /// The params (null when absent).
    pub params: Value,
}

/// A frame that is not a request: the id to answer with (null when the
/// frame had none) and the `invalid_request` error.
pub type Refusal = (Value, ApiError);

/// Decodes a text frame as a request.
pub fn decode_request(text: &str) -> Result<Request, Refusal> {
    let invalid = |message: String| ApiError::new(ErrorCode::InvalidRequest, message);
    let frame: Value =
        serde_json::from_str(text).map_err(|e| (Value::Null, invalid(format!("not JSON: {e}"))))?;
    let id = frame.get("id").cloned().unwrap_or(Value::Null);
    let method = frame.get("method").and_then(Value::as_str);
    match (frame.get("type").and_then(Value::as_str), method) {
        (Some("req"), Some(method)) if !id.is_null() => Ok(Request {
            id,
            method: method.to_owned(),
            params: frame.get("params").cloned().unwrap_or(Value::Null),
        }),
        _ => Err((
            id,
            invalid(
                "a request is {\"type\":\"req\",\"id\":..,\"method\":..,\"params\":{..}}"
                    .to_owned(),
            ),
        )),
    }
}

/// The refusal of a binary frame.
pub fn binary_refusal() -> Refusal {
    (
        Value::Null,
        ApiError::new(ErrorCode::InvalidRequest, "binary frames are not requests"),
    )
}

/// The answer frame to the request `id`.
pub fn answer(id: &Value, outcome: Result<Value, ApiError>) -> String {
    match outcome {
        Ok(result) => json!({"type": "res", "id": id, "ok": true, "result": result}),
        Err(error) => json!({"type": "res", "id": id, "ok": false, "error": error}),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_decode_and_anything_else_is_refused_with_its_id() {
        assert_eq!(
            decode_request(r#"{"type":"req","id":7,"method":"agents.list"}"#),
            Ok(Request {
                id: json!(7),
                method: "agents.list".into(),
                params: Value::Null
            })
        );
        for (text, id) in [
            ("nope", Value::Null),
            (r#"{"type":"req","method":"agents.list"}"#, Value::Null),
            (r#"{"type":"res","id":"a","method":"x"}"#, json!("a")),
            (r#"{"type":"req","id":3}"#, json!(3)),
        ] {
            let (got, error) = decode_request(text).unwrap_err();
            assert_eq!((got, error.code), (id, ErrorCode::InvalidRequest), "{text}");
        }
        let frame: Value = serde_json::from_str(&answer(&json!(1), Ok(json!({"a": 1})))).unwrap();
        assert_eq!(
            frame,
            json!({"type": "res", "id": 1, "ok": true, "result": {"a": 1}})
        );
    }
}
