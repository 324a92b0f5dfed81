//! An SSE reader: the events of a response body, each parsed into the
//! envelope fields a bench reads (a subscriber that parses what it needs,
//! as an app would; parsing a whole `Value` tree per event would put the
//! client's own cost into the figures).

use std::marker::PhantomData;

use serde::de::DeserializeOwned;

/// The fields of an event's `data:` that a bench reads.
pub trait Envelope: DeserializeOwned {
    /// Called as the event is taken from the stream (to note its
    /// arrival); nothing by default.
    fn on_arrival(&mut self) {}
}

/// Reads SSE events from a response body.
pub struct Events<T> {
    response: reqwest::Response,
    buffer: Vec<u8>,
    seen: PhantomData<fn() -> T>,
}

impl<T: Envelope> Events<T> {
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: Vec::new(),
            seen: PhantomData,
        }
    }

    /// The next event with readable `data:`; `None` when the body ends.
    pub async fn next(&mut self) -> Option<T> {
        loop {
            if let Some(mut seen) = take_event::<T>(&mut self.buffer) {
                seen.on_arrival();
                return Some(seen);
            }
            let chunk = self.response.chunk().await.ok()??;
            self.buffer.extend_from_slice(&chunk);
        }
    }
}

/// Where `needle` first stands in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Takes the whole SSE events at the front of `body` up to the first with
/// readable `data:` (comments and heartbeats are dropped).
pub fn take_event<T: DeserializeOwned>(body: &mut Vec<u8>) -> Option<T> {
    while let Some(end) = find(body, b"\n\n") {
        let seen = body[..end]
            .split(|b| *b == b'\n')
            .find_map(|l| l.strip_prefix(b"data: "))
            .and_then(|data| serde_json::from_slice(data).ok());
        body.drain(..end + 2);
        if seen.is_some() {
            return seen;
        }
    }
    None
}
