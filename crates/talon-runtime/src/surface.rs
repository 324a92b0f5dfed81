//! Which surface a run's model sees, by the config: Code Mode when
//! `tools.codeMode` applies to the catalog, else Tool Search when
//! `tools.toolSearch` is set, else the catalog's tools directly. A surface
//! that needs the sandbox fails closed, with the reason, when the sandbox
//! did not start: nothing falls back to another surface.

use std::sync::Arc;

use serde_json::Value;
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, NamespaceRegistry, RunSetup, SnapshotStore,
    StoreLimits,
};
use talon_config::Config;
use talon_sandbox::CellEngine;
use talon_tools::{DirectSurface, McpServers, RunContext, ToolRunner, ToolSurface};
use talon_toolsearch::{CodeSandbox, Mode, ToolSearch, ToolSearchConfig, build_surface};

use crate::{RuntimeError, Unavailable};

/// The surfaces the config asks for an agent.
#[derive(Debug, Clone)]
pub struct SurfacePlan {
    /// `tools.codeMode` (the agent's override first), when enabled.
    pub code_mode: Option<CodeModeConfig>,
    /// `tools.toolSearch`, when set.
    pub tool_search: Option<ToolSearchConfig>,
}

impl SurfacePlan {
    /// Reads the plan for `agent`.
    pub fn from_config(config: &Config, agent: &str) -> Result<Self, RuntimeError> {
        let document = config.document().map_err(RuntimeError::config)?;
        let (global, own) = document.tool(agent, |t| t.code_mode.as_ref());
        let code_mode = CodeModeConfig::resolve(global, own);
        let (global, own) = document.tool(agent, |t| t.tool_search.as_ref());
        let tool_search = ToolSearchConfig::from_setting(own.or(global));
        Ok(Self {
            code_mode,
            tool_search,
        })
    }

    /// Whether a surface of the plan may run cells (start the sandbox).
    pub fn needs_sandbox(&self) -> bool {
        self.code_mode.is_some()
            || self
                .tool_search
                .as_ref()
                .is_some_and(|ts| ts.mode == Mode::Code)
    }

    /// Whether the model may search the catalog (worth warming search).
    pub fn searches(&self) -> bool {
        self.code_mode.is_some() || self.tool_search.is_some()
    }
}

/// Opens where a run's suspended cells go, given the limits of its Code
/// Mode config (called only when Code Mode applies).
pub type OpenCells =
    Box<dyn FnOnce(StoreLimits) -> Result<Arc<dyn SnapshotStore>, CellsError> + Send>;

/// Why a host's [`OpenCells`] could not open the store (the host's own
/// error, kept as the source).
pub type CellsError = Box<dyn std::error::Error + Send + Sync>;

/// What a surface is built from.
pub struct SurfaceParts {
    /// The run's one execution path.
    pub runner: Arc<ToolRunner>,
    /// The run's context.
    pub ctx: RunContext,
    /// Resources and prompts of the run's MCP servers.
    pub mcp: Option<Arc<dyn McpServers>>,
    /// The sandbox, when the plan needed it: started, or why not.
    pub engine: Option<Result<CellEngine, Unavailable>>,
    /// Where suspended Code Mode cells go, given the plan's limits.
    pub cells: OpenCells,
    /// Cells earlier runs left waiting for the app, now answered.
    pub resume: Vec<talon_codemode::AwaitingCell>,
    /// The hooks a Code Mode cell goes through before it runs.
    pub exec_hooks: Vec<Arc<dyn talon_codemode::ExecHook>>,
}

/// Builds the surface `plan` asks for.
pub fn build(plan: SurfacePlan, parts: SurfaceParts) -> Result<Arc<dyn ToolSurface>, RuntimeError> {
    let SurfaceParts {
        runner,
        ctx,
        mcp,
        engine,
        cells,
        resume,
        exec_hooks,
    } = parts;
    let code_mode = plan.code_mode.filter(|c| {
        talon_codemode::applies(Some(c), runner.catalog(), talon_codemode::RunTools::Offered)
    });
    if let Some(config) = code_mode {
        let engine = match engine {
            Some(Ok(engine)) => engine,
            Some(Err(e)) => return Err(RuntimeError::RuntimeUnavailable(e)),
            None => return Err(RuntimeError::RuntimeUnavailable(Unavailable::NotStarted)),
        };
        let limits = StoreLimits {
            max_snapshot_bytes: config.max_snapshot_bytes,
            ..StoreLimits::default()
        };
        let store = cells(limits).map_err(RuntimeError::Cells)?;
        let options = CodeModeOptions {
            sandbox: Default::default(),
            store,
            namespaces: NamespaceRegistry::global().clone(),
        };
        let code_mode = CodeMode::with_engine(engine, options)
            .map_err(|e| RuntimeError::RuntimeUnavailable(e.into()))?;
        return Ok(Arc::new(code_mode.start_run(RunSetup {
            config,
            runner,
            ctx,
            mcp,
            plugin_config: Value::Null,
            exec_hooks,
            resume,
        })));
    }
    if let Some(ts) = plan.tool_search {
        let surface = build_surface(runner.catalog(), Some(&ts))?;
        let code = match (ts.mode == Mode::Code, engine) {
            (true, Some(Ok(engine))) => Some(
                CodeSandbox::with_engine(engine)
                    .map_err(|e| RuntimeError::RuntimeUnavailable(e.into()))?,
            ),
            (true, Some(Err(e))) => {
                return Err(RuntimeError::RuntimeUnavailable(
                    Unavailable::ToolSearchCode(Box::new(e)),
                ));
            }
            _ => None,
        };
        let search = ToolSearch::new(ts, surface, runner, code)
            .map_err(|e| RuntimeError::RuntimeUnavailable(e.into()))?;
        return Ok(Arc::new(search));
    }
    Ok(Arc::new(DirectSurface::new(runner)))
}
