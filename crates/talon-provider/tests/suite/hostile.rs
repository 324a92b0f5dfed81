//! Hostile Anthropic streams (and the Chat Completions client where the
//! rules are shared): cut, malformed, out of bounds, huge, slow or
//! stalled replies and proxy pages end as the crate's stable errors, never
//! a panic, and a tool call cut off is never returned.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_provider::config::OPENAI_COMPLETIONS;
use talon_provider::{ChatResponse, ProviderConfig, ProviderError, StreamDelta, Usage, build};

use super::anthropic::{complete, mock, provider, request};

fn event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    )
}

fn start() -> String {
    event(json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}))
}

fn block(index: usize, block: Value) -> String {
    event(json!({"type": "content_block_start", "index": index, "content_block": block}))
}

fn delta(index: usize, delta: Value) -> String {
    event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

fn text(index: usize, text: &str) -> String {
    delta(index, json!({"type": "text_delta", "text": text}))
}

fn json_piece(index: usize, piece: &str) -> String {
    delta(
        index,
        json!({"type": "input_json_delta", "partial_json": piece}),
    )
}

fn stop(index: usize) -> String {
    event(json!({"type": "content_block_stop", "index": index}))
}

fn end(reason: &str) -> String {
    event(
        json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 9}}),
    ) + &event(json!({"type": "message_stop"}))
}

fn tool(index: usize) -> String {
    block(
        index,
        json!({"type": "tool_use", "id": "toolu_x", "name": "exec", "input": {}}),
    )
}

fn malformed(message: &str) -> ProviderError {
    ProviderError::Malformed {
        provider: "anthropic".into(),
        message: message.into(),
        source: None,
    }
}

/// Each raw reply and the error it must end in (compared by kind and
/// text), with whether the decoder's error is kept as its source.
#[tokio::test]
async fn broken_streams_are_stable_errors() {
    let text_block = block(0, json!({"type": "text", "text": ""}));
    let cases: Vec<(String, ProviderError, bool)> = vec![
        // Cut mid-block.
        (
            start() + &text_block + &text(0, "par"),
            malformed("the stream ended before the reply did"),
            false,
        ),
        // Cut mid-tool.
        (
            start() + &tool(0) + &json_piece(0, "{\"pa"),
            malformed("the stream ended before the reply did"),
            false,
        ),
        // A tool block never stopped, though the reply ended normally.
        (
            start() + &tool(0) + &json_piece(0, "{}") + &end("tool_use"),
            malformed("tool call in block 0 never ended"),
            false,
        ),
        // Malformed input_json.
        (
            start()
                + &tool(0)
                + &json_piece(0, "{\"a\":")
                + &json_piece(0, "}")
                + &stop(0)
                + &end("tool_use"),
            malformed("tool call \"exec\"'s input is not JSON: expected value at line 1 column 6"),
            true,
        ),
        // Data that is not JSON.
        (
            start() + "data: {not json}\n\n",
            malformed("key must be a string at line 1 column 2 in {not json}"),
            true,
        ),
        // A delta for a block never started.
        (
            start() + &text(7, "x"),
            malformed("a delta for block 7, which is not open"),
            false,
        ),
        // A delta that does not fit its block.
        (
            start() + &text_block + &delta(0, json!({"type": "thinking_delta", "thinking": "x"})),
            malformed("a \"thinking_delta\" delta does not fit block 0"),
            false,
        ),
        // An index bomb.
        (
            start() + &block(1_000_000, json!({"type": "text", "text": ""})),
            malformed("content block index 1000000 is out of order"),
            false,
        ),
        // A block started twice.
        (
            start() + &text_block + &text_block,
            malformed("content block index 0 is out of order"),
            false,
        ),
        // A second message_start.
        (
            start() + &start(),
            malformed("a second message_start"),
            false,
        ),
        // A delta after its block stopped.
        (
            start() + &text_block + &stop(0) + &text(0, "late"),
            malformed("a delta for block 0, which is not open"),
            false,
        ),
    ];
    let turns: Vec<Value> = cases
        .iter()
        .map(|(raw, _, _)| json!({"raw": raw}))
        .collect();
    let mock = mock(json!({"turns": turns})).await;
    let client = provider(&mock.base_url(), |p| p.max_retries = 0);
    for (raw, expected, sourced) in cases {
        let (result, _) = complete(&*client, &request(true)).await;
        let error = result.unwrap_err();
        assert_eq!(error, expected, "{raw}");
        assert_eq!(
            std::error::Error::source(&error).is_some(),
            sourced,
            "{raw}"
        );
    }
}

