//! The run-scoped tool catalog: the tool model, allow/deny policy, stable
//! ids, and search over names, ids, labels, descriptions and parameters
//! (the catalog builds a `talon_search` BM25F index of its entries).

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

pub use approvals::{ApprovalAction, Approvals, ApprovalsError, PolicyGate};
pub use catalog::{CONTROL_TOOLS, Catalog, CatalogBuilder, CatalogEntry, RunScope, tool_id};
pub use error::{Result, ToolsError};
pub use mcp::{McpServerFeatures, McpServers};
pub use policy::{Pattern, ToolPolicy};
pub use runner::{
    ApprovalDecision, Approver, BeforeToolCall, BoxFuture, CallObserver, CallOutcome, CallRecord,
    Caller, DenyAll, HookDecision, NoUpdates, RunContext, ToolCall, ToolExecutor, ToolRunner,
    UpdateSink,
};
pub use surface::{DirectSurface, SurfaceReply, ToolSurface, direct_call};
pub use talon_search::{Embedder, Semantic};
pub use tokio_util::sync::CancellationToken;
pub use tool_error::{ToolError, ToolErrorCode};
