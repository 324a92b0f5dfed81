//! `tools` (Code Mode, Tool Search, the tool policy, approvals), an
//! agent's own `tools`, and `mcp.servers`.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema};
use serde::Deserialize;

use super::{NOT_READ, NonEmpty, openclaw};

/// Tools: Code Mode, Tool Search, policy and approvals.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolsSection {
    /// The settings an agent may also set for itself.
    #[serde(flatten)]
    pub settings: ToolSettings,
    /// Approvals: "ask", "allow", "deny" or {mode, timeoutMs, rules}.
    pub approvals: Option<ApprovalsSetting>,
}

/// OpenClaw's `tools` keys Talon does not read.
const OPENCLAW_TOOLS: &[&str] = &[
    "profile",
    "byProvider",
    "web",
    "media",
    "links",
    "message",
    "agentToAgent",
    "elevated",
    "subagents",
    "alsoAllow",
];

fn tools_openclaw(schema: &mut Schema) {
    openclaw(schema, OPENCLAW_TOOLS, NOT_READ);
}

/// This agent's tool settings (over the global ones).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = tools_openclaw)]
pub struct ToolSettings {
    /// Code Mode: true, false or its settings.
    pub code_mode: Option<CodeModeSetting>,
    /// Tool Search: true, false or its settings.
    pub tool_search: Option<ToolSearchSetting>,
    /// Tool names, globs or `group:<name>`; absent: all.
    pub allow: Option<Vec<NonEmpty>>,
    /// Tool names, globs or `group:<name>`; deny wins.
    pub deny: Option<Vec<NonEmpty>>,
    /// Tools the model always sees by name, never hidden behind Code Mode or Tool Search: names, catalog ids (`client:app:<name>` for an app's tools), globs or `group:<name>`.
    pub direct_only: Option<Vec<NonEmpty>>,
    /// OpenClaw's sandbox tool policy.
    pub sandbox: Option<SandboxTools>,
    /// The shell `exec`'s background processes (read from the global `tools` only; an agent's own is accepted and not read).
    pub exec: Option<ExecSection>,
}

/// `tools.exec`: background shell processes (`exec`'s `background` and `yieldMs`, the `process` tool).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = exec_openclaw)]
pub struct ExecSection {
    /// The yieldMs an exec call without one gets, in ms (default: none, every command runs in the foreground unless asked; OpenClaw's default is 10000).
    #[schemars(range(min = 1, max = 60000))]
    pub background_ms: Option<u64>,
    /// How long a background process may run, in seconds, before it is killed and its task is timed_out (default 1800).
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_sec: Option<u64>,
    /// Whether a background process's end is posted to its session (default true: the task's policy is done_only; false: silent).
    pub notify_on_exit: Option<bool>,
    /// Background processes one session may have running (default 8).
    #[schemars(range(min = 1, max = 256))]
    pub max_per_session: Option<u32>,
    /// Background processes this gateway runs at once (default 64).
    #[schemars(range(min = 1, max = 4096))]
    pub max_per_node: Option<u32>,
    /// Output kept per background process, its latest bytes (default 1048576).
    #[schemars(range(min = 4096, max = 67108864))]
    pub max_output_bytes: Option<u64>,
}

fn exec_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &[
            "cleanupMs",
            "notifyOnExitEmptySuccess",
            "host",
            "security",
            "ask",
            "node",
            "pathPrepend",
            "safeBins",
            "applyPatch",
        ],
        NOT_READ,
    );
}

/// OpenClaw's sandbox tool policy.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxTools {
    /// OpenClaw's tool policy for sandboxed runs (every run, unless agents.defaults.sandbox.mode is "off").
    pub tools: Option<SandboxToolLists>,
}

/// OpenClaw's tool policy for sandboxed runs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxToolLists {
    /// Sandboxed runs may use only these (and tools.allow's).
    pub allow: Option<Vec<NonEmpty>>,
    /// Sandboxed runs may not use these.
    pub deny: Option<Vec<NonEmpty>>,
    /// Added to tools.sandbox.tools.allow.
    pub also_allow: Option<Vec<NonEmpty>>,
}

/// Code Mode: true, false or its settings.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum CodeModeSetting {
    /// On (true) with every default, or off.
    Switch(bool),
    /// Its settings.
    Settings(CodeModeSection),
}

/// The cell runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum CellRuntime {
    /// QuickJS in WASI.
    #[serde(rename = "quickjs-wasi")]
    QuickjsWasi,
}

/// What the model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CodeModeMode {
    /// exec and wait only.
    Only,
}

/// A cell language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellLanguage {
    /// JavaScript.
    Javascript,
    /// TypeScript (types stripped).
    Typescript,
}

