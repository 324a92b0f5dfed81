//! Code Mode's runtime: [`CodeMode`] (one per process: the sandbox with
//! the guest API baked in, its worker pool, the snapshot store, the
//! namespace registry, and the in-process part of suspended cells) and
//! [`CodeModeRun`] (one per agent run: the hidden catalog's guest view,
//! the model-facing surface, telemetry, and the `exec` and `wait`
//! handlers).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use talon_protocol::gateway::bounded::SessionKey;

use serde_json::{Value, json};
use talon_protocol::{CellId, CodeModeErrorCode, CodeModeResult, CodeModeSnapshotEvent};
use talon_protocol::{ModelTool, ToolTelemetry};
use talon_sandbox::{CellEngine, Prelude, SandboxConfig, SandboxError};
use talon_tools::{
    AppCall, BoxFuture, Catalog, HookDecision, McpServers, RunContext, SurfaceReply, ToolRunner,
    ToolSurface, direct_call, runner_telemetry,
};

use crate::bridge::{Bridge, PRELUDE_FUNCTIONS};
use crate::cell::app::AwaitingCell;
use crate::cell::host::Meta;
use crate::cell::{CellState, Live};
use crate::config::{CodeModeConfig, Language};
use crate::input::ExecInput;
use crate::namespaces::{NamespaceContext, NamespaceRegistry, RunNamespaces};
use crate::store::{CellError, CellScope, SnapshotStore, off_thread};
use crate::surface::{CodeModeSurface, build_surface};
use crate::telemetry::RunTelemetry;
use crate::view::CatalogView;
use talon_sandbox::Machine;

/// Whether Code Mode takes over a run's surface: it is enabled and the run
/// has tools. Runs with no tools (raw model calls, `disableTools`, an
/// empty allow list) keep their surface untouched.
pub fn applies(config: Option<&CodeModeConfig>, catalog: &Catalog, tools: RunTools) -> bool {
    config.is_some()
        && tools == RunTools::Offered
        && (!catalog.is_empty() || !catalog.direct_only().is_empty())
}

/// Whether a run offers its model tools at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunTools {
    /// It does (the catalog decides which).
    Offered,
    /// It does not (`disableTools`): a raw model call.
    Disabled,
}

/// The name of Code Mode's prelude, and of its image in the shared sandbox
/// (the image every cell runs in).
pub const PRELUDE_NAME: &str = "code-mode";

/// Code Mode's guest API, to bake into the process's shared sandbox
/// ([`CellEngine`]) beside the other surfaces' preludes.
pub fn prelude() -> Prelude {
    Prelude {
        name: PRELUDE_NAME.into(),
        source: include_str!("js/code_mode.js").into(),
        host_functions: PRELUDE_FUNCTIONS.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// What the process-wide runtime is built from.
pub struct CodeModeOptions {
    /// The sandbox's settings when Code Mode starts its own sandbox
    /// ([`CodeMode::new`]); Code Mode adds its prelude.
    pub sandbox: SandboxConfig,
    /// Where suspended cells live.
    pub store: Arc<dyn SnapshotStore>,
    /// The plugin namespace registry.
    pub namespaces: Arc<NamespaceRegistry>,
}

impl std::fmt::Debug for CodeModeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeModeOptions").finish_non_exhaustive()
    }
}

/// The event `exec` hooks see: how policy tells a Code Mode cell from a
/// shell `exec` that shares its name.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecHookEvent {
    /// Always `exec`.
    pub tool_name: &'static str,
    /// Always `code_mode_exec`.
    pub tool_kind: &'static str,
    /// The input's language, when it is known.
    pub tool_input_kind: Option<Language>,
    /// The model's call id.
    pub tool_call_id: String,
    /// The arguments as the model sent them.
    pub params: Value,
}

impl ExecHookEvent {
    /// The event as hook payload JSON (`toolKind`, `toolInputKind`, ...).
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "toolName": self.tool_name,
            "toolKind": self.tool_kind,
            "toolCallId": self.tool_call_id,
            "params": self.params,
        });
        if let Some(kind) = self.tool_input_kind {
            value["toolInputKind"] = json!(kind.as_str());
        }
        value
    }
}

/// A hook on the outer `exec` (plugins' `before_tool_call` for Code Mode
/// cells): may rewrite the arguments or block the cell.
pub trait ExecHook: Send + Sync {
    /// Called before a cell is checked and run.
    fn before_exec<'a>(
        &'a self,
        ctx: &'a RunContext,
        event: &'a ExecHookEvent,
    ) -> BoxFuture<'a, HookDecision>;
}

