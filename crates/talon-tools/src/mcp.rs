//! What a run can reach of its MCP servers besides their tools:
//! resources and prompts. Tools are catalog entries (`mcp:<server>:<tool>`)
//! and go through [`crate::ToolRunner`]; this interface serves
//! `MCP.<server>.resources.read` and `MCP.<server>.prompts.get`, for
//! the servers that advertise them.

use serde_json::Value;

use crate::runner::{BoxFuture, RunContext};
use crate::tool_error::ToolError;

/// The optional MCP features a server advertised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct McpServerFeatures {
    /// The server serves `resources/read`.
    pub resources: bool,
    /// The server serves `prompts/get`.
    pub prompts: bool,
}

/// The MCP servers of a run, by name.
pub trait McpServers: Send + Sync {
    /// The features of a server this run can see; `None` for others.
    fn features(&self, server: &str) -> Option<McpServerFeatures>;

    /// `resources/read` of `uri` (MCP's result shape: `{contents: [...]}`).
    fn read_resource<'a>(
        &'a self,
        ctx: &'a RunContext,
        server: &'a str,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;

    /// `prompts/get` of `name` with `arguments` (MCP's result shape:
    /// `{description?, messages: [...]}`).
    fn get_prompt<'a>(
        &'a self,
        ctx: &'a RunContext,
        server: &'a str,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}
