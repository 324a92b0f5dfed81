//! Real MCP servers in the catalog, over the official Rust SDK (`rmcp`
//! 3.11.0): stdio children and streamable HTTP sessions from
//! `mcp.servers.<name>`, their tools as `mcp:<server>:<tool>` catalog
//! entries, their resources and prompts behind `McpServers`.
//!
//! Servers belong to a configuration, not to a session: one
//! [`McpManager`] serves every run. A server connects when a run first
//! needs it, reconnects after a crash, backs off after failed starts, and
//! its child (with the child's process group) is stopped on shutdown.

pub mod config;
mod error;
mod manager;
mod server;
pub mod stderr;

pub use config::{Secret, SecretSource, ServerConfig, Transport, parse_servers};
pub use error::{McpError, Result};
pub use manager::{McpExecutor, McpManager, RunServers, failures_json, tool_definition};
pub use server::{EnvLookup, FIRST_BACKOFF, MAX_BACKOFF, ServerInfo};
