//! talon-config's integration tests: the JSON5 reader, the config schema
//! and its check, against files on disk.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
