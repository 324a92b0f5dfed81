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

/// Why a tool call failed: the stable code every executor (core tools, MCP
/// servers, plugins, client round-trips) reports, whatever the surface that
/// asked. Surfaces map it to their own codes in one place each (Code Mode's
/// guest sees `nested_tool_failed` or `aborted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolErrorCode {
    /// A missing or malformed argument.
    InvalidArgument,
    /// The thing the call names (a file, a resource, a prompt) does not exist.
    NotFound,
    /// A path leaves the workspace (`..`, absolute, or a symlink).
    OutsideWorkspace,
    /// A FIFO, socket or device where a regular file is needed.
    NotRegularFile,
    /// A directory where a regular file is needed.
    IsADirectory,
    /// A component on the way is not a directory.
    NotADirectory,
    /// Too many symlinks on the way (a loop or a long chain).
    TooManyLinks,
    /// A path kept changing (symlink swaps) while it was opened.
    PathChanged,
    /// An input or a file is larger than the tool handles.
    TooLarge,
    /// A file is not UTF-8 text.
    NotText,
    /// `edit`: the text to replace is absent.
    NoMatch,
    /// `edit`: the text to replace occurs more than once.
    AmbiguousMatch,
    /// The operating system refused access.
    PermissionDenied,
    /// Another input/output error.
    IoError,
    /// The tool did not finish within its time limit.
    Timeout,
    /// The run was cancelled while the tool ran; its work was stopped.
    Aborted,
    /// A process the tool needs could not be started.
    SpawnFailed,
    /// The executor has no tool of that name.
    UnknownTool,
    /// The service behind the tool (an MCP server) is not reachable: it
    /// failed to start, closed its connection, or is not part of this run.
    Unavailable,
    /// The service answered with an error or a malformed response.
    ProtocolError,
    /// The service does not offer what was asked (an MCP capability).
    Unsupported,
    /// The tool ran and reported a failure of its own.
    Failed,
    /// A bug: an invariant of the executor broke.
    Internal,
    /// A code this client does not know yet.
    #[serde(other)]
    Unknown,
}

impl ToolErrorCode {
    /// The wire spelling, e.g. `"outside_workspace"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArgument => "invalid_argument",
            Self::NotFound => "not_found",
            Self::OutsideWorkspace => "outside_workspace",
            Self::NotRegularFile => "not_regular_file",
            Self::IsADirectory => "is_a_directory",
            Self::NotADirectory => "not_a_directory",
            Self::TooManyLinks => "too_many_links",
            Self::PathChanged => "path_changed",
            Self::TooLarge => "too_large",
            Self::NotText => "not_text",
            Self::NoMatch => "no_match",
            Self::AmbiguousMatch => "ambiguous_match",
            Self::PermissionDenied => "permission_denied",
            Self::IoError => "io_error",
            Self::Timeout => "timeout",
            Self::Aborted => "aborted",
            Self::SpawnFailed => "spawn_failed",
            Self::UnknownTool => "unknown_tool",
            Self::Unavailable => "unavailable",
            Self::ProtocolError => "protocol_error",
            Self::Unsupported => "unsupported",
            Self::Failed => "failed",
            Self::Internal => "internal",
            Self::Unknown => "unknown",
        }
    }

    /// Whether the same call may succeed if tried again unchanged (the
    /// service was down or slow), as opposed to a failure that repeats.
    pub fn retryable(self) -> bool {
        matches!(self, Self::Timeout | Self::Unavailable | Self::PathChanged)
    }
}

impl std::fmt::Display for ToolErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