/// `tools.codeMode`'s settings: limits out of their range are clamped
/// into it by `talon-codemode`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct CodeModeSection {
    /// The only switch (default false).
    pub enabled: Option<bool>,
    /// The cell runtime.
    pub runtime: Option<CellRuntime>,
    /// The model sees exec and wait only.
    pub mode: Option<CodeModeMode>,
    /// Cell languages (default both).
    #[schemars(length(min = 1))]
    pub languages: Option<Vec<CellLanguage>>,
    /// A cell's time limit, 100–60000 (default 10000).
    pub timeout_ms: Option<u64>,
    /// A cell's memory, 1 MiB–1 GiB (default 64 MiB).
    pub memory_limit_bytes: Option<u64>,
    /// A cell's output, 1 KiB–10 MiB (default 64 KiB).
    pub max_output_bytes: Option<u64>,
    /// A suspended cell, 1 KiB–256 MiB (default 10 MiB).
    pub max_snapshot_bytes: Option<u64>,
    /// Pending calls a cell may hold, 1–128 (default 16).
    pub max_pending_tool_calls: Option<u64>,
    /// How long a suspended cell is kept, 1–86400 (default 900).
    pub snapshot_ttl_seconds: Option<u64>,
    /// The most results a search returns, 1–50 (default 50).
    pub max_search_limit: Option<u64>,
    /// Results when a search names none (default 8).
    pub search_default_limit: Option<u64>,
    /// A cell's source, 1 KiB–4 MiB (default 1 MiB).
    pub max_source_bytes: Option<u64>,
}

/// Tool Search: true, false or its settings.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum ToolSearchSetting {
    /// On (true) with every default, or off.
    Switch(bool),
    /// Its settings.
    Settings(ToolSearchSection),
}

/// How the catalog is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolSearchMode {
    /// A search cell.
    Code,
    /// Search tools.
    Tools,
    /// A directory of the catalog.
    Directory,
}

/// `tools.toolSearch`'s settings: limits out of their range are clamped
/// into it by `talon-toolsearch`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolSearchSection {
    /// How the catalog is offered (default code).
    pub mode: Option<ToolSearchMode>,
    /// A search cell's time limit, 1000–60000 (default 10000).
    pub code_timeout_ms: Option<u64>,
    /// The most results, 1–50 (default 20).
    pub max_search_limit: Option<u64>,
    /// Results when a search names none (default 8).
    pub search_default_limit: Option<u64>,
}

/// What an approval rule (or the mode) decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalAction {
    /// Ask a person.
    Ask,
    /// Allow.
    Allow,
    /// Deny.
    Deny,
}

/// Approvals: "ask", "allow", "deny" or {mode, timeoutMs, rules}.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum ApprovalsSetting {
    /// The mode alone.
    Mode(ApprovalAction),
    /// {mode, timeoutMs, rules}.
    Settings(ApprovalsSection),
}

/// `tools.approvals` as an object (a key it does not know refuses the config).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[schemars(extend("x-strict" = true))]
pub struct ApprovalsSection {
    /// What a call no rule decides gets.
    pub mode: Option<ApprovalAction>,
    /// How long an approval waits (default 24 h).
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// The first rule that matches decides.
    pub rules: Vec<ApprovalRule>,
}

/// What a rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// Tool calls.
    Tool,
    /// Code Mode cells.
    CodeModeExec,
}

/// A tool's risk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuleRisk {
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Critical.
    Critical,
}

/// One approval rule: the first whose every field matches a call decides it. A key it does not know refuses the config (a misspelt `tool` would
/// make a rule match every call).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-strict" = true))]
pub struct ApprovalRule {
    /// A tool name or catalog id; `*` matches anything.
    #[serde(default)]
    pub tool: Option<String>,
    /// core, mcp, plugin or app.
    #[serde(default)]
    pub source: Option<String>,
    /// What the rule decides: tool calls (`tool`, the default) or Code Mode cells (`code_mode_exec`).
    #[serde(default)]
    pub tool_kind: Option<RuleKind>,
    /// The tool's risk.
    #[serde(default)]
    pub risk: Option<RuleRisk>,
    /// What it decides (required).
    pub action: ApprovalAction,
}

/// MCP servers whose tools agents may call.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct McpSection {
    /// MCP servers by name (the `<server>` of `mcp:<server>:<tool>`).
    pub servers: BTreeMap<String, McpServer>,
}

fn server_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &["transport", "type"],
        "Told by command or url; not read.",
    );
}

/// One MCP server: a stdio `command` or an HTTP `url`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = server_openclaw)]
pub struct McpServer {
    /// A stdio server's command.
    #[schemars(length(min = 1))]
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment.
    pub env: BTreeMap<String, SecretValue>,
    /// Its working directory.
    pub cwd: Option<String>,
    /// A streamable HTTP server's URL.
    #[schemars(length(min = 1))]
    pub url: Option<String>,
    /// Headers sent to an HTTP server.
    pub headers: BTreeMap<String, SecretValue>,
    /// Default true.
    pub enabled: Option<bool>,
    /// Connect at start, not at first use (default false).
    pub connect_on_start: Option<bool>,
    /// Milliseconds, 1–3600000.
    #[schemars(range(min = 1, max = 3_600_000))]
    pub connection_timeout_ms: Option<u64>,
    /// Milliseconds, 1–3600000.
    #[schemars(range(min = 1, max = 3_600_000))]
    pub request_timeout_ms: Option<u64>,
}

/// A value, "${VARIABLE}", a template with ${VARIABLE}s, or {env: "VARIABLE"}.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SecretValue {
    /// A value, "${VARIABLE}", or a template with ${VARIABLE}s.
    Text(String),
    /// A number, as its text.
    Number(serde_json::Number),
    /// true or false, as its text.
    Flag(bool),
    /// {env: "VARIABLE"}.
    Env(super::EnvRef),
}

super::scalar_or_object!(ApprovalsSetting, Mode, Settings);

super::scalar_or_object!(CodeModeSetting, Switch, Settings);

super::scalar_or_object!(ToolSearchSetting, Switch, Settings);
