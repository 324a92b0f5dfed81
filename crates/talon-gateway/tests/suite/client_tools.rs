//! Client tools: a run's `tools` are offered to the model by name; a turn
//! calling one ends the run `completed` with the call pending, and the
//! app's next run on the session answers it with `tool` messages.

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, ScriptedCall, Turn};
use talon_protocol::gateway::bounded::RunId;
use talon_testing::redact::{Redactor, redacted};

use super::artifacts::sized;
use super::call_ends::calls;
use super::env_support::run_events;
use super::runs::whole;
use super::ws::{Transport, connect};
use super::{Options, TestGateway};

/// The tool calls' ends (`tool.call.completed` / `failed`) in run
/// `run_id`'s log, as [`calls`] gives them.
async fn call_ends(g: &TestGateway, run_id: &Value) -> Vec<Value> {
    let page = run_events(g, run_id).await;
    calls(page["events"].as_array().unwrap())
        .into_iter()
        .filter(|call| call[0] != "tool.call.started")
        .collect()
}

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

/// The run's result once it has ended (`runs.wait` answers `accepted`
/// when its own time is up first).
async fn wait(g: &TestGateway, t: &Transport, run_id: &Value) -> Value {
    loop {
        let result = t
            .call(
                g,
                "runs.wait",
                json!({"runId": run_id, "timeoutMs": 20_000}),
            )
            .await
            .unwrap();
        if result["status"] != "accepted" {
            return result;
        }
    }
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
    // The call started in the first run's log ends in the second's.
    assert_eq!(
        call_ends(&g, &next["runId"]).await.first(),
        Some(&json!(["tool.call.failed", "call_1", null, "unanswered"]))
    );
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

/// The names of the tools a recorded model request offered.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Code Mode: the model calls `exec`, whose cell calls the app's
/// `pick_color` through `tools.*`; then it answers with the cell's value.
fn code_mode_script() -> Script {
    Script {
        turns: vec![
            Turn {
                tool_calls: vec![call(
                    "exec",
                    json!({"code": "const hits = await tools.search('pick a color');\n\
                                    const color = await tools.pick_color({palette: 'warm'});\n\
                                    return {found: hits.map(h => h.id), color};"}),
                )],
                ..Turn::default()
            },
            Turn {
                text: Some("Teal it is.".into()),
                ..Turn::default()
            },
        ],
        replay: Replay::Sequential,
        ..Script::default()
    }
}

#[tokio::test]
async fn code_mode_hides_client_tools_in_the_catalog_and_a_cell_waits_for_the_app_across_a_restart()
{
    let config = json!({"tools": {"codeMode": {"enabled": true, "timeoutMs": 60_000}}});
    let g = TestGateway::start_opts(Options {
        script: code_mode_script(),
        config: config.clone(),
        ..Options::default()
    })
    .await;
    let t = Transport::Http;
    let run = t
        .call(
            &g,
            "runs.create",
            json!({"input": "Pick a color.", "sessionKey": "app:cm", "tools": [pick_color()]}),
        )
        .await
        .unwrap();
    let mut r = Redactor::new();
    // Completed, pick_color pending as the cell's nested call call_1/1
    // (found by search, with its arguments); the assistant message holds
    // exec open.
    let first = whole(&mut r, &wait(&g, &t, &run["runId"]).await);
    insta::assert_json_snapshot!("code_mode_waits_result", sized(first.clone()));
    // run.started offers exec and wait only; exec's tool.call.started,
    // then call_1/1's (parent call_1, source client); no exec end.
    let all = events(&g, &t, &run["runId"]).await;
    insta::assert_json_snapshot!("code_mode_waits_events", r.transcript(&all));
    assert_eq!(offered(&g.mock.requests()[0]), ["exec", "wait"]);
    assert_eq!(
        g.running
            .store
            .run_cells(&RunId::new(run["runId"].as_str().unwrap()))
            .await
            .unwrap(),
        1
    );

    // The gateway restarts; the app answers the nested call.
    let g = g.restarted(config).await;
    let next = t
        .call(
            &g,
            "runs.create",
            json!({"sessionKey": "app:cm", "tools": [pick_color()],
                   "input": [{"role": "tool", "toolCallId": "call_1/1", "content": "\"teal\""}]}),
        )
        .await
        .unwrap();
    let result = whole(&mut r, &wait(&g, &t, &next["runId"]).await);
    // The cell went on from its snapshot: exec answers the model with the
    // cell's value, and the model's request offers exec and wait only.
    let sent = g.mock.requests().last().unwrap().clone();
    assert_eq!(offered(&sent), ["exec", "wait"]);
    let messages = sent["messages"].as_array().unwrap();
    let answer = messages.last().unwrap();
    assert_eq!(answer["tool_call_id"], "call_1");
    let cell: Value = serde_json::from_str(answer["content"].as_str().unwrap()).unwrap();
    pretty_assertions::assert_eq!(
        (cell["status"].clone(), cell["value"].clone()),
        (
            json!("completed"),
            json!({"found": ["client:app:pick_color"], "color": "teal"})
        )
    );
    insta::assert_json_snapshot!("code_mode_answered_result", sized(result));
    // No cell is left, and nothing can resume one.
    assert_eq!(
        g.running
            .store
            .run_cells(&RunId::new(run["runId"].as_str().unwrap()))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        g.running
            .store
            .run_cells(&RunId::new(next["runId"].as_str().unwrap()))
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn a_code_mode_cell_the_app_does_not_answer_is_deleted_and_reads_as_unanswered() {
    let g = TestGateway::start_opts(Options {
        script: Script {
            turns: vec![
                code_mode_script().turns[0].clone(),
                Turn {
                    text: Some("Never mind then.".into()),
                    ..Turn::default()
                },
            ],
            replay: Replay::Sequential,
            ..Script::default()
        },
        config: json!({"tools": {"codeMode": {"enabled": true, "timeoutMs": 60_000}}}),
        ..Options::default()
    })
    .await;
    let t = Transport::Http;
    let run = t
        .call(
            &g,
            "runs.create",
            json!({"input": "Pick a color.", "sessionKey": "app:cm", "tools": [pick_color()]}),
        )
        .await
        .unwrap();
    wait(&g, &t, &run["runId"]).await;
    let run_id = run["runId"].as_str().unwrap();
    assert_eq!(
        g.running
            .store
            .run_cells(&RunId::new(run_id))
            .await
            .unwrap(),
        1
    );
    // Answers together with a new turn are refused, naming the exec call.
    let refused = t
        .call(
            &g,
            "runs.create",
            json!({"sessionKey": "app:cm", "input": [
                {"role": "tool", "toolCallId": "call_1/1", "content": "teal"},
                {"role": "user", "content": "and hurry"}]}),
        )
        .await
        .unwrap();
    let failed = wait(&g, &t, &refused["runId"]).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(
        failed["error"]["message"],
        "input: answers to client tool calls made inside Code Mode's exec (\"call_1\") come alone; \
         send the user's message in the next run"
    );
    // The app moves on: exec reads as unanswered and the cell goes.
    let next = t
        .call(
            &g,
            "runs.create",
            json!({"sessionKey": "app:cm", "input": "Never mind."}),
        )
        .await
        .unwrap();
    let second = wait(&g, &t, &next["runId"]).await;
    assert_eq!(second["status"], "completed");
    assert_eq!(
        g.running
            .store
            .run_cells(&RunId::new(run_id))
            .await
            .unwrap(),
        0
    );
    // The cell's client call ends unanswered, then its exec.
    assert_eq!(
        call_ends(&g, &next["runId"]).await,
        vec![
            json!(["tool.call.failed", "call_1/1", "call_1", "unanswered"]),
            json!(["tool.call.failed", "call_1", null, "unanswered"]),
        ]
    );
    let request = g.mock.requests().last().unwrap().clone();
    let messages = request["messages"].as_array().unwrap();
    let exec = messages
        .iter()
        .find(|m| m["tool_call_id"] == "call_1")
        .unwrap();
    assert_eq!(exec["content"], talon_runtime::conversation::UNANSWERED);
}

#[tokio::test]
async fn direct_only_is_explicit_and_the_payload_check_fails_closed() {
    // pick_color configured direct-only: offered beside exec and wait,
    // and the model calls it by name as in a direct run.
    let g = TestGateway::start_opts(Options {
        script: script(),
        config: json!({"tools": {"codeMode": {"enabled": true},
                                 "directOnly": ["client:app:pick_color"]}}),
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
    assert_eq!(
        offered(&g.mock.requests()[0]),
        ["exec", "wait", "pick_color"]
    );
    assert_eq!(
        result["output"]["messages"][0]["toolCalls"][0]["name"],
        json!("pick_color")
    );
}
