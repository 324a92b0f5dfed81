//! The loop against the scripted mock model: direct and Code Mode
//! surfaces, events, approvals, cancellation, timeout and the turn limit.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use talon_agent::{
    AgentRun, ApprovalEvents, CollectSink, NestedCallEvents, RunEvents, RunOptions, RunStatus,
};
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, MemoryStore, NamespaceRegistry, RunSetup,
    StoreLimits,
};
use talon_core_tools::{CoreTools, PolicyApprover};
use talon_mock_model::{MockModel, Script};
use talon_protocol::gateway::{ApprovalDecision, ApprovalStatus};
use talon_protocol::{EventData, EventType};
use talon_provider::openai::OpenAiCompatible;
use talon_provider::parse_providers;
use talon_testing::wait;
use talon_tools::{
    CatalogBuilder, DirectSurface, NoUpdates, RunContext, RunScope, ToolPolicy, ToolRunner,
    ToolSurface,
};

struct Fixture {
    mock: MockModel,
    client: OpenAiCompatible,
    runner: Arc<ToolRunner>,
    ctx: RunContext,
    sink: Arc<CollectSink>,
    events: Arc<RunEvents>,
    _dir: tempfile::TempDir,
}

async fn fixture(turns: Value, approve: bool) -> Fixture {
    let mock = MockModel::start(Script::from_json(&json!({"turns": turns})).unwrap())
        .await
        .unwrap();
    let providers = parse_providers(
        Some(&json!({"mock": {"baseUrl": mock.base_url()}})),
        &|_| None,
    )
    .unwrap();
    let client = OpenAiCompatible::new(providers.into_iter().next().unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the answer is 42").unwrap();
    let scope = RunScope {
        agent_id: "main".into(),
        session_id: "s1".into(),
        run_id: "r1".into(),
    };
    let ctx = RunContext {
        scope: scope.clone(),
        session_key: "agent:main:s1".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
    };
    let sink = Arc::new(CollectSink::default());
    let events = Arc::new(RunEvents::new(sink.clone(), &ctx));
    let catalog = CatalogBuilder::new(scope)
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    let policy = if approve {
        PolicyApprover::AllowAll
    } else {
        PolicyApprover::DenyAll
    };
    let runner = Arc::new(
        ToolRunner::new(
            Arc::new(catalog),
            Arc::new(CoreTools::new(dir.path()).unwrap()),
        )
        .with_approver(Arc::new(ApprovalEvents::new(
            Arc::new(policy),
            events.clone(),
        )))
        .with_observer(Arc::new(NestedCallEvents(events.clone()))),
    );
    Fixture {
        mock,
        client,
        runner,
        ctx,
        sink,
        events,
        _dir: dir,
    }
}

/// Every tool by name.
fn direct(runner: &Arc<ToolRunner>) -> Arc<dyn ToolSurface> {
    Arc::new(DirectSurface::new(runner.clone()))
}

fn options() -> RunOptions {
    RunOptions {
        model: "mock-model".into(),
        ..RunOptions::default()
    }
}

/// The run's event types (deltas left out); every event's data must match
/// its type's typed payload (`talon_protocol::EventData`).
fn kinds(sink: &CollectSink) -> Vec<&'static str> {
    let events = sink.events();
    for event in &events {
        assert!(
            event.typed().is_some(),
            "{} data does not match its schema: {}",
            event.kind.as_str(),
            event.data
        );
    }
    events
        .iter()
        .filter(|e| e.kind != EventType::AssistantDelta)
        .map(|e| e.kind.as_str())
        .collect()
}

#[tokio::test]
async fn a_direct_run_calls_a_core_tool_and_answers() {
    let f = fixture(json!([
        {"toolCalls": [{"name": "read", "arguments": {"path": "notes.txt"}}], "usage": {"prompt": 100, "completion": 10}},
        {"text": "The notes say 42.", "usage": {"prompt": 150, "completion": 6}},
    ]), false).await;
    let run = AgentRun {
        provider: &f.client,
        surface: direct(&f.runner),
        ctx: f.ctx.clone(),
        events: f.events.clone(),
        options: options(),
    };
    let result = run.run(Vec::new(), "What do the notes say?").await;
    assert_eq!(
        (
            result.status,
            result.text.as_str(),
            result.turns,
            result.tool_calls
        ),
        (RunStatus::Completed, "The notes say 42.", 2, 1)
    );
    assert_eq!(
        (result.usage.input_tokens, result.usage.output_tokens),
        (250, 16)
    );
    assert_eq!(
        kinds(&f.sink),
        [
            "run.started",
            "tool.call.started",
            "tool.call.completed",
            "assistant.message",
            "run.completed"
        ]
    );
    let events = f.sink.events();
    assert!(events.iter().all(|e| e.version == 1
        && e.run_id.as_deref() == Some("r1")
        && e.session_key.as_deref() == Some("agent:main:s1")));
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "ids are ordered replay cursors");
    let completed = events
        .iter()
        .find(|e| e.kind == EventType::ToolCallCompleted)
        .unwrap();
    assert_eq!(completed.data["result"]["content"], "the answer is 42");
    // The second request carries the call and its result.
    let requests = f.mock.requests();
    assert_eq!(requests.len(), 2);
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["edit", "exec", "grep", "list", "read", "write"]);
    assert_eq!(
        requests[1]["messages"][2]["tool_calls"][0]["function"]["name"],
        "read"
    );
    assert_eq!(requests[1]["messages"][3]["role"], "tool");
    assert!(
        requests[1]["messages"][3]["content"]
            .as_str()
            .unwrap()
            .contains("the answer is 42")
    );
}

