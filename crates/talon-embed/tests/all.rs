//! talon-embed's integration tests: the real model's files (fetched by
//! `scripts/setup.sh`) through the encoder, the tokenizer and the table.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
