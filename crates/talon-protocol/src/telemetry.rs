//! A run's tool telemetry, as its end event carries it (`run.*`'s
//! `telemetry`): what seeds 000 and 004 ask a session log to answer. How
//! many tool schemas the model saw and how many bytes of tools and prompt
//! were sent, the catalog by source, the searches, describes, bridge calls,
//! cells and `wait`s the run made (including those inside
//! `tool_search_code`), and which tools finally ran and where they came
//! from. Names, ids and counts only: never tool input, values or secrets.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CodeModeLimitFailures, ToolSource};

/// At most this many calls are listed in [`ToolTelemetry::called`]; the
/// rest are counted in [`ToolTelemetry::called_omitted`].
pub const MAX_CALLED: usize = 1000;

/// The tool telemetry of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolTelemetry {
    /// The surface: `direct`, `code_mode`, or the Tool Search mode
    /// (`code`, `tools`, `directory`).
    pub surface: String,
    /// Tool schemas the model saw from the start (the names are
    /// `run.started`'s `tools`).
    pub visible_tools: u64,
    /// Bytes of the serialized tool definitions in one model request.
    pub tool_bytes: u64,
    /// Bytes of the system prompt in one model request (the surface's
    /// directory included).
    pub prompt_bytes: u64,
    /// Model requests the run sent.
    pub model_calls: u64,
    /// Bytes of tools and system prompt sent over all the run's model
    /// requests.
    pub bytes_sent: u64,
    /// Size of the run's catalog (hidden behind Code Mode or Tool Search).
    pub catalog_size: u64,
    /// The catalog's size by source (`openclaw`, `plugin`, `mcp`,
    /// `client`).
    pub catalog_by_source: BTreeMap<String, u64>,
    /// Catalog searches (`tools.search`, `tool_search`, and those inside
    /// `tool_search_code`).
    pub searches: u64,
    /// Describes (`tools.describe`, `tool_describe`, `$api`).
    pub describes: u64,
    /// Calls through Tool Search's bridge (`tool_call`,
    /// `openclaw.tools.call`).
    pub bridge_calls: u64,
    /// `tool_search_code` runs.
    pub code_runs: u64,
    /// Code Mode `exec` calls.
    pub execs: u64,
    /// Code Mode `wait` calls.
    pub waits: u64,
    /// Code Mode limit failures, for a Code Mode run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_failures: Option<CodeModeLimitFailures>,
    /// The tools that finally ran (or were left to the app), in the order
    /// they ended, at most [`MAX_CALLED`].
    pub called: Vec<CalledTool>,
    /// Calls left out of `called`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub called_omitted: u64,
}

/// One tool a run called.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CalledTool {
    /// The catalog id (a client tool's name when the model called it by
    /// name).
    pub id: String,
    /// Where the tool came from; absent for an id the catalog does not
    /// have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ToolSource>,
    /// `ok`, `failed`, `not_found`, `blocked`, `aborted`, `cancelled`, or
    /// `pending` (a client tool left for the app).
    pub status: String,
    /// Whether a cell or a bridge made it (not the model by name).
    pub nested: bool,
}

impl ToolTelemetry {
    /// Adds `call` to [`ToolTelemetry::called`], or counts it as omitted
    /// past [`MAX_CALLED`].
    pub fn push_called(&mut self, call: CalledTool) {
        if self.called.len() < MAX_CALLED {
            self.called.push(call);
        } else {
            self.called_omitted += 1;
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
