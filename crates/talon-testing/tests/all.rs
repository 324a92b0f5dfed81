//! Integration tests of talon-testing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs,
    reason = "tests fail loudly; the crash child reports on stdout"
)]

mod suite;
