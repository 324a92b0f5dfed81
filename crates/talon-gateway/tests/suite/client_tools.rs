//! Client tools: a run's `tools` are offered to the model by name; a turn
//! calling one ends the run `completed` with the call pending, and the
//! app's next run on the session answers it with `tool` messages.

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, ScriptedCall, Turn};
use talon_testing::redact::{Redactor, redacted};

use super::artifacts::sized;
use super::runs::whole;
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

/// One body, over HTTP and over WebSocket: everything the round trip
/// answered, stored and sent the model, redacted, the transport's tag as
/// `<tag>`.
async fn a_client_call_round_trip(g: &TestGateway, t: &Transport, tag: &str) -> Value {
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
    let mut r = Redactor::new()
        .with(g.dir.path().to_str().unwrap(), "<dir>")
        .with(key.as_str(), "app:<tag>");
    let created = whole(&mut r, &run);
    // Completed with one assistant message, calling pick_color (call_1,
    // pending) and read (call_2).
    let result = whole(&mut r, &wait(g, t, &run["runId"]).await);
    // run.started offers pick_color last; one tool.call.started with source
    // client (call_1); read's call_2 completes; run.completed lists call_1
    // as pending.
    let first = r.transcript(&events(g, t, &run["runId"]).await);
    // The session keeps the open call: no answer for it yet.
    let kept = whole(
        &mut r,
        &json!(t.session_messages(g, &run["sessionId"]).await),
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
    let answered = json!({
        "created": whole(&mut r, &next),
        // Completed with the text, no messages.
        "result": whole(&mut r, &wait(g, t, &next["runId"]).await),
        // The model is sent read's answer (call_2) and then the app's
        // (call_1).
        "sent": whole(&mut r, &g.mock.requests().last().unwrap()["messages"]),
        "messages": whole(&mut r, &json!(t.session_messages(g, &run["sessionId"]).await)),
    });
    json!({
        "created": created,
        "result": result,
        "events": first,
        "kept": kept,
        "answered": answered,
    })
}

#[tokio::test]
async fn a_client_tool_call_ends_the_run_and_the_next_run_answers_it() {
    let g = TestGateway::start_opts(Options {
        script: script(),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let http = a_client_call_round_trip(&g, &Transport::Http, "http").await;
    insta::assert_json_snapshot!("round_trip_http", sized(http));
    let socket = connect(&g, &g.admin).await.unwrap();
    let ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0))));
    let ws = a_client_call_round_trip(&g, &ws, "ws").await;
    insta::assert_json_snapshot!("round_trip_ws", sized(ws));
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
    let first = wait(&g, &t, &run["runId"]).await;
    // The app moves on without answering.
    let next = t
        .call(
            &g,
            "runs.create",
            json!({"input": "Never mind.", "sessionKey": "app:u"}),
        )
        .await
        .unwrap();
    let second = wait(&g, &t, &next["runId"]).await;
    // Both completed: the first with call_1 pending, the second with it
    // unanswered.
    insta::assert_json_snapshot!(
        "unanswered_results",
        sized(whole(&mut Redactor::new(), &json!([first, second])))
    );
    // The second run's first request (the mock's script then calls the
    // tools again, each run from its first turn).
    let request = g.mock.requests()[1].clone();
    let messages = request["messages"].as_array().unwrap();
    let answer = messages
        .iter()
        .find(|m| m["tool_call_id"] == "call_1")
        .unwrap();
    let content: Value = serde_json::from_str(answer["content"].as_str().unwrap()).unwrap();
    insta::assert_json_snapshot!("unanswered_told", redacted(&content));
    pretty_assertions::assert_eq!(
        messages.last().unwrap(),
        &json!({"role": "user", "content": "Never mind."})
    );
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
        json!({"input": "x", "tools": [{"name": "has space", "parameters": {"type": "object"}}]}),
        json!({"input": "x", "tools": [pick_color(), pick_color()]}),
        json!({"input": "x", "tools": [{"name": "t", "parameters": {"type": "string"}}]}),
        json!({"input": "x", "tools": (0..129).map(|i| json!({"name": format!("t{i}")})).collect::<Vec<_>>()}),
        json!({"input": [{"role": "tool", "content": "teal"}]}),
        json!({"input": [{"role": "user", "content": "hi"}, {"role": "tool", "toolCallId": "c", "content": "x"}]}),
        json!({"input": [{"role": "user", "content": "hi", "toolCallId": "c"}]}),
    ];
    let mut errors = Vec::new();
    for params in refused {
        errors.push(t.call(&g, "runs.create", params).await.unwrap_err());
    }
    // Each invalid_request, naming what is wrong: tools[0].name, named
    // twice, tools[0].parameters, 129 client tools, toolCallId, come
    // first, only a tool message.
    insta::assert_json_snapshot!("refused", redacted(&json!(errors)));
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
    insta::assert_json_snapshot!("unknown_answer", sized(redacted(&result)));
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
    // Failed: the name of the agent's tool openclaw:core:read.
    insta::assert_json_snapshot!("taken_name", sized(redacted(&result)));
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
    let mut r = Redactor::new();
    insta::assert_json_snapshot!(
        "code_mode_result",
        sized(whole(&mut r, &wait(&g, &t, &run["runId"]).await))
    );
    // run.started offers exec, wait, pick_color; run.completed leaves
    // pick_color pending.
    let all = events(&g, &t, &run["runId"]).await;
    insta::assert_json_snapshot!("code_mode_events", r.transcript(&all));
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
