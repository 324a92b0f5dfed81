//! A host of agent runs: builds each run from the config (its model, its
//! tools, the surface the model sees) and executes it through the agent
//! loop. `talon agent` hosts one run; the gateway hosts many, and they
//! share what a host owns: the config's MCP servers (connected once) and
//! the sandbox (started the first time a surface needs it).
//!
//! Hosts start runs through [`Host::start`] (`run.rs`), which builds the
//! loop's context and events from the caller's [`crate::RunSpec`] and
//! hands [`Parts`] to [`Host::prepare`] here.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::Value;
use talon_agent::{
    AgentRun, Checkpoint, NestedCallEvents, RunEvents, RunOptions, RunResult, UpdateEvents,
};
use talon_config::Config;
use talon_config::model::Document;
use talon_core_tools::CoreTools;
use talon_mcp::McpManager;
use talon_protocol::{ToolDefinition, ToolSource};
use talon_provider::Message;
use talon_provider::ModelProvider;
use talon_sandbox::CellEngine;
use talon_tools::{Approver, RunContext, ToolRunner, ToolSurface};

use crate::provider::ModelRoute;
use crate::surface::OpenCells;
use crate::{RunTools, RuntimeError, SurfaceParts, SurfacePlan, Unavailable};

/// Fails unless every client tool reaches the model: offered under its
/// own name, or (Code Mode) in the hidden catalog; no other tool of the
/// run has its name, and the catalog and the policy kept it.
fn check_client_tools(
    names: &[String],
    tools: &RunTools,
    surface: &dyn ToolSurface,
) -> Result<(), RuntimeError> {
    let catalog = &tools.catalog;
    let visible = surface.tools();
    for name in names {
        if let Some(other) = catalog
            .entries()
            .iter()
            .chain(catalog.direct_only())
            .find(|e| &e.tool.name == name && e.tool.source != ToolSource::Client)
        {
            return Err(RuntimeError::ClientTool(format!(
                "client tool {name:?} has the name of the agent's tool {}",
                other.id
            )));
        }
        let cataloged = catalog
            .entries()
            .iter()
            .any(|e| &e.tool.name == name && e.tool.source == ToolSource::Client);
        if !cataloged && !visible.iter().any(|t| &t.name == name) {
            let why = catalog
                .rejected()
                .iter()
                .map(ToString::to_string)
                .find(|e| e.contains(&format!("{name:?}")))
                .unwrap_or_else(|| {
                    "a control tool's name, or left out by tools.allow/tools.deny".into()
                });
            return Err(RuntimeError::ClientTool(format!(
                "client tool {name:?} cannot be offered to the model: {why}"
            )));
        }
    }
    Ok(())
}

/// Hosts runs over one config.
pub struct Host {
    config: Arc<Config>,
    /// The config's document, read once.
    document: Arc<Document>,
    route: ModelRoute,
    mcp: McpManager,
    mcp_started: tokio::sync::OnceCell<()>,
    engine: tokio::sync::OnceCell<Result<CellEngine, Unavailable>>,
    /// Provider clients by agent: building one loads the system's
    /// certificates (~40 ms), so runs share their agent's.
    models: std::sync::Mutex<std::collections::HashMap<String, crate::provider::Selected>>,
    /// Each agent's sandbox, read from the config once.
    jails: crate::Jails,
    /// `tools.approvals`, read from the config once.
    approvals: Arc<talon_tools::Approvals>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("route", &self.route)
            .finish_non_exhaustive()
    }
}

/// Which ToolSpace to list ([`Host::tool_space`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSpaceSpec {
    /// The agent.
    pub agent: AgentId,
    /// Whether the caller's runs offer `ask_user` (they have someone to
    /// ask).
    pub offers_questions: bool,
}

/// Stands in for a question executor in a listing (nothing is called).
struct NoAnswers;

impl talon_tools::ToolExecutor for NoAnswers {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a talon_tools::CatalogEntry,
        _: &'a talon_tools::ToolCall,
    ) -> talon_tools::BoxFuture<'a, Result<Value, talon_tools::ToolError>> {
        let error = talon_tools::ToolError::new(
            talon_protocol::ToolErrorCode::Unavailable,
            format!("{} is listed, not run, here", entry.id),
        );
        Box::pin(async move { Err(error) })
    }
}

