//! The gateway protocol, version 1: the method table ([`Method`]), every
//! method's params and result types, the resources they carry, token
//! scopes, and the one error shape of every transport. The JSON Schema and
//! OpenAPI documents committed under `schema/` are generated from here
//! ([`crate::schema`]), and a test fails when they drift.

pub mod approvals;
pub mod bounded;
pub mod caps;
pub mod catalog;
pub mod error;
mod input;
pub mod methods;
pub mod page;
pub mod params;
pub mod refusals;
pub mod resources;
pub mod run_create;
pub mod run_list;
pub mod run_views;
pub mod schedules;
pub mod scope;
pub mod tasks;
pub mod tokens;
pub mod usage;

pub use approvals::{
    APPROVAL_PAGE, Approval, ApprovalDecision, ApprovalKind, ApprovalStatus, Question,
    QuestionStatus, RiskLevel,
};
pub use catalog::{
    ApprovalPolicy, ArgumentSummary, Environment, EnvironmentCapabilities, EnvironmentStatus,
    Model, ProviderStatus, ToolOrigin, ToolReach, ToolSummary,
};
pub use error::{ApiError, AuthRefusal, ErrorCode, ErrorDetails};
pub use methods::{
    COMMON_ERRORS, Effect, Handler, Method, MethodSpec, Request, Room, Stability, decode_params,
    dispatch,
};
pub use params::{ClientTool, InputMessage, InputRole, MultitaskStrategy, RunInput};
pub use refusals::{REFUSALS, Refusal, refuse};
pub use resources::{
    Agent, AgentSource, ArtifactSummary, ArtifactType, Message, MessageRole, MessageToolCall,
    Metadata, Run, RunAccepted, RunOutput, RunResult, RunResultStatus, RunStatus, Session, Usage,
};
pub use run_list::{RunsListParams, RunsListResult};
pub use scope::{Scope, ScopePreset, ScopeWordsError, expand_scopes};
pub use tasks::{
    DeliveryStatus, NotifyPolicy, Task, TaskKind, TaskStatus, TasksListParams, TasksListResult,
};
pub use tokens::{
    Binding, CreatedToken, MAX_TOKEN_AGENTS, MAX_TOKEN_TTL_MS, ParentBounds, StreamFilter,
    TicketRun, TicketStream, TokenInfo, TokensCreateParams, TokensListParams, TokensListResult,
    TokensRevokeParams, TokensRevokeResult,
};
pub use usage::{UsageRow, UsageSummary, UsageSummaryParams, UsageTally};

/// The protocol's version, sent as `version` in every event envelope and in
/// the OpenAPI document.
pub const PROTOCOL_VERSION: u32 = 1;
