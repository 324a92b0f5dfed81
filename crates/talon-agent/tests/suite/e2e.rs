//! The seeds' end-to-end plans, without a gateway: the mock model is a real
//! HTTP server, MCP is a real stdio server, and a new runtime instance
//! stands in for a restart. Each plan runs on both wires (Chat Completions
//! and Anthropic Messages: the mock answers both from one script), with
//! the same events and snapshots; what a plan reads of a request goes
//! through helpers that read either wire.

use std::sync::Arc;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_agent::{AgentRun, CollectSink, NestedCallEvents, RunEvents, RunOptions, RunStatus};
use talon_codemode::{
    CellError, CellScope, CodeMode, CodeModeConfig, CodeModeOptions, FileStore, NamespaceRegistry,
    NestedResult, RunSetup, SnapshotStore, StoreLimits, SuspendedCell,
};
use talon_core_tools::{CoreTools, PolicyApprover};
use talon_mcp::{McpExecutor, McpManager, servers_from_json};
use talon_mock_model::{MockModel, Script};
use talon_protocol::{CatalogMode, CellId, EventType, ToolDefinition, ToolSource};
use talon_provider::{ModelProvider, ProviderConfig};
use talon_testing::redact::redacted;
use talon_testing::requests;
use talon_testing::wait;
use talon_tools::{
    BoxFuture, Catalog, CatalogBuilder, CatalogEntry, DirectSurface, NoUpdates, RunContext,
    RunScope, ToolCall, ToolError, ToolExecutor, ToolPolicy, ToolRunner, ToolSurface,
};
use talon_toolsearch::{ToolSearch, ToolSearchConfig, build_surface};
use tokio::sync::Notify;

/// Core tools in a workspace, MCP through the manager, plugin and client
/// tools answer with what they were given.
pub(super) struct TestTools {
    pub(super) core: CoreTools,
    pub(super) mcp: Option<McpExecutor>,
    /// What `slow_lookup` waits for: the test releases it once `exec` has
    /// returned (a call that resolves after its cell was suspended).
    pub(super) release: Arc<Notify>,
}

impl ToolExecutor for TestTools {
    fn execute<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        match (entry.tool.source, &self.mcp) {
            (ToolSource::Openclaw, _) => self.core.execute(ctx, entry, call),
            (ToolSource::Mcp, Some(mcp)) => mcp.execute(ctx, entry, call),
            _ => {
                let value = json!({"tool": entry.id, "input": call.args});
                let release = self.release.clone();
                Box::pin(async move {
                    if entry.tool.name == "slow_lookup" {
                        // Still running when `exec` returns: it answers
                        // when the test releases it.
                        release.notified().await;
                    }
                    Ok(value)
                })
            }
        }
    }
}

/// The durable cell store, saying when a suspended cell's call result is
/// stored (what a restart resumes from).
struct Settling {
    store: FileStore,
    settled: Arc<Notify>,
}

impl SnapshotStore for Settling {
    fn clock(&self) -> &talon_protocol::clock::Clock {
        self.store.clock()
    }

    fn put(&self, cell: SuspendedCell) -> Result<(), CellError> {
        self.store.put(cell)
    }

    fn take(&self, id: &CellId, scope: &CellScope) -> Result<SuspendedCell, CellError> {
        self.store.take(id, scope)
    }

    fn delete(&self, id: &CellId) -> Result<(), CellError> {
        self.store.delete(id)
    }

    fn purge_expired(&self) -> Result<usize, CellError> {
        self.store.purge_expired()
    }

    fn settle(
        &self,
        id: &CellId,
        host_call_id: u64,
        result: NestedResult,
    ) -> Result<bool, CellError> {
        let stored = self.store.settle(id, host_call_id, result);
        if matches!(stored, Ok(true)) {
            self.settled.notify_one();
        }
        stored
    }

    fn session_cells(
        &self,
        session: &talon_protocol::gateway::bounded::SessionId,
    ) -> Result<Vec<talon_codemode::CellHeader>, CellError> {
        self.store.session_cells(session)
    }
}

fn tool(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        label: None,
        description: description.into(),
        parameters: json!({"type": "object", "properties": {"query": {"type": "string", "description": "What to look up"}}}),
        source: ToolSource::Plugin,
        owner: "x".into(),
        catalog_mode: CatalogMode::Default,
        execution_mode: Default::default(),
        requires_approval: false,
        effect: Default::default(),
        replay_safe: false,
    }
}

