mod code;
mod contract;
mod surfaces;
mod tools_mode;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_protocol::{CatalogMode, ToolDefinition, ToolSource};
use talon_tools::{
    BoxFuture, Catalog, CatalogBuilder, CatalogEntry, NoUpdates, RunContext, RunScope, ToolCall,
    ToolExecutor, ToolPolicy, ToolRunner,
};
use talon_toolsearch::{CodeSandbox, ToolSearch, ToolSearchConfig, build_surface};

pub fn tool(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        label: None,
        description: description.into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string", "description": "A workspace path"}}}),
        source: ToolSource::Openclaw,
        owner: "core".into(),
        catalog_mode: CatalogMode::Default,
        execution_mode: Default::default(),
        requires_approval: false,
        effect: Default::default(),
        replay_safe: false,
    }
}

pub fn scope() -> RunScope {
    RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s"),
        run_id: RunId::new("r"),
    }
}

/// A small mixed catalog: core, plugin, MCP, client and a direct-only tool.
pub fn catalog() -> Catalog {
    let mut ask = tool("ask_user", "Ask the user a question.");
    ask.catalog_mode = CatalogMode::DirectOnly;
    CatalogBuilder::new(scope())
        .core([
            tool("read", "Read a workspace file."),
            tool("exec", "Run a shell command."),
            ask,
        ])
        .plugin(
            "issues",
            [tool("create_issue", "Create an issue in the tracker.")],
        )
        .mcp(
            "github",
            [tool("list_pulls", "List pull requests of a repository.")],
        )
        .client(
            "app",
            &scope(),
            [tool("pick_color", "Let the user pick a colour.")],
        )
        .build(&ToolPolicy::from_lists(None, &["exec".into()]))
        .unwrap()
}

/// Echoes calls, counts them, and sleeps for `slow` tools.
#[derive(Default)]
pub struct Echo {
    pub calls: AtomicUsize,
}

impl ToolExecutor for Echo {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, talon_tools::ToolError>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let slow = entry.tool.name == "slow";
        let result = json!({"ran": entry.id, "args": call.args});
        Box::pin(async move {
            if slow {
                // A tool that never answers: only a time limit ends it.
                std::future::pending::<()>().await;
            }
            Ok(result)
        })
    }
}

pub fn ctx() -> RunContext {
    RunContext {
        scope: scope(),
        session_key: "main".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

/// One code sandbox per test process.
pub fn code_sandbox() -> CodeSandbox {
    static SANDBOX: OnceLock<CodeSandbox> = OnceLock::new();
    SANDBOX
        .get_or_init(|| CodeSandbox::new(Default::default()).expect("code sandbox"))
        .clone()
}

pub fn tool_search(catalog: Catalog, config: ToolSearchConfig, echo: Arc<Echo>) -> Arc<ToolSearch> {
    let surface = build_surface(&catalog, Some(&config)).unwrap();
    let runner = Arc::new(ToolRunner::new(Arc::new(catalog), echo));
    Arc::new(ToolSearch::new(config, surface, runner, Some(code_sandbox())).unwrap())
}