pub(crate) struct Shared {
    pub engine: CellEngine,
    pub store: Arc<dyn SnapshotStore>,
    pub namespaces: Arc<NamespaceRegistry>,
    /// In-process part of suspended cells (their running nested calls).
    pub live: Mutex<HashMap<CellId, Live>>,
    pub debug: bool,
    last_purge: AtomicU64,
}

/// The process-wide Code Mode runtime.
#[derive(Clone)]
pub struct CodeMode {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CodeMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeMode").finish_non_exhaustive()
    }
}

/// The runtime could not start: runs that enable Code Mode fail closed
/// with `runtime_unavailable`.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeUnavailable {
    /// The sandbox did not start, or could not build Code Mode's image.
    #[error("runtime_unavailable: {0}")]
    Sandbox(#[from] SandboxError),
    /// The shared sandbox was built without Code Mode's prelude.
    #[error("runtime_unavailable: the shared sandbox was built without Code Mode's prelude")]
    NoPrelude,
}

impl CodeMode {
    /// Starts a sandbox of its own with the guest API baked in (a process
    /// that runs other surfaces too shares one: [`CodeMode::with_engine`]).
    pub fn new(options: CodeModeOptions) -> Result<Self, RuntimeUnavailable> {
        let mut config = options.sandbox.clone();
        config.preludes.push(prelude());
        let engine = CellEngine::new(config)?;
        Self::with_engine(engine, options)
    }

    /// Code Mode over the process's shared sandbox and pool, which must
    /// have [`prelude`] (its image is built here if it was not yet);
    /// `options.sandbox` is not used.
    pub fn with_engine(
        engine: CellEngine,
        options: CodeModeOptions,
    ) -> Result<Self, RuntimeUnavailable> {
        if !engine.sandbox().has_prelude(PRELUDE_NAME) {
            return Err(RuntimeUnavailable::NoPrelude);
        }
        // The image is built now, not inside the first cell's budget.
        engine.sandbox().prepare(PRELUDE_NAME)?;
        let debug = talon_protocol::debug::DebugSwitch::CodeMode.is_on();
        Ok(Self {
            shared: Arc::new(Shared {
                engine,
                store: options.store,
                namespaces: options.namespaces,
                live: Mutex::new(HashMap::new()),
                debug,
                last_purge: AtomicU64::new(0),
            }),
        })
    }

    /// The snapshot store.
    pub fn store(&self) -> &Arc<dyn SnapshotStore> {
        &self.shared.store
    }

    /// Cells suspended by this process whose nested calls are tracked here.
    pub fn live_cells(&self) -> usize {
        self.shared.live.lock().map_or(0, |l| l.len())
    }

    /// Sets up one run: the guest view of its catalog, its namespaces and
    /// its surface.
    pub fn start_run(&self, setup: RunSetup) -> CodeModeRun {
        let catalog = setup.runner.catalog();
        let scope = catalog.scope().clone();
        let ns_ctx = NamespaceContext {
            agent_id: scope.agent_id.clone(),
            session_key: SessionKey::new(setup.ctx.session_key.clone()),
            session_id: scope.session_id.clone(),
            run_id: scope.run_id.clone(),
            config: setup.plugin_config.clone(),
            cancel: setup.ctx.cancel.clone(),
        };
        let namespaces = Arc::new(self.shared.namespaces.for_run(catalog, &ns_ctx));
        let surface = build_surface(catalog, &setup.config, &namespaces);
        let view = Arc::new(CatalogView::new(catalog, setup.mcp.as_deref()));
        let telemetry = Arc::new(RunTelemetry::new(surface.names(), catalog));
        if self.shared.debug {
            tracing::info!(target: "talon::code_mode", tools = ?surface.names(), catalog = catalog.len(), "model-visible tools");
        }
        let bridge = Bridge {
            config: setup.config.clone(),
            runner: setup.runner.clone(),
            view,
            namespaces,
            mcp: setup.mcp,
            telemetry,
            debug: self.shared.debug,
        };
        CodeModeRun {
            shared: self.shared.clone(),
            config: setup.config,
            ctx: setup.ctx,
            scope: CellScope {
                agent_id: scope.agent_id,
                session_id: scope.session_id,
                run_id: scope.run_id,
            },
            surface,
            bridge,
            hooks: setup.exec_hooks,
            resume: setup
                .resume
                .into_iter()
                .map(|cell| (cell.parent.clone(), cell))
                .collect(),
            awaiting: Mutex::new(HashMap::new()),
            suspended: Mutex::new(Vec::new()),
        }
    }
}

