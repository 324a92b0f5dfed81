//! Client tools: a run's `tools` are offered to the model by name; a turn
//! calling one ends the run `completed` with the call pending, and the
//! app's next run on the session answers it with `tool` messages.

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, ScriptedCall, Turn};

use super::ws::{Transport, connect};
use super::{Options, TestGateway};

fn call(name: &str, arguments: Value) -> ScriptedCall {
    ScriptedCall {
        name: name.into(),
        arguments,
    }
}

/// The model calls the client's `pick_color` and the core `read` in one
/// turn, then answers with what the app said.
fn script() -> Script {
    Script {
        turns: vec![
            Turn {
                tool_calls: vec![
                    call("pick_color", json!({"palette": "warm"})),
                    call("read", json!({"path": "notes.txt"})),
                ],
                ..Turn::default()
            },
            Turn {
                text: Some("Teal it is.".into()),
                ..Turn::default()
            },
        ],
        replay: Replay::PerRun,
        ..Script::default()
    }
}

fn pick_color() -> Value {
    json!({
        "name": "pick_color",
        "description": "Ask the user to pick a color.",
        "parameters": {"type": "object", "properties": {"palette": {"type": "string"}}}
    })
}

async fn wait(g: &TestGateway, t: &Transport, run_id: &Value) -> Value {
    t.call(
        g,
        "runs.wait",
        json!({"runId": run_id, "timeoutMs": 20_000}),
    )
    .await
    .unwrap()
}

async fn events(g: &TestGateway, t: &Transport, run_id: &Value) -> Vec<Value> {
    let page = t
        .call(g, "runs.events", json!({"runId": run_id}))
        .await
        .unwrap();
    page["events"].as_array().unwrap().clone()
}

/// One body, over HTTP and over WebSocket.
async fn a_client_call_round_trip(g: &TestGateway, t: &Transport, tag: &str) {
    std::fs::write(g.dir.path().join("workspace/notes.txt"), "remember teal").unwrap();
    let key = format!("app:{tag}");
    let run = t
        .call(
            g,
            "runs.create",
            json!({"input": "Pick a color, and read my notes.", "sessionKey": key, "tools": [pick_color()]}),
        )
        .await
        .unwrap();
    let result = wait(g, t, &run["runId"]).await;
    assert_eq!(result["status"], "completed", "{result}");
    let asked = json!([{"id": "call_1", "name": "pick_color", "arguments": {"palette": "warm"}}]);
    let output = &result["output"]["messages"];
    assert_eq!(output.as_array().unwrap().len(), 1, "{result}");
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["toolCalls"][0], asked[0]);
    assert_eq!(output[0]["toolCalls"][1]["name"], "read");
    let first = events(g, t, &run["runId"]).await;
    let started = first.iter().find(|e| e["type"] == "run.started").unwrap();
    assert_eq!(
        started["data"]["tools"].as_array().unwrap().last().unwrap(),
        "pick_color"
    );
    let client_started: Vec<&Value> = first
        .iter()
        .filter(|e| e["type"] == "tool.call.started" && e["data"]["source"] == "client")
        .collect();
    assert_eq!(client_started.len(), 1, "{first:?}");
    assert_eq!(client_started[0]["data"]["callId"], "call_1");
    assert_eq!(
        client_started[0]["data"]["arguments"],
        json!({"palette": "warm"})
    );
    let read_done = first
        .iter()
        .find(|e| e["type"] == "tool.call.completed")
        .unwrap();
    assert_eq!(read_done["data"]["callId"], "call_2");
    let ended = first.last().unwrap();
    assert_eq!(ended["type"], "run.completed");
    assert_eq!(ended["data"]["pendingToolCalls"], asked);
    // The session keeps the open call: no answer for it yet.
    let shape: Vec<(String, Value)> = t
        .session_messages(g, &run["sessionId"])
        .await
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["toolCallId"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("user".to_owned(), Value::Null),
            ("assistant".to_owned(), Value::Null),
            ("tool".to_owned(), json!("call_2")),
        ]
    );
    // The app answers; the model goes on from the answer.
    let next = t
        .call(
            g,
            "runs.create",
            json!({"sessionKey": key, "tools": [pick_color()],
                   "input": [{"role": "tool", "toolCallId": "call_1", "content": "teal"}]}),
        )
        .await
        .unwrap();
    assert_eq!(next["sessionId"], run["sessionId"]);
    let result = wait(g, t, &next["runId"]).await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["output"]["text"], "Teal it is.");
    assert!(result["output"].get("messages").is_none(), "{result}");
    let request = g.mock.requests().last().unwrap().clone();
    let sent: Vec<(String, Value, Value)> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["tool_call_id"].clone(),
                m["content"].clone(),
            )
        })
        .collect();
    assert_eq!(sent.len(), 5, "{request}");
    assert_eq!((sent[3].0.as_str(), &sent[3].1), ("tool", &json!("call_2")));
    let read: Value = serde_json::from_str(sent[3].2.as_str().unwrap()).unwrap();
    assert_eq!(read["content"], "remember teal");
    assert_eq!(sent[4], ("tool".to_owned(), json!("call_1"), json!("teal")));
    let messages = t.session_messages(g, &run["sessionId"]).await;
    let tail: Vec<(&str, &Value, &Value)> = messages[3..]
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), &m["toolCallId"], &m["text"]))
        .collect();
    assert_eq!(
        tail,
        [
            ("tool", &json!("call_1"), &json!("teal")),
            ("assistant", &Value::Null, &json!("Teal it is.")),
        ]
    );
}

