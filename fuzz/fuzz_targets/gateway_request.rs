//! Arbitrary bytes as a gateway call and as an event envelope: the method
//! name (before the first NUL) and the params (after it) decode to a
//! request or to an `invalid_request` / `not_found` error, for the name
//! given and for every method of the table; the same params as an event
//! envelope decode or fail, and a decoded envelope's typed data never
//! panics. What HTTP bodies, WebSocket frames and stored events reach.
#![no_main]

use libfuzzer_sys::fuzz_target;
use talon_protocol::Event;
use talon_protocol::gateway::{ErrorCode, Method, Request};

fn check(method: &str, params: serde_json::Value) {
    if let Err(error) = Request::decode(method, params) {
        assert!(
            matches!(error.code, ErrorCode::InvalidRequest | ErrorCode::NotFound),
            "{method}: {error:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let (name, params) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (&data[..0], data),
    };
    let name = String::from_utf8_lossy(name);
    let Ok(params) = serde_json::from_slice::<serde_json::Value>(params) else {
        return;
    };
    check(&name, params.clone());
    for method in Method::ALL {
        check(method.spec().name, params.clone());
    }
    if let Ok(event) = serde_json::from_value::<Event>(params) {
        let _ = event.typed();
    }
});
