//! talon-gateway's integration tests.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    reason = "tests fail loudly"
)]

mod suite;
