//! Integration tests of talon-wire: the HTTP error response as a client
//! receives it, event-stream frames, stream cursors, `Range` requests and
//! WebSocket frames, against hostile input.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