/// What one run brings.
pub struct RunSetup {
    /// The run's effective Code Mode settings.
    pub config: CodeModeConfig,
    /// The run's single execution path (its catalog is the hidden one).
    pub runner: Arc<ToolRunner>,
    /// The run's context (ids, cancellation, update sink).
    pub ctx: RunContext,
    /// Resources and prompts of the run's MCP servers.
    pub mcp: Option<Arc<dyn McpServers>>,
    /// What namespace scopes receive as `ctx.config`.
    pub plugin_config: Value,
    /// Hooks on the outer `exec`.
    pub exec_hooks: Vec<Arc<dyn ExecHook>>,
    /// Cells earlier runs of the session left waiting for the app, whose
    /// answers are now in the store: making their `exec` call again
    /// resumes them (see `cell::app`).
    pub resume: Vec<AwaitingCell>,
}

/// Code Mode for one run.
pub struct CodeModeRun {
    pub(crate) shared: Arc<Shared>,
    pub(crate) config: CodeModeConfig,
    pub(crate) ctx: RunContext,
    pub(crate) scope: CellScope,
    surface: CodeModeSurface,
    pub(crate) bridge: Bridge,
    hooks: Vec<Arc<dyn ExecHook>>,
    /// `RunSetup::resume` by the `exec` call each belongs to.
    resume: HashMap<String, AwaitingCell>,
    /// The client calls each cell this run stored waits for.
    pub(crate) awaiting: Mutex<HashMap<CellId, Vec<AppCall>>>,
    /// The cells this run suspended with calls running in this process.
    pub(crate) suspended: Mutex<Vec<CellId>>,
}

