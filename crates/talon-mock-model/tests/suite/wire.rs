//! What a Chat Completions client gets: whole replies and streamed
//! chunks, tool calls, the key and model checks, scripted failures with
//! `Retry-After`, the end of the script, per-run replay, a value passed
//! on from the last tool result, and the requests recorded.

use serde_json::{Value, json};
use talon_mock_model::{MockModel, Script};

async fn start(script: Value) -> MockModel {
    MockModel::start(Script::from_json(&script).unwrap())
        .await
        .unwrap()
}

/// POSTs a completion request; the status, `Retry-After` and the body
/// (JSON, or the raw text of a stream).
async fn complete(
    mock: &MockModel,
    key: Option<&str>,
    body: Value,
) -> (u16, Option<String>, String) {
    let mut request = reqwest::Client::new()
        .post(format!("{}/chat/completions", mock.base_url()))
        .json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, retry, response.text().await.unwrap())
}

fn ask(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn a_whole_reply_carries_the_text_the_calls_and_the_usage() {
    let mock = start(json!({"turns": [
        {"toolCalls": [{"name": "read", "arguments": {"path": "a"}},
                       {"name": "list", "arguments": {}}],
         "usage": {"prompt": 10, "completion": 2}},
        {"text": "done", "usage": {"prompt": 20, "completion": 1}}]}))
    .await;
    let (status, _, body) = complete(&mock, None, ask("mock-model", false)).await;
    assert_eq!(status, 200);
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        reply,
        json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 0,
               "model": "mock-model",
               "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                   "role": "assistant", "content": null, "tool_calls": [
                       {"id": "call_1", "type": "function",
                        "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
                       {"id": "call_2", "type": "function",
                        "function": {"name": "list", "arguments": "{}"}}]}}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
    );
    let (_, _, body) = complete(&mock, None, ask("mock-model", false)).await;
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (
            &reply["choices"][0]["message"],
            &reply["choices"][0]["finish_reason"]
        ),
        (
            &json!({"role": "assistant", "content": "done"}),
            &json!("stop")
        )
    );
    assert_eq!(
        mock.requests(),
        vec![ask("mock-model", false), ask("mock-model", false)]
    );
    assert_eq!(mock.remaining(), 0);
}

#[tokio::test]
async fn a_streamed_reply_rebuilds_to_the_scripted_text_and_ends_with_done() {
    let mock = start(json!({"turns": [
        {"text": "The notes say: the answer is 42.", "usage": {"prompt": 7, "completion": 9}}]}))
    .await;
    let (status, _, body) = complete(&mock, None, ask("mock-model", true)).await;
    assert_eq!(status, 200);
    let data: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "The notes say: the answer is 42.");
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&json!("stop")]);
    let usage: Vec<&Value> = chunks.iter().filter_map(|c| c.get("usage")).collect();
    assert_eq!(
        usage.last(),
        Some(&&json!({"prompt_tokens": 7, "completion_tokens": 9, "total_tokens": 16}))
    );
}

#[tokio::test]
async fn the_key_the_model_and_the_scripts_end_are_checked_as_openai_does() {
    let mock = start(json!({"apiKey": "sk-test", "models": ["mock-model"],
                            "turns": [{"text": "one"}]}))
    .await;
    let error =
        |body: &str| -> Value { serde_json::from_str::<Value>(body).unwrap()["error"].clone() };
    let (status, _, body) = complete(&mock, None, ask("mock-model", false)).await;
    assert_eq!(
        (status, error(&body)),
        (
            401,
            json!({"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"})
        )
    );
    let (status, _, body) = complete(&mock, Some("sk-test"), ask("gpt-9", false)).await;
    assert_eq!(
        (status, error(&body)["code"].clone()),
        (404, json!("model_not_found"))
    );
    let (status, _, _) = complete(&mock, Some("sk-test"), ask("mock-model", false)).await;
    assert_eq!(status, 200);
    let (status, _, body) = complete(&mock, Some("sk-test"), ask("mock-model", false)).await;
    assert_eq!(
        (status, error(&body)["code"].clone()),
        (500, json!("script_exhausted"))
    );
    let models: Value = reqwest::Client::new()
        .get(format!("{}/models", mock.base_url()))
        .bearer_auth("sk-test")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        models,
        json!({"object": "list", "data": [{"id": "mock-model", "object": "model", "owned_by": "mock"}]})
    );
}

#[tokio::test]
async fn scripted_failures_carry_their_status_and_retry_after() {
    let mock = start(json!({"turns": [{"status": 429, "retryAfter": 3}, {"status": 503}]})).await;
    let (status, retry, _) = complete(&mock, None, ask("m", false)).await;
    assert_eq!((status, retry), (429, Some("3".to_owned())));
    let (status, retry, _) = complete(&mock, None, ask("m", false)).await;
    assert_eq!((status, retry), (503, None));
}

#[tokio::test]
async fn per_run_replay_and_values_passed_on_from_the_last_tool() {
    let mock = start(json!({"replay": "perRun", "turns": [
        {"toolCalls": [{"name": "exec", "arguments": {"code": "return 1"}}]},
        {"toolCalls": [{"name": "wait", "arguments": {"runId": "$lastTool:/runId"}}]}]}))
    .await;
    // Two runs each start from the first turn.
    for _ in 0..2 {
        let (_, _, body) = complete(&mock, None, ask("m", false)).await;
        let reply: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
            "exec"
        );
    }
    // After the model's call and the tool's answer, the second turn, with
    // the answer's `runId` in its arguments.
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "exec", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"status\":\"waiting\",\"runId\":\"cm_7\"}"}]});
    let (_, _, reply) = complete(&mock, None, body).await;
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(
        reply["choices"][0]["message"]["tool_calls"][0]["function"],
        json!({"name": "wait", "arguments": "{\"runId\":\"cm_7\"}"})
    );
}

#[tokio::test]
async fn bad_scripts_and_bad_bodies_are_errors() {
    assert!(Script::from_json(&json!({"turns": "no"})).is_err());
    let mock = start(json!({"turns": [{"text": "x"}]})).await;
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", mock.base_url()))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_json");
    // The turn was not used up by the bad body.
    assert_eq!(mock.remaining(), 1);
}
