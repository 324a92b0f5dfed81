//! The agent loop over a real provider wire format: a run's surface
//! (direct, Code Mode, or Tool Search; Code Mode wins), the model's
//! replies, tool calls through the catalog's single execution path, core
//! workspace tools, approvals, and App SDK events through an event sink.

pub mod core_tools;
pub mod events;
pub mod run;

pub use core_tools::CoreTools;
pub use events::{
    ApprovalEvents, CollectSink, EventSink, NestedCallEvents, NoEvents, PolicyApprover, RunEvents,
    UpdateEvents,
};
pub use run::{AgentRun, RunOptions, RunResult, RunStatus, Surface, code_mode_wins};
