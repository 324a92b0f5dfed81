//! The MCP servers of one configuration, shared by every run that uses it
//! (servers are not started per session). A run asks for its servers'
//! tools ([`McpManager::for_run`]): servers connect when first needed (or
//! at start, with `connectOnStart`), a server that fails to start is
//! reported once for the run and its tools are absent. Calls arrive
//! through the catalog's single execution path ([`McpExecutor`]); resources
//! and prompts through [`McpServers`]. Both answer failures as
//! [`ToolError`]s (mapped from [`McpError`] in one place) and stop a
//! request the moment the run's [`RunContext::cancel`] token is cancelled.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::join_all;
use serde_json::{Value, json};
use talon_protocol::{ToolDefinition, ToolEffect, ToolSource};
use talon_tools::{
    BoxFuture, CatalogBuilder, CatalogEntry, McpServerFeatures, McpServers, RunContext, ToolCall,
    ToolError, ToolErrorCode, ToolExecutor,
};

use crate::config::ServerConfig;
use crate::error::{McpError, Result};
use crate::progress::ProgressTo;
use crate::server::{EnvLookup, Server, ServerInfo};

/// The servers of one configuration.
#[derive(Debug, Clone)]
pub struct McpManager {
    servers: Arc<BTreeMap<String, Arc<Server>>>,
}

/// What a run gets from its servers.
#[derive(Debug, Clone, Default)]
pub struct RunServers {
    /// Tools by server, as catalog definitions (`source: mcp`, the server
    /// as owner).
    pub tools: Vec<(String, Vec<ToolDefinition>)>,
    /// Servers that could not be reached (reported once for the run).
    pub failed: Vec<McpError>,
}

impl RunServers {
    /// Adds every server's tools to a catalog.
    pub fn register(&self, mut builder: CatalogBuilder) -> CatalogBuilder {
        for (server, tools) in &self.tools {
            builder = builder.mcp(server, tools.iter().cloned());
        }
        builder
    }
}

/// An MCP tool as a catalog definition.
pub fn tool_definition(server: &str, tool: &rmcp::model::Tool) -> ToolDefinition {
    let read_only = tool
        .annotations
        .as_ref()
        .and_then(|a| a.read_only_hint)
        .unwrap_or(false);
    ToolDefinition {
        name: tool.name.to_string(),
        label: tool.title.clone(),
        description: tool.description.as_deref().unwrap_or_default().to_owned(),
        parameters: Value::Object((*tool.input_schema).clone()),
        source: ToolSource::Mcp,
        owner: server.to_owned(),
        catalog_mode: Default::default(),
        execution_mode: Default::default(),
        requires_approval: false,
        effect: if read_only {
            ToolEffect::ReadOnly
        } else {
            ToolEffect::Writes
        },
        // A read-only tool can run again after a restart without harm.
        replay_safe: read_only,
    }
}

impl McpManager {
    /// The enabled servers of `configs`; nothing starts yet.
    pub fn new(configs: Vec<ServerConfig>, env: EnvLookup) -> Self {
        let servers = configs
            .into_iter()
            .filter(|c| {
                if !c.enabled {
                    tracing::debug!(server = %c.name, "MCP server disabled");
                }
                c.enabled
            })
            .map(|c| (c.name.clone(), Arc::new(Server::new(c, env.clone()))))
            .collect();
        Self {
            servers: Arc::new(servers),
        }
    }

    /// With the process environment.
    pub fn from_env(configs: Vec<ServerConfig>) -> Self {
        Self::new(configs, Arc::new(|name| std::env::var(name).ok()))
    }

    /// Connects the servers configured with `connectOnStart`, concurrently;
    /// returns their failures (they are retried when a run needs them).
    pub async fn start(&self) -> Vec<McpError> {
        let eager: Vec<_> = self
            .servers
            .values()
            .filter(|s| s.config.connect_on_start)
            .cloned()
            .collect();
        let results = join_all(eager.iter().map(|s| s.connect())).await;
        results.into_iter().filter_map(|r| r.err()).collect()
    }

    /// Names of the enabled servers.
    pub fn names(&self) -> Vec<String> {
        self.servers.keys().cloned().collect()
    }