#[tokio::test]
async fn code_mode_shows_exec_and_wait_and_nested_calls_carry_their_parent() {
    let f = fixture(json!([
        {"toolCalls": [{"name": "exec", "arguments": {"code": "const hit = (await tools.search('read a file'))[0]; const r = await tools.call(hit.id, {path: 'notes.txt'}); return r.content;"}}]},
        {"text": "It says: the answer is 42."},
    ]), false).await;
    let code_mode = CodeMode::new(CodeModeOptions {
        sandbox: Default::default(),
        store: Arc::new(MemoryStore::new(StoreLimits::default())),
        namespaces: Arc::new(NamespaceRegistry::new()),
    })
    .unwrap();
    let config = CodeModeConfig::resolve(Some(&json!(true)), None).unwrap();
    assert!(talon_codemode::applies(
        config.as_ref(),
        f.runner.catalog(),
        talon_codemode::RunTools::Offered
    ));
    let config = config.unwrap();
    let cm_run = code_mode.start_run(RunSetup {
        config,
        runner: f.runner.clone(),
        ctx: f.ctx.clone(),
        mcp: None,
        plugin_config: Value::Null,
        exec_hooks: Vec::new(),
    });
    let run = AgentRun {
        provider: &f.client,
        surface: Arc::new(cm_run),
        ctx: f.ctx.clone(),
        events: f.events.clone(),
        options: options(),
    };
    let result = run.run(Vec::new(), "What do the notes say?").await;
    assert_eq!(
        (result.status, result.text.as_str()),
        (RunStatus::Completed, "It says: the answer is 42.")
    );
    let requests = f.mock.requests();
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["exec", "wait"]);
    assert_eq!(
        kinds(&f.sink),
        [
            "run.started",
            "tool.call.started",
            "tool.call.started",
            "tool.call.completed",
            "tool.call.completed",
            "assistant.message",
            "run.completed"
        ]
    );
    let events = f.sink.events();
    let nested = events
        .iter()
        .find(|e| e.kind == EventType::ToolCallStarted && e.data.get("parentId").is_some())
        .unwrap();
    assert_eq!(nested.data["parentId"], "call_1");
    assert_eq!(nested.data["name"], "openclaw:core:read");
    let exec_done = events
        .iter()
        .rfind(|e| e.kind == EventType::ToolCallCompleted)
        .unwrap();
    assert_eq!(exec_done.data["result"]["status"], "completed");
    assert_eq!(exec_done.data["result"]["value"], "the answer is 42");
}

#[tokio::test]
async fn approvals_are_events_and_denied_calls_are_blocked() {
    let f = fixture(
        json!([
            {"toolCalls": [{"name": "write", "arguments": {"path": "x.txt", "content": "hi"}}]},
            {"text": "I could not write it."},
        ]),
        false,
    )
    .await;
    let run = AgentRun {
        provider: &f.client,
        surface: direct(&f.runner),
        ctx: f.ctx.clone(),
        events: f.events.clone(),
        options: options(),
    };
    let result = run.run(Vec::new(), "write x").await;
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(
        kinds(&f.sink),
        [
            "run.started",
            "tool.call.started",
            "approval.requested",
            "approval.resolved",
            "tool.call.failed",
            "assistant.message",
            "run.completed"
        ]
    );
    let resolved = f
        .sink
        .events()
        .into_iter()
        .find(|e| e.kind == EventType::ApprovalResolved)
        .unwrap();
    let Some(EventData::ApprovalResolved(resolved)) = resolved.typed() else {
        panic!("approval.resolved is typed");
    };
    assert_eq!(resolved.status, ApprovalStatus::Denied);
    assert_eq!(resolved.decision, Some(ApprovalDecision::Deny));
    assert!(!resolved.reused);
    let requested = f
        .sink
        .events()
        .into_iter()
        .find_map(|e| match e.typed() {
            Some(EventData::ApprovalRequested(approval)) => Some(approval),
            _ => None,
        })
        .unwrap();
    assert_eq!(requested.id, resolved.approval_id);
    assert_eq!(requested.status, ApprovalStatus::Pending);
    assert_eq!(
        requested.decisions,
        [ApprovalDecision::ApproveOnce, ApprovalDecision::Deny]
    );
    assert_eq!(requested.tool_name.as_deref(), Some("openclaw:core:write"));
    assert!(!f._dir.path().join("x.txt").exists());
}

