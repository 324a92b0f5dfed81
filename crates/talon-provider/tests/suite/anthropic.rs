//! The Anthropic Messages client against the mock's Messages route:
//! streamed and whole replies, parallel tool use, thinking replayed with
//! its signature, cache usage, the headers, retries (529, 429 with
//! `retry-after`, `retry-after-ms`, `x-should-retry`, an error event before
//! the reply; never a spent account), clear errors, cancellation (in a
//! retry wait, inside an endless stream), the idle timeout.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_mock_model::{MockModel, Script};
use talon_protocol::ModelTool;
use talon_provider::{
    CacheRetention, CancellationToken, ChatRequest, ChatResponse, Message, ModelInfo,
    ModelProvider, ProviderConfig, ProviderError, ReasoningBlock, StreamDelta, Thinking,
    ToolCallRequest, Usage, build,
};
use talon_testing::wait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub(crate) async fn mock(script: Value) -> MockModel {
    MockModel::start(Script::from_json(&script).unwrap())
        .await
        .unwrap()
}

/// An `anthropic-messages` provider at `base_url` (10 s a request, the
/// model `claude` with 4096 tokens and reasoning), `edit` over it.
pub(crate) fn provider(
    base_url: &str,
    edit: impl FnOnce(&mut ProviderConfig),
) -> Arc<dyn ModelProvider> {
    let mut config = ProviderConfig::new(
        "anthropic",
        talon_provider::config::ANTHROPIC_MESSAGES,
        base_url,
    );
    config.timeout = Duration::from_secs(10);
    config.models = vec![ModelInfo {
        id: "claude".into(),
        name: None,
        context_window: None,
        max_tokens: Some(4096),
        reasoning: true,
        cost: None,
    }];
    edit(&mut config);
    build(config).unwrap()
}

pub(crate) fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        model: "claude".into(),
        messages: vec![
            Message::System("be brief".into()),
            Message::User("hi".into()),
        ],
        tools: Arc::new(vec![ModelTool {
            name: "read".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }]),
        stream,
        ..ChatRequest::default()
    }
}

/// `complete` with a sink that keeps the deltas.
pub(crate) async fn complete(
    client: &dyn ModelProvider,
    request: &ChatRequest,
) -> (Result<ChatResponse, ProviderError>, Vec<StreamDelta>) {
    let deltas = Mutex::new(Vec::new());
    let sink = |d: StreamDelta| deltas.lock().unwrap().push(d);
    let result = client
        .complete(request, &sink, &CancellationToken::new())
        .await;
    (result, deltas.into_inner().unwrap())
}

fn turn() -> Value {
    json!({"thinking": "Read both.", "signature": "sig-a", "text": "Reading.",
           "toolCalls": [{"name": "read", "arguments": {"path": "a"}},
                         {"name": "read", "arguments": {"path": "b"}}],
           "usage": {"prompt": 7, "completion": 30, "cacheRead": 100, "cacheWrite": 20}})
}

/// The reply the mock's `turn()` is, with `tool_bytes` of tools sent.
fn expected_reply(tool_bytes: u64) -> ChatResponse {
    let call = |id: &str, path: &str| ToolCallRequest {
        id: id.into(),
        name: "read".into(),
        arguments: format!("{{\"path\":\"{path}\"}}"),
    };
    ChatResponse {
        text: "Reading.".into(),
        tool_calls: vec![call("call_1", "a"), call("call_2", "b")],
        usage: Usage {
            input_tokens: 127,
            output_tokens: 30,
            cache_read_tokens: 100,
            cache_write_tokens: 20,
        },
        finish_reason: "tool_calls".into(),
        reasoning: vec![ReasoningBlock::Thinking {
            text: "Read both.".into(),
            signature: Some("sig-a".into()),
        }],
        raw: Default::default(),
        tool_bytes,
    }
}

/// Bytes of the tools the mock's last request carried, as JSON text.
fn tools_sent(mock: &talon_mock_model::MockModel) -> u64 {
    let last = mock.requests().pop().unwrap();
    last["tools"].to_string().len() as u64
}

