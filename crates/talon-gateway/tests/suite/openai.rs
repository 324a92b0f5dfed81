//! The OpenAI-compatible surface (`/v1/models`, `/v1/chat/completions`,
//! `/v1/responses`) over real HTTP: what the official clients rely on
//! (tests/openai drives those clients themselves), and what they cannot
//! show: the session rule, resumes by sequence number (also after a
//! restart), the approval rule, scopes, and hostile requests.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};

use super::{TestGateway, tool_turn};

/// One answer: status, headers, body text.
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    }
    /// A chat stream's `data:` payloads, `[DONE]` as the string.
    pub fn data(&self) -> Vec<Value> {
        self.text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap_or(json!(d)))
            .collect()
    }
}

pub async fn post(
    g: &TestGateway,
    token: &str,
    path: &str,
    body: Value,
    headers: &[(&str, &str)],
) -> Answer {
    let mut request = g.client.post(g.url(path)).bearer_auth(token).json(&body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    answer(request).await
}

pub async fn get(g: &TestGateway, token: &str, path: &str) -> Answer {
    answer(g.client.get(g.url(path)).bearer_auth(token)).await
}

async fn answer(request: reqwest::RequestBuilder) -> Answer {
    let response = tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .expect("no answer")
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = tokio::time::timeout(Duration::from_secs(30), response.text())
        .await
        .expect("the body never ended")
        .unwrap();
    Answer {
        status,
        headers,
        text,
    }
}

pub async fn token(g: &TestGateway, scopes: &[&str]) -> String {
    let (status, created) = g
        .call(
            &g.admin,
            "tokens.create",
            json!({"name": "openai-test", "scopes": scopes, "expiresInMs": 3_600_000}),
        )
        .await;
    assert_eq!(status, 200, "{created}");
    created["token"].as_str().unwrap().to_owned()
}

fn chat(messages: Value) -> Value {
    json!({"model": "talon/main", "messages": messages})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

/// The texts of the user and assistant messages of the model's last
/// request.
fn last_request_texts(g: &TestGateway) -> Vec<String> {
    let requests = g.mock.requests();
    requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" || (m["role"] == "assistant" && m["content"].is_string()))
        .map(|m| {
            format!(
                "{}: {}",
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn per_run(turns: Vec<Turn>) -> Script {
    Script {
        turns,
        replay: Replay::PerRun,
        ..Script::default()
    }
}

fn say(text: &str) -> Turn {
    Turn {
        text: Some(text.into()),
        usage: (7, 3),
        ..Turn::default()
    }
}

#[tokio::test]
async fn models_are_the_agents_a_token_may_run() {
    let g = TestGateway::start().await;
    let list = get(&g, &g.admin, "/v1/models").await;
    let mut body = list.json();
    body["data"][0]["created"] = json!(0);
    assert_eq!(
        (list.status, body),
        (
            200,
            json!({"object": "list", "data": [{"id": "talon/main", "object": "model", "created": 0, "owned_by": "talon"}]})
        )
    );
    let reader = token(&g, &["agent.read"]).await;
    assert_eq!(
        get(&g, &reader, "/v1/models").await.json(),
        json!({"object": "list", "data": []})
    );
    let outsider = token(&g, &["session.read"]).await;
    let refused = get(&g, &outsider, "/v1/models").await;
    assert_eq!(
        (refused.status, refused.json()["error"]["type"].clone()),
        (403, json!("permission_error"))
    );
    let bad = get(&g, "talon_not_a_token", "/v1/models").await;
    assert_eq!(
        (
            bad.status,
            bad.json()["error"]["type"].clone(),
            bad.header("x-should-retry")
        ),
        (401, json!("authentication_error"), "false".into())
    );
    for path in [
        "/v1/models/talon/main",
        "/v1/models/talon%2Fmain",
        "/v1/models/main",
    ] {
        assert_eq!(
            get(&g, &g.admin, path).await.json()["id"],
            "talon/main",
            "{path}"
        );
    }
    let missing = get(&g, &g.admin, "/v1/models/talon/nobody").await;
    assert_eq!(
        (missing.status, missing.json()["error"]["code"].clone()),
        (404, json!("model_not_found"))
    );
}

#[tokio::test]
async fn a_completion_whole_and_streamed_say_the_same() {
    let mut listed = tool_turn("list", json!({"path": "."}));
    listed.usage = (7, 3);
    let g = TestGateway::with_script(per_run(vec![listed, say("All done.")])).await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let whole = post(
        &g,
        &g.admin,
        "/v1/chat/completions",
        chat(json!([user("hi")])),
        &[],
    )
    .await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let body = whole.json();
    let run_id = whole.header("x-talon-run-id");
    assert_eq!(body["id"], format!("chatcmpl-{run_id}"));
    let mut choice = body["choices"][0].clone();
    let progress = choice["message"]["reasoning_content"].as_str().unwrap();
    // The call's duration varies.
    let (before, after) = progress.split_once("✓ list (").unwrap();
    let shown = format!("{before}✓ list (N{}", &after[after.find(" ms)").unwrap()..]);
    choice["message"]["reasoning_content"] = json!(shown);
    assert_eq!(
        choice,
        json!({"index": 0, "finish_reason": "stop", "logprobs": null, "message": {
            "role": "assistant", "content": "All done.", "refusal": null,
            "reasoning_content": "→ list {\"path\":\".\"}\n✓ list (N ms)\n"}}),
        "tool progress as reasoning_content"
    );
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 14, "completion_tokens": 6, "total_tokens": 20})
    );
    let mut request = chat(json!([user("hi")]));
    request["stream"] = json!(true);
    request["stream_options"] = json!({"include_usage": true});
    let streamed = post(&g, &g.admin, "/v1/chat/completions", request, &[]).await;
    assert_eq!(streamed.header("content-type"), "text/event-stream");
    assert!(
        !streamed.text.lines().any(|l| l.starts_with("id:")),
        "no id: lines"
    );
    let data = streamed.data();
    assert_eq!(data.last().unwrap(), &json!("[DONE]"));
    let chunks = &data[..data.len() - 1];
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "All done.");
    let steps: Vec<Value> = chunks
        .iter()
        .filter_map(|c| c.get("talon").cloned())
        .map(|t| t["type"].clone())
        .collect();
    assert_eq!(
        steps,
        [json!("tool.call.started"), json!("tool.call.completed")]
    );
    let last = chunks.last().unwrap();
    assert_eq!(
        (last["choices"].clone(), last["usage"].clone()),
        (json!([]), body["usage"].clone())
    );
    assert!(chunks.iter().all(|c| c["id"] == chunks[0]["id"]));
}

#[tokio::test]
async fn a_session_header_keeps_the_conversation_and_sends_history_once() {
    let g = TestGateway::with_script(per_run(vec![say("Noted.")])).await;
    let key = [("x-talon-session-key", "conv-1")];
    let first = post(
        &g,
        &g.admin,
        "/v1/chat/completions",
        chat(json!([user("hi")])),
        &key,
    )
    .await;
    assert_eq!(first.header("x-talon-session-key"), "conv-1");
    let second = chat(json!([user("hi"), assistant("Noted."), user("again")]));
    let answer = post(&g, &g.admin, "/v1/chat/completions", second, &key).await;
    assert_eq!(answer.header("x-talon-session-key"), "conv-1");
    assert_eq!(
        last_request_texts(&g),
        ["user: hi", "assistant: Noted.", "user: again"]
    );
    // A client that sends only the new message continues the same way.
    post(
        &g,
        &g.admin,
        "/v1/chat/completions",
        chat(json!([user("third")])),
        &key,
    )
    .await;
    assert_eq!(
        last_request_texts(&g),
        [
            "user: hi",
            "assistant: Noted.",
            "user: again",
            "assistant: Noted.",
            "user: third"
        ]
    );
    // Regenerating the second answer (an edited question) forks after the
    // first exchange: the model never sees "again" or "third".
    let edited = chat(json!([user("hi"), assistant("Noted."), user("edited")]));
    let forked = post(&g, &g.admin, "/v1/chat/completions", edited, &key).await;
    assert_eq!(forked.status, 200, "{}", forked.text);
    assert_ne!(forked.header("x-talon-session-key"), "conv-1");
    assert_eq!(
        last_request_texts(&g),
        ["user: hi", "assistant: Noted.", "user: edited"]
    );
    // Without a header, each call is a new session, its history imported.
    let a = post(
        &g,
        &g.admin,
        "/v1/chat/completions",
        chat(json!([user("x"), assistant("y"), user("z")])),
        &[],
    )
    .await;
    assert_eq!(
        last_request_texts(&g),
        ["user: x", "assistant: y", "user: z"]
    );
    let b = post(
        &g,
        &g.admin,
        "/v1/chat/completions",
        chat(json!([user("x")])),
        &[],
    )
    .await;
    assert_ne!(
        a.header("x-talon-session-key"),
        b.header("x-talon-session-key")
    );
}

#[tokio::test]
async fn user_names_one_session_per_token() {
    let g = TestGateway::with_script(per_run(vec![say("Hi.")])).await;
    let mut request = chat(json!([user("hello")]));
    request["user"] = json!("customer-7");
    let a = post(&g, &g.admin, "/v1/chat/completions", request.clone(), &[]).await;
    let b = post(&g, &g.admin, "/v1/chat/completions", request.clone(), &[]).await;
    assert_eq!(
        a.header("x-talon-session-key"),
        b.header("x-talon-session-key")
    );
    let other = token(&g, &["agent.run", "session.read", "session.write"]).await;
    let c = post(&g, &other, "/v1/chat/completions", request, &[]).await;
    assert_eq!(c.status, 200, "{}", c.text);
    assert_ne!(
        a.header("x-talon-session-key"),
        c.header("x-talon-session-key")
    );
}

#[tokio::test]
async fn a_client_tool_round_trip_needs_the_session() {
    let g = TestGateway::with_script(per_run(vec![
        tool_turn("get_weather", json!({"city": "Paris"})),
        say("It is sunny in Paris."),
    ]))
    .await;
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    let mut request = chat(json!([user("weather?")]));
    request["tools"] = tools.clone();
    let asked = post(&g, &g.admin, "/v1/chat/completions", request, &[]).await;
    let choice = asked.json()["choices"][0].clone();
    assert_eq!(choice["finish_reason"], "tool_calls");
    let call = choice["message"]["tool_calls"][0].clone();
    assert_eq!(
        (call["type"].clone(), call["function"].clone()),
        (
            json!("function"),
            json!({"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"})
        )
    );
    let key = asked.header("x-talon-session-key");
    let history = json!([user("weather?"), choice["message"],
        {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}]);
    let mut answer = chat(history.clone());
    answer["tools"] = tools;
    // Without the session the answers have no run to go back to.
    let lost = post(&g, &g.admin, "/v1/chat/completions", answer.clone(), &[]).await;
    assert_eq!(
        (lost.status, lost.json()["error"]["code"].clone()),
        (400, json!("session_required"))
    );
    let done = post(
        &g,
        &g.admin,
        "/v1/chat/completions",
        answer,
        &[("x-talon-session-key", &key)],
    )
    .await;
    assert_eq!(
        (
            done.json()["choices"][0]["message"]["content"].clone(),
            done.json()["choices"][0]["finish_reason"].clone()
        ),
        (json!("It is sunny in Paris."), json!("stop"))
    );
}

#[tokio::test]
async fn under_code_mode_a_clients_tool_is_called_from_a_cell_and_answered_the_same_way() {
    let g = TestGateway::start_opts(super::Options {
        script: Script {
            turns: vec![
                tool_turn(
                    "exec",
                    json!({"code": "const w = await tools.get_weather({city: 'Paris'}); return w.sky;"}),
                ),
                say("It is sunny in Paris."),
            ],
            replay: Replay::Sequential,
            ..Script::default()
        },
        // A cell's time limit well past a slow machine's first VM.
        config: json!({"tools": {"codeMode": {"enabled": true, "timeoutMs": 60_000}}}),
        ..super::Options::default()
    })
    .await;
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    let key = [("x-talon-session-key", "cm-1")];
    let mut request = chat(json!([user("weather?")]));
    request["tools"] = tools.clone();
    let asked = post(&g, &g.admin, "/v1/chat/completions", request, &key).await;
    let choice = asked.json()["choices"][0].clone();
    // The model saw exec and wait only; the client sees its own tool,
    // called by the cell.
    let offered: Vec<Value> = g.mock.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].clone())
        .collect();
    assert_eq!(offered, [json!("exec"), json!("wait")]);
    assert_eq!(choice["finish_reason"], "tool_calls");
    let call = choice["message"]["tool_calls"][0].clone();
    assert_eq!(
        (call["id"].clone(), call["function"].clone()),
        (
            json!("call_1/1"),
            json!({"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"})
        )
    );
    let history = json!([user("weather?"), choice["message"],
        {"role": "tool", "tool_call_id": call["id"], "content": "{\"sky\": \"sunny\"}"}]);
    let mut answer = chat(history);
    answer["tools"] = tools;
    let done = post(&g, &g.admin, "/v1/chat/completions", answer, &key).await;
    assert_eq!(
        done.json()["choices"][0]["message"]["content"],
        json!("It is sunny in Paris.")
    );
    // The cell's value reached the model as exec's answer.
    let sent = g.mock.requests().last().unwrap().clone();
    let last = sent["messages"].as_array().unwrap().last().unwrap().clone();
    let cell: Value = serde_json::from_str(last["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        (last["tool_call_id"].clone(), cell["value"].clone()),
        (json!("call_1"), json!("sunny"))
    );
}

#[tokio::test]
async fn system_prompts_are_kept_once_and_ride_along_with_tool_answers() {
    let g = TestGateway::with_script(per_run(vec![
        tool_turn("get_weather", json!({"city": "Paris"})),
        say("It is sunny."),
    ]))
    .await;
    let tools = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]);
    let system = json!({"role": "system", "content": "Be brief."});
    let key = [("x-talon-session-key", "sys-1")];
    let mut first = chat(json!([system, user("weather?")]));
    first["tools"] = tools.clone();
    let asked = post(&g, &g.admin, "/v1/chat/completions", first, &key)
        .await
        .json();
    let message = asked["choices"][0]["message"].clone();
    let call_id = message["tool_calls"][0]["id"].clone();
    // The answer, with the system prompt again and a new question after it
    // (tool answer then user: both reach the model).
    let mut second = chat(json!([system, user("weather?"), message,
        {"role": "tool", "tool_call_id": call_id, "content": "sunny"}]));
    second["tools"] = tools;
    let done = post(&g, &g.admin, "/v1/chat/completions", second, &key).await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(
        done.json()["choices"][0]["message"]["content"],
        "It is sunny."
    );
    let requests = g.mock.requests();
    let last = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let systems = last
        .iter()
        .filter(|m| {
            m["role"] == "system" && m["content"].as_str().unwrap_or("").contains("Be brief.")
        })
        .count();
    assert_eq!(systems, 1, "{last:?}");
    assert!(
        last.iter()
            .any(|m| m["role"] == "tool" && m["content"] == "sunny"),
        "{last:?}"
    );
    let third = chat(json!([
        system,
        user("weather?"),
        assistant("It is sunny."),
        user("thanks")
    ]));
    post(&g, &g.admin, "/v1/chat/completions", third, &key).await;
    let (_, session) = g
        .call(&g.admin, "sessions.resolve", json!({"key": "sys-1"}))
        .await;
    let (_, stored) = g
        .call(
            &g.admin,
            "sessions.messages",
            json!({"sessionId": session["id"]}),
        )
        .await;
    let kept = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .count();
    assert_eq!(kept, 1, "{stored}");
}

#[tokio::test]
async fn a_client_that_leaves_before_the_end_cancels_its_run() {
    let slow = Turn {
        text: Some("late".into()),
        delay: Duration::from_secs(30),
        ..Turn::default()
    };
    let g = TestGateway::with_script(per_run(vec![slow])).await;
    let request = g
        .client
        .post(g.url("/v1/chat/completions"))
        .bearer_auth(&g.admin)
        .json(&chat(json!([user("take your time")])))
        .send();
    // The client gives up after 300 ms, as a timed-out client does.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), request)
            .await
            .is_err()
    );
    let status = talon_testing::wait::until_async(
        "the run's end",
        talon_testing::wait::DEADLINE,
        async || {
            let (_, runs) = g.call(&g.admin, "runs.list", json!({})).await;
            let status = runs["runs"][0]["status"].as_str().map(str::to_owned);
            status.filter(|s| s != "running" && s != "queued")
        },
    )
    .await;
    assert_eq!(status, "cancelled");
}
