//! A run from its spec to its terminal event: completed (with a tool
//! call), cancelled while the model answers, failed by the model, and
//! refused at build time.

use std::sync::Arc;

use serde_json::json;
use talon_agent::RunStatus;
use talon_mock_model::{MockModel, Script};
use talon_protocol::gateway::ErrorCode;
use talon_protocol::{ToolDefinition, ToolSource};
use talon_runtime::RuntimeError;

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
        .prepare(spec("run_1", dir.path(), &recorder))
        .await
        .unwrap();
    let result = run.run(Vec::new(), "What do my notes say?").await;
    assert_eq!(
        (
            result.status,
            result.text.as_str(),
            result.turns,
            result.tool_calls,
            result.error
        ),
        (RunStatus::Completed, "The notes say 42.", 2, 1, None)
    );
    assert_eq!(
        (result.usage.input_tokens, result.usage.output_tokens),
        (230, 11)
    );
    assert_eq!(
        recorder.kinds(),
        [
            "run.started",
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
                Some("run_1".into()),
                Some("main".into()),
                Some("agent:main:s1".into())
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
    let spec = spec("run_2", dir.path(), &recorder);
    let cancel = spec.ctx.cancel.clone();
    let run = host.prepare(spec).await.unwrap();
    let task = tokio::spawn(async move { run.run(Vec::new(), "hi").await });
    recorder.until("run.started").await;
    cancel.cancel();
    let result = task.await.unwrap();
    assert_eq!(
        (
            result.status,
            result.error.map(|e| (e.code, e.message, e.retryable))
        ),
        (
            RunStatus::Cancelled,
            Some((ErrorCode::Unavailable, "the run was aborted".into(), false))
        )
    );
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
        .prepare(spec("run_3", dir.path(), &recorder))
        .await
        .unwrap();
    let result = run.run(Vec::new(), "hi").await;
    // The caller's credentials are not at fault: the provider's key is,
    // and the error says which and where to fix it.
    let expected = talon_protocol::gateway::ApiError {
        code: ErrorCode::Unavailable,
        message: "provider \"mock\" rejected the API key (401): Incorrect API key provided.; check models.providers.mock.apiKey".into(),
        retryable: false,
        retry_after_ms: None,
        details: Some(json!({"provider": "mock", "reason": "provider_auth", "status": 401})),
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
                cost_usd: None,
            },
            duration_ms: 0,
            pending_tool_calls: Vec::new(),
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
    let mut spec = spec("run_4", dir.path(), &recorder);
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
    let refused = host.prepare(spec).await.unwrap_err();
    assert_eq!(
        refused,
        RuntimeError::ClientTool(
            "client tool \"read\" has the name of the agent's tool openclaw:core:read".into()
        )
    );
    assert_eq!(recorder.kinds(), Vec::<String>::new());
    assert_eq!(mock.requests(), Vec::<serde_json::Value>::new());
    host.shutdown().await;
}
