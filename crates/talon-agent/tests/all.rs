//! Integration tests of talon-agent: the loop against the scripted mock
//! model (a real HTTP server) over direct, Code Mode and Tool Search
//! surfaces, with core tools in a temporary workspace.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
