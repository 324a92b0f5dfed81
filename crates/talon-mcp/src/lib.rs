//! Real MCP servers in the catalog, over the official Rust SDK (`rmcp`
//! 3.11.0): stdio children and streamable HTTP sessions from
//! `mcp.servers.<name>`, their tools as `mcp:<server>:<tool>` catalog
//! entries, their resources and prompts behind `McpServers`.
//!
//! Servers belong to a configuration, not to a session: one
//! [`McpManager`] serves every run. A server connects when a run first
//! needs it, reconnects after a crash, backs off after failed starts, and
//! its child (with the child's process group) is stopped on shutdown.
//!
//! # Modules
//!
//! - `config`: `mcp.servers.<name>` in OpenClaw's shape (stdio `command`/`args`/`env`/`cwd`, remote
//!   `url`/`headers`, `enabled`, `connectionTimeoutMs`, `requestTimeoutMs`, `connectOnStart`);
//!   values in `env` and `headers` may be `${VAR}` or `{env: VAR}` references and become `Secret`s
//!   (redacted in `Debug`, never in errors; configured values are also redacted from stderr tails).
//!   A stdio child inherits only `INHERITED_ENV` (`PATH`, `HOME`, `USER`, `LOGNAME`, `LANG`,
//!   `LC_ALL`, `TZ`, `TMPDIR`, `TERM`) and the configured variables, minus interpreter and loader
//!   hooks (`LD_*`, `DYLD_*`, `NODE_OPTIONS`, `BASH_FUNC_*`, ..., dropped with a warning).
//! - `server`: one connection: spawn (in its own process group) or open the HTTP session,
//!   `initialize` under the connection timeout, list tools (again after
//!   `notifications/tools/list_changed` or a reconnect), requests under the request timeout and the
//!   run's cancellation token (a cancelled or dropped request sends `notifications/cancelled`), a
//!   bounded stderr tail (`stderr.rs`), a crash noticed on the next request (which reconnects),
//!   exponential backoff after failed starts, and a shutdown that closes stdin, then signals and
//!   kills the whole process group.
//! - `manager`: `McpManager` holds a configuration's servers; `for_run` lists every server's tools
//!   concurrently as `mcp:<server>:<tool>` definitions and reports servers that failed (their tools
//!   are absent); `McpExecutor` runs catalog entries for `ToolRunner`; resources and prompts are
//!   served through `talon_tools::McpServers`. Results keep MCP's shape (`content`,
//!   `structuredContent`, `isError`); a tool error is a result with `isError`, a transport failure
//!   an error.
//!
//! # Invariants
//!
//! No MCP call bypasses `ToolRunner` (the executor is only reached from it); no child outlives its
//! manager (process group, killed on drop); malformed responses and garbage on stdout are errors or
//! start timeouts, never panics. A call's `notifications/progress` reach the run's `UpdateSink`
//! (`progress.rs`: a token per call, thinned to one per 100 ms). Deliberately absent: the server
//! side of MCP and OAuth flows. The fixture server the tests use for crashes, hangs,
//! garbage and slow starts is `tests/fixtures/fixture_server.mjs`.

pub mod config;
mod error;
mod manager;
mod progress;
mod server;
pub mod stderr;

pub use config::{Secret, SecretSource, ServerConfig, Transport, parse_servers, servers_from_json};
pub use error::{ErrorSource, McpError, Result};
pub use manager::{McpExecutor, McpManager, RunServers, failures_json, tool_definition};
pub use progress::{MIN_INTERVAL as PROGRESS_INTERVAL, ProgressTo};
pub use server::{EnvLookup, FIRST_BACKOFF, MAX_BACKOFF, ServerInfo};
