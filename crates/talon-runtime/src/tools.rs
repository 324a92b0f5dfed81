//! The tools a run gets from the config: the MCP servers of
//! `mcp.servers` (connected for the run; a server that fails is logged
//! and its tools are absent), the catalog (filtered by
//! `tools.allow`/`tools.deny`), the executor behind it, and the servers'
//! resources and prompts.

use std::sync::Arc;

use crate::RuntimeError;
use serde_json::Value;
use talon_config::Config;
use talon_config::model::{NonEmpty, ToolSettings};
use talon_core_tools::CoreTools;
use talon_mcp::{McpExecutor, McpManager, parse_servers};

use crate::changes::{CommandLog, FileChange, MAX_REPORTED_BYTES, ToolOutputs};
use talon_protocol::{CatalogMode, ToolDefinition, ToolSource};
use talon_tools::redact::Redactor;
use talon_tools::{
    BoxFuture, Catalog, CatalogBuilder, CatalogEntry, McpServers, RunContext, RunScope, Semantic,
    ToolCall, ToolError, ToolErrorCode, ToolExecutor, ToolPolicy,
};

/// A run's tools.
pub struct RunTools {
    /// The run's catalog.
    pub catalog: Arc<Catalog>,
    /// Executes its entries.
    pub executor: Arc<dyn ToolExecutor>,
    /// Resources and prompts of its MCP servers.
    pub mcp: Option<Arc<dyn McpServers>>,
    /// The servers' manager, when this run started them (and so stops
    /// them); `None` when a host shares its manager between runs.
    owned: Option<McpManager>,
}

/// `tools.allow` / `tools.deny` (with the agent's own lists when it has
/// them).
pub fn policy(config: &Config, agent: &str) -> Result<ToolPolicy, RuntimeError> {
    let document = config.document().map_err(RuntimeError::config)?;
    let list = |pick: fn(&ToolSettings) -> Option<&Vec<NonEmpty>>| {
        let (global, own) = document.tool(agent, pick);
        own.or(global).map(|l| names(l))
    };
    let allow = list(|t| t.allow.as_ref());
    let deny = list(|t| t.deny.as_ref()).unwrap_or_default();
    let policy = ToolPolicy::from_lists(allow.as_deref(), &deny);
    // OpenClaw's tool policy for sandboxed runs (`tools.sandbox.tools`),
    // which every run is unless the admin turned the sandbox off.
    let sandboxed = crate::Jails::from_config(config)?
        .of(agent)
        .policy()
        .sandboxed();
    let (global, own) = document.tool(agent, |t| t.sandbox.as_ref());
    let Some(tools) = own
        .or(global)
        .filter(|_| sandboxed)
        .and_then(|s| s.tools.as_ref())
    else {
        return Ok(policy);
    };
    let list = |l: &Option<Vec<NonEmpty>>| l.as_deref().map(names).unwrap_or_default();
    Ok(policy.with_sandbox_lists(
        tools.allow.as_deref().map(names).as_deref(),
        &list(&tools.deny),
        &list(&tools.also_allow),
    ))
}

/// A config list of tool names or patterns.
fn names(list: &[NonEmpty]) -> Vec<String> {
    list.iter().map(|name| name.0.clone()).collect()
}

/// The config's MCP servers (`mcp.servers`), not yet connected.
pub fn servers(config: &Config) -> Result<McpManager, RuntimeError> {
    let document = config.document().map_err(RuntimeError::config)?;
    let servers = parse_servers(&document.mcp.servers)?;
    Ok(McpManager::from_env(servers))
}

impl RunTools {
    /// Builds the run's tools from the config, starting the config's MCP
    /// servers for this run alone ([`RunTools::shutdown`] stops them).
    pub async fn from_config(
        config: &Config,
        agent: &str,
        scope: &RunScope,
        core: Option<CoreTools>,
    ) -> Result<Self, RuntimeError> {
        let manager = servers(config)?;
        for error in manager.start().await {
            tracing::warn!(%error, "MCP server unavailable");
        }
        let local = Local {
            core,
            ..Local::default()
        };
        let mut tools = Self::with_manager(config, agent, scope, local, &manager).await?;
        tools.owned = Some(manager);
        Ok(tools)
    }

