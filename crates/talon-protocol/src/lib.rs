//! Talon's wire types: every value that crosses a process boundary (the CLI's
//! JSON output today; the gateway protocol later) is defined here and only
//! here. Each type derives `JsonSchema`; [`schema::protocol_schema`] renders
//! the committed `schema/talon-protocol.schema.json`, and a test fails when
//! the two drift.
//!
//! Conventions every wire type follows (and the generated documents state):
//! - **Times.** An instant is an integer count of milliseconds since the
//!   Unix epoch (UTC) in a field named `…At` (the event envelope's `ts`); a
//!   duration is an integer count of milliseconds in a field named `…Ms`
//!   ([`schema::TIME_CONVENTION`]). No field carries a date string.
//! - **Enums.** A unit enum is a string `enum` in every generated document
//!   ([`schema::simplify_enums`]); its variants' docs are listed in its
//!   description.
//! - **Errors.** Every error is `{"error": ApiError}`, the OpenAPI
//!   document's one `ErrorResponse`, with the code's HTTP status.
//! - **Events.** Each event type's payload is a named schema; the OpenAPI
//!   document's `TypedEvent` is the envelope with its payload by type.

pub mod code_mode;
pub mod codegen;
pub mod event_data;
pub mod events;
pub mod gateway;
pub mod hex;
pub mod openapi;
pub mod schema;
pub mod tools;
pub mod trace;

pub use code_mode::{
    CodeModeErrorCode, CodeModeLimitFailures, CodeModeOutput, CodeModePendingToolCall,
    CodeModeResult, CodeModeSnapshotEvent, CodeModeTelemetry, CodeModeWaitReason, ConsoleOutput,
    HostCallError, OutputStream,
};
pub use event_data::EventData;
pub use events::{Event, EventType};
pub use tools::{
    CatalogMode, ExecutionMode, ModelTool, SearchHit, ToolDefinition, ToolEffect, ToolErrorCode,
    ToolSource,
};
