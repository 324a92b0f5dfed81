//! talon-sdk's integration tests: one binary, suites under `suite/`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    reason = "tests fail loudly"
)]

mod suite;