#[tokio::test]
async fn a_client_tool_call_ends_the_run_and_the_next_run_answers_it() {
    let g = TestGateway::start_opts(Options {
        script: script(),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    a_client_call_round_trip(&g, &Transport::Http, "http").await;
    let socket = connect(&g, &g.admin).await.unwrap();
    let ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0))));
    a_client_call_round_trip(&g, &ws, "ws").await;
}

#[tokio::test]
async fn a_call_left_unanswered_reads_as_unanswered_to_the_model() {
    let g = TestGateway::start_opts(Options {
        script: script(),
        ..Options::default()
    })
    .await;
    let t = Transport::Http;
    let run = t
        .call(
            &g,
            "runs.create",
            json!({"input": "Pick a color.", "sessionKey": "app:u", "tools": [pick_color()]}),
        )
        .await
        .unwrap();
    assert_eq!(wait(&g, &t, &run["runId"]).await["status"], "completed");
    // The app moves on without answering.
    let next = t
        .call(
            &g,
            "runs.create",
            json!({"input": "Never mind.", "sessionKey": "app:u"}),
        )
        .await
        .unwrap();
    assert_eq!(wait(&g, &t, &next["runId"]).await["status"], "completed");
    // The second run's first request (the mock's script then calls the
    // tools again, each run from its first turn).
    let request = g.mock.requests()[1].clone();
    let messages = request["messages"].as_array().unwrap();
    let answer = messages
        .iter()
        .find(|m| m["tool_call_id"] == "call_1")
        .unwrap();
    let content: Value = serde_json::from_str(answer["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["status"], "unanswered");
    assert_eq!(messages.last().unwrap()["content"], "Never mind.");
}

#[tokio::test]
async fn bad_client_tools_and_answers_get_clear_errors() {
    let g = TestGateway::start_opts(Options {
        script: script(),
        ..Options::default()
    })
    .await;
    let t = Transport::Http;
    let refused = [
        (
            json!({"input": "x", "tools": [{"name": "has space", "parameters": {"type": "object"}}]}),
            "tools[0].name",
        ),
        (
            json!({"input": "x", "tools": [pick_color(), pick_color()]}),
            "named twice",
        ),
        (
            json!({"input": "x", "tools": [{"name": "t", "parameters": {"type": "string"}}]}),
            "tools[0].parameters",
        ),
        (
            json!({"input": "x", "tools": (0..129).map(|i| json!({"name": format!("t{i}")})).collect::<Vec<_>>()}),
            "129 client tools",
        ),
        (
            json!({"input": [{"role": "tool", "content": "teal"}]}),
            "toolCallId",
        ),
        (
            json!({"input": [{"role": "user", "content": "hi"}, {"role": "tool", "toolCallId": "c", "content": "x"}]}),
            "come first",
        ),
        (
            json!({"input": [{"role": "user", "content": "hi", "toolCallId": "c"}]}),
            "only a tool message",
        ),
    ];
    for (params, why) in refused {
        let error = t.call(&g, "runs.create", params.clone()).await.unwrap_err();
        assert_eq!(error["code"], "invalid_request", "{params}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(why),
            "{params}: {error}"
        );
    }
    // An answer to a call the session never left open: the run fails,
    // naming the call, and keeps the input.
    let run = t
        .call(
            &g,
            "runs.create",
            json!({"sessionKey": "app:e", "input": [{"role": "tool", "toolCallId": "call_9", "content": "teal"}]}),
        )
        .await
        .unwrap();
    let result = wait(&g, &t, &run["runId"]).await;
    assert_eq!(result["status"], "failed", "{result}");
    assert_eq!(result["error"]["code"], "invalid_request");
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"call_9\""),
        "{result}"
    );
    // A client tool may not take the name of one of the agent's tools.
    let run = t
        .call(
            &g,
            "runs.create",
            json!({"input": "x", "tools": [{"name": "read", "parameters": {"type": "object"}}]}),
        )
        .await
        .unwrap();
    let result = wait(&g, &t, &run["runId"]).await;
    assert_eq!(result["status"], "failed", "{result}");
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has the name of the agent's tool openclaw:core:read"),
        "{result}"
    );
    assert!(g.mock.requests().is_empty());
}

#[tokio::test]
async fn code_mode_offers_client_tools_beside_exec_and_wait() {
    let g = TestGateway::start_opts(Options {
        script: script(),
        config: json!({"tools": {"codeMode": {"enabled": true}}}),
        ..Options::default()
    })
    .await;
    let t = Transport::Http;
    let run = t
        .call(
            &g,
            "runs.create",
            json!({"input": "Pick a color.", "tools": [pick_color()]}),
        )
        .await
        .unwrap();
    let result = wait(&g, &t, &run["runId"]).await;
    assert_eq!(result["status"], "completed", "{result}");
    let all = events(&g, &t, &run["runId"]).await;
    let started = all.iter().find(|e| e["type"] == "run.started").unwrap();
    assert_eq!(
        started["data"]["tools"],
        json!(["exec", "wait", "pick_color"])
    );
    let ended = all.last().unwrap();
    assert_eq!(ended["data"]["pendingToolCalls"][0]["name"], "pick_color");
    // `read` is not a Code Mode model tool: that call failed as unknown.
    let request = &g.mock.requests()[0];
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["exec", "wait", "pick_color"]);
}