#[tokio::test]
async fn text_shown_before_a_cut_stays_shown_and_no_cut_call_is_returned() {
    let raw = start()
        + &block(0, json!({"type": "text", "text": ""}))
        + &text(0, "I will")
        + &stop(0)
        + &tool(1)
        + &json_piece(1, "{\"pa");
    let mock = mock(json!({"turns": [{"raw": raw}]})).await;
    let client = provider(&mock.base_url(), |_| {});
    let (result, deltas) = complete(&*client, &request(true)).await;
    assert_eq!(
        result.unwrap_err(),
        malformed("the stream ended before the reply did")
    );
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Text("I will".into()),
            StreamDelta::ToolCallStarted {
                index: 0,
                id: "toolu_x".into(),
                name: "exec".into()
            },
            StreamDelta::ToolCallArguments {
                index: 0,
                text: "{\"pa".into()
            },
        ]
    );
}

#[tokio::test]
async fn legal_oddities_are_accepted() {
    // max_tokens mid-tool (the SDK's fixture): the call is dropped, the
    // text kept. Unknown events and blocks, pings and a missing
    // message_stop are fine.
    let truncated = start()
        + &block(0, json!({"type": "text", "text": ""}))
        + &text(0, "Let me")
        + &stop(0)
        + &tool(1)
        + &json_piece(1, "{\"code\": \"ret")
        + &end("max_tokens");
    let odd = start()
        + &event(json!({"type": "future_thing", "x": 1}))
        + &event(json!({"type": "ping"}))
        + &block(
            0,
            json!({"type": "server_tool_use", "id": "s", "name": "web"}),
        )
        + &delta(0, json!({"type": "future_delta"}))
        + &stop(0)
        + &block(1, json!({"type": "redacted_thinking", "data": "opaque"}))
        + &stop(1)
        + &block(2, json!({"type": "text", "text": "Hi"}))
        + &stop(2)
        + &event(
            json!({"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {"output_tokens": 2}}),
        );
    let mock = mock(json!({"turns": [{"raw": truncated}, {"raw": odd}]})).await;
    let client = provider(&mock.base_url(), |_| {});
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
            text: "Let me".into(),
            usage: Usage {
                input_tokens: 5,
                output_tokens: 9,
                ..Usage::default()
            },
            finish_reason: "length".into(),
            ..ChatResponse::default()
        }
    );
    let (reply, deltas) = complete(&*client, &request(true)).await;
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
            text: "Hi".into(),
            usage: Usage {
                input_tokens: 5,
                output_tokens: 2,
                ..Usage::default()
            },
            finish_reason: "refusal".into(),
            reasoning: vec![talon_provider::ReasoningBlock::Redacted {
                data: "opaque".into()
            }],
            ..ChatResponse::default()
        }
    );
    assert_eq!(deltas, vec![StreamDelta::Text("Hi".into())]);
}

#[tokio::test]
async fn a_huge_event_is_refused_and_a_huge_slow_one_is_read_in_linear_time() {
    let huge = "x".repeat(17 << 20);
    let big = "y".repeat(15 << 20);
    let slow = start()
        + &block(0, json!({"type": "text", "text": ""}))
        + &text(0, &big)
        + &stop(0)
        + &end("end_turn");
    let mock = mock(json!({"turns": [
        {"raw": format!("{}data: {huge}", start())},
        {"raw": slow, "chunkBytes": 16384, "chunkDelayMs": 1},
    ]}))
    .await;
    let client = provider(&mock.base_url(), |p| {
        p.timeout = Duration::from_millis(60_000)
    });
    let (result, _) = complete(&*client, &request(true)).await;
    assert_eq!(
        result.unwrap_err(),
        malformed("an event exceeded 16777216 bytes")
    );
    let started = Instant::now();
    let (reply, _) = complete(&*client, &request(true)).await;
    assert_eq!(reply.unwrap().text.len(), big.len());
    // About 960 pieces; a reader rescanning its buffer on each would
    // compare gigabytes.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_proxy_error_page_is_a_bounded_message() {
    let page = format!(
        "<html><body>{}</body></html>",
        "413 Request Entity Too Large ".repeat(100)
    );
    let turn = json!({"status": 413, "raw": page});
    let mock = mock(json!({"turns": [turn, turn]})).await;
    for api in ["anthropic-messages", "openai-completions"] {
        let client = build(ProviderConfig::new("anthropic", api, &mock.base_url())).unwrap();
        let (result, _) = complete(&*client, &request(true)).await;
        match result.unwrap_err() {
            ProviderError::Status {
                status: 413,
                message,
                ..
            } => {
                assert_eq!(message.chars().count(), 500, "{api}");
                assert!(message.starts_with("<html><body>413 Request"), "{api}");
            }
            other => panic!("{api}: {other:?}"),
        }
    }
    assert_eq!(mock.requests().len(), 2, "a 413 is not retried");
}

