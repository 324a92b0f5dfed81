//! Tool definitions as they cross boundaries: catalog files, the CLI's
//! search output, and (later) the App SDK's ToolSpace.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a tool comes from: the first segment of its catalog id.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolSource {
    /// A core tool of the gateway.
    Openclaw,
    /// A tool registered by a plugin.
    Plugin,
    /// A tool of an MCP server.
    Mcp,
    /// A tool the client app supplied for this run.
    Client,
    /// A source this client does not know yet.
    #[serde(other)]
    Unknown,
}

impl ToolSource {
    /// The spelling used in catalog ids.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openclaw => "openclaw",
            Self::Plugin => "plugin",
            Self::Mcp => "mcp",
            Self::Client => "client",
            Self::Unknown => "unknown",
        }
    }
}

/// Whether a tool may be hidden behind a catalog.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CatalogMode {
    /// Cataloged when Code Mode or Tool Search is on.
    #[default]
    Default,
    /// Never cataloged; always visible to the model.
    DirectOnly,
    /// A mode this client does not know yet.
    #[serde(other)]
    Unknown,
}

/// Whether calls to a tool may run concurrently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExecutionMode {
    /// Calls may overlap.
    #[default]
    Parallel,
    /// Calls run one at a time.
    Sequential,
    /// A mode this client does not know yet.
    #[serde(other)]
    Unknown,
}

/// What a tool does to the world, as ToolSpace shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolEffect {
    /// Reads only.
    #[default]
    ReadOnly,
    /// Writes data.
    Writes,
    /// Runs commands on the host.
    Host,
    /// An effect this client does not know yet.
    #[serde(other)]
    Unknown,
}

/// A tool as a catalog file or a registry describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// The tool's name (what a model calls in direct mode).
    pub name: String,
    /// A human label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// What the tool does.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments.
    #[serde(default = "empty_object_schema")]
    pub parameters: serde_json::Value,
    /// Where the tool comes from.
    #[serde(default = "default_source")]
    pub source: ToolSource,
    /// Who provides it: `core`, the plugin id, the MCP server or the client
    /// app (the seed's `sourceName`).
    #[serde(default = "default_owner")]
    pub owner: String,
    /// Whether it may be cataloged.
    #[serde(default)]
    pub catalog_mode: CatalogMode,
    /// Whether its calls may overlap.
    #[serde(default)]
    pub execution_mode: ExecutionMode,
    /// Whether a call waits for an approval.
    #[serde(default)]
    pub requires_approval: bool,
    /// What it does to the world.
    #[serde(default)]
    pub effect: ToolEffect,
    /// Whether a call may be dispatched again when the process that
    /// started it died before it finished (a suspended Code Mode cell
    /// resumed after a restart). Otherwise such a call reaches the guest as
    /// a catchable failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay_safe: bool,
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

fn default_source() -> ToolSource {
    ToolSource::Openclaw
}

fn default_owner() -> String {
    "core".to_owned()
}

/// One ranked search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    /// Catalog id, `<source>:<owner>:<tool-name>`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Relevance score (higher is better; exact name or id hits first).
    pub score: f64,
}

/// A tool definition as the model sees it (what a provider request
/// carries): the surface of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelTool {
    /// The name the model calls.
    pub name: String,
    /// What the model is told about it.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: serde_json::Value,
}
