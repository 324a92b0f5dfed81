//! Integration tests of talon-mcp, against real MCP servers (npm
//! `@modelcontextprotocol/server-everything` and `server-filesystem`,
//! installed by `scripts/setup.sh --test-servers`) and the fixture servers
//! in `tests/fixtures/`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