    /// Builds the run's tools over `manager`, whose servers a host shares
    /// between its runs (and stops itself). The app's `client` tools join
    /// (owner `app`, ids `client:app:<name>`). With Code Mode they are in
    /// the hidden catalog like any tool (a cell that calls one waits for
    /// the app: `talon_codemode::AwaitingCell`); otherwise the model calls
    /// them by name (Tool Search's bridges cannot wait for an app).
    /// `tools.directOnly` names the tools the model sees by name whatever
    /// the surface.
    pub async fn with_manager(
        config: &Config,
        agent: &str,
        scope: &RunScope,
        local: Local,
        manager: &McpManager,
    ) -> Result<Self, RuntimeError> {
        let Local {
            core,
            client,
            questions,
            changes,
            redact,
            host_tools,
        } = local;
        let policy = policy(config, agent)?;
        let direct_only = {
            let document = config.document().map_err(RuntimeError::config)?;
            let (global, own) = document.tool(agent, |t| t.direct_only.as_ref());
            own.or(global).map(|l| names(l)).unwrap_or_default()
        };
        let cells_wait = crate::SurfacePlan::from_config(config, agent)?
            .code_mode
            .is_some();
        let run = manager.for_run().await;
        for error in &run.failed {
            tracing::warn!(%error, "MCP server unavailable; its tools are absent from this run");
        }
        let mut builder = run.register(
            CatalogBuilder::new(scope.clone())
                .semantic(Semantic::Shared)
                .direct_only(&direct_only),
        );
        if let Some(core) = &core {
            builder = builder.core(core.definitions());
        }
        if questions.is_some() {
            builder = builder.runtime([crate::questions::definition()]);
        }
        for host in &host_tools {
            builder = builder.host(host.owner, host.definitions.iter().cloned());
        }
        if !client.is_empty() {
            let client = client.into_iter().map(|mut tool| {
                if !cells_wait {
                    tool.catalog_mode = CatalogMode::DirectOnly;
                }
                tool
            });
            builder = builder.client("app", scope, client);
        }
        let catalog = builder.build(&policy)?;
        for rejected in catalog.rejected() {
            tracing::warn!(error = %rejected, "tool left out of the catalog");
        }
        Ok(Self {
            catalog: Arc::new(catalog),
            executor: Arc::new(Executor {
                mcp: manager.executor(),
                core,
                questions,
                changes,
                redact: Redactor::new(&redact),
                host_tools,
            }),
            mcp: Some(Arc::new(manager.clone())),
            owned: None,
        })
    }

    /// Stops the MCP servers this run started.
    pub async fn shutdown(self) {
        if let Some(manager) = self.owned {
            manager.shutdown().await;
        }
    }
}

/// What a run's tools have beside the MCP servers.
#[derive(Default)]
pub struct Local {
    /// The core tools, in the run's workspace.
    pub core: Option<CoreTools>,
    /// The app's tools for the run (answered by the app between runs).
    pub client: Vec<ToolDefinition>,
    /// Who answers `ask_user` (the run offers it only then).
    pub questions: Option<Arc<dyn ToolExecutor>>,
    /// Who takes the files the core tools change.
    pub changes: Option<Arc<dyn ToolOutputs>>,
    /// Values redacted from every tool result and error before the model
    /// or any sink sees them (an environment's bound secrets).
    pub redact: Vec<String>,
    /// Tools the host adds to the run, a group per owner.
    pub host_tools: Vec<crate::run::HostTools>,
}

/// Dispatches catalog entries to their executors by source.
struct Executor {
    mcp: McpExecutor,
    core: Option<CoreTools>,
    questions: Option<Arc<dyn ToolExecutor>>,
    changes: Option<Arc<dyn ToolOutputs>>,
    redact: Redactor,
    host_tools: Vec<crate::run::HostTools>,
}

impl Executor {
    /// A core `exec`, its whole output reported when its result was cut
    /// (or always, as the taker asks).
    async fn logged(
        &self,
        core: &CoreTools,
        outputs: &dyn ToolOutputs,
        ctx: &RunContext,
        call: &ToolCall,
    ) -> Result<Value, ToolError> {
        let (mut value, log) = core
            .exec_logged(ctx, &call.call_id, &call.args, outputs.keep_logs())
            .await?;
        if let Some(output) = log {
            let log = CommandLog {
                call_id: call.call_id.clone(),
                command: call.args["command"].as_str().unwrap_or_default().to_owned(),
                output,
            };
            if let Some(id) = outputs.command_log(ctx, log).await
                && let Some(object) = value.as_object_mut()
            {
                object.insert("logArtifact".into(), Value::String(id));
            }
        }
        Ok(value)
    }

