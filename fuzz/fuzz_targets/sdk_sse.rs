//! Arbitrary bytes as a gateway's event stream, to the SSE decoder the SDK
//! and the model providers share (`talon_protocol::sse`, at the SDK's cap):
//! decoding never panics, and how the bytes are split into chunks (the
//! first byte picks the cut points) never changes the frames decoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use talon_protocol::sse::{Decoder, Frame};

fn decode(chunks: &[&[u8]]) -> Option<Vec<Frame>> {
    let mut decoder = Decoder::new(64 << 20);
    let mut frames = Vec::new();
    for chunk in chunks {
        decoder.push(chunk).ok()?;
        while let Some(frame) = decoder.next_frame() {
            frames.push(frame);
        }
    }
    Some(frames)
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, bytes)) = data.split_first() else {
        return;
    };
    let whole = decode(&[bytes]);
    let step = usize::from(seed).max(1);
    let chunks: Vec<&[u8]> = bytes.chunks(step).collect();
    assert_eq!(decode(&chunks), whole);
});
