//! The Chat Completions client: streaming, tool calls, usage, retries,
//! timeouts, cancellation, and clear errors.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;
use talon_mock_model::{MockModel, Script};
use talon_protocol::ModelTool;
use talon_provider::config::OPENAI_COMPLETIONS;
use talon_provider::openai::OpenAiCompatible;
use talon_provider::{
    CancellationToken, ChatRequest, Message, ModelInfo, ModelProvider, ProviderConfig,
    ProviderError, StreamDelta, ToolCallRequest,
};
use talon_testing::wait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn mock(script: serde_json::Value) -> MockModel {
    MockModel::start(Script::from_json(&script).unwrap())
        .await
        .unwrap()
}

fn client(mock: &MockModel, key: Option<&str>, timeout_ms: u64) -> OpenAiCompatible {
    let mut config = ProviderConfig::new("mock", OPENAI_COMPLETIONS, &mock.base_url());
    config.timeout = Duration::from_millis(timeout_ms);
    config.models = vec![ModelInfo {
        id: "mock-model".into(),
        name: Some("Mock Model".into()),
        context_window: Some(200_000),
        max_tokens: Some(4096),
        reasoning: false,
        cost: None,
    }];
    config.api_key = key.map(str::to_owned);
    OpenAiCompatible::new(config).unwrap()
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
        ..ChatRequest::default()
    }
}

#[tokio::test]
async fn streamed_text_arrives_in_deltas_with_usage() {
    let mock = mock(json!({"turns": [{"text": "Hello from the mock model!", "usage": {"prompt": 42, "completion": 7}}]})).await;
    let client = client(&mock, None, 10_000);
    let deltas = Mutex::new(Vec::new());
    let sink = |d: StreamDelta| deltas.lock().unwrap().push(d);
    let reply = client
        .complete(&request(true), &sink, &CancellationToken::new())
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
        .complete(&request(true), &|_| {}, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        (reply.tool_calls.clone(), reply.finish_reason.as_str()),
        (expected.clone(), "tool_calls")
    );
    let reply = client
        .complete(&request(false), &|_| {}, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.tool_calls, expected);
    // Each reply says how many bytes of tools its request carried.
    let sent: Vec<u64> = mock
        .requests()
        .iter()
        .map(|r| r["tools"].to_string().len() as u64)
        .collect();
    assert_eq!(sent, vec![reply.tool_bytes; 2]);
    assert!(reply.tool_bytes > 0);
    // The follow-up carries the calls and their results in the wire format.
    let mut follow = request(false);
    follow.messages.push(Message::Assistant {
        text: None,
        tool_calls: expected.clone(),
        reasoning: Vec::new(),
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
        .complete(&request(true), &|_| {}, &CancellationToken::new())
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
        .complete(&request(false), &|_| {}, &CancellationToken::new())
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
    let mut config = ProviderConfig::new("mock", OPENAI_COMPLETIONS, &mock.base_url());
    config.max_retries = 3;
    // Short backoff is not configurable: 0.5 + 1 + 2 s.
    OpenAiCompatible::new(config).unwrap()
}

#[tokio::test]
async fn bad_keys_and_unknown_models_are_clear_errors() {
    // Refused requests take no turn of the script.
    let mock =
        mock(json!({"apiKey": "sk-test", "models": ["mock-model"], "turns": [{"text": "a"}]}))
            .await;
    let error = client(&mock, Some("sk-wrong"), 5_000)
        .complete(&request(true), &|_| {}, &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "provider \"mock\" rejected the API key (401): Incorrect API key provided.; check models.providers.mock.apiKey"
    );
    assert!(!error.to_string().contains("sk-wrong"));
    let good = client(&mock, Some("sk-test"), 5_000);
    let mut unknown = request(true);
    unknown.model = "gpt-nonexistent".into();
    let error = good
        .complete(&unknown, &|_| {}, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ProviderError::UnknownModel { model, .. } if model == "gpt-nonexistent"),
        "{error}"
    );
    assert_eq!(
        good.complete(&request(true), &|_| {}, &CancellationToken::new())
            .await
            .unwrap()
            .text,
        "a"
    );
    assert!(
        !format!("{:?}", good.config()).contains("sk-test"),
        "keys never show in Debug"
    );
}

#[tokio::test]
async fn a_slow_provider_hits_the_request_timeout() {
    let mock = mock(json!({"turns": [{"delayMs": 3000, "text": "late"}]})).await;
    let client = client(&mock, None, 300);
    let started = Instant::now();
    let error = client
        .complete(&request(true), &|_| {}, &CancellationToken::new())
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
}

/// Runs `complete` while `trigger` decides when to cancel; the result and
/// how long after the cancellation it came back.
async fn cancelled_after(
    client: &OpenAiCompatible,
    request: &ChatRequest,
    sink: talon_provider::DeltaSink<'_>,
    cancel: &CancellationToken,
    trigger: impl Future<Output = ()>,
) -> (
    talon_provider::Result<talon_provider::ChatResponse>,
    Duration,
) {
    let call = async {
        let result = client.complete(request, sink, cancel).await;
        (result, Instant::now())
    };
    let ((result, returned), cancelled) = tokio::join!(call, async {
        trigger.await;
        cancel.cancel();
        Instant::now()
    });
    (result, returned.saturating_duration_since(cancelled))
}

#[tokio::test]
async fn cancellation_ends_a_request_at_once_whatever_it_waits_on() {
    // Nothing polls: each request ends as soon as the token is cancelled
    // (the bound is generous; the latency itself is benchmarked elsewhere).
    let bound = Duration::from_millis(500);
    let mock = mock(json!({"turns": [
        {"delayMs": 60000, "text": "late"},
        {"status": 429, "retryAfter": 30},
    ]}))
    .await;
    let client = client(&mock, None, 120_000);
    // Waiting for the answer.
    let cancel = CancellationToken::new();
    let (result, latency) = cancelled_after(&client, &request(true), &|_| {}, &cancel, async {
        wait::until_async("the mock to get the request", wait::DEADLINE, async || {
            mock.requests().len() == 1
        })
        .await;
    })
    .await;
    assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
    assert!(latency < bound, "{latency:?}");
    // Waiting out a `Retry-After` before trying again.
    let cancel = CancellationToken::new();
    let (result, latency) = cancelled_after(&client, &request(true), &|_| {}, &cancel, async {
        wait::until_async(
            "the mock to get the second request",
            wait::DEADLINE,
            async || mock.requests().len() == 2,
        )
        .await;
        // Not a wait on a condition (the client's wait on `Retry-After` is
        // not visible from here): lets the 429, answered at once, reach the
        // client. A cancellation that came sooner must end the request just
        // as promptly.
        tokio::time::sleep(Duration::from_millis(50)).await;
    })
    .await;
    assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
    assert!(latency < bound, "{latency:?}");
    assert_eq!(mock.requests().len(), 2, "no retry after the cancellation");
    // A token cancelled before the request: nothing is sent.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let error = client
        .complete(&request(true), &|_| {}, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error, ProviderError::Cancelled);
    assert_eq!(mock.requests().len(), 2);
}

/// A Chat Completions endpoint whose stream sends one text delta and then
/// never ends. The task ends when the client closes the connection.
async fn endless_stream() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        // The request: headers, then `content-length` bytes of body.
        let mut request = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        let body_start = loop {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client closed before sending its request");
            request.extend_from_slice(&buf[..n]);
            if let Some(i) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&request[..body_start]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        while request.len() < body_start + length {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0);
            request.extend_from_slice(&buf[..n]);
        }
        let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"},\"finish_reason\":null}]}\n\n";
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
            event.len()
        );
        socket.write_all(response.as_bytes()).await.unwrap();
        // Never another byte; wait for the client to go.
        while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
    });
    (url, task)
}

