//! The host side of the guest API: the synchronous host functions
//! (`ALL_TOOLS` data, search, describe, `API`, `$api`) and the mapping of
//! asynchronous guest requests (`tools.call`, `MCP.*`, namespace calls,
//! `yield_control`) to nested calls. Every tool call goes through the
//! run's `ToolRunner`; errors reach the guest as plain data.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use talon_protocol::{CodeModeErrorCode, ToolSource};
use talon_sandbox::{HostCallError, HostFunctions};
use talon_tools::{
    CallOutcome, Caller, McpServers, RunContext, ToolCall, ToolError, ToolErrorCode, ToolRunner,
};

use crate::config::CodeModeConfig;
use crate::namespaces::RunNamespaces;
use crate::store::{NestedError, NestedResult};
use crate::telemetry::RunTelemetry;
use crate::view::{ApiPathError, CatalogView, McpApiForm, compact};

pub(crate) const DATA_FN: &str = "__openclaw_data";
pub(crate) const SEARCH_FN: &str = "__openclaw_search";
pub(crate) const DESCRIBE_FN: &str = "__openclaw_describe";
pub(crate) const API_FN: &str = "__openclaw_api";
pub(crate) const MCP_API_FN: &str = "__openclaw_mcp_api";
pub(crate) const CALL_FN: &str = "__openclaw_call";
pub(crate) const MCP_FN: &str = "__openclaw_mcp";
pub(crate) const NS_FN: &str = "__openclaw_ns";
pub(crate) const YIELD_FN: &str = "__openclaw_yield";

/// Host functions the prelude captures (`__talon_print` is the sandbox's).
pub(crate) const PRELUDE_FUNCTIONS: &[&str] = &[
    DATA_FN,
    SEARCH_FN,
    DESCRIBE_FN,
    API_FN,
    MCP_API_FN,
    CALL_FN,
    MCP_FN,
    NS_FN,
    YIELD_FN,
    "__talon_print",
];

/// The parts `__openclaw_data(part)` answers; `js/code_mode.js` asks for
/// each (the contract tests hold both sides to this list).
pub const DATA_PARTS: &[&str] = &["tools", "convenience", "mcp", "namespaces"];
/// The operations of `__openclaw_api(op, arg)`: `API.list` and `API.read`.
pub const API_OPS: &[&str] = &["list", "read"];
/// The kinds of `__openclaw_mcp(server, kind, name, input)`: an MCP tool
/// call, a resource read, a prompt.
pub const MCP_KINDS: &[&str] = &["tool", "resource", "prompt"];

/// The host functions a VM of `run` gets, exactly as its cells get them
/// (for the contract tests: their names and sync/async kinds).
pub fn host_functions(run: &crate::CodeModeRun) -> HostFunctions {
    run.bridge.functions()
}

/// Prefix of the pending-call id of an MCP resource read.
pub(crate) const RESOURCE_PREFIX: &str = "mcp-resource:";
/// Prefix of the pending-call id of an MCP prompt.
pub(crate) const PROMPT_PREFIX: &str = "mcp-prompt:";
const RESOURCE_KIND: &str = "mcp-resource";
const PROMPT_KIND: &str = "mcp-prompt";

/// What the host functions of one run read.
#[derive(Clone)]
pub(crate) struct Bridge {
    pub config: CodeModeConfig,
    pub runner: Arc<ToolRunner>,
    pub view: Arc<CatalogView>,
    pub namespaces: Arc<RunNamespaces>,
    pub mcp: Option<Arc<dyn McpServers>>,
    pub telemetry: Arc<RunTelemetry>,
    pub debug: bool,
}

fn text_arg(args: &[Value], i: usize) -> Option<&str> {
    args.get(i).and_then(Value::as_str)
}

/// A value as the JSON text the guest parses.
pub(crate) fn json_text(value: Value) -> Value {
    Value::String(value.to_string())
}

pub(crate) fn guest_error(message: impl Into<String>, code: &str) -> HostCallError {
    HostCallError::new(message).with_code(code)
}

impl Bridge {
    /// The host functions of a VM of this run.
    pub fn functions(&self) -> HostFunctions {
        let data = self.clone();
        let search = self.clone();
        let describe = self.clone();
        let api = self.clone();
        let mcp_api = self.clone();
        HostFunctions::new()
            .sync(DATA_FN, move |args| {
                data.data(text_arg(args, 0).unwrap_or_default())
            })
            .sync(SEARCH_FN, move |args| search.search(args).map(json_text))
            .sync(DESCRIBE_FN, move |args| {
                describe
                    .describe(text_arg(args, 0).unwrap_or_default())
                    .map(json_text)
            })
            .sync(API_FN, move |args| {
                match text_arg(args, 0) {
                    Some("list") => api.view.api_list(text_arg(args, 1)),
                    Some("read") => api.view.api_read(text_arg(args, 1).unwrap_or_default()),
                    _ => Err(ApiPathError("unknown API operation".into())),
                }
                .map(json_text)
                .map_err(|e| guest_error(e.0, "not_found"))
            })
            .sync(MCP_API_FN, move |args| {
                mcp_api.telemetry.describes.fetch_add(1, Ordering::Relaxed);
                let server = text_arg(args, 0).unwrap_or_default();
                let form = if args.get(2).and_then(Value::as_bool).unwrap_or(false) {
                    McpApiForm::Schema
                } else {
                    McpApiForm::Declaration
                };
                mcp_api
                    .view
                    .mcp_api(server, text_arg(args, 1), form)
                    .map(json_text)
                    .map_err(|e| guest_error(e.0, "not_found"))
            })
            .asynchronous(CALL_FN)
            .asynchronous(MCP_FN)
            .asynchronous(NS_FN)
            .asynchronous(YIELD_FN)
    }

