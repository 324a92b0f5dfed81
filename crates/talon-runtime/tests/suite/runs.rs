//! A run from its spec to its terminal event through the front
//! (`Host::start`, `RunHandle::finish`): completed (with a tool call, its
//! checkpoint in the stored form), resumed from that checkpoint and from
//! its input, cancelled while the model answers, failed by the model,
//! refused at start, and one direct call.

use std::sync::Arc;
use talon_protocol::gateway::bounded::{AgentId, SessionKey};
use talon_protocol::gateway::bounded::{RunId, SessionId};

use serde_json::json;
use talon_mock_model::{MockModel, Script};
use talon_protocol::gateway::{ErrorCode, RunStatus, Usage};
use talon_protocol::{ToolDefinition, ToolSource};
use talon_runtime::{RuntimeError, Start};

use super::{Recorder, host, spec};

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the answer is 42").unwrap();
    dir
}

async fn mock(script: serde_json::Value) -> MockModel {
    MockModel::start(Script::from_json(&script).unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_goes_from_its_spec_to_its_terminal_event() {
    let mock = mock(json!({"turns": [
        {"toolCalls": [{"name": "read", "arguments": {"path": "notes.txt"}}],
         "usage": {"prompt": 100, "completion": 5}},
        {"text": "The notes say 42.", "usage": {"prompt": 130, "completion": 6}}]}))
    .await;
    let host = host("{}", mock.base_url());
    let dir = workspace();
    let recorder = Arc::new(Recorder::default());
    let run = host
        .start(spec(
            "run_1",
            dir.path(),
            &recorder,
            "What do my notes say?",
        ))
        .await
        .unwrap();
    let result = run.finish().await;
    assert_eq!(
        (
            result.status,
            result.text.as_str(),
            result.turns,
            result.tool_calls,
            result.error,
            result.usage,
            result.pending,
        ),
        (
            RunStatus::Completed,
            "The notes say 42.",
            2,
            1,
            None,
            Usage {
                input_tokens: Some(230),
                output_tokens: Some(11),
                total_tokens: Some(241),
                cache_read_tokens: None,
                cache_write_tokens: None,
                cost_usd: None,
            },
            Vec::new(),
        )
    );
    // What the run added, as a session stores it: the user's message, the
    // call, its answer, the answer.
    let stored = result
        .messages
        .to_stored(&SessionId::new("s1"), &RunId::new("run_1"), 0);
    let roles: Vec<_> = stored.iter().map(|m| (m.id.to_string(), m.role)).collect();
    use talon_protocol::gateway::MessageRole::{Assistant, Tool, User};
    assert_eq!(
        roles,
        [
            ("msg_run_1_0000".to_owned(), User),
            ("msg_run_1_0001".to_owned(), Assistant),
            ("msg_run_1_0002".to_owned(), Tool),
            ("msg_run_1_0003".to_owned(), Assistant),
        ]
    );
    // The turn with the tool call left one checkpoint, in the stored form.
    let turns = recorder.turns();
    assert_eq!(
        turns
            .iter()
            .map(|t| (
                t.turns,
                t.tool_calls,
                t.input_tokens,
                t.output_tokens,
                t.messages.len()
            ))
            .collect::<Vec<_>>(),
        [(1, 1, 100, 5, 3)]
    );
    assert_eq!(
        recorder.kinds(),
        [
            "run.started",
            "assistant.message",
            "tool.call.started",
            "tool.call.completed",
            "assistant.message",
            "run.completed"
        ]
    );
    // Every event carries the spec's ids.
    let ids: Vec<_> = recorder
        .events()
        .iter()
        .map(|e| (e.run_id.clone(), e.agent_id.clone(), e.session_key.clone()))
        .collect();
    assert!(
        ids.iter().all(|id| *id
            == (
                Some(RunId::new("run_1")),
                Some(AgentId::new("main")),
                Some(SessionKey::new("agent:main:s1"))
            )),
        "{ids:?}"
    );
    // The tool read the spec's workspace.
    let read = recorder
        .events()
        .into_iter()
        .find(|e| e.kind.as_str() == "tool.call.completed")
        .unwrap();
    assert!(
        read.data.to_string().contains("the answer is 42"),
        "{read:?}"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_while_its_model_answers_ends_cancelled() {
    let mock = mock(json!({"turns": [{"delayMs": 60000, "text": "too late"}]})).await;
    let host = Arc::new(host("{}", mock.base_url()));
    let dir = workspace();
    let recorder = Arc::new(Recorder::default());
    let run = host
        .start(spec("run_2", dir.path(), &recorder, "hi"))
        .await
        .unwrap();
    let cancel = run.cancel_token();
    let task = tokio::spawn(run.finish());
    recorder.until("run.started").await;
    cancel.cancel();
    let result = task.await.unwrap();
    // A cancelled run's status says it all.
    assert_eq!((result.status, result.error), (RunStatus::Cancelled, None));
    assert_eq!(recorder.kinds(), ["run.started", "run.cancelled"]);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_model_refuses_it_ends_failed_with_the_providers_error() {
    let mock = mock(json!({"apiKey": "sk-right", "turns": [{"text": "never"}]})).await;
    let host = host(
        r#"{ models: { providers: { mock: { baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-wrong", models: [{ id: "m" }] } } },
             agents: { defaults: { model: "mock/m" } } }"#,
        mock.base_url(),
    );
    let dir = workspace();
    let recorder = Arc::new(Recorder::default());
    let run = host
        .start(spec("run_3", dir.path(), &recorder, "hi"))
        .await
        .unwrap();
    let result = run.finish().await;
    // The caller's credentials are not at fault: the provider's key is,
    // and the error says which and where to fix it.
    let expected = talon_protocol::gateway::ApiError {
        code: ErrorCode::Unavailable,
        message: "provider \"mock\" rejected the API key (401): Incorrect API key provided.; check models.providers.mock.apiKey".into(),
        retryable: false,
        retry_after_ms: None,
        details: Some(serde_json::from_value(json!({"provider": "mock", "reason": "provider_auth", "status": 401})).unwrap()),
    };
    assert_eq!(
        (result.status, result.turns, result.error.as_ref()),
        (RunStatus::Failed, 1, Some(&expected))
    );
    assert_eq!(recorder.kinds(), ["run.started", "run.failed"]);
    let failed = recorder.events().pop().unwrap();
    let mut data: talon_protocol::event_data::RunEndedData =
        serde_json::from_value(failed.data).unwrap();
    data.duration_ms = 0;
    // The failed request was sent: it counts.
    let telemetry = data.telemetry.take().unwrap();
    assert_eq!(
        (telemetry.surface.as_str(), telemetry.model_calls),
        ("direct", 1)
    );
    assert_eq!(
        data,
        talon_protocol::event_data::RunEndedData {
            text: None,
            error: Some(expected.message.clone()),
            turns: 1,
            tool_calls: 0,
            usage: talon_protocol::gateway::Usage {
                input_tokens: Some(0),
                output_tokens: Some(0),
                total_tokens: Some(0),
                cache_read_tokens: None,
                cache_write_tokens: None,
                cost_usd: None,
            },
            duration_ms: 0,
            pending_tool_calls: Vec::new(),
            telemetry: None,
        }
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_tool_named_like_an_agent_tool_is_refused_before_the_run() {
    let mock = mock(json!({"turns": [{"text": "never"}]})).await;
    let host = host("{}", mock.base_url());
    let dir = workspace();
    let recorder = Arc::new(Recorder::default());
    let mut spec = spec("run_4", dir.path(), &recorder, "hi");
    spec.client_tools = vec![ToolDefinition {
        name: "read".into(),
        label: None,
        description: "The app's own read.".into(),
        parameters: json!({"type": "object"}),
        source: ToolSource::Client,
        owner: "app".into(),
        catalog_mode: Default::default(),
        execution_mode: Default::default(),
        requires_approval: false,
        effect: Default::default(),
        replay_safe: false,
    }];
    let refused = host.start(spec).await.unwrap_err();
    assert!(
        matches!(
            &refused,
            RuntimeError::ClientTool(why)
                if why == "client tool \"read\" has the name of the agent's tool openclaw:core:read"
        ),
        "{refused:?}"
    );
    assert_eq!(recorder.kinds(), Vec::<String>::new());
    assert_eq!(mock.requests(), Vec::<serde_json::Value>::new());
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumes_from_its_stored_checkpoint_without_redoing_the_turn() {
    let mock = mock(json!({"turns": [
        {"toolCalls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "first ending"},
        {"text": "resumed ending"}]}))
    .await;
    let host = host("{}", mock.base_url());
    let dir = workspace();
    let first = Arc::new(Recorder::default());
    let ended = host
        .start(spec("run_5", dir.path(), &first, "What do my notes say?"))
        .await
        .unwrap()
        .finish()
        .await;
    assert_eq!(ended.text, "first ending");
    // The checkpoint goes through its stored form (JSON), as a host keeps
    // it, and the run goes on from it on a "new node".
    let [turn] = first.turns().try_into().unwrap();
    let stored = serde_json::to_value(&turn).unwrap();
    let again = Arc::new(Recorder::default());
    let mut resumed = spec("run_5", dir.path(), &again, "unused");
    resumed.start = Start::Resume(serde_json::from_value(stored).unwrap());
    let result = host.start(resumed).await.unwrap().finish().await;
    assert_eq!(
        (
            result.status,
            result.text.as_str(),
            result.turns,
            result.tool_calls
        ),
        (RunStatus::Completed, "resumed ending", 2, 1)
    );
    assert_eq!(
        again.kinds(),
        ["run.started", "assistant.message", "run.completed"]
    );
    let started = &again.events()[0];
    assert_eq!(started.data["resumedAfterTurn"], json!(1), "{started:?}");
    // The model was asked three times in all: the turn was not redone.
    assert_eq!(mock.requests().len(), 3);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_again_from_its_input_says_so() {
    let mock = mock(json!({"turns": [{"text": "hello again"}]})).await;
    let host = host("{}", mock.base_url());
    let dir = workspace();
    let recorder = Arc::new(Recorder::default());
    let mut spec = spec("run_6", dir.path(), &recorder, "unused");
    spec.start = Start::Again(Some("hi".into()));
    let result = host.start(spec).await.unwrap().finish().await;
    assert_eq!(
        (result.status, result.text.as_str()),
        (RunStatus::Completed, "hello again")
    );
    let started = &recorder.events()[0];
    assert_eq!(
        (started.kind.as_str(), &started.data["resumedAfterTurn"]),
        ("run.started", &json!(0))
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_call_that_fails_ends_its_run_with_the_tools_error() {
    let mock = mock(json!({"turns": []})).await;
    let host = host("{}", mock.base_url());
    let dir = workspace();
    let recorder = Arc::new(Recorder::default());
    let mut spec = spec("run_7", dir.path(), &recorder, "unused");
    spec.start = Start::Invoke {
        tool: "read".into(),
        arguments: json!({"path": "missing.txt"}),
    };
    let result = host.start(spec).await.unwrap().finish().await;
    let error = result.error.unwrap();
    assert_eq!(
        (result.status, error.code, error.details),
        (
            RunStatus::Failed,
            ErrorCode::NotFound,
            Some(serde_json::from_value(json!({"toolError": "not_found"})).unwrap())
        )
    );
    let mut spec = super::spec("run_8", dir.path(), &recorder, "unused");
    spec.start = Start::Invoke {
        tool: "no_such_tool".into(),
        arguments: json!({}),
    };
    let result = host.start(spec).await.unwrap().finish().await;
    assert_eq!(
        result.error.map(|e| (e.code, e.message)),
        Some((
            ErrorCode::NotFound,
            "no tool \"no_such_tool\" this agent may call directly".to_owned()
        ))
    );
    assert_eq!(mock.requests(), Vec::<serde_json::Value>::new());
    host.shutdown().await;
}