/// One run to build, as [`crate::run`] made it from a host's spec.
pub(crate) struct Parts {
    /// The agent.
    pub agent: AgentId,
    /// The run's context: ids, session key, channel, cancellation.
    pub ctx: RunContext,
    /// Where its events go, stamped with `ctx`'s ids.
    pub events: Arc<RunEvents>,
    /// Who approves the calls that need it, reporting its own
    /// `approval.*` events (wrap a plain policy in
    /// [`talon_agent::ApprovalEvents`]).
    pub approver: Arc<dyn Approver>,
    /// Where its suspended Code Mode cells go.
    pub cells: OpenCells,
    /// The workspace the core tools and commands work in.
    pub workspace: crate::run::Workspace,
    /// The run's own time limit (else the loop's default).
    pub timeout: Option<Duration>,
    /// The app's tools for this run (answered by the app between runs;
    /// see `RunOptions::client_tools`): offered to the model by name
    /// beside the agent's tools. A name another tool of the run has, or
    /// one the policy or the catalog leaves out, fails the run's build.
    pub client_tools: Vec<ToolDefinition>,
    /// Who answers the model's questions (`ask_user`, see
    /// [`crate::questions`]); without one the run does not offer it.
    pub questions: Option<Arc<dyn talon_tools::ToolExecutor>>,
    /// Who takes the files its core tools change (see
    /// [`crate::changes`]).
    pub changes: Option<Arc<dyn crate::changes::ToolOutputs>>,
    /// How its shell runs commands (bound secrets, network).
    pub shell: talon_core_tools::ShellOptions,
    /// Values redacted from every tool result before the model or any
    /// sink sees them (the bound secrets' values).
    pub redact: Vec<String>,
    /// Tools the host adds to the run, a group per owner.
    pub host_tools: Vec<crate::run::HostTools>,
    /// Cells earlier runs left waiting for the app, now answered (Code
    /// Mode resumes each when its `exec` call is made again).
    pub resume: Vec<talon_codemode::AwaitingCell>,
}

/// Where a run starts: a new message, a checkpoint it resumes from, or
/// the history alone (it ends with the app's answers to client calls).
enum From<'a> {
    Message(&'a str),
    Checkpoint(Checkpoint),
    Proceed(Vec<talon_provider::ToolCallRequest>),
}

/// A run built and ready to execute.
pub(crate) struct PreparedRun {
    provider: Arc<dyn ModelProvider>,
    surface: Arc<dyn ToolSurface>,
    pub(crate) ctx: RunContext,
    pub(crate) events: Arc<RunEvents>,
    pub(crate) options: RunOptions,
    pub(crate) tools: RunTools,
    /// The run's one runner (the surface's calls reach it too).
    pub(crate) runner: Arc<ToolRunner>,
}

impl std::fmt::Debug for PreparedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedRun")
            .field("run_id", &self.ctx.scope.run_id)
            .finish_non_exhaustive()
    }
}

impl PreparedRun {
    /// Runs `message` after `history` to its end (its terminal event
    /// included) and releases what the run held.
    pub(crate) async fn run(self, history: Vec<Message>, message: &str) -> RunResult {
        self.execute(history, From::Message(message)).await
    }

    /// Goes on with a run from its last checkpoint, after `history` (the
    /// conversation before the run), to its end.
    pub(crate) async fn resume(self, history: Vec<Message>, from: Checkpoint) -> RunResult {
        self.execute(history, From::Checkpoint(from)).await
    }

    /// Asks the model to go on from `history`, whose last messages answer
    /// client tool calls an earlier run left pending, to the run's end.
    pub(crate) async fn proceed(
        self,
        history: Vec<Message>,
        reopen: Vec<talon_provider::ToolCallRequest>,
    ) -> RunResult {
        self.execute(history, From::Proceed(reopen)).await
    }

    async fn execute(self, history: Vec<Message>, start: From<'_>) -> RunResult {
        let run = AgentRun {
            provider: self.provider.as_ref(),
            surface: self.surface,
            ctx: self.ctx,
            events: self.events,
            options: self.options,
        };
        let result = match start {
            From::Message(message) => run.run(history, message).await,
            From::Checkpoint(from) => run.resume(history, from).await,
            From::Proceed(reopen) => run.proceed(history, reopen).await,
        };
        self.tools.shutdown().await;
        result
    }
}