fn fixture_js() -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../talon-mcp/tests/fixtures/fixture_server.mjs")
        .display()
        .to_string()
}

pub(super) fn ctx(run: &str) -> RunContext {
    RunContext {
        scope: RunScope {
            agent_id: AgentId::new("main"),
            session_id: SessionId::new("s1"),
            run_id: RunId::new(run),
        },
        session_key: "agent:main:s1".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

/// A provider's `api`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    OpenAi,
    Anthropic,
}

pub(super) async fn provider(wire: Wire, turns: Value) -> (MockModel, Arc<dyn ModelProvider>) {
    let mock = MockModel::start(Script::from_json(&json!({"turns": turns})).unwrap())
        .await
        .unwrap();
    let api = match wire {
        Wire::OpenAi => "openai-completions",
        Wire::Anthropic => "anthropic-messages",
    };
    let config = ProviderConfig::new("mock", api, &mock.base_url());
    let client = talon_provider::build(config).unwrap();
    (mock, client)
}

/// The Code Mode test catalog: core, plugin, MCP and client tools, with
/// one plugin tool denied by policy.
async fn code_mode_catalog(run: &str, manager: &McpManager) -> Catalog {
    let servers = manager.for_run().await;
    assert!(servers.failed.is_empty(), "{:?}", servers.failed);
    let mut ask = tool("ask_user", "Ask the user something.");
    ask.catalog_mode = CatalogMode::DirectOnly;
    servers
        .register(CatalogBuilder::new(ctx(run).scope))
        .core(talon_core_tools::definitions())
        .plugin(
            "lookup",
            [
                tool("lookup_weather", "Look up the weather."),
                tool("slow_lookup", "Look something up slowly."),
                tool("forbidden_tool", "A tool policy denies."),
            ],
        )
        .client(
            "app",
            &ctx(run).scope,
            [tool("pick_color", "Let the user pick a colour."), ask],
        )
        .build(&ToolPolicy::from_lists(None, &["forbidden_tool".into()]))
        .unwrap()
}

#[tokio::test]
async fn code_modes_sixteen_step_plan() {
    code_modes_sixteen_step_plan_on(Wire::OpenAi).await;
}

#[tokio::test]
async fn code_modes_sixteen_step_plan_over_anthropic_messages() {
    code_modes_sixteen_step_plan_on(Wire::Anthropic).await;
}

async fn code_modes_sixteen_step_plan_on(wire: Wire) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# Talon test workspace").unwrap();
    let state = tempfile::tempdir().unwrap();
    let manager = McpManager::from_env(
        servers_from_json(&json!({"fx": {"command": "node", "args": [fixture_js(), "ok"]}}))
            .unwrap(),
    );
    let executor = Arc::new(TestTools {
        core: CoreTools::new(dir.path()).unwrap(),
        mcp: Some(manager.executor()),
        release: Arc::new(tokio::sync::Notify::new()),
    });

    // 1-3. Code Mode disabled: a small direct tool set reaches the model unchanged.
    let disabled = CodeModeConfig::resolve(
        Some(&serde_json::from_value(json!({"enabled": false})).unwrap()),
        None,
    );
    let (mock, client) = provider(wire, json!([{"text": "direct"}])).await;
    let catalog = CatalogBuilder::new(ctx("r0").scope)
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    let runner = Arc::new(ToolRunner::new(Arc::new(catalog), executor.clone()));
    assert!(!talon_codemode::applies(
        disabled.as_ref(),
        runner.catalog(),
        talon_codemode::RunTools::Offered
    ));
    let sink = Arc::new(CollectSink::default());
    let run = AgentRun {
        provider: client.as_ref(),
        surface: Arc::new(DirectSurface::new(runner.clone())),
        ctx: ctx("r0"),
        events: Arc::new(RunEvents::new(sink.clone(), &ctx("r0"))),
        options: RunOptions {
            model: "m".into(),
            ..RunOptions::default()
        },
    };
    assert_eq!(run.run(Vec::new(), "hi").await.status, RunStatus::Completed);
    assert_eq!(
        requests::tool_names(&mock.requests()[0]),
        ["edit", "exec", "grep", "list", "read", "write"]
    );

    // 4. "Restart" with Code Mode enabled: a new runtime on a durable store.
    let store_dir = state.path().join("cells");
    let settled = Arc::new(Notify::new());
    let new_runtime = || {
        CodeMode::new(CodeModeOptions {
            sandbox: Default::default(),
            store: Arc::new(Settling {
                store: talon_codemode::open_file_store(&store_dir, StoreLimits::default()).unwrap(),
                settled: settled.clone(),
            }),
            namespaces: Arc::new(NamespaceRegistry::new()),
        })
        .unwrap()
    };
    let code_mode = new_runtime();
    let enabled = CodeModeConfig::resolve(
        Some(&serde_json::from_value(json!({"enabled": true, "timeoutMs": 1000})).unwrap()),
        None,
    );

    // 5-14. One turn with core, plugin, MCP and client test tools (the
    // app answers a cell's client calls between runs: the gateway's
    // client_tools suite).
    let cell_1 = r#"
      const ids = ALL_TOOLS.map(t => t.id);
      const hits = await tools.search("look up the weather");
      const weather = await tools.describe(hits[0].id);
      const w = await tools.call(weather.id, {query: "Paris"});
      const readme = await tools.read({path: "README.md"});
      const files = (await API.list("mcp")).map(f => f.path);
      const dts = await API.read("mcp/fx.d.ts");
      const echoed = await MCP.fx.echo({message: "hi"});
      let denied;
      try { await tools.call("plugin:lookup:forbidden_tool", {}); } catch (e) { denied = e.code; }
      return {ids, first: hits[0].id, w: w.tool, readme: readme.content, files,
              declares: dts.includes("function echo("), echoed: echoed.structuredContent.echoed, denied,
              mcpHidden: !ids.some(id => id.startsWith("mcp:")) && typeof tools.echo === "undefined"};"#;
    let cell_2 = "text('before'); const r = await tools.slow_lookup({query: 'x'}); text('after resume'); return r.input.query;";
    let (mock, client) = provider(
        wire,
        json!([
            {"toolCalls": [{"name": "exec", "arguments": {"code": cell_1}}]},
            {"toolCalls": [{"name": "exec", "arguments": {"code": cell_2}}]},
        ]),
    )
    .await;
    let catalog = code_mode_catalog("r1", &manager).await;
    let sink = Arc::new(CollectSink::default());
    let events = Arc::new(RunEvents::new(sink.clone(), &ctx("r1")));
    let runner = Arc::new(
        ToolRunner::new(Arc::new(catalog), executor.clone())
            .with_approver(Arc::new(PolicyApprover::DenyAll))
            .with_observer(Arc::new(NestedCallEvents(events.clone()))),
    );
    assert!(talon_codemode::applies(
        enabled.as_ref(),
        runner.catalog(),
        talon_codemode::RunTools::Offered
    ));
    let config = enabled.unwrap();
    let surface = Arc::new(code_mode.start_run(RunSetup {
        config: config.clone(),
        runner: runner.clone(),
        ctx: ctx("r1"),
        mcp: Some(Arc::new(manager.clone())),
        plugin_config: Value::Null,
        exec_hooks: Vec::new(),
        resume: Vec::new(),
    }));
    let run = AgentRun {
        provider: client.as_ref(),
        surface,
        ctx: ctx("r1"),
        events: events.clone(),
        options: RunOptions {
            model: "m".into(),
            max_turns: 2,
            ..RunOptions::default()
        },
    };
    let _ = run.run(Vec::new(), "use the tools").await;
    let requests = mock.requests();
    // 6. Exactly exec and wait (plus the direct-only tool).
    assert_eq!(
        requests::tool_names(&requests[0]),
        ["exec", "wait", "ask_user"]
    );
    // 7-11. The first cell's answer, as the model received it.
    let first = requests::last_tool_result(&requests[1]);
    // Completed: ALL_TOOLS has the core, plugin and client tools but not
    // the denied one (nor MCP's); the search finds the weather tool first;
    // the calls answer; the README is read; the MCP declarations are
    // listed and declare echo, which echoes "hi"; the denied call fails
    // with nested_tool_failed.
    insta::assert_json_snapshot!("first_cell", redacted(&first));
    // 12. The second cell waits on a call that resolves after exec returned.
    let second = sink
        .events()
        .into_iter()
        .filter(|e| e.kind == EventType::ToolCallCompleted && e.data.get("parentId").is_none())
        .nth(1)
        .unwrap();
    // Waiting on the slow call, which now answers.
    insta::assert_json_snapshot!("second_cell", redacted(&second.data));
    executor.release.notify_one();
    let run_id = second.data["result"]["runId"].as_str().unwrap().to_owned();
    // 13-14. Once the call's result is stored with the suspended cell, a
    // new runtime (the restart) resumes it; the restored VM gets the result.
    wait::within(
        "the slow call's result to be stored with the cell",
        wait::DEADLINE,
        settled.notified(),
    )
    .await;
    drop(run);
    drop(code_mode);
    let code_mode = new_runtime();
    let resumed = code_mode.start_run(RunSetup {
        config: config.clone(),
        runner: runner.clone(),
        ctx: ctx("r1"),
        mcp: Some(Arc::new(manager.clone())),
        plugin_config: Value::Null,
        exec_hooks: Vec::new(),
        resume: Vec::new(),
    });
    let done = resumed.wait("call_9", json!({"runId": run_id})).await;
    // Completed with "x", the output after the resume.
    insta::assert_json_snapshot!(
        "resumed_cell",
        redacted(&serde_json::to_value(&done).unwrap())
    );
    // 15. Timeout, cancellation and expiry leave nothing behind.
    let timed_out = resumed
        .exec("call_10", json!({"code": "while (true) {}"}))
        .await;
    insta::assert_json_snapshot!(
        "timed_out_cell",
        redacted(&serde_json::to_value(&timed_out).unwrap())
    );
    // Only the consumed markers of resumed cells remain (until they
    // expire), so that no old copy of a record can run again.
    let left: Vec<String> = std::fs::read_dir(&store_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".mark"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
    // 16. The trajectory shows nested calls under their parent exec.
    // The first cell's calls (mcp:fx:echo and openclaw:core:read among
    // them) under call_1, in the order the cell made them.
    let nested: Vec<Value> = sink
        .events()
        .into_iter()
        .filter(|e| e.kind == EventType::ToolCallStarted && e.data.get("parentId").is_some())
        .map(|e| e.data)
        .collect();
    insta::assert_json_snapshot!("nested_calls", redacted(&Value::Array(nested)));
    manager.shutdown().await;
}

/// A large fake plugin catalog, a direct-only tool.
fn big_catalog(run: &str) -> Catalog {
    let tools = (0..300).map(|i| {
        let mut t = tool(&format!("fake_tool_{i:03}"), &format!("Fake plugin tool number {i} that manages widgets of kind {i}."));
        t.parameters = json!({"type": "object", "properties": {
            "widget": {"type": "string", "description": "The widget identifier to operate on"},
            "mode": {"type": "string", "enum": ["fast", "safe", "dry-run"], "description": "How to run"},
            "count": {"type": "integer", "description": "How many widgets"}}, "required": ["widget"]});
        t
    });
    let mut ask = tool("ask_user", "Ask the user something.");
    ask.catalog_mode = CatalogMode::DirectOnly;
    CatalogBuilder::new(ctx(run).scope)
        .plugin("fake", tools)
        .client("app", &ctx(run).scope, [ask])
        .build(&ToolPolicy::new())
        .unwrap()
}

#[tokio::test]
async fn tool_search_regression_list() {
    tool_search_regression_list_on(Wire::OpenAi).await;
}

#[tokio::test]
async fn tool_search_regression_list_over_anthropic_messages() {
    tool_search_regression_list_on(Wire::Anthropic).await;
}

async fn tool_search_regression_list_on(wire: Wire) {
    let dir = tempfile::tempdir().unwrap();
    let executor = Arc::new(TestTools {
        core: CoreTools::new(dir.path()).unwrap(),
        mcp: None,
        release: Arc::new(tokio::sync::Notify::new()),
    });
    // Direct mode.
    let (direct_mock, client) = provider(wire, json!([
        {"toolCalls": [{"name": "fake_tool_042", "arguments": {"widget": "w1"}}]}, {"text": "done"}])).await;
    let runner = Arc::new(ToolRunner::new(
        Arc::new(big_catalog("d")),
        executor.clone(),
    ));
    let sink = Arc::new(CollectSink::default());
    let run = AgentRun {
        provider: client.as_ref(),
        surface: Arc::new(DirectSurface::new(runner.clone())),
        ctx: ctx("d"),
        events: Arc::new(RunEvents::new(sink.clone(), &ctx("d"))),
        options: RunOptions {
            model: "m".into(),
            ..RunOptions::default()
        },
    };
    assert_eq!(
        run.run(Vec::new(), "operate widget w1").await.status,
        RunStatus::Completed
    );
    // 1. The fake plugin tool is callable in direct mode.
    let direct_calls: Vec<_> = runner
        .records()
        .into_iter()
        .map(|r| (r.id, r.status))
        .collect();
    assert_eq!(
        direct_calls,
        [("plugin:fake:fake_tool_042".to_owned(), "ok")]
    );
    // 3. Direct mode exposes its schema.
    let direct_request = &direct_mock.requests()[0];
    let exposed = requests::tool_list(direct_request)
        .into_iter()
        .find(|t| t["name"] == "fake_tool_042")
        .unwrap();
    pretty_assertions::assert_eq!(
        exposed,
        json!({
            "name": "fake_tool_042",
            "description": "Fake plugin tool number 42 that manages widgets of kind 42.",
            "parameters": {"type": "object", "properties": {
                "widget": {"type": "string", "description": "The widget identifier to operate on"},
                "mode": {"type": "string", "enum": ["fast", "safe", "dry-run"], "description": "How to run"},
                "count": {"type": "integer", "description": "How many widgets"}},
                "required": ["widget"]}})
    );

    // Tool Search (code mode).
    let (ts_mock, client) = provider(wire, json!([
        {"toolCalls": [{"name": "tool_search_code", "arguments": {"code":
            "const hits = await openclaw.tools.search('manages widgets of kind 42'); const t = await openclaw.tools.describe('plugin:fake:fake_tool_042'); return await openclaw.tools.call(t.id, {widget: 'w1'});"}}]},
        {"text": "done"}])).await;
    let ts_runner = Arc::new(ToolRunner::new(
        Arc::new(big_catalog("t")),
        executor.clone(),
    ));
    let config = ToolSearchConfig::from_setting(Some(
        &serde_json::from_value(json!({"mode": "code"})).unwrap(),
    ))
    .unwrap();
    let surface = build_surface(ts_runner.catalog(), Some(&config)).unwrap();
    let ts = Arc::new(
        ToolSearch::new(
            config,
            surface,
            ts_runner.clone(),
            Some(talon_toolsearch::CodeSandbox::new(Default::default()).unwrap()),
        )
        .unwrap(),
    );
    let sink = Arc::new(CollectSink::default());
    let run = AgentRun {
        provider: client.as_ref(),
        surface: ts.clone(),
        ctx: ctx("t"),
        events: Arc::new(RunEvents::new(sink.clone(), &ctx("t"))),
        options: RunOptions {
            model: "m".into(),
            ..RunOptions::default()
        },
    };
    assert_eq!(
        run.run(Vec::new(), "operate widget w1").await.status,
        RunStatus::Completed
    );
    // 2. The same tool is callable through Tool Search.
    let ts_calls: Vec<_> = ts_runner
        .records()
        .into_iter()
        .map(|r| (r.id, r.status))
        .collect();
    assert_eq!(ts_calls, [("plugin:fake:fake_tool_042".to_owned(), "ok")]);
    // 4. Only the compact bridge and the direct-only tools are exposed.
    let ts_request = &ts_mock.requests()[0];
    assert_eq!(
        requests::tool_names(ts_request),
        ["tool_search_code", "ask_user"]
    );
    // 5. The request payload is smaller.
    let (direct_bytes, ts_bytes) = (
        direct_request.to_string().len(),
        ts_request.to_string().len(),
    );
    assert!(
        ts_bytes * 10 < direct_bytes,
        "direct {direct_bytes} B, tool search {ts_bytes} B"
    );
    // 6. Session logs count the calls and the bridge telemetry.
    let telemetry = ToolSurface::telemetry(&*ts);
    assert_eq!(
        (
            telemetry.code_runs,
            telemetry.searches,
            telemetry.describes,
            telemetry.bridge_calls
        ),
        (1, 1, 1, 1)
    );
    let top_level = sink
        .events()
        .iter()
        .filter(|e| e.kind == EventType::ToolCallStarted)
        .count();
    assert_eq!(top_level, 1);
}
