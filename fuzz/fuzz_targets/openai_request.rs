//! Arbitrary bytes as what the OpenAI-compatible surface reads: a chat
//! request (its messages' texts), a Responses request, and a stream of
//! event envelopes (one per line) folded into chat chunks and Responses
//! events, whose sequence numbers must strictly increase. Decoding fails
//! or succeeds; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use talon_protocol::Event;
use talon_protocol::openai::chat::{ChatFold, ChatHeader, ChatRequest};
use talon_protocol::openai::responses::{ResponseFold, ResponseHeader, ResponseRequest};

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = serde_json::from_slice::<ChatRequest>(data) {
        for (index, message) in request.messages.iter().enumerate() {
            let _ = message.text(index);
        }
    }
    let _ = serde_json::from_slice::<ResponseRequest>(data);
    let mut chat = ChatFold::new(ChatHeader {
        id: "chatcmpl-r".into(),
        created: 0,
        model: "talon/main".into(),
        include_usage: true,
    });
    let mut responses = ResponseFold::new(ResponseHeader {
        id: "resp_r".into(),
        created_at: 0,
        model: "talon/main".into(),
        background: None,
        previous_response_id: None,
        instructions: None,
        metadata: serde_json::json!({}),
    });
    let mut last = None;
    for (id, line) in data.split(|b| *b == b'\n').enumerate() {
        let Ok(event) = serde_json::from_slice::<Event>(line) else {
            continue;
        };
        let _ = chat.push(&event);
        for (seq, _) in responses.push(id as u64 + 1, &event) {
            assert!(last.is_none_or(|last| seq > last), "{seq} after {last:?}");
            last = Some(seq);
        }
    }
    let _ = chat.completion();
    let _ = responses.response();
});