/// The workspace of `agent`'s core tools: its own `workspace`, else
/// `agents.defaults.workspace`, else `<state dir>/workspace`.
pub fn workspace(document: &Document, agent: &str) -> PathBuf {
    document
        .agent(agent)
        .and_then(|a| a.common.workspace.as_deref())
        .or(document.agents.defaults.common.workspace.as_deref())
        .map_or_else(
            || talon_config::state_dir().join("workspace"),
            PathBuf::from,
        )
}

impl Host {
    /// Each agent's sandbox, as the config sets it.
    pub fn jails(&self) -> &crate::Jails {
        &self.jails
    }

    /// A host of runs over `config`, its models reached by `route`.
    pub fn new(config: Arc<Config>, route: ModelRoute) -> Result<Self, RuntimeError> {
        let mcp = crate::tools::servers(&config)?;
        let jails = crate::Jails::from_config(&config)?;
        let document = config.shared().map_err(RuntimeError::config)?;
        let approvals = Arc::new(talon_tools::Approvals::from_config(
            document.tools.approvals.as_ref(),
        ));
        Ok(Self {
            document,
            jails,
            approvals,
            config,
            route,
            mcp,
            mcp_started: tokio::sync::OnceCell::new(),
            engine: tokio::sync::OnceCell::new(),
            models: Default::default(),
        })
    }