#[tokio::test]
async fn cancellation_timeout_turn_limit_and_provider_errors_end_the_run_clearly() {
    // The turn limit.
    let f = fixture(json!([{"toolCalls": [{"name": "list", "arguments": {}}]}, {"toolCalls": [{"name": "list", "arguments": {}}]}]), false).await;
    let run = AgentRun {
        provider: &f.client,
        surface: direct(&f.runner),
        ctx: f.ctx.clone(),
        events: f.events.clone(),
        options: RunOptions {
            max_turns: 2,
            ..options()
        },
    };
    let result = run.run(Vec::new(), "loop").await;
    assert_eq!(
        (
            result.status,
            result.error.as_ref().map(|e| e.message.as_str())
        ),
        (RunStatus::Failed, Some("the turn limit of 2 was reached"))
    );
    assert_eq!(kinds(&f.sink).last(), Some(&"run.failed"));
    // The run's timeout.
    let f = fixture(json!([{"delayMs": 2000, "text": "late"}]), false).await;
    let run = AgentRun {
        provider: &f.client,
        surface: direct(&f.runner),
        ctx: f.ctx.clone(),
        events: f.events.clone(),
        options: RunOptions {
            timeout: Duration::from_millis(200),
            ..options()
        },
    };
    assert_eq!(run.run(Vec::new(), "hi").await.status, RunStatus::TimedOut);
    assert_eq!(kinds(&f.sink).last(), Some(&"run.timed_out"));
    // Nothing the run started outlives its time limit.
    assert!(f.ctx.is_cancelled());
    // Cancellation.
    let f = fixture(json!([{"delayMs": 2000, "text": "late"}]), false).await;
    let run = AgentRun {
        provider: &f.client,
        surface: direct(&f.runner),
        ctx: f.ctx.clone(),
        events: f.events.clone(),
        options: options(),
    };
    let cancel = f.ctx.cancel.clone();
    let (result, ()) = tokio::join!(run.run(Vec::new(), "hi"), async {
        // Cancelled while the model's reply is on its way.
        wait::until_async("the model to get the request", wait::DEADLINE, async || {
            f.mock.requests().len() == 1
        })
        .await;
        cancel.cancel();
    });
    assert_eq!(result.status, RunStatus::Cancelled);
    // The model's reply was not awaited to its end (2 s).
    assert!(
        result.duration < Duration::from_secs(1),
        "{:?}",
        result.duration
    );
    assert_eq!(kinds(&f.sink).last(), Some(&"run.cancelled"));
    // A provider error.
    let f = fixture(json!([{"status": 400}]), false).await;
    let run = AgentRun {
        provider: &f.client,
        surface: direct(&f.runner),
        ctx: f.ctx.clone(),
        events: f.events.clone(),
        options: options(),
    };
    let result = run.run(Vec::new(), "hi").await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(
        result.error.as_ref().map(|e| e.message.as_str()),
        Some("provider \"mock\" answered 400: scripted failure")
    );
}

/// Keeps events and the loop's checkpoints.
#[derive(Default)]
struct Checkpoints {
    events: CollectSink,
    taken: std::sync::Mutex<Vec<talon_agent::Checkpoint>>,
}

impl talon_agent::EventSink for Checkpoints {
    fn emit(&self, event: talon_protocol::Event) {
        self.events.emit(event);
    }

    fn checkpoint(&self, checkpoint: talon_agent::Checkpoint) {
        self.taken.lock().unwrap().push(checkpoint);
    }
}

