//! The handlers behind a Tool Search surface: `tool_search`,
//! `tool_describe`, `tool_call`, `tool_search_code` (in [`crate::code`]),
//! and dispatch of a model call by name. Every real call goes through the
//! run's [`ToolRunner`]; this module only adds the bridge, limits and
//! telemetry.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use talon_protocol::{ModelTool, ToolTelemetry};
use talon_sandbox::SandboxError;
use talon_tools::{
    BoxFuture, CallOutcome, Caller, RunContext, SurfaceReply, ToolCall, ToolError, ToolErrorCode,
    ToolRunner, ToolSurface, direct_call, runner_telemetry,
};

use crate::code::{CodeSandbox, MAX_CODE_BYTES, run_code};
use crate::config::ToolSearchConfig;
use crate::surface::{Control, Surface, Target, short};

/// Counters of one run.
#[derive(Debug, Default)]
struct Counters {
    searches: AtomicU64,
    describes: AtomicU64,
    calls: AtomicU64,
    code_runs: AtomicU64,
}

/// What every handler reads: shared with the tasks of bridged calls.
pub(crate) struct Handlers {
    config: ToolSearchConfig,
    runner: Arc<ToolRunner>,
    counters: Counters,
}

impl Handlers {
    /// Compact hits for a query.
    pub(crate) fn search(&self, query: &str, limit: Option<u64>) -> Value {
        self.counters.searches.fetch_add(1, Ordering::Relaxed);
        let catalog = self.runner.catalog();
        let hits: Vec<Value> = catalog
            .search(query, self.config.limit(limit))
            .into_iter()
            .filter_map(|hit| catalog.get_cataloged(&hit.id))
            .map(|e| {
                let mut hit = json!({"id": e.id, "name": e.tool.name, "description": short(&e.tool.description),
                                     "source": e.tool.source, "sourceName": e.tool.owner});
                if let Some(label) = &e.tool.label {
                    hit["label"] = json!(short(label));
                }
                hit
            })
            .collect();
        Value::Array(hits)
    }

    /// One entry in full, or `not_found` for an id this run does not have.
    pub(crate) fn describe(&self, id: &str) -> Result<Value, ToolError> {
        self.counters.describes.fetch_add(1, Ordering::Relaxed);
        let entry = self.runner.catalog().get_cataloged(id).ok_or_else(|| {
            ToolError::new(
                ToolErrorCode::NotFound,
                format!(
                    "unknown tool id {:?}",
                    id.chars().take(256).collect::<String>()
                ),
            )
        })?;
        let mut value = serde_json::to_value(&entry.tool)
            .map_err(|e| ToolError::new(ToolErrorCode::Internal, e.to_string()))?;
        if let Some(object) = value.as_object_mut() {
            object.insert("id".into(), Value::String(entry.id.clone()));
        }
        Ok(value)
    }

    /// A bridged call, on behalf of `parent`.
    pub(crate) async fn call(
        &self,
        ctx: &RunContext,
        parent: &str,
        call_id: String,
        id: &str,
        args: Value,
    ) -> CallOutcome {
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        let call = ToolCall {
            call_id,
            id: id.to_owned(),
            args,
            caller: Caller::Parent(parent.to_owned()),
        };
        self.runner.call(ctx, call).await
    }
}

/// The Tool Search handlers of one run.
pub struct ToolSearch {
    surface: Surface,
    handlers: Arc<Handlers>,
    code: Option<CodeSandbox>,
}

impl std::fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearch")
            .field("config", &self.handlers.config)
            .finish_non_exhaustive()
    }
}

impl ToolSearch {
    /// Handlers for `surface` over `runner`'s catalog. The `code` mode
    /// needs the sandbox: without it the run fails closed here, and no
    /// other surface is offered in its place.
    pub fn new(
        config: ToolSearchConfig,
        surface: Surface,
        runner: Arc<ToolRunner>,
        code: Option<CodeSandbox>,
    ) -> Result<Self, SandboxError> {
        if config.mode == crate::config::Mode::Code && code.is_none() {
            return Err(SandboxError::RuntimeUnavailable(
                "Tool Search's code mode needs the QuickJS-WASI sandbox, which did not start"
                    .into(),
            ));
        }
        Ok(Self {
            surface,
            handlers: Arc::new(Handlers {
                config,
                runner,
                counters: Counters::default(),
            }),
            code,
        })
    }

    /// The surface the handlers serve.
    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// Compact hits for a query.
    pub fn search(&self, query: &str, limit: Option<u64>) -> Value {
        self.handlers.search(query, limit)
    }

    /// One entry in full, or `not_found` for an id this run does not have.
    pub fn describe(&self, id: &str) -> Result<Value, ToolError> {
        self.handlers.describe(id)
    }

