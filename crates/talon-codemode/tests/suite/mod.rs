mod checklist;
mod contract;
mod dts;
mod guest_api;
mod hostile;
mod hostile_source;
mod namespaces;
mod suspend;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, CodeModeRun, MemoryStore, NamespaceRegistry,
    RunSetup, SnapshotStore, StoreLimits,
};
use talon_protocol::{CatalogMode, CodeModeResult, ToolDefinition, ToolSource};
use talon_tools::{
    Approver, BoxFuture, Catalog, CatalogBuilder, CatalogEntry, McpServerFeatures, McpServers,
    NoUpdates, RunContext, RunScope, ToolCall, ToolExecutor, ToolPolicy, ToolRunner,
};

pub fn tool(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        label: None,
        description: description.into(),
        parameters: json!({"type": "object", "properties": {"text": {"type": "string", "description": "Some text"}}}),
        source: ToolSource::Openclaw,
        owner: "core".into(),
        catalog_mode: CatalogMode::Default,
        execution_mode: Default::default(),
        requires_approval: false,
        effect: Default::default(),
        replay_safe: false,
    }
}

pub fn scope(run: &str) -> RunScope {
    RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s1"),
        run_id: RunId::new(run),
    }
}

/// The standard run catalog: core, plugin, MCP, client and direct-only
/// tools, with `policy` applied.
pub fn catalog(run: &str, policy: &ToolPolicy) -> Catalog {
    let mut ask = tool("ask_user", "Ask the user a question.");
    ask.catalog_mode = CatalogMode::DirectOnly;
    let mut approve = tool("approve_me", "A tool that needs approval.");
    approve.requires_approval = true;
    let mut replay = tool("slow_read", "Slowly read something; safe to run again.");
    replay.replay_safe = true;
    let mut search_docs = tool("search_docs", "Search the documentation.");
    search_docs.parameters = json!({"type": "object", "properties": {"query": {"type": "string", "description": "What to look for"}}, "required": ["query"]});
    CatalogBuilder::new(scope(run))
        .core([
            tool("echo", "Echo the input back."),
            tool("slow", "Wait input.ms milliseconds, then echo."),
            tool("fail", "Always fails."),
            tool("exec", "Run a shell command."),
            approve,
            replay,
            ask,
        ])
        .plugin(
            "github",
            [
                tool("github_list_issues", "List GitHub issues."),
                tool("github_update_issue", "Update a GitHub issue."),
            ],
        )
        .mcp(
            "docs",
            [
                search_docs,
                tool("get-page", "Fetch one documentation page."),
            ],
        )
        .client(
            "app",
            &scope(run),
            [tool("pick_color", "Let the user pick a colour.")],
        )
        .build(policy)
        .unwrap()
}

/// The tools behind the catalog: echo by default, `slow` sleeps
/// `input.ms` (300 by default), `fail` fails. Counts runs per tool and
/// the highest concurrency of slow tools.
#[derive(Default)]
pub struct Tools {
    runs: Mutex<HashMap<String, usize>>,
    slow_now: AtomicUsize,
    pub slow_max: AtomicUsize,
}

impl Tools {
    pub fn runs(&self, name: &str) -> usize {
        self.runs.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

impl ToolExecutor for Tools {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, talon_tools::ToolError>> {
        *self
            .runs
            .lock()
            .unwrap()
            .entry(entry.tool.name.clone())
            .or_default() += 1;
        let name = entry.tool.name.clone();
        let result = json!({"tool": entry.id, "input": call.args});
        Box::pin(async move {
            match name.as_str() {
                "slow" | "slow_read" => {
                    let now = self.slow_now.fetch_add(1, Ordering::SeqCst) + 1;
                    self.slow_max.fetch_max(now, Ordering::SeqCst);
                    let ms = call.args["ms"].as_u64().unwrap_or(300);
                    // Not a wait: the tool is slow on purpose.
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    self.slow_now.fetch_sub(1, Ordering::SeqCst);
                    Ok(result)
                }
                "fail" | "github_fail" => {
                    Err(talon_tools::ToolError::failed("it failed on purpose"))
                }
                _ => Ok(result),
            }
        })
    }
}

/// The MCP server `docs`: resources and prompts, in memory.
pub struct Docs;

impl McpServers for Docs {
    fn features(&self, server: &str) -> Option<McpServerFeatures> {
        (server == "docs").then_some(McpServerFeatures {
            resources: true,
            prompts: true,
        })
    }

    fn read_resource<'a>(
        &'a self,
        _: &'a RunContext,
        _: &'a str,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<Value, talon_tools::ToolError>> {
        let result = if uri == "memo://one" {
            Ok(json!({"contents": [{"uri": uri, "text": "first memo"}]}))
        } else {
            Err(talon_tools::ToolError::new(
                talon_tools::ToolErrorCode::NotFound,
                format!("no resource {uri}"),
            ))
        };
        Box::pin(async move { result })
    }

    fn get_prompt<'a>(
        &'a self,
        _: &'a RunContext,
        _: &'a str,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<Value, talon_tools::ToolError>> {
        let result = json!({"messages": [{"role": "user", "content": {"type": "text",
                            "text": format!("{name}: {}", arguments["topic"].as_str().unwrap_or(""))}}]});
        Box::pin(async move { Ok(result) })
    }
}

