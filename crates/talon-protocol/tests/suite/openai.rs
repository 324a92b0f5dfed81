//! The OpenAI projections over whole event sequences, snapshotted: what a
//! chat client and a Responses client see of a run with a server tool,
//! reasoning, a pending client tool, an approval, a failure, a
//! cancellation and a timeout. Sequence numbers come from event ids, so a
//! fold started again over the same events numbers every event the same.

use serde_json::{Value, json};
use talon_protocol::Event;
use talon_protocol::openai::chat::{ChatFold, ChatHeader, ChatOut};
use talon_protocol::openai::responses::{ResponseFold, ResponseHeader};

fn event(id: u64, kind: &str, data: Value) -> (u64, Event) {
    let envelope = json!({"version": 1, "id": format!("{id}"), "ts": 1_700_000_000_000u64 + id,
                          "type": kind, "runId": "run_1", "data": data});
    (id, serde_json::from_value(envelope).unwrap())
}

fn ended(text: &str, pending: Value) -> Value {
    json!({"text": text, "turns": 2, "toolCalls": 1, "durationMs": 5,
           "usage": {"inputTokens": 12, "outputTokens": 4, "totalTokens": 16},
           "pendingToolCalls": pending})
}

/// A run that lists files, thinks, answers in two turns.
fn a_run(end: (&str, Value)) -> Vec<(u64, Event)> {
    vec![
        event(1, "run.created", json!({"input": "hi"})),
        event(
            2,
            "run.started",
            json!({"model": "mock/m", "surface": "direct", "tools": ["list"]}),
        ),
        event(3, "thinking.delta", json!({"text": "Let me look."})),
        event(4, "assistant.delta", json!({"text": "Looking"})),
        event(
            5,
            "assistant.message",
            json!({"text": "Looking", "toolCalls": 1}),
        ),
        event(
            6,
            "tool.call.started",
            json!({"callId": "c1", "name": "list", "source": "openclaw", "arguments": {"path": "."}}),
        ),
        event(
            7,
            "tool.call.completed",
            json!({"callId": "c1", "name": "list", "durationMs": 3, "result": {"paths": ["a"]}}),
        ),
        event(8, "assistant.delta", json!({"text": "Found a"})),
        event(
            9,
            "assistant.message",
            json!({"text": "Found a", "toolCalls": 0}),
        ),
        event(10, end.0, end.1),
    ]
}

fn chat(events: &[(u64, Event)]) -> (Vec<Value>, Value) {
    let mut fold = ChatFold::new(ChatHeader {
        id: "chatcmpl-run_1".into(),
        created: 1_700_000_000,
        model: "talon/main".into(),
        include_usage: true,
    });
    let mut out = vec![fold.opening()];
    for (_, event) in events {
        for o in fold.push(event) {
            out.push(match o {
                ChatOut::Chunk(chunk) => chunk,
                ChatOut::Error(error) => json!({"error": error.body(), "status": error.status}),
            });
        }
    }
    let whole = match fold.completion() {
        Ok(completion) => completion,
        Err(error) => json!({"error": error.body(), "status": error.status}),
    };
    (out, whole)
}

fn responses(events: &[(u64, Event)]) -> Vec<Value> {
    let mut fold = ResponseFold::new(ResponseHeader {
        id: "resp_run_1".into(),
        created_at: 1_700_000_000,
        model: "talon/main".into(),
        background: None,
        previous_response_id: None,
        instructions: None,
        metadata: json!({}),
    });
    events
        .iter()
        .flat_map(|(id, event)| fold.push(*id, event))
        .map(|(_, e)| e)
        .collect()
}

#[test]
fn a_completed_run_as_chat_chunks_and_a_completion() {
    let (chunks, whole) = chat(&a_run(("run.completed", ended("Found a", json!([])))));
    insta::assert_json_snapshot!("chat_chunks", chunks);
    insta::assert_json_snapshot!("chat_completion", whole);
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(json!(streamed), whole["choices"][0]["message"]["content"]);
}

