//! Models, the ToolSpace and environments as the gateway lists them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ToolEffect;

use super::bounded::{EnvironmentId, ProviderId, Subject};

/// A model an agent can use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// `provider/model`.
    pub id: String,
    /// The provider's id in the config.
    pub provider: String,
    /// The model's name at the provider.
    pub name: String,
    /// Its context window in tokens, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// A provider's credentials (`models.status`, the gateway's
/// `models.authStatus`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStatus {
    /// The provider's id in the config.
    pub provider: String,
    /// Whether the gateway holds credentials for it.
    pub authenticated: bool,
    /// Why not, when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Where a tool of the ToolSpace comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolOrigin {
    /// OpenClaw's core tools (files, shell).
    Core,
    /// An MCP server.
    Mcp,
    /// A plugin.
    Plugin,
    /// A channel.
    Channel,
    /// The runtime itself (`ask_user`).
    Runtime,
    /// The app, for a run (client tools).
    App,
    /// An origin this client does not know.
    #[serde(other)]
    Unknown,
}

/// What the approval policy does with a tool's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalPolicy {
    /// They run.
    Allow,
    /// They are refused.
    Deny,
    /// They wait for a decision (`approvals.respond`).
    Ask,
    /// A policy this client does not know.
    #[serde(other)]
    Unknown,
}

/// A surface through which the model reaches a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolReach {
    /// Offered to the model by name.
    Direct,
    /// From a Code Mode cell (`tools.call`, `ALL_TOOLS`, namespaces).
    CodeMode,
    /// Through Tool Search (`tool_search`/`tool_call`, or its code mode).
    ToolSearch,
    /// A surface this client does not know.
    #[serde(other)]
    Unknown,
}

/// One argument of a tool, as the schema summary lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentSummary {
    /// The argument's name.
    pub name: String,
    /// Its JSON type(s), when the schema says (`string`, `number|null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
    /// Whether a call must give it.
    pub required: bool,
    /// What it is, clipped to 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A tool as the ToolSpace shows it: normalised metadata, no plugin
/// internals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolSummary {
    /// Catalog id, `<source>:<owner>:<tool-name>`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Where it comes from.
    pub source: ToolOrigin,
    /// The plugin, MCP server or app that owns it.
    pub owner: String,
    /// What it does.
    pub description: String,
    /// Its arguments, summarised from its schema (top-level properties).
    pub arguments: Vec<ArgumentSummary>,
    /// JSON Schema of its arguments, whole.
    pub parameters: serde_json::Value,
    /// What the approval policy (`tools.approvals`) does with its calls.
    pub approval: ApprovalPolicy,
    /// Whether calls wait for a decision (`approval` is `ask`).
    pub requires_approval: bool,
    /// The surfaces through which the model reaches it.
    pub reach: Vec<ToolReach>,
    /// Hidden from the model's tool list (reached only through search or
    /// code).
    pub hidden: bool,
    /// Only reads.
    pub read_only: bool,
    /// Writes data.
    pub writable: bool,
    /// Runs commands on the host.
    pub host_capable: bool,
    /// Read-only, writing or host-executing, as the tool declares.
    pub effect: ToolEffect,
}

/// What an environment provider can do (the seed's `EnvironmentProvider`
/// capabilities).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentCapabilities {
    /// Checks out repositories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<bool>,
    /// Sandboxes execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<bool>,
    /// Enforces a network policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<bool>,
    /// Binds secrets by reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<bool>,
    /// Collects artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<bool>,
    /// Streams logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<bool>,
    /// Opens pull requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_requests: Option<bool>,
    /// Keeps running between runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_running: Option<bool>,
}

/// Where an environment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EnvironmentStatus {
    /// Being prepared.
    Provisioning,
    /// Ready for runs.
    Ready,
    /// Stopped; kept by policy.
    Stopped,
    /// Failed to prepare or run.
    Failed,
    /// Deleted.
    Deleted,
    /// A status this client does not know.
    #[serde(other)]
    Unknown,
}

/// A managed environment runs execute in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    /// The environment's id.
    pub id: EnvironmentId,
    /// Its provider's id.
    pub provider: ProviderId,
    /// Where it is.
    pub status: EnvironmentStatus,
    /// What its provider can do.
    pub capabilities: EnvironmentCapabilities,
    /// The subject of the token that made it (absent: an unbound token's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// When it was created (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// The settings it was created with, as given (secrets appear only as
    /// references, never as values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    /// Where its workspace is, on the gateway's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Why it failed, or what became of its workspace when deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
