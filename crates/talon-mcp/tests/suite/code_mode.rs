//! Code Mode over a real server: `MCP.<server>.<tool>()`, `$api`, the
//! `API` declaration files (snapshot-tested against server-everything's
//! real tool list), resources and prompts, and a crash mid-call reaching
//! the guest as a catchable `nested_tool_failed`.

use std::sync::Arc;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, CodeModeRun, MemoryStore, NamespaceRegistry,
    RunSetup, StoreLimits,
};
use talon_protocol::CodeModeResult;
use talon_tools::{CatalogBuilder, RunScope, ToolPolicy, ToolRunner};

use super::*;

async fn code_mode_run(manager: &McpManager) -> (CodeMode, CodeModeRun) {
    let scope = RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s"),
        run_id: RunId::new("r"),
    };
    let servers = manager.for_run().await;
    assert!(servers.failed.is_empty(), "{:?}", servers.failed);
    let catalog = servers
        .register(CatalogBuilder::new(scope.clone()))
        .build(&ToolPolicy::new())
        .unwrap();
    let runner = Arc::new(ToolRunner::new(
        Arc::new(catalog),
        Arc::new(manager.executor()),
    ));
    let code_mode = CodeMode::new(CodeModeOptions {
        sandbox: Default::default(),
        store: Arc::new(MemoryStore::new(StoreLimits::default())),
        namespaces: Arc::new(NamespaceRegistry::new()),
    })
    .unwrap();
    let mut ctx = super::real::ctx();
    ctx.scope = scope;
    let run = code_mode.start_run(RunSetup {
        config: CodeModeConfig::default(),
        runner,
        ctx,
        mcp: Some(Arc::new(manager.clone())),
        plugin_config: Value::Null,
        exec_hooks: Vec::new(),
        resume: Vec::new(),
    });
    (code_mode, run)
}

fn value(result: CodeModeResult) -> Value {
    match result {
        CodeModeResult::Completed { value, .. } => value,
        other => panic!("{other:#?}"),
    }
}

#[tokio::test]
async fn the_mcp_namespace_reaches_server_everything() {
    let manager = manager(stdio_everything());
    let (_cm, run) = code_mode_run(&manager).await;
    let result = run
        .exec(
            "call_1",
            json!({"code": r#"
              const echo = await MCP.everything.echo({message: "hi"});
              const sum = await MCP.everything.getSum({a: 2, b: 3});
              const files = (await API.list("mcp")).map(f => f.path);
              const header = await MCP.everything.$api("getSum");
              const memo = await MCP.everything.resources.read({uri: "demo://resource/static/document/architecture.md"});
              const prompt = await MCP.everything.prompts.get({name: "args-prompt", arguments: {city: "Paris", state: "TX"}});
              return {echo, sum: sum.content[0].text, files, header: header.includes("function getSum("),
                      memo: memo.contents[0].uri, prompt: prompt.messages[0].content.text,
                      inAll: ALL_TOOLS.length};"#}),
        )
        .await;
    assert_eq!(
        value(result),
        json!({
            "echo": {"content": [{"type": "text", "text": "Echo: hi"}]},
            "sum": "The sum of 2 and 3 is 5.",
            "files": ["mcp/everything.d.ts", "mcp/index.d.ts"],
            "header": true,
            "memo": "demo://resource/static/document/architecture.md",
            "prompt": "What's weather in Paris, TX?",
            "inAll": 0,
        })
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn declarations_of_a_real_server_are_stable() {
    let manager = manager(stdio_everything());
    let (_cm, run) = code_mode_run(&manager).await;
    let result = run
        .exec(
            "call_1",
            json!({"code": "return await API.read('mcp/everything.d.ts');"}),
        )
        .await;
    let Value::String(dts) = value(result) else {
        panic!()
    };
    insta::assert_snapshot!(dts);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_a_catchable_nested_failure_and_the_next_call_reconnects() {
    let manager = manager(json!({"fx": fixture("ok", json!({}))}));
    let (_cm, run) = code_mode_run(&manager).await;
    let result = run
        .exec(
            "call_1",
            json!({"code": r#"
              let failure;
              try { await MCP.fx.crash({}); } catch (e) { failure = {code: e.code, message: e.message}; }
              const after = await MCP.fx.count({});
              const dotted = await MCP.fx["dotted.name-x"]({});
              return {failure, after: after.structuredContent.calls, dotted: dotted.isError === true};"#}),
        )
        .await;
    let v = value(result);
    // The message ends with the server's stderr, checked in part below.
    let message = v["failure"]["message"].as_str().unwrap().to_owned();
    pretty_assertions::assert_eq!(
        v,
        json!({"failure": {"code": "nested_tool_failed", "message": message},
               "after": 1, "dotted": true})
    );
    assert!(
        message.starts_with(
            "mcp:fx:crash failed: unavailable: MCP server \"fx\" closed the connection"
        ),
        "{message}"
    );
    assert!(
        message.contains("panic: deliberate failure in the middle of a call"),
        "{message}"
    );
    manager.shutdown().await;
}