impl std::fmt::Debug for CodeModeRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeModeRun")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl CodeModeRun {
    /// The model-facing tools: `exec`, `wait`, and direct-only tools.
    pub fn surface(&self) -> &CodeModeSurface {
        &self.surface
    }

    /// The namespaces visible in this run (and those refused).
    pub fn namespaces(&self) -> &RunNamespaces {
        &self.bridge.namespaces
    }

    /// The guest view of the hidden catalog.
    pub fn view(&self) -> &CatalogView {
        &self.bridge.view
    }

    /// Handles a model call of `exec` or `wait`; `None` for other names.
    pub async fn handle(&self, call_id: &str, name: &str, args: Value) -> Option<CodeModeResult> {
        match name {
            "exec" => Some(self.exec(call_id, args).await),
            "wait" => Some(self.wait(call_id, args).await),
            _ => None,
        }
    }

    pub(crate) fn failed(
        &self,
        started: Instant,
        events: Vec<CodeModeSnapshotEvent>,
        error: String,
        code: Option<CodeModeErrorCode>,
    ) -> CodeModeResult {
        self.bridge.telemetry.failure(code);
        CodeModeResult::Failed {
            error,
            code,
            stack: None,
            output: Vec::new(),
            telemetry: self.bridge.telemetry.report(started, events),
        }
    }

    /// `exec`: checks the input, runs the cell, and drives it until it
    /// completes, fails, or suspends.
    pub async fn exec(&self, call_id: &str, args: Value) -> CodeModeResult {
        let started = Instant::now();
        self.bridge.telemetry.execs.fetch_add(1, Ordering::Relaxed);
        self.purge_now_and_then();
        if let Some(cell) = self.resume.get(call_id) {
            // Made again after the app answered: the cell goes on.
            return self
                .resume_stored(&cell.cell_id, &cell.scope, started)
                .await;
        }
        let mut args = args;
        if !self.hooks.is_empty() {
            let event = ExecHookEvent {
                tool_name: "exec",
                tool_kind: "code_mode_exec",
                tool_input_kind: input_kind(&args),
                tool_call_id: call_id.to_owned(),
                params: args.clone(),
            };
            for hook in &self.hooks {
                match hook.before_exec(&self.ctx, &event).await {
                    HookDecision::Continue(next) => args = next,
                    HookDecision::Block(reason) => {
                        return self.failed(
                            started,
                            Vec::new(),
                            format!("exec was blocked: {reason}"),
                            None,
                        );
                    }
                }
            }
        }
        let input = match ExecInput::parse_for(&args, &self.config) {
            Ok(input) => input,
            Err(e) => return self.failed(started, Vec::new(), e.message, Some(e.code)),
        };
        let code = match input.javascript() {
            Ok(code) => code.into_owned(),
            Err(e) => return self.failed(started, Vec::new(), e.message, Some(e.code)),
        };
        if self.ctx.is_cancelled() {
            return self.failed(
                started,
                Vec::new(),
                "the run was aborted".into(),
                Some(CodeModeErrorCode::Aborted),
            );
        }
        let cell = CellState::new(
            new_cell_id(),
            call_id.to_owned(),
            Live::new(self.config.max_pending_tool_calls),
        );
        self.drive(cell, Machine::Fresh(code), started, Vec::new())
            .await
    }

    /// `wait`: resumes a suspended cell of this run.
    pub async fn wait(&self, _call_id: &str, args: Value) -> CodeModeResult {
        let started = Instant::now();
        self.bridge.telemetry.waits.fetch_add(1, Ordering::Relaxed);
        let Some(cell_id) = args.get("runId").and_then(Value::as_str).map(CellId::new) else {
            return self.failed(
                started,
                Vec::new(),
                "wait expects {runId}: the runId of a waiting exec result".into(),
                Some(CodeModeErrorCode::InvalidInput),
            );
        };
        self.resume_stored(&cell_id, &self.scope, started).await
    }

    /// Takes the cell `cell_id` stored under `scope` and drives it on.
    async fn resume_stored(
        &self,
        cell_id: &CellId,
        scope: &CellScope,
        started: Instant,
    ) -> CodeModeResult {
        let cell_id = cell_id.clone();
        let mut events = Vec::new();
        if self.ctx.is_cancelled() {
            let (id, scope) = (cell_id.clone(), scope.clone());
            if off_thread(&self.shared.store, move |s| s.take(&id, &scope))
                .await
                .is_ok()
            {
                events.push(event("deleted", &cell_id, None));
            }
            self.forget(cell_id.as_str());
            return self.failed(
                started,
                events,
                "the run was aborted; its suspended cells were deleted".into(),
                Some(CodeModeErrorCode::Aborted),
            );
        }
        let (id, owner) = (cell_id.clone(), scope.clone());
        let record = match off_thread(&self.shared.store, move |s| s.take(&id, &owner)).await {
            Ok(record) => record,
            Err(e) => {
                let code = match &e {
                    CellError::NotFound(_) => CodeModeErrorCode::InvalidInput,
                    other => other.code(),
                };
                if matches!(e, CellError::Expired(_)) {
                    events.push(event("expired", &cell_id, None));
                }
                // An expired, tampered or oversized record is gone: so are
                // its calls still running here.
                if !matches!(
                    e,
                    CellError::NotFound(_) | CellError::Io(_) | CellError::Storage { .. }
                ) {
                    self.forget(cell_id.as_str());
                }
                let message = match e {
                    CellError::NotFound(_) => format!(
                        "unknown runId {:?}: no suspended cell of this run has it",
                        cell_id.as_str().chars().take(128).collect::<String>()
                    ),
                    other => other.to_string(),
                };
                return self.failed(started, events, message, Some(code));
            }
        };
        events.push(event("restored", &cell_id, Some(record.snapshot.len())));
        let live = self
            .shared
            .live
            .lock()
            .ok()
            .and_then(|mut l| l.remove(&cell_id));
        let meta = Meta::from_json(&record.meta);
        let cell = self.resume_cell(record.id.clone(), meta, record.pending, live);
        self.drive(cell, Machine::Stored(record.snapshot), started, events)
            .await
    }

    /// Drops the in-process part of a cell (aborting its nested calls).
    pub(crate) fn forget(&self, cell_id: &str) {
        let live = self
            .shared
            .live
            .lock()
            .ok()
            .and_then(|mut l| l.remove(cell_id));
        drop(live);
    }

    fn purge_now_and_then(&self) {
        // The store's clock: the one its records' expiry is read by.
        let now = self.shared.store.clock().now_ms() / 1000;
        let last = self.shared.last_purge.load(Ordering::Relaxed);
        if now >= last + 60
            && self
                .shared
                .last_purge
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            // In the background: no exec waits for it.
            let store = self.shared.store.clone();
            drop(tokio::task::spawn_blocking(move || {
                match store.purge_expired() {
                    Ok(0) => {}
                    Ok(n) => tracing::debug!(purged = n, "expired code mode cells deleted"),
                    Err(e) => tracing::warn!(error = %e, "purging expired code mode cells"),
                }
            }));
        }
    }
}