    /// A bridged call, on behalf of `parent`.
    pub async fn call(
        &self,
        ctx: &RunContext,
        parent: &str,
        call_id: String,
        id: &str,
        args: Value,
    ) -> CallOutcome {
        self.handlers.call(ctx, parent, call_id, id, args).await
    }

    /// Runs one model call by the name the model used.
    pub async fn handle(&self, ctx: &RunContext, call_id: &str, name: &str, args: Value) -> Value {
        match self.surface.dispatch.get(name) {
            Some(Target::Control(Control::Search)) => {
                let Some(query) = args["query"].as_str() else {
                    return invalid("tool_search needs a string query");
                };
                self.search(query, args["limit"].as_u64())
            }
            Some(Target::Control(Control::Describe)) => {
                let Some(id) = args["id"].as_str() else {
                    return invalid("tool_describe needs a string id");
                };
                self.describe(id)
                    .unwrap_or_else(|e| json!({"error": e.message, "status": "not_found"}))
            }
            Some(Target::Control(Control::Call)) => {
                let Some(id) = args["id"].as_str() else {
                    return invalid("tool_call needs a string id");
                };
                let outcome = self
                    .call(
                        ctx,
                        call_id,
                        format!("{call_id}/1"),
                        id,
                        args["args"].clone(),
                    )
                    .await;
                outcome.to_json(id)
            }
            Some(Target::Control(Control::SearchCode)) => {
                let Some(code) = args["code"].as_str() else {
                    return invalid("tool_search_code needs a string code");
                };
                // Checked before the body is copied or reaches the sandbox.
                if code.len() > MAX_CODE_BYTES {
                    return invalid(&format!(
                        "tool_search_code body is {} bytes, over the limit of {MAX_CODE_BYTES} bytes; send a smaller body",
                        code.len()
                    ));
                }
                self.run_code(ctx, call_id, code).await
            }
            Some(Target::Tool(id)) => {
                direct_call(&self.handlers.runner, ctx, call_id, id, args)
                    .await
                    .value
            }
            None => json!({"error": format!("unknown tool {name:?}"), "status": "not_found"}),
        }
    }

    /// Runs a `tool_search_code` body: `{value, console}` or `{error,
    /// code, console}`. Calls the body started but did not await are
    /// cancelled when it returns.
    pub async fn run_code(&self, ctx: &RunContext, call_id: &str, code: &str) -> Value {
        self.handlers
            .counters
            .code_runs
            .fetch_add(1, Ordering::Relaxed);
        let Some(sandbox) = &self.code else {
            return json!({"error": "the code sandbox is not available", "code": "runtime_unavailable"});
        };
        let timeout = self.handlers.config.code_timeout;
        run_code(sandbox, &self.handlers, ctx, call_id, code, timeout).await
    }
}

impl ToolSurface for ToolSearch {
    fn kind(&self) -> &'static str {
        self.surface.mode.map_or("direct", |m| m.as_str())
    }

    fn tools(&self) -> Arc<Vec<ModelTool>> {
        self.surface.tools.clone()
    }

    fn prompt(&self) -> Option<String> {
        self.surface.prompt.clone()
    }

    fn client_id(&self, name: &str) -> Option<String> {
        talon_tools::client_id(&self.handlers.runner, name)
    }

    /// The catalog, the calls made, and the searches, describes, bridge
    /// calls and `tool_search_code` runs (theirs included).
    fn telemetry(&self) -> ToolTelemetry {
        let counters = &self.handlers.counters;
        ToolTelemetry {
            searches: counters.searches.load(Ordering::Relaxed),
            describes: counters.describes.load(Ordering::Relaxed),
            bridge_calls: counters.calls.load(Ordering::Relaxed),
            code_runs: counters.code_runs.load(Ordering::Relaxed),
            ..runner_telemetry(self.kind(), &self.handlers.runner)
        }
    }

    /// The control tools only search, describe, or make nested calls
    /// (each judged on its own); a tool by name is judged by its entry.
    fn replay_safe(&self, name: &str) -> bool {
        match self.surface.dispatch.get(name) {
            Some(Target::Control(_)) => true,
            Some(Target::Tool(id)) => self
                .handlers
                .runner
                .catalog()
                .get(id)
                .is_some_and(|e| e.tool.replay_safe),
            None => false,
        }
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a RunContext,
        call_id: &'a str,
        name: &'a str,
        args: Value,
    ) -> BoxFuture<'a, SurfaceReply> {
        Box::pin(async move {
            let value = ToolSearch::handle(self, ctx, call_id, name, args).await;
            let ok = value.get("error").is_none();
            SurfaceReply::new(value, ok)
        })
    }
}

fn invalid(message: &str) -> Value {
    json!({"error": message, "status": "invalid_input"})
}