    fn data(&self, part: &str) -> Result<Value, HostCallError> {
        match part {
            "tools" => Ok(Value::String(self.view.tools_text().to_owned())),
            "convenience" => Ok(Value::String(self.view.convenience_text().to_owned())),
            "mcp" => Ok(Value::String(self.view.mcp_text().to_owned())),
            "namespaces" => Ok(json_text(self.namespaces.descriptors())),
            _ => Err(HostCallError::new("unknown data part")),
        }
    }

    fn search(&self, args: &[Value]) -> Result<Value, HostCallError> {
        self.telemetry.searches.fetch_add(1, Ordering::Relaxed);
        let query = text_arg(args, 0).unwrap_or_default();
        let limit = match args.get(1).and_then(Value::as_f64) {
            Some(n) if n.is_finite() && n >= 1.0 => (n as usize).min(self.config.max_search_limit),
            _ => self.config.search_default_limit,
        };
        let catalog = self.runner.catalog();
        // MCP entries are not in the guest's catalog view: over-fetch, then
        // keep the first `limit` others.
        let hits = catalog.search(query, limit.saturating_mul(4).max(limit + 16));
        if self.debug {
            tracing::info!(target: "talon::code_mode", query_bytes = query.len(), hits = hits.len(), "bridge: tools.search");
        }
        Ok(Value::Array(
            hits.iter()
                .filter_map(|hit| catalog.get_cataloged(&hit.id))
                .filter(|e| e.tool.source != ToolSource::Mcp)
                .take(limit)
                .map(compact)
                .collect(),
        ))
    }

    fn describe(&self, id: &str) -> Result<Value, HostCallError> {
        self.telemetry.describes.fetch_add(1, Ordering::Relaxed);
        if self.debug {
            tracing::info!(target: "talon::code_mode", id, "bridge: tools.describe");
        }
        let entry = self
            .runner
            .catalog()
            .get_cataloged(id)
            .filter(|e| e.tool.source != ToolSource::Mcp)
            .ok_or_else(|| guest_error(not_found_message(id, &self.view), "not_found"))?;
        let mut value = compact(entry);
        value["description"] = json!(entry.tool.description);
        value["parameters"] = entry.tool.parameters.clone();
        Ok(value)
    }
}

fn not_found_message(id: &str, view: &CatalogView) -> String {
    let shown: String = id.chars().take(256).collect();
    let mcp = view
        .servers()
        .iter()
        .any(|s| s.tools.iter().any(|t| t.id == id));
    if mcp {
        format!("{shown:?} is an MCP tool: call it as MCP.<server>.<tool>(input)")
    } else {
        format!("unknown tool id {shown:?}")
    }
}

/// A guest request resolved to a nested call, or answered at once.
pub(crate) enum Request {
    /// A nested call to run.
    Call(Nested),
    /// An answer that needs no call (a refusal).
    Ready(NestedResult),
    /// `yield_control(reason)`.
    Yield(Option<String>),
}

/// A nested call, as it is recorded and (for replay-safe tools) replayed.
#[derive(Debug, Clone)]
pub(crate) struct Nested {
    /// The catalog id, or `mcp-resource:<server>` / `mcp-prompt:<server>`.
    pub tool_id: String,
    /// Its input.
    pub args: Value,
    /// Whether it may be dispatched again after a restart.
    pub replay_safe: bool,
}

