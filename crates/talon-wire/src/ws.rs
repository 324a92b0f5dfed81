//! The WebSocket transport's frames: a request
//! (`{"type":"req","id":..,"method":..,"params":..}`) and its answer
//! (`{"type":"res","id":..,"ok":true,"result":..}` or
//! `{"type":"res","id":..,"ok":false,"error":{..}}`), and an event of a
//! subscription (`{"type":"event","subscriptionId":..,"event":{..}}`);
//! and a connection's [`Subscriptions`]: how they are counted, named,
//! answered and ended, the same on every server.

use std::collections::HashMap;

use serde_json::{Value, json};
use talon_protocol::gateway::params::EventsUnsubscribeParams;
use talon_protocol::gateway::{ApiError, refuse};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// What a frame from the client is to the connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request to answer, and its frame's length in bytes (what the
    /// byte limits count).
    Request(Request, usize),
    /// A frame refused: answer it (its `id`, when it had one) with the
    /// error, and go on.
    Refused(Value, ApiError),
    /// A ping or a pong: nothing to answer.
    Control,
    /// The peer closed, or the socket failed: the connection ends.
    End,
}

/// Reads one frame of the client's: text is decoded as a request, binary
/// is refused, a close or a failure ends the connection.
pub fn incoming(frame: Result<axum::extract::ws::Message, axum::Error>) -> Incoming {
    use axum::extract::ws::Message;
    match frame {
        Ok(Message::Text(text)) => match decode_request(text.as_str()) {
            Ok(request) => Incoming::Request(request, text.len()),
            Err((id, error)) => Incoming::Refused(id, error),
        },
        Ok(Message::Binary(_)) => {
            let (id, error) = binary_refusal();
            Incoming::Refused(id, error)
        }
        Ok(Message::Ping(_) | Message::Pong(_)) => Incoming::Control,
        Ok(Message::Close(_)) | Err(_) => Incoming::End,
    }
}

/// The first frame of a socket opened without credentials (a browser's,
/// which cannot set `Authorization` on an upgrade):
/// `{"type":"auth","token":"talon_..."}`. Its token, or `None` for any
/// other frame.
pub fn auth_token(text: &str) -> Option<String> {
    let Value::Object(frame) = serde_json::from_str::<Value>(text).ok()? else {
        return None;
    };
    if frame.len() != 2 || frame.get("type")?.as_str()? != "auth" {
        return None;
    }
    frame.get("token")?.as_str().map(str::to_owned)
}

/// The answer to an accepted `auth` frame: calls may follow.
pub const AUTHENTICATED: &str = r#"{"type":"authenticated"}"#;

/// The close code of a socket whose `auth` frame was missing or refused.
pub const CLOSE_UNAUTHENTICATED: u16 = 4003;

/// The close code of a socket over its token's limit of requests in
/// flight.
pub const CLOSE_LIMITED: u16 = 4029;

pub use talon_protocol::gateway::caps::MAX_SUBSCRIPTIONS;

/// A subscription started but not named yet: where its name goes once
/// the answer naming it is sent, and the task forwarding its events
/// (which waits for its name before it sends any).
pub type Started = (oneshot::Sender<String>, JoinHandle<()>);

/// The frame of `event` (JSON text) for subscription `id`.
pub fn event_frame(id: &str, event: &str) -> String {
    format!(
        "{{\"type\":\"event\",\"subscriptionId\":{},\"event\":{event}}}",
        Value::String(id.to_owned())
    )
}

/// A connection's live subscriptions, named `sub_<n>` in the order they
/// started. Dropping it (the connection ended) ends them all.
#[derive(Debug, Default)]
pub struct Subscriptions {
    next: u64,
    live: HashMap<String, JoinHandle<()>>,
}

impl Subscriptions {
    /// `rate_limited` when [`MAX_SUBSCRIPTIONS`] are live (those whose
    /// task ended, e.g. on a cut stream, no longer count).
    pub fn room(&mut self) -> Result<(), ApiError> {
        self.live.retain(|_, task| !task.is_finished());
        if self.live.len() >= MAX_SUBSCRIPTIONS {
            return Err(refuse::too_many_subscriptions(MAX_SUBSCRIPTIONS as u64));
        }
        Ok(())
    }

    /// Names a started subscription and returns the answer frame to
    /// request `id` (`{"subscriptionId": ..}`). Send it, then call
    /// [`Named::go`]: the answer goes out before the first event.
    pub fn name(&mut self, id: &Value, started: Started) -> Named {
        self.next += 1;
        let name = format!("sub_{}", self.next);
        let (tell, task) = started;
        self.live.insert(name.clone(), task);
        Named {
            answer: answer(id, Ok(json!({"subscriptionId": name}))),
            name,
            tell,
        }
    }

    /// `events.unsubscribe`: ends the subscription its params name, or
    /// `not_found`.
    pub fn unsubscribe(&mut self, params: Value) -> Result<Value, ApiError> {
        let p: EventsUnsubscribeParams =
            talon_protocol::gateway::decode_params("events.unsubscribe", params)?;
        match self.live.remove(p.subscription_id.as_str()) {
            Some(task) => {
                task.abort();
                Ok(json!({}))
            }
            None => Err(refuse::no_subscription(p.subscription_id.as_str())),
        }
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        for task in self.live.values() {
            task.abort();
        }
    }
}

/// A subscription named, its answer not sent yet.
#[derive(Debug)]
pub struct Named {
    /// The answer frame naming it.
    pub answer: String,
    name: String,
    tell: oneshot::Sender<String>,
}

impl Named {
    /// Lets the subscription's task send its events (after its answer).
    pub fn go(self) {
        // A task that already ended (its stream failed) has no one to tell.
        let _ = self.tell.send(self.name);
    }
}

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
    let frame: Value = serde_json::from_str(text)
        .map_err(|e| (Value::Null, refuse::frame_not_json(&e.to_string())))?;
    let id = frame.get("id").cloned().unwrap_or(Value::Null);
    let method = frame.get("method").and_then(Value::as_str);
    match (frame.get("type").and_then(Value::as_str), method) {
        (Some("req"), Some(method)) if !id.is_null() => Ok(Request {
            id,
            method: method.to_owned(),
            params: frame.get("params").cloned().unwrap_or(Value::Null),
        }),
        _ => Err((id, refuse::frame_not_request())),
    }
}

/// The refusal of a binary frame.
pub fn binary_refusal() -> Refusal {
    (Value::Null, refuse::binary_frame())
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
            assert_eq!(
                (got, error.code),
                (id, talon_protocol::gateway::ErrorCode::InvalidRequest),
                "{text}"
            );
        }
        let frame: Value = serde_json::from_str(&answer(&json!(1), Ok(json!({"a": 1})))).unwrap();
        assert_eq!(
            frame,
            json!({"type": "res", "id": 1, "ok": true, "result": {"a": 1}})
        );
    }
}
