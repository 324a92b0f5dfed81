//! Integration tests of talon-provider against the scripted mock model
//! (a real HTTP server on 127.0.0.1).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