impl Bridge {
    /// Maps one asynchronous guest request.
    pub fn request(&self, name: &str, args: &[Value]) -> Request {
        let refuse = |message: String, code: &str| {
            Request::Ready(Err(NestedError {
                message,
                code: Some(code.to_owned()),
            }))
        };
        let input = |i: usize| args.get(i).cloned().unwrap_or_else(|| json!({}));
        let catalog = self.runner.catalog();
        let tool = |id: String, input: Value| {
            let replay_safe = catalog
                .get_cataloged(&id)
                .is_some_and(|e| e.tool.replay_safe);
            Request::Call(Nested {
                tool_id: id,
                args: input,
                replay_safe,
            })
        };
        match name {
            CALL_FN => {
                let id = text_arg(args, 0).unwrap_or_default();
                if catalog
                    .get_cataloged(id)
                    .is_some_and(|e| e.tool.source == ToolSource::Mcp)
                {
                    return refuse(not_found_message(id, &self.view), "not_found");
                }
                // Unknown and denied ids still go to the runner, which
                // answers "not found" and records the attempt.
                tool(id.to_owned(), input(1))
            }
            MCP_FN => {
                let server = text_arg(args, 0).unwrap_or_default();
                let Some(view) = self.view.server(server) else {
                    return refuse(format!("no MCP server {server:?} in this run"), "not_found");
                };
                let target = text_arg(args, 2).unwrap_or_default();
                match text_arg(args, 1) {
                    Some("tool") => match view.tools.iter().find(|t| t.name == target) {
                        Some(t) => tool(t.id.clone(), input(3)),
                        None => refuse(
                            format!("MCP server {server:?} has no tool {target:?}"),
                            "not_found",
                        ),
                    },
                    Some("resource") if view.resources => Request::Call(Nested {
                        tool_id: format!("{RESOURCE_PREFIX}{server}"),
                        args: json!({"uri": target}),
                        replay_safe: true,
                    }),
                    Some("prompt") if view.prompts => Request::Call(Nested {
                        tool_id: format!("{PROMPT_PREFIX}{server}"),
                        args: json!({"name": target, "arguments": input(3)}),
                        replay_safe: true,
                    }),
                    _ => refuse(
                        format!("MCP server {server:?} does not offer this"),
                        "not_found",
                    ),
                }
            }
            NS_FN => {
                let id = text_arg(args, 0).unwrap_or_default();
                let path = text_arg(args, 1).unwrap_or_default();
                let call_args = args
                    .get(2)
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                match self.namespaces.resolve(id, path, &call_args) {
                    Ok((catalog_id, input)) => tool(catalog_id, input),
                    Err(error) => Request::Ready(Err(error)),
                }
            }
            YIELD_FN => Request::Yield(text_arg(args, 0).map(str::to_owned)),
            other => refuse(
                format!("unknown bridge function {other:?}"),
                "internal_error",
            ),
        }
    }

    /// Runs a nested call to the end.
    pub async fn run(
        &self,
        ctx: &RunContext,
        parent: &str,
        call_id: String,
        nested: &Nested,
    ) -> NestedResult {
        if self.debug {
            tracing::info!(target: "talon::code_mode", parent, call_id = %call_id, tool = %nested.tool_id, "bridge: nested call");
        }
        for (prefix, is_resource) in [(RESOURCE_PREFIX, true), (PROMPT_PREFIX, false)] {
            let Some(server) = nested.tool_id.strip_prefix(prefix) else {
                continue;
            };
            let Some(mcp) = &self.mcp else {
                let error = ToolError::new(
                    ToolErrorCode::Unavailable,
                    format!("MCP server {server:?} is not connected"),
                );
                return self.guest_result(&nested.tool_id, CallOutcome::Failed(error));
            };
            let result = if is_resource {
                let uri = nested.args["uri"].as_str().unwrap_or_default();
                mcp.read_resource(ctx, server, uri).await
            } else {
                let name = nested.args["name"].as_str().unwrap_or_default();
                mcp.get_prompt(ctx, server, name, &nested.args["arguments"])
                    .await
            };
            let outcome = match result {
                Ok(value) => CallOutcome::Ok(value),
                Err(error) if error.code == ToolErrorCode::Aborted => CallOutcome::Aborted,
                Err(error) => CallOutcome::Failed(error),
            };
            return self.guest_result(&nested.tool_id, outcome);
        }
        let call = ToolCall {
            call_id,
            id: nested.tool_id.clone(),
            args: nested.args.clone(),
            caller: Caller::Parent(parent.to_owned()),
        };
        let outcome = self.runner.call(ctx, call).await;
        self.guest_result(&nested.tool_id, outcome)
    }

    /// The one place a nested call's outcome becomes what the guest sees:
    /// every failure is the seed's `nested_tool_failed` (the tool's own
    /// code stays in the message), except a cancelled run (`aborted`).
    fn guest_result(&self, tool_id: &str, outcome: CallOutcome) -> NestedResult {
        let failed = |message: String| {
            Err(NestedError {
                message,
                code: Some(CodeModeErrorCode::NestedToolFailed.as_str().into()),
            })
        };
        match outcome {
            CallOutcome::Ok(value) => Ok(value),
            CallOutcome::Aborted => Err(NestedError {
                message: "the run was aborted".into(),
                code: Some(CodeModeErrorCode::Aborted.as_str().into()),
            }),
            CallOutcome::NotFound => failed(not_found_message(tool_id, &self.view)),
            CallOutcome::Blocked(reason) => failed(format!("{tool_id} was blocked: {reason}")),
            CallOutcome::Failed(error) => match tool_id.split_once(':') {
                Some((RESOURCE_KIND, server)) | Some((PROMPT_KIND, server)) => {
                    failed(format!("MCP server {server:?}: {error}"))
                }
                _ => failed(format!("{tool_id} failed: {error}")),
            },
        }
    }
}