impl ToolSurface for CodeModeRun {
    fn kind(&self) -> &'static str {
        "code_mode"
    }

    fn tools(&self) -> Arc<Vec<ModelTool>> {
        self.surface.tools.clone()
    }

    fn client_id(&self, name: &str) -> Option<String> {
        talon_tools::client_id(&self.bridge.runner, name)
    }

    /// A cancelled (or timed out) run's suspended cells' calls still
    /// running here are stopped, each reporting its abort before the run's
    /// end. A run that ended by itself leaves them running: a later `wait`
    /// (the same run resumed elsewhere) may still want their results, and
    /// its host deletes the cells it does not keep. A cell waiting for the
    /// app's answers runs nothing here, and keeps its place.
    fn settle(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if !self.ctx.is_cancelled() {
                return;
            }
            let cells = self
                .suspended
                .lock()
                .map(|mut cells| std::mem::take(&mut *cells))
                .unwrap_or_default();
            for cell_id in cells {
                let live = self.shared.live.lock().ok().and_then(|mut live| {
                    live.get(&cell_id)
                        .is_some_and(|calls| calls.running())
                        .then(|| live.remove(&cell_id))
                        .flatten()
                });
                if let Some(mut calls) = live {
                    calls.shutdown().await;
                }
            }
        })
    }

    fn telemetry(&self) -> ToolTelemetry {
        let mut telemetry = runner_telemetry(self.kind(), &self.bridge.runner);
        self.bridge.telemetry.fill(&mut telemetry);
        telemetry
    }

    /// A cell reaches nothing outside the sandbox but through nested
    /// calls (each judged on its own), so `exec` and `wait` may be made
    /// again; a direct-only tool is judged by its entry.
    fn replay_safe(&self, name: &str) -> bool {
        self.surface.tools.iter().any(|t| t.name == name)
            && (matches!(name, "exec" | "wait")
                || self
                    .bridge
                    .runner
                    .catalog()
                    .direct_only()
                    .iter()
                    .any(|e| e.tool.name == name && e.tool.replay_safe))
    }

    /// The seed's promise: the model is offered `exec`, `wait` and the
    /// tools configured direct-only, nothing else.
    fn check_offered(&self, offered: &[ModelTool]) -> Result<(), String> {
        let direct = self.bridge.runner.catalog().direct_only();
        match offered.iter().find(|t| {
            !matches!(t.name.as_str(), "exec" | "wait")
                && !direct.iter().any(|e| e.tool.name == t.name)
        }) {
            Some(other) => Err(format!(
                "Code Mode offers the model exec, wait and direct-only tools only, and the \
                 request offered {:?}",
                other.name.chars().take(128).collect::<String>()
            )),
            None => Ok(()),
        }
    }

    /// `exec` and `wait` run cells in this run's context; any other name
    /// is a direct-only tool or unknown.
    fn handle<'a>(
        &'a self,
        _ctx: &'a RunContext,
        call_id: &'a str,
        name: &'a str,
        args: Value,
    ) -> BoxFuture<'a, SurfaceReply> {
        Box::pin(async move {
            if let Some(result) = self.handle(call_id, name, args.clone()).await {
                let ok = !matches!(result, CodeModeResult::Failed { .. });
                let awaiting = match &result {
                    CodeModeResult::Waiting { cell_id, .. } => self
                        .awaiting
                        .lock()
                        .ok()
                        .and_then(|mut a| a.remove(cell_id))
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                return SurfaceReply {
                    value,
                    ok,
                    awaiting,
                };
            }
            let runner = &self.bridge.runner;
            match runner
                .catalog()
                .direct_only()
                .iter()
                .find(|e| e.tool.name == name)
            {
                Some(entry) => direct_call(runner, &self.ctx, call_id, &entry.id, args).await,
                None => SurfaceReply::unknown_tool(name),
            }
        })
    }
}

pub(crate) fn event(kind: &str, cell_id: &CellId, bytes: Option<usize>) -> CodeModeSnapshotEvent {
    CodeModeSnapshotEvent {
        event: kind.to_owned(),
        cell_id: cell_id.clone(),
        bytes: bytes.map(|b| b as u64),
    }
}

/// The language of `exec` arguments, when it can be told before parsing.
fn input_kind(args: &Value) -> Option<Language> {
    match args.get("language") {
        None | Some(Value::Null) => (args.get("code").is_some() || args.get("command").is_some())
            .then_some(Language::JavaScript),
        Some(Value::String(text)) => Language::parse(text),
        Some(_) => None,
    }
}

/// A fresh, unguessable cell id, the `runId` `wait` takes (also a safe
/// file name).
fn new_cell_id() -> CellId {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: fall back to time and a counter (ids stay
        // unique; scoping still guards access).
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        bytes[..8].copy_from_slice(&nanos.to_le_bytes());
        bytes[8..].copy_from_slice(&(COUNTER.fetch_add(1, Ordering::Relaxed) as u32).to_le_bytes());
    }
    CellId::new(format!("cm_{}", hex::encode(bytes)))
}