/// `reply` without its native payload, and the payload's events' types
/// (`event` for a whole reply's body: its `type`).
fn native(mut reply: ChatResponse) -> (ChatResponse, Vec<String>) {
    let raw = std::mem::take(&mut reply.raw).to_json();
    let types = raw["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
        .collect();
    (reply, types)
}

#[tokio::test]
async fn a_streamed_tool_cycle_with_thinking_is_replayed_verbatim() {
    let mock = mock(json!({"turns": [turn(), {"text": "Done."}]})).await;
    let client = provider(&mock.base_url(), |_| {});
    let mut first = request(true);
    first.thinking = Thinking::Budget(2048);
    first.cache = CacheRetention::Short;
    let (reply, deltas) = complete(&*client, &first).await;
    let (reply, types) = native(reply.unwrap());
    assert_eq!(reply, expected_reply(tools_sent(&mock)));
    // The stream's events as they came, for the envelope's `raw`.
    assert_eq!(
        (
            types.first().map(String::as_str),
            types.last().map(String::as_str)
        ),
        (Some("message_start"), Some("message_stop"))
    );
    let args = |index: usize, text: &str| StreamDelta::ToolCallArguments {
        index,
        text: text.into(),
    };
    let started = |index: usize, id: &str| StreamDelta::ToolCallStarted {
        index,
        id: id.into(),
        name: "read".into(),
    };
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Thinking("Read bot".into()),
            StreamDelta::Thinking("h.".into()),
            StreamDelta::Text("Reading.".into()),
            started(0, "call_1"),
            args(0, "{\"path"),
            args(0, "\":\"a\"}"),
            started(1, "call_2"),
            args(1, "{\"path"),
            args(1, "\":\"b\"}"),
        ]
    );
    // The loop's next request: the reply with its reasoning, then the
    // results (here out of order).
    let mut next = first.clone();
    next.messages.push(Message::Assistant {
        text: Some(reply.text.clone()),
        tool_calls: reply.tool_calls.clone(),
        reasoning: reply.reasoning.clone(),
    });
    for id in ["call_2", "call_1"] {
        next.messages.push(Message::Tool {
            call_id: id.into(),
            content: format!("content of {id}"),
        });
    }
    let (done, _) = complete(&*client, &next).await;
    assert_eq!(done.unwrap().text, "Done.");
    let requests = mock.requests();
    let marker = json!({"type": "ephemeral"});
    assert_eq!(
        requests[1],
        json!({
            "model": "claude", "max_tokens": 4096, "stream": true,
            "system": [{"type": "text", "text": "be brief", "cache_control": marker}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Read both.", "signature": "sig-a"},
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "call_2", "name": "read", "input": {"path": "b"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "content of call_1"},
                    {"type": "tool_result", "tool_use_id": "call_2", "content": "content of call_2",
                     "cache_control": marker}]},
            ],
            "tools": [{"name": "read", "description": "Read a file.",
                       "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
                       "cache_control": marker}],
            "thinking": {"type": "enabled", "budget_tokens": 2048},
        })
    );
}

#[tokio::test]
async fn a_whole_reply_is_the_same_reply() {
    let mock = mock(json!({"turns": [turn()]})).await;
    let client = provider(&format!("{}/", mock.base_url()), |_| {});
    let (reply, deltas) = complete(&*client, &request(false)).await;
    assert_eq!(
        native(reply.unwrap()),
        (
            expected_reply(tools_sent(&mock)),
            vec!["message".to_owned()]
        )
    );
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Thinking("Read both.".into()),
            StreamDelta::Text("Reading.".into())
        ]
    );
    assert_eq!(mock.requests()[0]["max_tokens"], json!(4096));
}

/// A server that records one request's head and answers `reply` (a whole
/// HTTP response), then waits for the client to go.
async fn one_shot(reply: String) -> (String, tokio::task::JoinHandle<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
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
        socket.write_all(reply.as_bytes()).await.unwrap();
        while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
        head
    });
    (url, task)
}

fn chunked(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n",
        body.len()
    )
}

const STREAM_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n";

#[tokio::test]
async fn requests_carry_the_key_and_version_and_no_authorization() {
    let body = format!(
        "{STREAM_START}data: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{{\"output_tokens\":1}}}}\n\ndata: {{\"type\":\"message_stop\"}}\n\n"
    );
    let (url, server) = one_shot(format!("{}0\r\n\r\n", chunked("200 OK", &body))).await;
    let client = provider(&url, |p| p.api_key = Some("sk-ant-secret".into()));
    let (reply, _) = complete(&*client, &request(true)).await;
    // The native payload is the stream's own events and the tools' size
    // the request's (both tested elsewhere).
    let reply = ChatResponse {
        raw: Default::default(),
        tool_bytes: 0,
        ..reply.unwrap()
    };
    assert_eq!(
        reply,
        ChatResponse {
            usage: Usage {
                input_tokens: 3,
                output_tokens: 1,
                ..Usage::default()
            },
            finish_reason: "stop".into(),
            ..ChatResponse::default()
        }
    );
    // Dropping the client closes its pooled connection; the server ends.
    drop(client);
    let head = server.await.unwrap();
    assert!(head.starts_with("post /v1/messages http/1.1\r\n"), "{head}");
    let lines: Vec<&str> = head.lines().collect();
    assert!(lines.contains(&"x-api-key: sk-ant-secret"), "{head}");
    assert!(lines.contains(&"anthropic-version: 2023-06-01"), "{head}");
    assert!(!head.contains("authorization"), "{head}");
}