    fn server(&self, name: &str) -> Result<&Arc<Server>> {
        self.servers
            .get(name)
            .ok_or_else(|| McpError::Unknown(name.to_owned()))
    }

    /// Connects one server and reports what it said.
    pub async fn connect(&self, name: &str) -> Result<ServerInfo> {
        self.server(name)?.connect().await
    }

    /// Every server's tools for a new run, listed concurrently (connecting
    /// servers as needed). Failures are reported, not raised.
    pub async fn for_run(&self) -> RunServers {
        let servers: Vec<_> = self.servers.values().cloned().collect();
        let listed = join_all(servers.iter().map(|s| s.tools())).await;
        let mut run = RunServers::default();
        for (server, result) in servers.iter().zip(listed) {
            let name = &server.config.name;
            match result {
                Ok(tools) => run.tools.push((
                    name.clone(),
                    tools.iter().map(|t| tool_definition(name, t)).collect(),
                )),
                Err(error) => run.failed.push(error),
            }
        }
        run
    }

    /// `tools/call` on a server. With a run context, cancelling its token
    /// ends the call at once with [`McpError::Aborted`] (the request is
    /// dropped, which sends `notifications/cancelled`).
    pub async fn call_tool(
        &self,
        ctx: Option<&RunContext>,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<Value> {
        self.call_tool_reporting(ctx, server, tool, arguments, None)
            .await
    }

    /// [`McpManager::call_tool`], the server's progress going to
    /// `progress` as the call's deltas.
    pub async fn call_tool_reporting(
        &self,
        ctx: Option<&RunContext>,
        server: &str,
        tool: &str,
        arguments: Value,
        progress: Option<ProgressTo>,
    ) -> Result<Value> {
        let cancel = ctx.map(|c| &c.cancel);
        self.server(server)?
            .call_tool(tool, arguments, cancel, progress)
            .await
    }

    /// Closes every connection and stops every child.
    pub async fn shutdown(&self) {
        join_all(self.servers.values().map(|s| s.shutdown())).await;
    }

    /// The executor for this manager's catalog entries.
    pub fn executor(&self) -> McpExecutor {
        McpExecutor {
            manager: self.clone(),
        }
    }
}

/// Executes `mcp:<server>:<tool>` catalog entries.
#[derive(Debug, Clone)]
pub struct McpExecutor {
    manager: McpManager,
}

impl ToolExecutor for McpExecutor {
    fn execute<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, std::result::Result<Value, ToolError>> {
        Box::pin(async move {
            if entry.tool.source != ToolSource::Mcp {
                return Err(ToolError::new(
                    ToolErrorCode::Internal,
                    format!("{} is not an MCP tool", entry.id),
                ));
            }
            let progress = ProgressTo {
                sink: ctx.updates.clone(),
                call_id: call.call_id.clone(),
            };
            Ok(self
                .manager
                .call_tool_reporting(
                    Some(ctx),
                    &entry.tool.owner,
                    &entry.tool.name,
                    call.args.clone(),
                    Some(progress),
                )
                .await?)
        })
    }
}

impl McpServers for McpManager {
    fn features(&self, server: &str) -> Option<McpServerFeatures> {
        self.servers.get(server).and_then(|s| s.features())
    }

    fn read_resource<'a>(
        &'a self,
        ctx: &'a RunContext,
        server: &'a str,
        uri: &'a str,
    ) -> BoxFuture<'a, std::result::Result<Value, ToolError>> {
        Box::pin(async move {
            Ok(self
                .server(server)?
                .read_resource(uri, Some(&ctx.cancel))
                .await?)
        })
    }

    fn get_prompt<'a>(
        &'a self,
        ctx: &'a RunContext,
        server: &'a str,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, std::result::Result<Value, ToolError>> {
        Box::pin(async move {
            Ok(self
                .server(server)?
                .get_prompt(name, arguments, Some(&ctx.cancel))
                .await?)
        })
    }
}

/// A JSON summary of a run's server failures, for logs and run reports.
pub fn failures_json(failed: &[McpError]) -> Value {
    json!(failed.iter().map(ToString::to_string).collect::<Vec<_>>())
}
