//! The handlers behind a Tool Search surface: `tool_search`,
//! `tool_describe`, `tool_call`, `tool_search_code`, and dispatch of a
//! model call by name. Every real call goes through the run's
//! [`ToolRunner`]; this module only adds the bridge, limits and telemetry.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};
use talon_protocol::{ConsoleOutput, ToolSource};
use talon_sandbox::{
    CellStatus, HostCallError, HostFunctions, Limits, Pool, Prelude, Sandbox, SandboxConfig,
    SandboxError, VmOptions,
};
use talon_tools::{CallOutcome, Caller, RunContext, ToolCall, ToolRunner};
use tokio::task::JoinSet;

use crate::config::ToolSearchConfig;
use crate::surface::{Control, Surface, Target, short};

const SEARCH_FN: &str = "__openclaw_search";
const DESCRIBE_FN: &str = "__openclaw_describe";
const CALL_FN: &str = "__openclaw_call";

/// The sandbox `tool_search_code` runs in: the shared QuickJS-WASI sandbox
/// with the `openclaw.tools` prelude baked in, and a worker pool.
#[derive(Debug, Clone)]
pub struct CodeSandbox {
    pool: Arc<Pool>,
}

impl CodeSandbox {
    /// Starts it. Fails (and the run must fail closed) when the sandbox
    /// cannot start.
    pub fn new(mut config: SandboxConfig) -> Result<Self, SandboxError> {
        config.preludes.push(Prelude {
            name: "openclaw-tools".into(),
            source: include_str!("js/openclaw_tools.js").into(),
            host_functions: vec![SEARCH_FN.into(), DESCRIBE_FN.into(), CALL_FN.into()],
        });
        let sandbox = Sandbox::new(config)?;
        let pool = Arc::new(Pool::new(&sandbox)?);
        Ok(Self { pool })
    }
}

/// Counters of one run.
#[derive(Debug, Default)]
struct Counters {
    searches: AtomicU64,
    describes: AtomicU64,
    calls: AtomicU64,
    code_runs: AtomicU64,
}

/// What a run's session log needs to compare Tool Search with direct
/// exposure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTelemetry {
    /// Mode name, or `direct`.
    pub mode: &'static str,
    /// Serialized bytes of the tool definitions and prompt text sent.
    pub surface_bytes: usize,
    /// Catalog size by source.
    pub catalog_by_source: Vec<(ToolSource, usize)>,
    /// Searches, describes, bridge calls and code runs.
    pub searches: u64,
    /// Describe requests.
    pub describes: u64,
    /// Calls through `tool_call` or `openclaw.tools.call`.
    pub calls: u64,
    /// `tool_search_code` runs.
    pub code_runs: u64,
    /// Ids and sources of the tools finally called (direct or bridged).
    pub called: Vec<(String, Option<ToolSource>, &'static str)>,
}

/// The Tool Search handlers of one run.
pub struct ToolSearch {
    config: ToolSearchConfig,
    surface: Surface,
    runner: Arc<ToolRunner>,
    code: Option<CodeSandbox>,
    counters: Counters,
}

