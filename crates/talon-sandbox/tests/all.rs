//! Integration tests of talon-sandbox, against the real module in real
//! wasmtime.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
