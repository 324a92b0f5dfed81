//! The Chat Completions client: streaming, tool calls, usage, retries,
//! timeouts, cancellation, and clear errors.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use talon_protocol::ModelTool;
use talon_provider::openai::OpenAiCompatible;
use talon_provider::{
    ChatRequest, Message, ModelProvider, ProviderConfig, ProviderError, StreamDelta,
    ToolCallRequest, parse_providers,
};
use talon_testing::{MockModel, Script};

async fn mock(script: serde_json::Value) -> MockModel {
    MockModel::start(Script::from_json(&script).unwrap())
        .await
        .unwrap()
}

fn client(mock: &MockModel, key: Option<&str>, timeout_ms: u64) -> OpenAiCompatible {
    let lookup = |name: &str| (name == "MOCK_KEY").then(|| "sk-test".to_owned());
    let mut config = json!({"mock": {"baseUrl": mock.base_url(), "api": "openai-completions", "timeoutMs": timeout_ms,
                                     "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 200000, "maxTokens": 4096}]}});
    if let Some(key) = key {
        config["mock"]["apiKey"] = json!(key);
    }
    let providers: Vec<ProviderConfig> = parse_providers(Some(&config), &lookup).unwrap();
    OpenAiCompatible::new(providers.into_iter().next().unwrap()).unwrap()
}

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        model: "mock-model".into(),
        messages: vec![
            Message::System("be brief".into()),
            Message::User("hi".into()),
        ],
        tools: std::sync::Arc::new(vec![ModelTool {
            name: "exec".into(),
            description: "Run code.".into(),
            parameters: json!({"type": "object", "properties": {"code": {"type": "string"}}}),
        }]),
        max_tokens: Some(100),
        stream,
    }
}

#[tokio::test]
async fn streamed_text_arrives_in_deltas_with_usage() {
    let mock = mock(json!({"turns": [{"text": "Hello from the mock model!", "usage": {"prompt": 42, "completion": 7}}]})).await;
    let client = client(&mock, None, 10_000);
    let deltas = Mutex::new(Vec::new());
    let sink = |d: StreamDelta| deltas.lock().unwrap().push(d);
    let reply = client
        .complete(&request(true), &sink, &AtomicBool::new(false))
        .await
        .unwrap();
    assert_eq!(reply.text, "Hello from the mock model!");
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (42, 7)
    );
    assert_eq!(reply.finish_reason, "stop");
    let texts: Vec<String> = deltas
        .lock()
        .unwrap()
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert!(texts.len() > 1);
    assert_eq!(texts.concat(), "Hello from the mock model!");
    // The request is the wire format, tools included (the cached tools
    // text gives the same body as serializing everything).
    let body = &mock.requests()[0];
    assert_eq!(body, &request(true).to_openai());
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["tools"][0]["function"]["name"], "exec");
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "hi"})
    );
}

#[tokio::test]
async fn parallel_tool_calls_streamed_and_whole() {
    let turn = json!({"toolCalls": [{"name": "exec", "arguments": {"code": "return 1"}},
                                    {"name": "wait", "arguments": {"runId": "cm_1"}}]});
    let mock = mock(json!({"turns": [turn.clone(), turn]})).await;
    let client = client(&mock, None, 10_000);
    let expected = vec![
        ToolCallRequest {
            id: "call_1".into(),
            name: "exec".into(),
            arguments: "{\"code\":\"return 1\"}".into(),
        },
        ToolCallRequest {
            id: "call_2".into(),
            name: "wait".into(),
            arguments: "{\"runId\":\"cm_1\"}".into(),
        },
    ];
    let reply = client
        .complete(&request(true), &|_| {}, &AtomicBool::new(false))
        .await
        .unwrap();
    assert_eq!(
        (reply.tool_calls.clone(), reply.finish_reason.as_str()),
        (expected.clone(), "tool_calls")
    );
    let reply = client
        .complete(&request(false), &|_| {}, &AtomicBool::new(false))
        .await
        .unwrap();
    assert_eq!(reply.tool_calls, expected);
    // The follow-up carries the calls and their results in the wire format.
    let mut follow = request(false);
    follow.messages.push(Message::Assistant {
        text: None,
        tool_calls: expected.clone(),
    });
    follow.messages.push(Message::Tool {
        call_id: "call_1".into(),
        content: "{\"status\":\"completed\"}".into(),
    });
    assert_eq!(
        follow.to_openai()["messages"][2]["tool_calls"][1]["function"]["name"],
        "wait"
    );
    assert_eq!(
        follow.to_openai()["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"status\":\"completed\"}"})
    );
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_honouring_retry_after() {
    let mock = mock(
        json!({"turns": [{"status": 429, "retryAfter": 1}, {"status": 503}, {"text": "finally"}]}),
    )
    .await;
    let client = client(&mock, None, 30_000);
    let started = Instant::now();
    let reply = client
        .complete(&request(true), &|_| {}, &AtomicBool::new(false))
        .await
        .unwrap();
    assert_eq!(reply.text, "finally");
    assert_eq!(mock.requests().len(), 3);
    assert!(
        started.elapsed() >= Duration::from_millis(1400),
        "waited Retry-After, then the backoff"
    );
    // Still failing after the retries: a clear error.
    let mock = mock_failing().await;
    let error = client_for(&mock)
        .complete(&request(false), &|_| {}, &AtomicBool::new(false))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ProviderError::Unavailable {
                status: 500,
                attempts: 4,
                ..
            }
        ),
        "{error}"
    );
}

