//! What an Anthropic Messages client gets from the same script: whole
//! replies and event streams with thinking, text and parallel tool use,
//! the `x-api-key` and model checks, scripted failures with Anthropic's
//! error bodies and retry headers, per-run replay over content blocks, and
//! a slow stream written one event at a time.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_mock_model::{MockModel, Script};

async fn start(script: Value) -> MockModel {
    MockModel::start(Script::from_json(&script).unwrap())
        .await
        .unwrap()
}

/// POSTs a Messages request; the status, the headers named and the body.
async fn post(
    mock: &MockModel,
    key: Option<&str>,
    body: Value,
) -> (u16, Vec<Option<String>>, String) {
    let mut request = reqwest::Client::new()
        .post(format!("{}/messages", mock.base_url()))
        .json(&body);
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = ["retry-after", "retry-after-ms", "x-should-retry"]
        .iter()
        .map(|name| {
            response
                .headers()
                .get(*name)
                .map(|v| v.to_str().unwrap().to_owned())
        })
        .collect();
    (status, headers, response.text().await.unwrap())
}

fn ask(stream: bool) -> Value {
    json!({"model": "claude", "max_tokens": 100, "stream": stream,
           "messages": [{"role": "user", "content": "hi"}]})
}

fn turn() -> Value {
    json!({"thinking": "Two reads.", "signature": "s1", "text": "Reading.",
           "toolCalls": [{"name": "read", "arguments": {"path": "a"}}, {"name": "list", "arguments": {}}],
           "usage": {"prompt": 7, "completion": 3, "cacheRead": 100, "cacheWrite": 20}})
}

#[tokio::test]
async fn a_whole_reply_has_thinking_text_and_parallel_tool_use() {
    let mock = start(json!({"turns": [turn()]})).await;
    let (status, _, body) = post(&mock, None, ask(false)).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"id": "msg_mock", "type": "message", "role": "assistant", "model": "claude",
               "content": [
                   {"type": "thinking", "thinking": "Two reads.", "signature": "s1"},
                   {"type": "text", "text": "Reading."},
                   {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a"}},
                   {"type": "tool_use", "id": "call_2", "name": "list", "input": {}}],
               "stop_reason": "tool_use", "stop_sequence": null,
               "usage": {"input_tokens": 7, "output_tokens": 3,
                         "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}})
    );
}

#[tokio::test]
async fn a_stream_is_anthropics_event_sequence() {
    let mock = start(json!({"turns": [turn()]})).await;
    let (status, _, body) = post(&mock, None, ask(true)).await;
    assert_eq!(status, 200);
    let events: Vec<(String, Value)> = body
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (name, data) = e.split_once('\n').unwrap();
            (
                name.strip_prefix("event: ").unwrap().to_owned(),
                serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap(),
            )
        })
        .collect();
    let kinds: Vec<String> = events
        .iter()
        .map(|(name, data)| {
            assert_eq!(data["type"], json!(name));
            match data["delta"]["type"].as_str() {
                Some(delta) => format!("{name}:{delta}"),
                None => name.clone(),
            }
        })
        .collect();
    let mut want = vec!["message_start", "ping", "content_block_start"];
    want.extend(["content_block_delta:thinking_delta"; 2]);
    want.extend(["content_block_delta:signature_delta", "content_block_stop"]);
    want.extend([
        "content_block_start",
        "content_block_delta:text_delta",
        "content_block_stop",
    ]);
    for _ in 0..2 {
        want.push("content_block_start");
        want.extend(["content_block_delta:input_json_delta"; 3]);
        want.push("content_block_stop");
    }
    want.extend(["message_delta", "message_stop"]);
    assert_eq!(kinds, want);
    let inputs: String = events
        .iter()
        .filter(|(_, d)| d["index"] == 2)
        .filter_map(|(_, d)| d["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(inputs, r#"{"path":"a"}"#);
    assert_eq!(
        events[0].1["message"]["usage"]["cache_read_input_tokens"],
        json!(100)
    );
    assert_eq!(
        events[events.len() - 2].1["usage"],
        json!({"output_tokens": 3})
    );
}

#[tokio::test]
async fn keys_models_and_scripted_failures_speak_anthropics_errors() {
    let mock = start(json!({"apiKey": "k", "models": ["claude"], "turns": [
        {"status": 529, "retryAfterMs": 20, "shouldRetry": true},
        {"status": 429, "errorType": "rate_limit_error", "retryAfter": 2},
    ]}))
    .await;
    let error = |kind: &str, message: &str| json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_mock"});
    let (status, _, body) = post(&mock, Some("wrong"), ask(false)).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()),
        (
            401,
            error("authentication_error", "Incorrect API key provided.")
        )
    );
    let mut other = ask(false);
    other["model"] = json!("gpt");
    let (status, _, body) = post(&mock, Some("k"), other).await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["type"],
        "not_found_error"
    );
    assert_eq!(status, 404);
    let (status, headers, body) = post(&mock, Some("k"), ask(true)).await;
    assert_eq!(
        (
            status,
            headers,
            serde_json::from_str::<Value>(&body).unwrap()
        ),
        (
            529,
            vec![None, Some("20".into()), Some("true".into())],
            error("overloaded_error", "scripted failure")
        )
    );
    let (status, headers, _) = post(&mock, Some("k"), ask(true)).await;
    assert_eq!((status, headers), (429, vec![Some("2".into()), None, None]));
}

#[tokio::test]
async fn per_run_replay_counts_turns_past_tool_results_and_fills_from_them() {
    let mock = start(json!({"replay": "perRun", "turns": [
        {"toolCalls": [{"name": "exec", "arguments": {}}]},
        {"toolCalls": [{"name": "wait", "arguments": {"runId": "$lastTool:/runId"}}]},
    ]}))
    .await;
    let body = json!({"model": "m", "max_tokens": 10, "stream": false, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "exec", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "{\"runId\": \"cell_9\"}"}]},
    ]});
    let (_, _, reply) = post(&mock, None, body).await;
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(
        reply["content"],
        json!([{"type": "tool_use", "id": "call_1", "name": "wait", "input": {"runId": "cell_9"}}])
    );
}

#[tokio::test]
async fn a_slow_stream_is_written_one_event_at_a_time() {
    let mock = start(json!({"turns": [{"text": "slow", "chunkDelayMs": 40}]})).await;
    let started = Instant::now();
    let response = reqwest::Client::new()
        .post(format!("{}/messages", mock.base_url()))
        .json(&ask(true))
        .send()
        .await
        .unwrap();
    let mut response = response;
    let mut chunks = 0;
    while let Some(chunk) = response.chunk().await.unwrap() {
        assert!(!chunk.is_empty());
        chunks += 1;
    }
    // message_start, ping, start, delta, stop, message_delta, message_stop.
    assert_eq!(chunks, 7);
    assert!(started.elapsed() >= Duration::from_millis(7 * 40));
    assert_eq!(mock.requests(), vec![ask(true)]);
}
