//! Integration tests of talon-jail: real commands in real sandboxes,
//! hostile ones first.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
