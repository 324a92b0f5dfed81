//! Integration tests of talon-search.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "tests fail loudly and print tables"
)]

mod suite;
