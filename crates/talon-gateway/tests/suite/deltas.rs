//! `tool.call.delta` through the gateway: a Code Mode cell's console
//! output as its `exec` call's deltas, and a nested shell command's output
//! as it arrives, each delta carrying the model's call it belongs to.

use serde_json::{Value, json};

use super::{Options, TestGateway, call_then_say};

#[tokio::test]
async fn a_cells_console_and_its_commands_output_stream_as_deltas_with_their_parent() {
    let code = "console.log('hi'); \
                const r = await tools.exec({command: 'printf one; sleep 0.4; printf two'}); \
                return r.stdout;";
    let g = TestGateway::start_opts(Options {
        script: call_then_say("exec", json!({"code": code}), "ok"),
        config: json!({"tools": {"approvals": "allow", "codeMode": {"enabled": true}}}),
        ..Options::default()
    })
    .await;
    let (_, events) = g.completed_run("go").await;
    let deltas: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.call.delta")
        .map(|e| e["data"].clone())
        .collect();
    // The console line as exec's own delta; the command's two pieces
    // (0.4 s apart) as the nested call's, each naming exec as its parent.
    pretty_assertions::assert_eq!(
        deltas,
        vec![
            json!({"callId": "call_1", "update": {"stream": "console", "text": "hi\n"}}),
            json!({"callId": "call_1/1", "parentId": "call_1",
                   "update": {"stream": "stdout", "text": "one"}}),
            json!({"callId": "call_1/1", "parentId": "call_1",
                   "update": {"stream": "stdout", "text": "two"}}),
        ]
    );
}

#[tokio::test]
async fn a_flood_of_output_is_a_few_deltas_that_account_for_every_byte() {
    // 3 MB in a burst, then a line on stderr: the deltas keep the newest
    // whole lines and say how much they left out, at most one per stream
    // per 100 ms; the whole output is in the result and the log.
    let line = "0123456789abcdefghijklmnopqrstuvwxyz\n";
    let command = "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 3000000; echo end >&2";
    let g = TestGateway::start_opts(Options {
        script: call_then_say("exec", json!({"command": command}), "ok"),
        config: json!({"tools": {"approvals": "allow"}}),
        ..Options::default()
    })
    .await;
    let (_, events) = g.completed_run("go").await;
    let updates: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.call.delta")
        .map(|e| e["data"]["update"].clone())
        .collect();
    let of = |stream: &str| -> (String, u64, usize) {
        let mine: Vec<&Value> = updates.iter().filter(|u| u["stream"] == stream).collect();
        let text = mine.iter().filter_map(|u| u["text"].as_str()).collect();
        let omitted = mine.iter().filter_map(|u| u["omittedBytes"].as_u64()).sum();
        (text, omitted, mine.len())
    };
    let (out, out_omitted, out_deltas) = of("stdout");
    assert_eq!(out.len() as u64 + out_omitted, 3_000_000, "{updates:?}");
    assert_eq!(of("stderr"), ("end\n".to_owned(), 0, 1));
    assert!(out_deltas <= 10, "{out_deltas} deltas: {updates:?}");
    // Text after a gap starts at a line start, and no delta holds more
    // than a piece.
    for update in &updates {
        let text = update["text"].as_str().unwrap_or_default();
        assert!(text.len() <= 8 * 1024, "{update}");
        if update["omittedBytes"].is_u64() && !text.is_empty() {
            assert!(text.starts_with(line), "{update}");
        }
    }
}
