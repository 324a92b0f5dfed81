//! Talon's wire types: the CLI's JSON output (Code Mode's results, search
//! hits, tool definitions), the App SDK's events and the gateway protocol's
//! methods, params, results and errors are defined here and only here (the
//! transports' framing is `talon-wire`'s). Each type derives `JsonSchema`;
//! [`schema::protocol_schema`] renders
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
//!
//! # What it holds
//!
//! - `clock`: the one wall clock every crate reads (`Clock`; tests move an adjustable one
//!   forward with `TimeTravel` instead of sleeping).
//! - Code Mode's wire types: `CodeModeErrorCode` (the seed's sixteen codes, spelled as the seed
//!   spells them, plus `Unknown` for forward compatibility), `CodeModeResult` (the seed's
//!   `completed | waiting | failed` union, tagged by `status`), `CodeModeOutput`,
//!   `CodeModeTelemetry`, `ConsoleOutput`; the tool definitions (`ToolDefinition`, with
//!   `replaySafe`) and `ToolErrorCode`, the stable code of a failed tool call whatever its
//!   executor.
//! - The App SDK's event envelope (`Event`, `EventType`, every type declared once in
//!   `event_types.rs`) and, in `event_data.rs`, the typed `data`
//!   of every event type (`EventData`; `Event::typed` decodes the known ones, the envelope keeps
//!   unknown types as JSON). The agent loop emits `EventData` only. The envelope adds `requestId`
//!   to the seed's fields: the `x-request-id` of the call that caused the event (for a run's own
//!   events, the call that created the run). The fake gateway does not set it.
//! - The gateway protocol, version 1 (`gateway/`), declared once:
//!   - the method table (`gateway/methods.rs`): one `method_table!` entry per method (`runs.create
//!         => RunsCreateParams -> RunAccepted`), its scope, effect (`write` methods take an
//!     optional `idempotencyKey`), stability (`stable`, `experimental`, or `unsupported` for the
//!     seed's future APIs, `tasks.*`) and its own error codes. The macro generates `Method`,
//!     `Request` (strict decoding: unknown fields and wrong types are `invalid_request`, unknown
//!     methods `not_found`), the `Handler` trait (one async function per method) and `dispatch`
//!     (which answers `unsupported` methods itself);
//!   - one error shape (`gateway/error.rs`): `ApiError {code, message, retryable, retryAfterMs?,
//!         details?}` with the closed `ErrorCode` list and each code's HTTP status;
//!   - scopes (`gateway/scope.rs`): twelve, `admin` implying all, `metrics.read` for `GET
//!         /metrics`; `expand_scopes` reads presets and scopes from words (`ScopeWordsError`);
//!   - resources and params (`gateway/resources.rs`, `approvals.rs`, `catalog.rs`, `params.rs`,
//!     `run_create.rs`, `run_list.rs`, `usage.rs`, `tokens.rs`), and caps on every id, key and name enforced at
//!     decode (`gateway/bounded.rs`, refusing with `BoundedError`);
//!   - the checks and views both servers share (`run_create.rs`, `run_views.rs`):
//!     `RunsCreateParams::check` (with `split_messages`, `InputMessagesError`), `RunResult::of` (a
//!     run's result from its row) and `Event::of_run`
//!     (a run event's envelope), so the gateway and the fake cannot differ there;
//!   - every refusal's code, words and details (`gateway/refusals.rs`, `refuse::not_found`, ...),
//!     every cap and default the servers share (`gateway/caps.rs`), and how a run's events fold
//!     into its status (`EventType::ended_status`, `EventData::run_ended`), generated into the
//!     TypeScript SDK too, so no server words or counts anything itself;
//!   - the contract (`contract/cases.json`): what every server answers, a case per method at
//!     least (`tests/suite/contract.rs`), run against the gateway and both fakes, with the
//!     generated list of deliberate differences (`docs/fake-differences.md`).
//! - Generated documents, committed under the crate's `schema/`: `talon-protocol.schema.json`,
//!   `gateway.schema.json` (the table, the error shape, the typed event and every `$defs`) and
//!   `openapi.json` (OpenAPI 3.1, `openapi.rs`). Tests regenerate them and compare as JSON, check
//!   every `$ref` and hold the table to the seed's namespaces (`tests/suite/openapi.rs`,
//!   `tests/suite/schema.rs`); `UPDATE_SCHEMA=1 cargo test -p talon-protocol` rewrites them. The
//!   repository's `tests/openapi/run` lints the served document and drives a gateway through
//!   TypeScript and Python clients generated from it.
//! - The SDK's low-level client (`codegen.rs`): `rust_client()` renders one typed async function
//!   per method (`Retry::Safe` for reads and for writes that carry `idempotencyKey`); `talon-sdk`
//!   commits it as `src/generated.rs` and a test there fails when it drifts.
//! - `trace` (the W3C `traceparent`).
//! - `sse`: the one Server-Sent Events decoder, bytes to frames with a cap on a frame's size,
//!   shared by the model providers and the SDK (pure: no I/O).
//!
//! # Invariants
//!
//! No dependency on any other Talon crate. Logic is limited to serde, naming, the table's dispatch,
//! the decode-time caps, the shared checks and views above, and rendering the documents. Enums that
//! clients decode are `#[non_exhaustive]` with an unknown variant. Deliberately absent: any
//! transport (the gateway serves the table; `talon-wire` holds the shared rendering; `sse` only
//! decodes bytes a client already read) and storage.

pub mod clock;
pub mod code_mode;
pub mod codegen;
pub mod debug;
pub mod event_data;
mod event_types;
pub mod events;
pub mod gateway;
pub mod openai;
pub mod openapi;
pub mod schema;
pub mod sse;
pub mod telemetry;
pub mod tools;
pub mod trace;

pub use code_mode::{
    CellId, CodeModeErrorCode, CodeModeLimitFailures, CodeModeOutput, CodeModePendingToolCall,
    CodeModeResult, CodeModeSnapshotEvent, CodeModeTelemetry, CodeModeWaitReason, ConsoleOutput,
    HostCallError, OutputStream,
};
pub use event_data::EventData;
pub use events::{Event, EventType};
pub use telemetry::{CalledTool, ToolTelemetry};
pub use tools::{
    CatalogMode, ExecutionMode, ModelTool, SearchHit, ToolDefinition, ToolEffect, ToolErrorCode,
    ToolSource,
};