#[tokio::test]
async fn cancelling_a_stream_that_never_ends_closes_it_at_once() {
    let (url, server) = endless_stream().await;
    let mut config = ProviderConfig::new("endless", OPENAI_COMPLETIONS, &url);
    config.timeout = Duration::from_millis(120_000);
    let client = OpenAiCompatible::new(config).unwrap();
    let (first, got_first) = (tokio::sync::Notify::new(), Mutex::new(Vec::new()));
    let sink = |d: StreamDelta| {
        got_first.lock().unwrap().push(d);
        first.notify_one();
    };
    let cancel = CancellationToken::new();
    let (result, latency) = cancelled_after(&client, &request(true), &sink, &cancel, async {
        first.notified().await;
    })
    .await;
    assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
    assert!(latency < Duration::from_millis(500), "{latency:?}");
    assert_eq!(
        *got_first.lock().unwrap(),
        [StreamDelta::Text("partial".into())]
    );
    // The connection was dropped with the request.
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the client kept the connection open")
        .unwrap();
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
            .complete(&request(true), &|_| {}, &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
        // Only the reply that is not JSON came from the decoder.
        assert_eq!(
            std::error::Error::source(&error).is_some(),
            expected.contains("key must be a string"),
            "{error:?}"
        );
    }
}

#[tokio::test]
async fn a_provider_that_is_down_is_unavailable_and_names_its_url_without_credentials() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base_url = format!("http://user:pw@127.0.0.1:{port}/v1?key=s3cret");
    let mut config = ProviderConfig::new("down", OPENAI_COMPLETIONS, &base_url);
    config.max_retries = 0;
    let client = OpenAiCompatible::new(config).unwrap();
    let error = client
        .complete(&request(true), &|_| {}, &CancellationToken::new())
        .await
        .unwrap_err();
    let api = error.api_error();
    let shown = format!("http://127.0.0.1:{port}/v1");
    assert_eq!(
        (api.code, api.retryable, api.details.clone()),
        (
            talon_protocol::gateway::ErrorCode::Unavailable,
            true,
            Some(
                serde_json::from_value(
                    json!({"reason": "provider_unreachable", "provider": "down", "baseUrl": shown})
                )
                .unwrap()
            )
        )
    );
    assert!(
        api.message
            .starts_with(&format!("provider \"down\" at {shown} cannot be reached: "))
            && api
                .message
                .ends_with("(is it running? check models.providers.down.baseUrl)")
            && !api.message.contains("pw")
            && !api.message.contains("s3cret"),
        "{}",
        api.message
    );
    // The HTTP client's error is kept as the source, without the URL.
    let mut chain = String::new();
    let mut cause = std::error::Error::source(&error);
    assert!(cause.is_some(), "{error:?}");
    while let Some(next) = cause {
        chain.push_str(&format!("{next}\n"));
        cause = next.source();
    }
    assert!(
        !chain.contains("pw") && !chain.contains("s3cret"),
        "{chain}"
    );
}
