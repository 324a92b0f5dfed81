//! The run-scoped tool catalog: the tool model, allow/deny policy, stable
//! ids, and BM25F search over names, ids, labels, descriptions and
//! parameters.

pub mod catalog;
mod error;
pub mod mcp;
pub mod policy;
pub mod runner;
pub mod search;

pub use catalog::{CONTROL_TOOLS, Catalog, CatalogBuilder, CatalogEntry, RunScope, tool_id};
pub use error::{Result, ToolsError};
pub use mcp::{McpServerFeatures, McpServers};
pub use policy::{Pattern, ToolPolicy};
pub use runner::{
    ApprovalDecision, Approver, BeforeToolCall, BoxFuture, CallObserver, CallOutcome, CallRecord,
    Caller, DenyAll, HookDecision, NoUpdates, RunContext, ToolCall, ToolExecutor, ToolRunner,
    UpdateSink,
};
