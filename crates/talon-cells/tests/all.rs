//! Integration tests of talon-cells: both stores keep one contract, and
//! the file store holds against whoever can write its directory.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