#[test]
fn a_pending_client_tool_is_a_tool_call_and_a_function_call_item() {
    let pending = json!([{"id": "call_9", "name": "get_weather", "arguments": {"city": "Paris"}}]);
    let events = a_run(("run.completed", ended("Found a", pending)));
    let (_, whole) = chat(&events);
    assert_eq!(whole["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        whole["choices"][0]["message"]["tool_calls"],
        json!([{"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}])
    );
    let stream = responses(&events);
    insta::assert_json_snapshot!("responses_stream_pending_call", stream);
}

#[test]
fn runs_that_do_not_complete_end_as_errors_and_incomplete_responses() {
    for (kind, status) in [
        ("run.failed", "failed"),
        ("run.cancelled", "cancelled"),
        ("run.timed_out", "incomplete"),
    ] {
        let mut end = ended("", json!([]));
        end["error"] = json!(format!("{kind}: the reason"));
        let events = a_run((kind, end));
        let (chunks, whole) = chat(&events);
        insta::assert_json_snapshot!(format!("chat_{kind}"), (chunks.last(), whole));
        let last = responses(&events).pop().unwrap();
        assert_eq!(last["response"]["status"], status, "{kind}");
        insta::assert_json_snapshot!(format!("responses_end_{kind}"), last);
    }
}

#[test]
fn sequence_numbers_are_the_same_on_every_replay_and_strictly_increase() {
    let events = a_run(("run.completed", ended("Found a", json!([]))));
    let first = responses(&events);
    assert_eq!(responses(&events), first);
    let numbers: Vec<u64> = first
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    assert_eq!(first[0]["type"], "response.created");
    assert_eq!(first.last().unwrap()["type"], "response.completed");
}

#[test]
fn an_approval_shows_as_progress_and_an_approval_request_item() {
    let approval = json!({"id": "apr_1", "runId": "run_1", "kind": "tool", "summary": "write note.txt",
        "toolName": "write", "arguments": {"path": "note.txt"}, "status": "pending", "createdAt": 1,
        "risk": "medium", "decisions": ["approve_once", "deny"], "reusable": false});
    let events = vec![
        event(1, "run.created", json!({"input": "hi"})),
        event(2, "approval.requested", approval),
        event(
            3,
            "approval.resolved",
            json!({"approvalId": "apr_1", "status": "denied", "decision": "deny"}),
        ),
        event(4, "run.completed", ended("No.", json!([]))),
    ];
    let (chunks, _) = chat(&events);
    let lines: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str())
        .collect();
    assert_eq!(
        lines,
        [
            "⏸ write waits for approval apr_1 at /approve/apr_1\n",
            "■ denied: approval apr_1\n"
        ]
    );
    let items: Vec<Value> = responses(&events)
        .into_iter()
        .filter(|e| e["type"] == "response.output_item.done")
        .map(|e| e["item"].clone())
        .collect();
    assert_eq!(
        items[0],
        json!({"id": "mcpr_apr_1", "type": "mcp_approval_request", "server_label": "talon",
                                "name": "write", "arguments": "{\"path\":\"note.txt\"}"})
    );
}

#[test]
fn repeated_call_ids_each_get_their_item() {
    let call = |id: u64, kind: &str| {
        let data = if kind == "tool.call.started" {
            json!({"callId": "call_1", "name": "list", "source": "openclaw", "arguments": {}})
        } else {
            json!({"callId": "call_1", "name": "list", "durationMs": 1, "result": {"n": id}})
        };
        event(id, kind, data)
    };
    let events = vec![
        event(1, "run.created", json!({"input": "hi"})),
        call(2, "tool.call.started"),
        call(3, "tool.call.completed"),
        call(4, "tool.call.started"),
        call(5, "tool.call.completed"),
        event(6, "run.completed", ended("", json!([]))),
    ];
    let last = responses(&events).pop().unwrap();
    let items: Vec<(Value, Value, Value)> = last["response"]["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["id"].clone(), i["status"].clone(), i["output"].clone()))
        .collect();
    assert_eq!(
        items,
        [
            (json!("mcp_run_1_0"), json!("completed"), json!("{\"n\":3}")),
            (json!("mcp_run_1_1"), json!("completed"), json!("{\"n\":5}")),
        ]
    );
}

#[test]
fn cached_prompt_tokens_are_reported_where_openai_reports_them() {
    let mut end = ended("Hi", json!([]));
    end["usage"]["cacheReadTokens"] = json!(9);
    let events = vec![
        event(1, "run.created", json!({"input": "hi"})),
        event(2, "run.completed", end),
    ];
    let (_, whole) = chat(&events);
    assert_eq!(
        whole["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16,
               "prompt_tokens_details": {"cached_tokens": 9}})
    );
    let last = responses(&events).pop().unwrap();
    assert_eq!(
        last["response"]["usage"]["input_tokens_details"],
        json!({"cached_tokens": 9})
    );
}
