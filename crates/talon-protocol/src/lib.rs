//! Talon's wire types: every value that crosses a process boundary (the CLI's
//! JSON output today; the gateway protocol later) is defined here and only
//! here. Each type derives `JsonSchema`; [`schema::protocol_schema`] renders
//! the committed `schema/talon-protocol.schema.json`, and a test fails when
//! the two drift.

pub mod code_mode;
pub mod codegen;
pub mod event_data;
pub mod events;
pub mod gateway;
pub mod openapi;
pub mod schema;
pub mod tools;

pub use code_mode::{
    CodeModeErrorCode, CodeModeLimitFailures, CodeModeOutput, CodeModePendingToolCall,
    CodeModeResult, CodeModeSnapshotEvent, CodeModeTelemetry, CodeModeWaitReason, ConsoleOutput,
    OutputStream,
};
pub use event_data::EventData;
pub use events::{Event, EventType};
pub use tools::{
    CatalogMode, ExecutionMode, ModelTool, SearchHit, ToolDefinition, ToolEffect, ToolErrorCode,
    ToolSource,
};
