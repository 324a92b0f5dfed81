//! What the model sees of a run's tools, as one interface: the agent loop
//! asks a [`ToolSurface`] for its definitions and hands it every model
//! call, whichever surface the run chose (every tool by name, Code Mode's
//! `exec`/`wait`, Tool Search's bridge). The loop depends on this trait,
//! not on the surfaces' crates.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use talon_protocol::{CalledTool, ModelTool, ToolSource, ToolTelemetry};

use crate::runner::{BoxFuture, Caller, RunContext, ToolCall, ToolRunner};

/// The answer to one model call.
#[derive(Debug, Clone, PartialEq)]
pub struct SurfaceReply {
    /// What the model sees.
    pub value: Value,
    /// Whether the call succeeded (for events and telemetry).
    pub ok: bool,
    /// The app's calls this model call waits for (a Code Mode cell called
    /// client tools and was stored): when any, the model call has no
    /// answer yet, `value` is not shown to the model, and the run ends
    /// with these calls pending for the app.
    pub awaiting: Vec<AppCall>,
}

/// A client tool call made inside a model call (by a Code Mode cell),
/// which the app answers like a client tool call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct AppCall {
    /// The nested call's id (`<model call id>/<n>`), which the app's
    /// answer names.
    pub call_id: String,
    /// The client tool's name.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
}

impl SurfaceReply {
    /// An answer the model sees at once.
    pub fn new(value: Value, ok: bool) -> Self {
        Self {
            value,
            ok,
            awaiting: Vec::new(),
        }
    }

    /// The reply to a name the surface does not have.
    pub fn unknown_tool(name: &str) -> Self {
        let name: String = name.chars().take(128).collect();
        Self::new(
            json!({"error": format!("unknown tool {name:?}"), "status": "not_found"}),
            false,
        )
    }
}

/// A run's model-facing tools and their handlers.
pub trait ToolSurface: Send + Sync {
    /// `direct`, `code_mode`, or the Tool Search mode.
    fn kind(&self) -> &'static str;

    /// The model-visible tool definitions.
    fn tools(&self) -> Arc<Vec<ModelTool>>;

    /// Extra system prompt text (Tool Search's directory).
    fn prompt(&self) -> Option<String> {
        None
    }

    /// Whether a call of the model tool `name` may be made again if its
    /// run is resumed after its process died: the tool is `replaySafe`,
    /// or its only effects are the nested calls it makes through the
    /// run's `ToolRunner` (each judged on its own). Unknown names: no.
    fn replay_safe(&self, name: &str) -> bool {
        let _ = name;
        false
    }

    /// Checks the tools of a model request before it is sent: a surface
    /// that promises the model a fixed set (Code Mode: `exec`, `wait` and
    /// the explicitly direct-only tools) refuses any other, and the run
    /// fails closed with the reason.
    fn check_offered(&self, offered: &[ModelTool]) -> Result<(), String> {
        let _ = offered;
        Ok(())
    }

    /// The run's tool telemetry so far: the catalog, the surface's own
    /// counters and the calls made. The agent loop adds what it sent.
    fn telemetry(&self) -> ToolTelemetry {
        ToolTelemetry {
            surface: self.kind().to_owned(),
            ..ToolTelemetry::default()
        }
    }

    /// Called as the run ends, before its end event: stops what the
    /// surface still runs for the run (a suspended cell's nested calls)
    /// and resolves once each is stopped, so that what they report comes
    /// before the end. What waits for the app is kept.
    fn settle(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// The catalog id of the app's tool `name` (for telemetry), if the
    /// run's catalog has it.
    fn client_id(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }

    /// Runs one model call by the name the model used.
    fn handle<'a>(
        &'a self,
        ctx: &'a RunContext,
        call_id: &'a str,
        name: &'a str,
        args: Value,
    ) -> BoxFuture<'a, SurfaceReply>;
}

/// Every tool of the catalog by name: cataloged and direct-only tools (the
/// first of two same-named tools keeps the name).
#[derive(Debug)]
pub struct DirectSurface {
    runner: Arc<ToolRunner>,
    tools: Arc<Vec<ModelTool>>,
    names: BTreeMap<String, String>,
}

impl DirectSurface {
    /// The direct surface of `runner`'s catalog.
    pub fn new(runner: Arc<ToolRunner>) -> Self {
        let mut tools = Vec::new();
        let mut names = BTreeMap::new();
        let catalog = runner.catalog();
        for entry in catalog.entries().iter().chain(catalog.direct_only()) {
            if names.contains_key(&entry.tool.name) {
                continue;
            }
            names.insert(entry.tool.name.clone(), entry.id.clone());
            tools.push(ModelTool {
                name: entry.tool.name.clone(),
                description: entry.tool.description.clone(),
                parameters: entry.tool.parameters.clone(),
            });
        }
        Self {
            runner,
            tools: Arc::new(tools),
            names,
        }
    }
}

/// The telemetry every surface over `runner` shares: the catalog by
/// source and the calls the runner made, with the surface's `kind`.
pub fn runner_telemetry(kind: &str, runner: &ToolRunner) -> ToolTelemetry {
    let catalog = runner.catalog();
    let mut telemetry = ToolTelemetry {
        surface: kind.to_owned(),
        catalog_size: catalog.len() as u64,
        catalog_by_source: catalog
            .size_by_source()
            .into_iter()
            .map(|(source, n)| (source.as_str().to_owned(), n as u64))
            .collect(),
        ..ToolTelemetry::default()
    };
    for record in runner.records() {
        telemetry.push_called(CalledTool {
            id: record.id,
            source: record.source,
            status: record.status.to_owned(),
            nested: matches!(record.caller, Caller::Parent(_)),
        });
    }
    telemetry
}

/// The catalog id of the app's tool `name` in `runner`'s catalog (hidden
/// or direct-only).
pub fn client_id(runner: &ToolRunner, name: &str) -> Option<String> {
    let catalog = runner.catalog();
    catalog
        .entries()
        .iter()
        .chain(catalog.direct_only())
        .find(|e| e.tool.source == ToolSource::Client && e.tool.name == name)
        .map(|e| e.id.clone())
}

/// Runs a direct model call of catalog id `id` through `runner`.
pub async fn direct_call(
    runner: &ToolRunner,
    ctx: &RunContext,
    call_id: &str,
    id: &str,
    args: Value,
) -> SurfaceReply {
    let call = ToolCall {
        call_id: call_id.to_owned(),
        id: id.to_owned(),
        args,
        caller: Caller::Direct,
    };
    let outcome = runner.call(ctx, call).await;
    SurfaceReply::new(outcome.to_json(id), outcome.status() == "ok")
}

impl ToolSurface for DirectSurface {
    fn kind(&self) -> &'static str {
        "direct"
    }

    fn tools(&self) -> Arc<Vec<ModelTool>> {
        self.tools.clone()
    }

    fn telemetry(&self) -> ToolTelemetry {
        runner_telemetry(self.kind(), &self.runner)
    }

    fn client_id(&self, name: &str) -> Option<String> {
        client_id(&self.runner, name)
    }

    fn replay_safe(&self, name: &str) -> bool {
        self.names
            .get(name)
            .and_then(|id| self.runner.catalog().get(id))
            .is_some_and(|e| e.tool.replay_safe)
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a RunContext,
        call_id: &'a str,
        name: &'a str,
        args: Value,
    ) -> BoxFuture<'a, SurfaceReply> {
        Box::pin(async move {
            match self.names.get(name) {
                Some(id) => direct_call(&self.runner, ctx, call_id, id, args).await,
                None => SurfaceReply::unknown_tool(name),
            }
        })
    }
}
