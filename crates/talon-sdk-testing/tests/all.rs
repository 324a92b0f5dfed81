//! Integration tests of talon-sdk-testing: the fake gateway over real
//! HTTP, SSE and WebSocket on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
