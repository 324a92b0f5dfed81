//! The loop against the scripted mock model: direct and Code Mode
//! surfaces, events, approvals, cancellation, timeout and the turn limit.

use std::sync::Arc;
use std::time::Duration;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_agent::{
    AgentRun, ApprovalEvents, CollectSink, NestedCallEvents, RunEvents, RunOptions, RunResult,
    RunStatus,
};
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, MemoryStore, NamespaceRegistry, RunSetup,
    StoreLimits,
};
use talon_core_tools::{CoreTools, PolicyApprover};
use talon_mock_model::{MockModel, Script};
use talon_protocol::{EventData, EventType};
use talon_provider::ProviderConfig;
use talon_provider::config::OPENAI_COMPLETIONS;
use talon_provider::openai::OpenAiCompatible;
use talon_provider::{Message, ToolCallRequest, Usage};
use talon_testing::redact::{Redactor, transcript};
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
    let config = ProviderConfig::new("mock", OPENAI_COMPLETIONS, &mock.base_url());
    let client = OpenAiCompatible::new(config).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the answer is 42").unwrap();
    let scope = RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s1"),
        run_id: RunId::new("r1"),
    };
    let ctx = RunContext {
        scope: scope.clone(),
        session_key: "agent:main:s1".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
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

/// What the model gets of the read of notes.txt.
const NOTES_READ: &str =
    r#"{"bytes":16,"content":"the answer is 42","path":"notes.txt","truncated":false}"#;

/// The model's call `id` of tool `name` with `arguments`.
fn call(id: &str, name: &str, arguments: &str) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
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

/// The run's events as one whole value ([`transcript`]: deltas left out,
/// clocks redacted); every event's data must match its type's typed
/// payload, as in [`kinds`].
fn events_of(sink: &CollectSink) -> Value {
    kinds(sink);
    let events: Vec<Value> = sink
        .events()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    transcript(&events)
}

/// The requests the model got, whole, the workspace's path replaced. A
/// tool message's content (a JSON text) is shown parsed, so that a cell's
/// measured `durationMs` in it is redacted too.
fn requests_of(f: &Fixture) -> Value {
    let mut requests = f.mock.requests();
    for message in requests
        .iter_mut()
        .filter_map(|r| r.get_mut("messages")?.as_array_mut())
        .flatten()
        .filter(|m| m.get("role") == Some(&json!("tool")))
    {
        let parsed = message
            .get("content")
            .and_then(|c| c.as_str())
            .map(serde_json::from_str::<Value>);
        if let (Some(Ok(parsed)), Some(content)) = (parsed, message.get_mut("content")) {
            *content = parsed;
        }
    }
    Redactor::new()
        .with(f._dir.path().display().to_string(), "<workspace>")
        .value(&Value::Array(requests))
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
    pretty_assertions::assert_eq!(
        result,
        RunResult {
            status: RunStatus::Completed,
            text: "The notes say 42.".into(),
            turns: 2,
            tool_calls: 1,
            usage: Usage {
                input_tokens: 250,
                output_tokens: 16,
                ..Usage::default()
            },
            cost_usd: None,
            // Wall time varies.
            duration: result.duration,
            error: None,
            messages: vec![
                Message::User("What do the notes say?".into()),
                Message::Assistant {
                    text: None,
                    tool_calls: vec![call("call_1", "read", r#"{"path":"notes.txt"}"#)],
                    reasoning: Vec::new(),
                },
                Message::Tool {
                    call_id: "call_1".into(),
                    content: NOTES_READ.into(),
                },
                Message::Assistant {
                    text: Some("The notes say 42.".into()),
                    tool_calls: Vec::new(),
                    reasoning: Vec::new(),
                },
            ],
            pending: Vec::new(),
            held: Vec::new(),
            // Whole in the events' snapshot.
            telemetry: result.telemetry.clone(),
        }
    );
    // Every event of run r1 in session agent:main:s1, version 1, the
    // read's result "the answer is 42".
    insta::assert_json_snapshot!("direct_run_events", events_of(&f.sink));
    let events = f.sink.events();
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "ids are ordered replay cursors");
    // The core tools offered, then the second request carrying the read
    // call and its result.
    insta::assert_json_snapshot!("direct_run_requests", requests_of(&f));
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
    let config = CodeModeConfig::resolve(Some(&serde_json::from_value(json!(true)).unwrap()), None);
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
        resume: Vec::new(),
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
    // The model is offered exec and wait only.
    insta::assert_json_snapshot!("code_mode_requests", requests_of(&f));
    // The nested read (parentId call_1, openclaw:core:read) inside the
    // exec, which completes with "the answer is 42".
    insta::assert_json_snapshot!("code_mode_events", events_of(&f.sink));
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
    // A pending request for openclaw:core:write offering approve_once and
    // deny, resolved as denied (not reused), and the call failed.
    insta::assert_json_snapshot!("denied_approval_events", events_of(&f.sink));
    let resolved = f
        .sink
        .events()
        .into_iter()
        .find(|e| e.kind == EventType::ApprovalResolved)
        .unwrap();
    let Some(EventData::ApprovalResolved(resolved)) = resolved.typed() else {
        panic!("approval.resolved is typed");
    };
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
    let checkpoint = talon_agent::Checkpoint {
        messages: first.messages[..3].to_vec(),
        turns: 1,
        tool_calls: 1,
        usage: Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Usage::default()
        },
    };
    pretty_assertions::assert_eq!(taken, std::slice::from_ref(&checkpoint));
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
    let history = vec![Message::User("an earlier question".into())];
    let result = resumed.resume(history, checkpoint.clone()).await;
    let mut messages = checkpoint.messages.clone();
    messages.push(Message::Assistant {
        text: Some("Resumed: the notes say 42.".into()),
        tool_calls: Vec::new(),
        reasoning: Vec::new(),
    });
    pretty_assertions::assert_eq!(
        result,
        RunResult {
            status: RunStatus::Completed,
            text: "Resumed: the notes say 42.".into(),
            turns: 2,
            tool_calls: 1,
            usage: Usage {
                input_tokens: 250,
                output_tokens: 17,
                ..Usage::default()
            },
            cost_usd: None,
            // Wall time varies.
            duration: result.duration,
            error: None,
            messages,
            pending: Vec::new(),
            held: Vec::new(),
            // Whole in the events' snapshot.
            telemetry: result.telemetry.clone(),
        }
    );
    // The third request: the earlier question, then the checkpoint's
    // conversation (user, assistant, tool).
    insta::assert_json_snapshot!("checkpoint_resumed_request", requests_of(&f)[2]);
    // The resumed run starts after turn 1.
    insta::assert_json_snapshot!("checkpoint_resumed_events", events_of(&resumed_sink.events));
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
    // The server's call is answered; the client's is not, and is pending.
    let pick = call("call_1", "pick_color", r#"{"palette":"warm"}"#);
    pretty_assertions::assert_eq!(
        result,
        RunResult {
            status: RunStatus::Completed,
            text: String::new(),
            turns: 1,
            tool_calls: 2,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            },
            cost_usd: None,
            // Wall time varies.
            duration: result.duration,
            error: None,
            messages: vec![
                Message::User("Pick a color; read the notes.".into()),
                Message::Assistant {
                    text: None,
                    tool_calls: vec![
                        pick.clone(),
                        call("call_2", "read", r#"{"path":"notes.txt"}"#)
                    ],
                    reasoning: Vec::new(),
                },
                Message::Tool {
                    call_id: "call_2".into(),
                    content: NOTES_READ.into(),
                },
            ],
            pending: vec![pick],
            held: Vec::new(),
            // Whole in the events' snapshot.
            telemetry: result.telemetry.clone(),
        }
    );
    // The client's call (source client) and the read both replay-safe:
    // neither the app's call nor a read-only tool has an effect a resumed
    // run could repeat; the run completes with pick_color pending.
    insta::assert_json_snapshot!("client_call_events", events_of(&f.sink));
    // The app's answer joins the history; the model goes on from it.
    let mut history = result.messages.clone();
    history.push(Message::Tool {
        call_id: "call_1".into(),
        content: "teal".into(),
    });
    let next = run.proceed(history, Vec::new()).await;
    assert_eq!(
        (next.status, next.text.as_str(), next.pending.len()),
        (RunStatus::Completed, "Teal, and the notes say 42.", 0)
    );
    // The second request ends with both answers, the app's "teal" for
    // call_1 last.
    insta::assert_json_snapshot!("client_call_proceeded_request", requests_of(&f)[1]);
}

/// A surface that offers the model a tool its own check refuses.
struct Refusing(Arc<dyn ToolSurface>);

impl ToolSurface for Refusing {
    fn kind(&self) -> &'static str {
        "code_mode"
    }

    fn tools(&self) -> std::sync::Arc<Vec<talon_protocol::ModelTool>> {
        self.0.tools()
    }

    fn check_offered(&self, offered: &[talon_protocol::ModelTool]) -> Result<(), String> {
        Err(format!("{} tools is too many", offered.len()))
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a RunContext,
        call_id: &'a str,
        name: &'a str,
        args: Value,
    ) -> talon_tools::BoxFuture<'a, talon_tools::SurfaceReply> {
        self.0.handle(ctx, call_id, name, args)
    }
}

#[tokio::test]
async fn a_request_the_surface_refuses_is_never_sent_and_fails_the_run() {
    let f = fixture(json!([{"text": "never"}]), true).await;
    let surface: Arc<dyn ToolSurface> = Arc::new(Refusing(direct(&f.runner)));
    let offered = surface.tools().len();
    let run = AgentRun {
        provider: &f.client,
        surface,
        ctx: f.ctx.clone(),
        events: f.events.clone(),
        options: options(),
    };
    let result = run.run(Vec::new(), "hi").await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(
        result.error.map(|e| (e.code, e.message, e.details)),
        Some((
            talon_protocol::gateway::ErrorCode::Internal,
            format!("the model request was not sent: {offered} tools is too many"),
            Some(serde_json::from_value(json!({"check": "offeredTools"})).unwrap())
        ))
    );
    assert!(f.mock.requests().is_empty());
}