    /// A core `write` or `edit`, its change reported when it succeeds.
    async fn tracked(
        &self,
        core: &CoreTools,
        changes: &dyn ToolOutputs,
        ctx: &RunContext,
        entry: &CatalogEntry,
        call: &ToolCall,
    ) -> Result<Value, ToolError> {
        let path = call.args.get("path").and_then(Value::as_str).unwrap_or("");
        let before = core.snapshot(path, MAX_REPORTED_BYTES).await;
        let result = core.execute(ctx, entry, call).await?;
        match (before, core.snapshot(path, MAX_REPORTED_BYTES).await) {
            (Ok(before), Ok(Some((real, after)))) => {
                let change = FileChange {
                    tool: entry.tool.name.clone(),
                    call_id: call.call_id.clone(),
                    path: real,
                    before: before.map(|(_, bytes)| bytes),
                    after,
                };
                changes.file_changed(ctx, change).await;
            }
            (before, after) => tracing::debug!(
                tool = %entry.id,
                before = ?before.err(),
                after = ?after.err(),
                "a changed file was not reported"
            ),
        }
        Ok(result)
    }
}

impl ToolExecutor for Executor {
    fn execute<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        if self.redact.is_empty() {
            return self.dispatch(ctx, entry, call);
        }
        Box::pin(async move {
            // What a call streams is redacted like what it returns.
            let ctx = RunContext {
                updates: Arc::new(RedactedUpdates {
                    inner: ctx.updates.clone(),
                    redact: self.redact.clone(),
                }),
                ..ctx.clone()
            };
            match self.dispatch(&ctx, entry, call).await {
                Ok(value) => Ok(self.redact.value(&value)),
                Err(mut error) => {
                    error.message = self.redact.text(&error.message);
                    Err(error)
                }
            }
        })
    }
}

/// A run's update sink behind its redactor.
struct RedactedUpdates {
    inner: Arc<dyn talon_tools::UpdateSink>,
    redact: Redactor,
}

impl talon_tools::UpdateSink for RedactedUpdates {
    fn update(&self, call_id: &str, update: Value) {
        self.inner.update(call_id, self.redact.value(&update));
    }

    fn nested_update(&self, call_id: &str, parent_id: &str, update: Value) {
        self.inner
            .nested_update(call_id, parent_id, self.redact.value(&update));
    }
}

impl Executor {
    fn dispatch<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        if entry.tool.source == ToolSource::Openclaw
            && let Some(host) = self
                .host_tools
                .iter()
                .find(|host| entry.tool.owner == host.owner)
        {
            return host.executor.execute(ctx, entry, call);
        }
        match (entry.tool.source, &self.core) {
            (ToolSource::Mcp, _) => self.mcp.execute(ctx, entry, call),
            (ToolSource::Openclaw, _)
                if entry.tool.owner == crate::questions::OWNER && self.questions.is_some() =>
            {
                match &self.questions {
                    Some(questions) => questions.execute(ctx, entry, call),
                    None => Box::pin(async {
                        Err(ToolError::new(ToolErrorCode::Unavailable, "no one to ask"))
                    }),
                }
            }
            (ToolSource::Openclaw, Some(core))
                if entry.tool.owner == "core"
                    && matches!(entry.tool.name.as_str(), "write" | "edit") =>
            {
                match &self.changes {
                    Some(changes) => {
                        Box::pin(self.tracked(core, changes.as_ref(), ctx, entry, call))
                    }
                    None => core.execute(ctx, entry, call),
                }
            }
            (ToolSource::Openclaw, Some(core))
                if entry.tool.owner == "core" && entry.tool.name == "exec" =>
            {
                match &self.changes {
                    Some(outputs) => Box::pin(self.logged(core, outputs.as_ref(), ctx, call)),
                    None => core.execute(ctx, entry, call),
                }
            }
            (ToolSource::Openclaw, Some(core)) if entry.tool.owner == "core" => {
                core.execute(ctx, entry, call)
            }
            _ => {
                let error = ToolError::new(
                    ToolErrorCode::Unavailable,
                    format!("{} has no executor in this process", entry.id),
                );
                Box::pin(async move { Err(error) })
            }
        }
    }
}