#[tokio::test]
async fn chat_completions_streams_stall_too_and_carry_reasoning() {
    let mock = mock(json!({"turns": [
        {"thinking": "Think first.", "text": "Then answer."},
        {"thinking": "Whole.", "text": "Reply."},
        {"text": "stalled", "chunkDelayMs": 3000},
    ]}))
    .await;
    let mut config = ProviderConfig::new("oai", OPENAI_COMPLETIONS, &mock.base_url());
    config.idle_timeout = Duration::from_millis(500);
    let client = build(config).unwrap();
    let (reply, deltas) = complete(&*client, &request(true)).await;
    assert_eq!(reply.unwrap().text, "Then answer.");
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Thinking("Think fi".into()),
            StreamDelta::Thinking("rst.".into()),
            StreamDelta::Text("Then ans".into()),
            StreamDelta::Text("wer.".into()),
        ]
    );
    let (reply, deltas) = complete(&*client, &request(false)).await;
    assert_eq!(reply.unwrap().text, "Reply.");
    assert_eq!(deltas, vec![StreamDelta::Thinking("Whole.".into())]);
    let (error, _) = complete(&*client, &request(true)).await;
    assert_eq!(
        error.unwrap_err(),
        ProviderError::Stalled {
            provider: "oai".into(),
            idle_ms: 500
        }
    );
}

#[test]
fn a_replys_native_payload_keeps_its_first_and_last_events_bounded_and_redacted() {
    use talon_provider::{MAX_RAW_BYTES, RawReply};
    let mut raw = RawReply::default();
    let event = |n: usize| {
        json!({"n": n, "choices": [{"delta": {"content": "x".repeat(100)}}], "api_key": "sk-live"})
            .to_string()
    };
    let size = event(0).len();
    let total = 3 * MAX_RAW_BYTES / size;
    for n in 0..total {
        raw.push(&event(n));
    }
    // The last one is not JSON: kept as text.
    raw.push("not json");
    let json = raw.to_json();
    let events = json["events"].as_array().unwrap();
    let head = MAX_RAW_BYTES / 2 / size;
    let tail = events.len() - head;
    let numbers: Vec<Value> = events.iter().map(|e| e["n"].clone()).collect();
    let mut expected: Vec<Value> = (0..head).map(|n| json!(n)).collect();
    expected.extend((total + 1 - tail..total).map(|n| json!(n)));
    expected.push(Value::Null);
    assert_eq!(
        (
            numbers,
            &json["omittedEvents"],
            &json["omittedAt"],
            &events[0]["api_key"],
            &events[head]["api_key"],
            events.last().unwrap()
        ),
        (
            expected,
            &json!(total + 1 - head - tail),
            &json!(head),
            &json!("<redacted>"),
            &json!("<redacted>"),
            &json!("not json")
        )
    );
    assert!(json.to_string().len() < MAX_RAW_BYTES + 4096);
    // An event larger than half the bound is counted, never kept.
    let mut big = RawReply::default();
    big.push(&"y".repeat(MAX_RAW_BYTES));
    assert_eq!(
        big.to_json(),
        json!({"events": [], "omittedEvents": 1, "omittedAt": 0})
    );
    assert!(RawReply::default().is_empty());
}