#[tokio::test]
async fn overload_and_rate_limits_are_retried_as_the_server_says() {
    let mock = mock(json!({"turns": [
        {"status": 529, "retryAfterMs": 10},
        {"status": 429, "retryAfter": 1},
        {"text": "ok"},
        {"status": 529, "shouldRetry": false},
        {"status": 400, "shouldRetry": true, "retryAfterMs": 10},
        {"status": 400},
    ]}))
    .await;
    let client = provider(&mock.base_url(), |_| {});
    let started = Instant::now();
    let (reply, _) = complete(&*client, &request(true)).await;
    assert_eq!(reply.unwrap().text, "ok");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after honoured"
    );
    assert_eq!(mock.requests().len(), 3);
    // `x-should-retry: false` wins over a retryable status.
    let (error, _) = complete(&*client, &request(true)).await;
    assert_eq!(
        error.unwrap_err(),
        ProviderError::Unavailable {
            provider: "anthropic".into(),
            status: 529,
            attempts: 1,
            message: "overloaded_error: scripted failure".into(),
        }
    );
    // `x-should-retry: true` wins over a status that is not; the plain
    // 400 after it is not retried.
    let (error, _) = complete(&*client, &request(true)).await;
    assert_eq!(
        error.unwrap_err(),
        ProviderError::Status {
            provider: "anthropic".into(),
            status: 400,
            message: "invalid_request_error: scripted failure".into(),
        }
    );
    assert_eq!(mock.requests().len(), 6);
}

#[tokio::test]
async fn retries_run_out_as_unavailable() {
    let overloaded = json!({"status": 529, "retryAfterMs": 5});
    let mock = mock(json!({"turns": [overloaded, overloaded, overloaded, overloaded]})).await;
    let client = provider(&mock.base_url(), |p| p.max_retries = 3);
    let (error, _) = complete(&*client, &request(false)).await;
    let error = error.unwrap_err();
    assert_eq!(
        error,
        ProviderError::Unavailable {
            provider: "anthropic".into(),
            status: 529,
            attempts: 4,
            message: "overloaded_error: scripted failure".into(),
        }
    );
    assert!(error.api_error().retryable);
}

const OVERLOADED_EVENT: &str = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";

#[tokio::test]
async fn an_error_event_is_retried_only_before_the_reply_began() {
    let text_start = "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n";
    let mock = mock(json!({"turns": [
        {"raw": format!("{STREAM_START}{OVERLOADED_EVENT}")},
        {"text": "Hello"},
        {"raw": format!("{STREAM_START}{text_start}{OVERLOADED_EVENT}")},
        {"text": "never asked for"},
    ]}))
    .await;
    let client = provider(&mock.base_url(), |_| {});
    let (reply, deltas) = complete(&*client, &request(true)).await;
    assert_eq!(reply.unwrap().text, "Hello");
    assert_eq!(deltas, vec![StreamDelta::Text("Hello".into())]);
    let (error, deltas) = complete(&*client, &request(true)).await;
    assert_eq!(
        error.unwrap_err(),
        ProviderError::Unavailable {
            provider: "anthropic".into(),
            status: 529,
            attempts: 1,
            message: "overloaded_error: Overloaded".into(),
        }
    );
    assert_eq!(deltas, vec![StreamDelta::Text("Hel".into())]);
    assert_eq!(mock.requests().len(), 3, "no retry once text was shown");
}

