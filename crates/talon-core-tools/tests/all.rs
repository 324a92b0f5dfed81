//! Integration tests of talon-core-tools: every tool through a real
//! `ToolRunner` in a temporary workspace, hostile paths and files, hostile
//! shell commands.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
