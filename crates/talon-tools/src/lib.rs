//! The run-scoped tool catalog: the tool model, allow/deny policy, stable
//! ids, and search over names, ids, labels, descriptions and parameters
//! (the catalog builds a `talon_search` BM25F index of its entries on its
//! first search).
//!
//! # Parts
//!
//! - **The catalog** (`catalog.rs`): `CatalogBuilder` takes core, plugin, MCP and client tools by
//!   origin (source and owner come from the registration, never from the tool's own claims),
//!   applies the policy first, then leaves out and reports (never failing the run) tools of another
//!   run, invalid names (`[A-Za-z0-9_.-]{1,128}`, so no name passes for an id), control tools'
//!   names (`exec` only as the core shell tool) and repeated ids; keeps direct-only tools apart
//!   (the bridges never reach them), sorts by id and indexes the entries with `talon-search`
//!   (`CatalogBuilder::semantic` chooses lexical, the default, or hybrid ranking).
//!   `Catalog::search` maps the index's hits back to entries. Ids are
//!   `<source>:<owner>:<tool-name>`.
//! - **JSON Schema** (`schema.rs`): `check_schema` (`UnsupportedSchema`) and `validate`
//!   (`Mismatches`) for a documented subset, failing by name on any other keyword (`$ref` first), so a schema is never half-enforced; `pattern`
//!   through `regex`. Used for `ask_user`'s `answerSchema` and the answers checked against it;
//!   the runner does not validate a call's arguments.
//! - **Policy** (`policy.rs`): `tools.allow`/`tools.deny` lists of exact names or ids, globs and
//!   `group:` names; patterns with `:` match ids, others names, case-insensitively; deny wins.
//!   Globs (`NameGlob`) are name patterns compiled once with `globset`: `*` any run, `:` included.
//! - **Approvals** (`approvals.rs`): `tools.approvals`, `Approvals` and `PolicyGate` (see that
//!   module).
//! - **The execution path** (`runner.rs`): `ToolRunner::call` for every call of a run: the
//!   run-scope check, exact-id resolution, `before_tool_call` hooks, the approval gate (`Approver`,
//!   `DenyAll` by default), a per-tool turn for `sequential` tools, the `ToolExecutor` with the
//!   `RunContext` (ids, session key, the run's `CancellationToken`, update sink), caps on results
//!   and messages, and a `CallRecord` naming the caller (written even when the call is cancelled).
//!   Before it executes a tool that is not `replay_safe`, the runner waits for its observer's
//!   `recorded()`, so a run resumed after its process died knows every call that may have had an
//!   effect; a start that cannot be recorded fails the call `unavailable` without running it. The
//!   whole checked call races the token: cancelling the run drops whatever the call waits on, and
//!   the call ends `aborted`.
//! - **Tool errors** (`tool_error.rs`): `ToolError { code: ToolErrorCode, message, retryable }` is
//!   what every executor returns and what `CallOutcome::Failed` carries to every surface; each
//!   surface maps it to its own codes in one function (Code Mode: `Bridge::guest_result`; Tool
//!   Search: `code::guest_result`; the model sees `ToolError::to_json`).
//! - **Surfaces** (`surface.rs`): `ToolSurface` is what the agent loop asks for the model-visible
//!   tools and hands every model call (`kind`, `tools`, `prompt`, `handle`, `replay_safe`);
//!   `DirectSurface` is every tool by name. Code Mode and Tool Search implement it in their crates.
//! - **MCP's other features** (`mcp.rs`): `McpServers`, the interface behind MCP resources and
//!   prompts (MCP tools are catalog entries and go through the runner).
//! - **Redaction** (`redact.rs`): the one redaction of secret values, plain and JSON-escaped.
//!
//! # Invariants
//!
//! A tool the policy removed is indistinguishable from one that never existed (search, describe and
//! call all answer "unknown"); nothing reaches an executor without passing hooks and approvals;
//! equivalent tool sets give identical catalogs; cancellation is a `tokio_util` `CancellationToken`
//! (re-exported) that waiters wake on, never a polled flag. Deliberately absent: tool
//! implementations, MCP clients and approval UIs (they plug in through `ToolExecutor` and
//! `Approver`).

pub mod approvals;
pub mod catalog;
mod error;
pub mod mcp;
pub mod policy;
pub mod redact;
pub mod runner;
pub mod schema;
pub mod surface;
mod tool_error;

/// What a client tool call the app left unanswered reads as, to the model,
/// to a cell and in the log (`status: unanswered`).
pub const UNANSWERED: &str = "the app did not answer this client tool call";

pub use approvals::{ApprovalAction, Approvals, CELL_ID, PolicyGate, ToolKind, cell_entry};
pub use catalog::{CONTROL_TOOLS, Catalog, CatalogBuilder, CatalogEntry, RunScope, tool_id};
pub use error::{Result, ToolsError};
pub use mcp::{McpServerFeatures, McpServers};
pub use policy::{Pattern, ToolPolicy};
pub use runner::{
    ApprovalDecision, Approver, BeforeToolCall, BoxFuture, CallObserver, CallOutcome, CallRecord,
    Caller, DenyAll, HookDecision, NoUpdates, RunContext, ToolCall, ToolExecutor, ToolRunner,
    UpdateSink,
};
pub use surface::{
    AppCall, DirectSurface, SurfaceReply, ToolSurface, client_id, direct_call, runner_telemetry,
};
pub use talon_search::{Embedder, Semantic};
pub use tokio_util::sync::CancellationToken;
pub use tool_error::{ToolError, ToolErrorCode};
