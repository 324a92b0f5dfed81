//! Integration tests of talon-environments: the provider contract through
//! `Providers`, with `local` preparing, binding, collecting and releasing a
//! real workspace.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