    /// The approval policy, `tools.approvals`, read once with the config.
    pub fn approvals(&self) -> Arc<talon_tools::Approvals> {
        Arc::clone(&self.approvals)
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How models are reached.
    pub fn route(&self) -> &ModelRoute {
        &self.route
    }

    /// The sandbox, started on first use (off the async threads).
    async fn engine(&self) -> Result<CellEngine, Unavailable> {
        self.engine
            .get_or_init(|| async {
                match tokio::task::spawn_blocking(crate::engine::start).await {
                    Ok(started) => started.map_err(|e| Unavailable::Start(Arc::new(e))),
                    Err(e) => Err(Unavailable::Panicked(e.to_string())),
                }
            })
            .await
            .clone()
    }

    /// The MCP servers, `connectOnStart` ones connected on first use.
    async fn mcp(&self) -> &McpManager {
        self.mcp_started
            .get_or_init(|| async {
                for error in self.mcp.start().await {
                    tracing::warn!(%error, "MCP server unavailable");
                }
            })
            .await;
        &self.mcp
    }

    /// The tools a run of `listing.agent` would have and the surface plan
    /// that decides how its model reaches them: the ToolSpace the gateway
    /// lists. No run is started; the catalog is scoped to a listing run id.
    pub async fn tool_space(
        &self,
        listing: &ToolSpaceSpec,
    ) -> Result<(Arc<talon_tools::Catalog>, SurfacePlan), RuntimeError> {
        let agent = &listing.agent;
        let workspace = crate::host::workspace(&self.document, agent.as_str());
        let core = CoreTools::new(&workspace).map_err(|source| RuntimeError::Workspace {
            path: workspace.clone(),
            source,
        })?;
        let plan = SurfacePlan::from_config(&self.config, agent.as_str())?;
        let scope = talon_tools::RunScope {
            agent_id: agent.clone(),
            session_id: SessionId::default(),
            run_id: RunId::new("toolspace"),
        };
        let questions: Option<Arc<dyn talon_tools::ToolExecutor>> = listing
            .offers_questions
            .then(|| Arc::new(NoAnswers) as Arc<dyn talon_tools::ToolExecutor>);
        let mcp = self.mcp().await;
        let tools = RunTools::with_manager(
            &self.config,
            agent.as_str(),
            &scope,
            crate::tools::Local {
                core: Some(core),
                client: Vec::new(),
                questions,
                changes: None,
                redact: Vec::new(),
                host_tools: Vec::new(),
            },
            mcp,
        )
        .await?;
        Ok((tools.catalog, plan))
    }

    /// The provider client and model for `agent` (built once per agent).
    pub(crate) fn model(&self, agent: &str) -> Result<crate::provider::Selected, RuntimeError> {
        let mut models = self
            .models
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = models.get(agent) {
            return Ok(found.clone());
        }
        let built = crate::provider::select(&self.config, agent, &self.route)?;
        models.insert(agent.to_owned(), built.clone());
        Ok(built)
    }

    /// Builds a run: its model, its tools (core tools in its workspace,
    /// the MCP servers, the policy), the surface its agent's config asks
    /// for. Starting the sandbox and listing the servers' tools overlap.
    pub(crate) async fn prepare(&self, spec: Parts) -> Result<PreparedRun, RuntimeError> {
        let Parts {
            agent,
            mut ctx,
            events,
            approver,
            cells,
            workspace,
            timeout,
            client_tools,
            questions,
            changes,
            shell,
            redact,
            host_tools,
            resume,
        } = spec;
        let client_names: Vec<String> = client_tools.iter().map(|t| t.name.clone()).collect();
        let began = std::time::Instant::now();
        let crate::provider::Selected {
            provider,
            model,
            settings,
            cost,
        } = self.model(agent.as_str())?;
        tracing::debug!(elapsed = ?began.elapsed(), "prepare: model");
        let mut shell = shell;
        shell.jail = self.jails.of(agent.as_str()).clone();
        let agents = |at: PathBuf| {
            crate::sandbox::workspace_for(&shell.jail, at, &ctx.scope, &talon_config::state_dir())
        };
        let (workspace, access) = match workspace {
            crate::run::Workspace::Environment(at) => (at, talon_core_tools::Access::ReadWrite),
            crate::run::Workspace::At(at) => agents(at),
            crate::run::Workspace::Agent => {
                agents(crate::host::workspace(&self.document, agent.as_str()))
            }
        };
        shell.access = access;
        let core = CoreTools::new(&workspace)
            .map_err(|source| RuntimeError::Workspace {
                path: workspace.clone(),
                source,
            })?
            .with_shell(shell);
        tracing::debug!(elapsed = ?began.elapsed(), "prepare: core tools");
        let plan = SurfacePlan::from_config(&self.config, agent.as_str())?;
        let engine = async {
            if plan.needs_sandbox() {
                Some(self.engine().await)
            } else {
                None
            }
        };
        let tools = async {
            let mcp = self.mcp().await;
            RunTools::with_manager(
                &self.config,
                agent.as_str(),
                &ctx.scope,
                crate::tools::Local {
                    core: Some(core),
                    client: client_tools,
                    questions,
                    changes,
                    redact,
                    host_tools,
                },
                mcp,
            )
            .await
        };
        let (engine, tools) = tokio::join!(engine, tools);
        let tools = tools?;
        tracing::debug!(elapsed = ?began.elapsed(), "prepare: tools and engine");
        // The model's first turn takes a while: load the embedding table
        // and embed the catalog meanwhile, so that the first search does
        // not.
        if plan.searches() {
            let catalog = tools.catalog.clone();
            drop(tokio::task::spawn_blocking(move || catalog.warm_search()));
        }
        ctx.updates = Arc::new(UpdateEvents(events.clone()));
        let runner = Arc::new(
            ToolRunner::new(tools.catalog.clone(), tools.executor.clone())
                .with_approver(approver.clone())
                .with_observer(Arc::new(NestedCallEvents(events.clone()))),
        );
        let parts = SurfaceParts {
            runner: runner.clone(),
            ctx: ctx.clone(),
            mcp: tools.mcp.clone(),
            engine,
            cells,
            resume,
            // Cells go through the approval policy too.
            exec_hooks: vec![Arc::new(crate::cell_approval::CellApproval::new(approver))],
        };
        let surface = crate::surface::build(plan, parts)?;
        tracing::debug!(elapsed = ?began.elapsed(), "prepare: surface");
        check_client_tools(&client_names, &tools, surface.as_ref())?;
        // The names the model calls the app's tools by (none under Code
        // Mode, unless configured direct-only).
        let offered = surface.tools();
        let mut options = RunOptions {
            model,
            client_tools: client_names
                .into_iter()
                .filter(|name| offered.iter().any(|t| &t.name == name))
                .collect(),
            reasoning: settings.reasoning,
            thinking: settings.thinking,
            cache: settings.cache,
            cost,
            ..RunOptions::default()
        };
        if let Some(timeout) = timeout {
            options.timeout = timeout;
        }
        Ok(PreparedRun {
            provider,
            surface,
            ctx,
            events,
            options,
            tools,
            runner,
        })
    }

    /// Stops the MCP servers the host's runs used.
    pub async fn shutdown(&self) {
        self.mcp.shutdown().await;
    }
}