#[tokio::test]
async fn bad_keys_and_unknown_models_are_clear_errors() {
    let mock =
        mock(json!({"apiKey": "sk-ant", "models": ["claude"], "turns": [{"text": "a"}]})).await;
    let (error, _) = complete(
        &*provider(&mock.base_url(), |p| p.api_key = Some("sk-wrong".into())),
        &request(true),
    )
    .await;
    let error = error.unwrap_err();
    assert_eq!(
        error.to_string(),
        "provider \"anthropic\" rejected the API key (401): authentication_error: Incorrect API key provided.; check models.providers.anthropic.apiKey"
    );
    let good = provider(&mock.base_url(), |p| p.api_key = Some("sk-ant".into()));
    let mut unknown = request(true);
    unknown.model = "claude-nonexistent".into();
    let (error, _) = complete(&*good, &unknown).await;
    assert!(
        matches!(&error, Err(ProviderError::UnknownModel { model, .. }) if model == "claude-nonexistent"),
        "{error:?}"
    );
    assert_eq!(good.check_auth(Duration::from_secs(5)).await, Ok(()));
    assert!(matches!(
        provider(&mock.base_url(), |p| p.api_key = Some("sk-wrong".into()))
            .check_auth(Duration::from_secs(5))
            .await,
        Err(ProviderError::Auth { status: 401, .. })
    ));
    let (reply, _) = complete(&*good, &request(true)).await;
    assert_eq!(reply.unwrap().text, "a");
}

#[tokio::test]
async fn cancellation_interrupts_a_retry_wait() {
    let mock = mock(json!({"turns": [{"status": 529, "retryAfter": 30}]})).await;
    let client = provider(&mock.base_url(), |_| {});
    let cancel = CancellationToken::new();
    let request = request(true);
    let call = client.complete(&request, &|_| {}, &cancel);
    let (result, cancelled) = tokio::join!(call, async {
        wait::until_async("the mock to get the request", wait::DEADLINE, async || {
            mock.requests().len() == 1
        })
        .await;
        // The 529 is answered at once; let it reach the client's wait.
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
        Instant::now()
    });
    assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
    assert!(cancelled.elapsed() < Duration::from_millis(500));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_slow_stream_lives_and_a_stalled_one_times_out() {
    let mock = mock(json!({"turns": [
        {"text": "slow but alive", "chunkDelayMs": 150},
        {"text": "stalled", "chunkDelayMs": 5000},
    ]}))
    .await;
    let client = provider(&mock.base_url(), |p| {
        p.idle_timeout = Duration::from_millis(600)
    });
    let started = Instant::now();
    let (reply, _) = complete(&*client, &request(true)).await;
    assert_eq!(reply.unwrap().text, "slow but alive");
    assert!(
        started.elapsed() > Duration::from_millis(1000),
        "longer than the idle timeout"
    );
    let (error, _) = complete(&*client, &request(true)).await;
    let error = error.unwrap_err();
    assert_eq!(
        error,
        ProviderError::Stalled {
            provider: "anthropic".into(),
            idle_ms: 600
        }
    );
    assert_eq!(
        error.api_error().code,
        talon_protocol::gateway::ErrorCode::Timeout
    );
}

#[tokio::test]
async fn a_spent_account_is_not_retried() {
    let spent = json!({"type": "error", "error": {"type": "rate_limit_error",
        "message": "You have reached your specified API usage limits.",
        "details": {"error_code": "enforced_spend_limit_reached"}}});
    let mock = mock(json!({"turns": [
        {"status": 429, "retryAfterMs": 5, "raw": spent.to_string()},
        {"text": "never asked for"},
    ]}))
    .await;
    let client = provider(&mock.base_url(), |_| {});
    let (error, _) = complete(&*client, &request(true)).await;
    assert_eq!(
        error.unwrap_err(),
        ProviderError::Unavailable {
            provider: "anthropic".into(),
            status: 429,
            attempts: 1,
            message: "rate_limit_error: You have reached your specified API usage limits.".into(),
        }
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn cancelling_a_stream_that_never_ends_closes_it_at_once() {
    let events = format!(
        "{STREAM_START}data: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"partial\"}}}}\n\n"
    );
    // A chunked body that never ends: no last chunk.
    let (url, server) = one_shot(chunked("200 OK", &events)).await;
    let client = provider(&url, |p| p.timeout = Duration::from_millis(120_000));
    let first = tokio::sync::Notify::new();
    let got = Mutex::new(Vec::new());
    let sink = |d: StreamDelta| {
        got.lock().unwrap().push(d);
        first.notify_one();
    };
    let cancel = CancellationToken::new();
    let request = request(true);
    let (result, cancelled) = tokio::join!(client.complete(&request, &sink, &cancel), async {
        first.notified().await;
        cancel.cancel();
        Instant::now()
    });
    assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
    assert!(cancelled.elapsed() < Duration::from_millis(500));
    assert_eq!(*got.lock().unwrap(), [StreamDelta::Text("partial".into())]);
    // The connection was dropped with the request (the client's pool
    // keeps no half-read stream).
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the client kept the connection open")
        .unwrap();
}
