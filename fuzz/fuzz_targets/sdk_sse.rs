//! Arbitrary bytes as a gateway's event stream, to the SDK's SSE decoder:
//! decoding never panics, and how the bytes are split into chunks (the
//! first byte picks the cut points) never changes the frames decoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use talon_sdk::client::sse::{Decoder, Frame};

fn decode(chunks: &[&[u8]]) -> Option<Vec<Frame>> {
    let mut decoder = Decoder::default();
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