impl std::fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearch")
            .field("config", &self.config)
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
            config,
            surface,
            runner,
            code,
            counters: Counters::default(),
        })
    }

    /// The surface the handlers serve.
    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// Compact hits for a query.
    pub fn search(&self, query: &str, limit: Option<u64>) -> Value {
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

    /// One entry in full, or an error for an id this run does not have.
    pub fn describe(&self, id: &str) -> Result<Value, String> {
        self.counters.describes.fetch_add(1, Ordering::Relaxed);
        let entry = self.runner.catalog().get_cataloged(id).ok_or_else(|| {
            format!(
                "unknown tool id {:?}",
                id.chars().take(256).collect::<String>()
            )
        })?;
        let mut value = serde_json::to_value(&entry.tool).map_err(|e| e.to_string())?;
        if let Some(object) = value.as_object_mut() {
            object.insert("id".into(), Value::String(entry.id.clone()));
        }
        Ok(value)
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
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        let call = ToolCall {
            call_id,
            id: id.to_owned(),
            args,
            caller: Caller::Parent(parent.to_owned()),
        };
        self.runner.call(ctx, call).await
    }

    /// Runs one model call by the name the model used.
    pub async fn handle(
        self: &Arc<Self>,
        ctx: &RunContext,
        call_id: &str,
        name: &str,
        args: Value,
    ) -> Value {
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
                    .unwrap_or_else(|e| json!({"error": e, "status": "not_found"}))
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
                let call = ToolCall {
                    call_id: call_id.to_owned(),
                    id: id.clone(),
                    args,
                    caller: Caller::Direct,
                };
                self.runner.call(ctx, call).await.to_json(id)
            }
            None => json!({"error": format!("unknown tool {name:?}"), "status": "not_found"}),
        }
    }

    /// Runs a `tool_search_code` body: `{value, console}` or `{error,
    /// code, console}`. Calls the body started but did not await are
    /// cancelled when it returns.
    pub async fn run_code(self: &Arc<Self>, ctx: &RunContext, call_id: &str, code: &str) -> Value {
        self.counters.code_runs.fetch_add(1, Ordering::Relaxed);
        let Some(sandbox) = self.code.clone() else {
            return json!({"error": "the code sandbox is not available", "code": "runtime_unavailable"});
        };
        let deadline = Instant::now() + self.config.code_timeout;
        let timed_out = |console: Vec<ConsoleOutput>| {
            json!({
                "error": format!("tool_search_code exceeded its time limit of {} ms", self.config.code_timeout.as_millis()),
                "code": "timeout",
                "console": console,
            })
        };
        let aborted = |console: Vec<ConsoleOutput>| json!({"error": "the run was aborted", "code": "aborted", "console": console});
        let mut console = Vec::new();
        let body = code.to_owned();
        let abort = ctx.abort.clone();
        // Waiting for a worker counts against the deadline, and the VM gets
        // what remains when it starts.
        let first = sandbox.pool.run(move |sb| {
            let limits = step_limits(deadline);
            let mut vm = sb.create_vm(
                VmOptions {
                    limits,
                    ..Default::default()
                },
                functions(),
            )?;
            vm.set_abort_signal(abort);
            let status = vm.run_cell(&body);
            Ok::<_, SandboxError>((vm, status))
        });
        let (mut vm, mut status) = match tokio::time::timeout_at(deadline.into(), first).await {
            Err(_) => return timed_out(console),
            Ok(result) => match result.and_then(|r| r) {
                Ok(pair) => pair,
                Err(e) => return failure(&e, console),
            },
        };
        let mut tasks: JoinSet<(u64, Result<Value, HostCallError>)> = JoinSet::new();
        let mut host_ids: std::collections::HashMap<tokio::task::Id, u64> =
            std::collections::HashMap::new();
        let mut nested = 0u64;
        loop {
            console.extend(vm.take_output());
            match status {
                Ok(CellStatus::Completed(value)) => {
                    tasks.abort_all();
                    return json!({"value": talon_tools::runner::cap(value, MAX_VALUE_BYTES), "console": console});
                }
                Err(e) => {
                    tasks.abort_all();
                    return failure(&e, console);
                }
                Ok(CellStatus::Waiting(calls)) => {
                    for pending in calls {
                        nested += 1;
                        let this = Arc::clone(self);
                        let ctx = ctx.clone();
                        let parent = call_id.to_owned();
                        let child = format!("{call_id}/{nested}");
                        let host_id = pending.id;
                        let handle = tasks.spawn(async move {
                            let result = this
                                .bridge(&ctx, &parent, child, &pending.name, &pending.args)
                                .await;
                            (pending.id, result)
                        });
                        host_ids.insert(handle.id(), host_id);
                    }
                }
            }
            // Wait for the next settled call, the deadline, or an abort.
            let (id, result) = loop {
                if ctx.abort.load(std::sync::atomic::Ordering::Relaxed) {
                    tasks.abort_all();
                    return aborted(console);
                }
                let tick = (Instant::now() + std::time::Duration::from_millis(50)).min(deadline);
                match tokio::time::timeout_at(tick.into(), tasks.join_next_with_id()).await {
                    Ok(Some(Ok((_, done)))) => break done,
                    // A nested call that panicked rejects its promise; the cell goes on.
                    Ok(Some(Err(error))) => match host_ids.get(&error.id()) {
                        Some(&id) => {
                            break (
                                id,
                                Err(HostCallError::new("the tool call failed")
                                    .with_code("internal_error")),
                            );
                        }
                        None => continue,
                    },
                    // Nothing in flight, yet the cell waits: it cannot finish.
                    Ok(None) => return failure(&SandboxError::Stalled, console),
                    Err(_) if Instant::now() >= deadline => {
                        tasks.abort_all();
                        return timed_out(console);
                    }
                    Err(_) => {}
                }
            };
            let step = sandbox.pool.run(move |_| {
                vm.set_timeout(deadline.saturating_duration_since(Instant::now()));
                let status = vm.settle(id, result).and_then(|()| vm.resume());
                (vm, status)
            });
            match tokio::time::timeout_at(deadline.into(), step).await {
                Err(_) => {
                    tasks.abort_all();
                    return timed_out(console);
                }
                Ok(Ok((back, next_status))) => {
                    vm = back;
                    status = next_status;
                }
                Ok(Err(e)) => return failure(&e, console),
            }
        }
    }

    /// One `openclaw.tools.*` request from a code body.
    async fn bridge(
        &self,
        ctx: &RunContext,
        parent: &str,
        call_id: String,
        name: &str,
        args: &[Value],
    ) -> Result<Value, HostCallError> {
        match name {
            SEARCH_FN => {
                let query = args.first().and_then(Value::as_str).unwrap_or_default();
                let limit = args.get(1).and_then(|o| o["limit"].as_u64());
                Ok(self.search(query, limit))
            }
            DESCRIBE_FN => {
                let id = args.first().and_then(Value::as_str).unwrap_or_default();
                self.describe(id)
                    .map_err(|e| HostCallError::new(e).with_code("not_found"))
            }
            CALL_FN => {
                let id = args.first().and_then(Value::as_str).unwrap_or_default();
                let call_args = args.get(1).cloned().unwrap_or_else(|| json!({}));
                match self.call(ctx, parent, call_id, id, call_args).await {
                    CallOutcome::Ok(value) => Ok(value),
                    other => {
                        let detail = other.to_json(id);
                        let message = detail["error"]
                            .as_str()
                            .unwrap_or("tool call failed")
                            .to_owned();
                        Err(HostCallError::new(message).with_code(other.status()))
                    }
                }
            }
            other => Err(HostCallError::new(format!(
                "unknown bridge function {other}"
            ))),
        }
    }

    /// The run's telemetry so far.
    pub fn telemetry(&self) -> RunTelemetry {
        RunTelemetry {
            mode: self.surface.mode.map_or("direct", |m| m.as_str()),
            surface_bytes: self.surface.bytes(),
            catalog_by_source: self.runner.catalog().size_by_source(),
            searches: self.counters.searches.load(Ordering::Relaxed),
            describes: self.counters.describes.load(Ordering::Relaxed),
            calls: self.counters.calls.load(Ordering::Relaxed),
            code_runs: self.counters.code_runs.load(Ordering::Relaxed),
            called: self
                .runner
                .records()
                .into_iter()
                .map(|r| (r.id, r.source, r.status))
                .collect(),
        }
    }
}

fn functions() -> HostFunctions {
    HostFunctions::new()
        .asynchronous(SEARCH_FN)
        .asynchronous(DESCRIBE_FN)
        .asynchronous(CALL_FN)
}

/// Limits of one guest step: what remains of the call's budget.
fn step_limits(deadline: Instant) -> Limits {
    Limits {
        timeout: deadline.saturating_duration_since(Instant::now()),
        ..Limits::default()
    }
}

/// Largest cell value returned whole (as JSON); larger ones become a
/// preview.
const MAX_VALUE_BYTES: usize = 256 * 1024;

/// Largest `tool_search_code` body: search code is short, and the same
/// default as Code Mode's `tools.codeMode.maxSourceBytes` (1 MiB).
pub const MAX_CODE_BYTES: usize = 1 << 20;

fn invalid(message: &str) -> Value {
    json!({"error": message, "status": "invalid_input"})
}

fn failure(error: &SandboxError, console: Vec<ConsoleOutput>) -> Value {
    let code = error.code().map(|c| c.as_str());
    json!({"error": error.to_string(), "code": code, "console": console})
}