async fn mock_failing() -> MockModel {
    mock(json!({"turns": [{"status": 500}, {"status": 500}, {"status": 500}, {"status": 500}]}))
        .await
}

fn client_for(mock: &MockModel) -> OpenAiCompatible {
    let lookup = |_: &str| None;
    let providers = parse_providers(
        Some(&json!({"mock": {"baseUrl": mock.base_url(), "maxRetries": 3}})),
        &lookup,
    )
    .unwrap();
    // Short backoff is not configurable: 0.5 + 1 + 2 s.
    OpenAiCompatible::new(providers.into_iter().next().unwrap()).unwrap()
}

#[tokio::test]
async fn bad_keys_and_unknown_models_are_clear_errors() {
    let mock = mock(json!({"apiKey": "sk-test", "models": ["mock-model"], "turns": [{"text": "a"}, {"text": "b"}, {"text": "c"}]})).await;
    let error = client(&mock, Some("sk-wrong"), 5_000)
        .complete(&request(true), &|_| {}, &AtomicBool::new(false))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "provider \"mock\" rejected the API key (401): Incorrect API key provided.; check models.providers.mock.apiKey"
    );
    assert!(!error.to_string().contains("sk-wrong"));
    let good = client(&mock, Some("${MOCK_KEY}"), 5_000);
    let mut unknown = request(true);
    unknown.model = "gpt-nonexistent".into();
    let error = good
        .complete(&unknown, &|_| {}, &AtomicBool::new(false))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ProviderError::UnknownModel { model, .. } if model == "gpt-nonexistent"),
        "{error}"
    );
    assert_eq!(
        good.complete(&request(true), &|_| {}, &AtomicBool::new(false))
            .await
            .unwrap()
            .text,
        "c"
    );
    assert!(
        !format!("{:?}", good.config()).contains("sk-test"),
        "keys never show in Debug"
    );
}

#[tokio::test]
async fn timeouts_and_cancellation() {
    let mock = mock(
        json!({"turns": [{"delayMs": 3000, "text": "late"}, {"delayMs": 3000, "text": "late"}]}),
    )
    .await;
    let client = client(&mock, None, 300);
    let started = Instant::now();
    let error = client
        .complete(&request(true), &|_| {}, &AtomicBool::new(false))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ProviderError::Timeout {
                timeout_ms: 300,
                ..
            }
        ),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let client = crate::suite::openai::client(&mock, None, 10_000);
    let abort = AtomicBool::new(false);
    let started = Instant::now();
    let slow = request(true);
    let (result, ()) = tokio::join!(client.complete(&slow, &|_| {}, &abort), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        abort.store(true, Ordering::SeqCst);
    });
    assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn malformed_streams_are_errors_not_panics() {
    let mock = mock(json!({"turns": [
        {"raw": "data: {not json}\n\n"},
        {"raw": "data: {\"choices\": [{\"delta\": {\"content\": \"cut\"}}]}\n\n"},
        {"raw": "data: {\"choices\": [{\"delta\": {\"tool_calls\": [{\"index\": 5, \"function\": {\"name\": \"x\"}}]}}]}\n\n"},
    ]})).await;
    let client = client(&mock, None, 5_000);
    for expected in [
        "sent a malformed reply: key must be a string",
        "the stream ended before the reply did",
        "tool call index 5 out of order",
    ] {
        let error = client
            .complete(&request(true), &|_| {}, &AtomicBool::new(false))
            .await
            .unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
    }
}