pub fn ctx(run: &str) -> RunContext {
    RunContext {
        scope: scope(run),
        session_key: "agent:main:s1".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

pub fn config() -> CodeModeConfig {
    CodeModeConfig::default()
}

pub fn code_mode(store: Arc<dyn SnapshotStore>, namespaces: Arc<NamespaceRegistry>) -> CodeMode {
    CodeMode::new(CodeModeOptions {
        sandbox: Default::default(),
        store,
        namespaces,
    })
    .unwrap()
}

pub fn memory_store() -> Arc<dyn SnapshotStore> {
    Arc::new(MemoryStore::new(StoreLimits::default()))
}

/// One run over a catalog.
pub struct Run {
    pub run: CodeModeRun,
    pub runner: Arc<ToolRunner>,
    pub ctx: RunContext,
    pub tools: Arc<Tools>,
}

pub struct RunOptions {
    pub run_id: &'static str,
    pub config: CodeModeConfig,
    pub policy: ToolPolicy,
    pub approver: Option<Arc<dyn Approver>>,
    pub tools: Arc<Tools>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            run_id: "r1",
            config: config(),
            policy: ToolPolicy::new(),
            approver: None,
            tools: Arc::new(Tools::default()),
        }
    }
}

pub fn start(code_mode: &CodeMode, options: RunOptions) -> Run {
    let catalog = catalog(options.run_id, &options.policy);
    start_with(code_mode, catalog, options)
}

pub fn start_with(code_mode: &CodeMode, catalog: Catalog, options: RunOptions) -> Run {
    let mut runner = ToolRunner::new(Arc::new(catalog), options.tools.clone());
    if let Some(approver) = options.approver {
        runner = runner.with_approver(approver);
    }
    let runner = Arc::new(runner);
    let ctx = ctx(options.run_id);
    let run = code_mode.start_run(RunSetup {
        config: options.config,
        runner: runner.clone(),
        ctx: ctx.clone(),
        mcp: Some(Arc::new(Docs)),
        plugin_config: json!({"repository": "openclaw/openclaw"}),
        exec_hooks: Vec::new(),
        resume: Vec::new(),
    });
    Run {
        run,
        runner,
        ctx,
        tools: options.tools,
    }
}

/// A fresh runtime with the standard catalog.
pub fn standard() -> (CodeMode, Run) {
    let cm = code_mode(memory_store(), Arc::new(NamespaceRegistry::new()));
    let run = start(&cm, RunOptions::default());
    (cm, run)
}

pub async fn exec(run: &CodeModeRun, code: &str) -> CodeModeResult {
    run.exec("call_1", json!({"code": code})).await
}

pub async fn wait(run: &CodeModeRun, cell_id: &str) -> CodeModeResult {
    run.wait("call_2", json!({"runId": cell_id})).await
}

/// The value of a completed result; panics with the result otherwise.
pub fn value(result: &CodeModeResult) -> Value {
    match result {
        CodeModeResult::Completed { value, .. } => value.clone(),
        other => panic!("expected completed, got {other:#?}"),
    }
}

/// The cell id (`runId`) of a waiting result.
pub fn cell_id(result: &CodeModeResult) -> String {
    match result {
        CodeModeResult::Waiting { cell_id, .. } => cell_id.to_string(),
        other => panic!("expected waiting, got {other:#?}"),
    }
}

/// The error and code of a failed result.
pub fn failure(result: &CodeModeResult) -> (String, Option<&'static str>) {
    match result {
        CodeModeResult::Failed { error, code, .. } => (error.clone(), code.map(|c| c.as_str())),
        other => panic!("expected failed, got {other:#?}"),
    }
}
