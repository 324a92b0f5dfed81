//! The agent loop over a real provider wire format: the model's replies,
//! tool calls through the run's [`talon_tools::ToolSurface`] (which
//! surface, direct, Code Mode or Tool Search, is the caller's choice; this
//! crate depends on none of them) and the catalog's single execution path,
//! cancellation by the run's token, and App SDK events through an event
//! sink, with the observers that turn nested calls and approvals into
//! events.

pub mod events;
pub mod payload;
pub mod run;
mod trace;

pub use events::{
    ApprovalEvents, CollectSink, EventSink, NestedCallEvents, NoEvents, RunEvents, UpdateEvents,
    wire_tool_call,
};
pub use run::{AgentRun, Checkpoint, RunOptions, RunResult, RunStatus};