#[tokio::test]
async fn a_run_checkpoints_each_tool_turn_and_resumes_from_one() {
    let f = fixture(
        json!([
            {"toolCalls": [{"name": "read", "arguments": {"path": "notes.txt"}}], "usage": {"prompt": 100, "completion": 10}},
            {"text": "The notes say 42.", "usage": {"prompt": 150, "completion": 6}},
            {"text": "Resumed: the notes say 42.", "usage": {"prompt": 150, "completion": 7}},
        ]),
        false,
    )
    .await;
    let sink = Arc::new(Checkpoints::default());
    let run = AgentRun {
        provider: &f.client,
        surface: direct(&f.runner),
        ctx: f.ctx.clone(),
        events: Arc::new(RunEvents::new(sink.clone(), &f.ctx)),
        options: options(),
    };
    let first = run.run(Vec::new(), "What do the notes say?").await;
    assert_eq!(first.status, RunStatus::Completed);
    // One checkpoint: after the turn with a tool call, every call answered
    // and every event of that turn emitted before it.
    let taken = sink.taken.lock().unwrap().clone();
    assert_eq!(taken.len(), 1);
    let checkpoint = taken[0].clone();
    assert_eq!(
        (
            checkpoint.turns,
            checkpoint.tool_calls,
            checkpoint.usage.input_tokens
        ),
        (1, 1, 100)
    );
    assert_eq!(checkpoint.messages[..], first.messages[..3]);
    // Resumed from it (as after a crash during the second model request):
    // the model gets the conversation through the checkpoint, and the
    // counts go on from it.
    let resumed_sink = Arc::new(Checkpoints::default());
    let resumed = AgentRun {
        provider: &f.client,
        surface: direct(&f.runner),
        ctx: f.ctx.clone(),
        events: Arc::new(RunEvents::new(resumed_sink.clone(), &f.ctx)),
        options: options(),
    };
    let history = vec![talon_provider::Message::User("an earlier question".into())];
    let result = resumed.resume(history, checkpoint.clone()).await;
    assert_eq!(
        (
            result.status,
            result.text.as_str(),
            result.turns,
            result.tool_calls,
            result.usage.input_tokens
        ),
        (
            RunStatus::Completed,
            "Resumed: the notes say 42.",
            2,
            1,
            250
        )
    );
    let mut expected = checkpoint.messages.clone();
    expected.push(talon_provider::Message::Assistant {
        text: Some("Resumed: the notes say 42.".into()),
        tool_calls: Vec::new(),
    });
    assert_eq!(result.messages, expected);
    let request = &f.mock.requests()[2];
    let roles: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "user", "assistant", "tool"]);
    assert_eq!(request["messages"][1]["content"], "an earlier question");
    assert_eq!(
        kinds(&resumed_sink.events),
        ["run.started", "assistant.message", "run.completed"]
    );
    let started = &resumed_sink.events.events()[0];
    assert_eq!(started.data["resumedAfterTurn"], 1);
}

#[tokio::test]
async fn a_client_tool_call_is_left_pending_and_the_run_proceeds_from_its_answer() {
    let f = fixture(
        json!([
            {"toolCalls": [
                {"name": "pick_color", "arguments": {"palette": "warm"}},
                {"name": "read", "arguments": {"path": "notes.txt"}}]},
            {"text": "Teal, and the notes say 42."},
        ]),
        false,
    )
    .await;
    let mut options = options();
    options.client_tools = ["pick_color".to_owned()].into();
    let run = AgentRun {
        provider: &f.client,
        surface: direct(&f.runner),
        ctx: f.ctx.clone(),
        events: f.events.clone(),
        options,
    };
    let result = run.run(Vec::new(), "Pick a color; read the notes.").await;
    assert_eq!(
        (result.status, result.turns, result.tool_calls),
        (RunStatus::Completed, 1, 2)
    );
    assert_eq!(
        result.pending,
        [talon_provider::ToolCallRequest {
            id: "call_1".into(),
            name: "pick_color".into(),
            arguments: r#"{"palette":"warm"}"#.into(),
        }]
    );
    // The server's call is answered; the client's is not.
    let answered: Vec<&str> = result
        .messages
        .iter()
        .filter_map(|m| match m {
            talon_provider::Message::Tool { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, ["call_2"]);
    assert_eq!(
        kinds(&f.sink),
        [
            "run.started",
            "tool.call.started",
            "tool.call.started",
            "tool.call.completed",
            "run.completed"
        ]
    );
    let events = f.sink.events();
    assert_eq!(events[1].data["source"], "client");
    // Neither the app's call nor a read-only tool has an effect a resumed
    // run could repeat.
    assert_eq!(events[1].data["replaySafe"], true);
    assert_eq!(events[2].data["name"], "read");
    assert_eq!(events[2].data["replaySafe"], true);
    assert_eq!(
        events.last().unwrap().data["pendingToolCalls"],
        json!([{"id": "call_1", "name": "pick_color", "arguments": {"palette": "warm"}}])
    );
    // The app's answer joins the history; the model goes on from it.
    let mut history = result.messages.clone();
    history.push(talon_provider::Message::Tool {
        call_id: "call_1".into(),
        content: "teal".into(),
    });
    let next = run.proceed(history).await;
    assert_eq!(
        (next.status, next.text.as_str(), next.pending.len()),
        (RunStatus::Completed, "Teal, and the notes say 42.", 0)
    );
    let requests = f.mock.requests();
    let last = requests[1]["messages"].as_array().unwrap();
    let roles: Vec<&str> = last.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
    assert_eq!(last[4]["tool_call_id"], "call_1");
    assert_eq!(last[4]["content"], "teal");
}
