//! `tool.call.delta` through the gateway: a Code Mode cell's console
//! output as its `exec` call's deltas, and a nested shell command's output
//! as it arrives, each delta carrying the model's call it belongs to.

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};

use super::{Options, TestGateway, tool_turn};

#[tokio::test]
async fn a_cells_console_and_its_commands_output_stream_as_deltas_with_their_parent() {
    let code = "console.log('hi'); \
                const r = await tools.exec({command: 'printf one; sleep 0.4; printf two'}); \
                return r.stdout;";
    let g = TestGateway::start_opts(Options {
        script: Script {
            turns: vec![
                tool_turn("exec", json!({"code": code})),
                Turn {
                    text: Some("ok".into()),
                    ..Turn::default()
                },
            ],
            replay: Replay::PerRun,
            ..Script::default()
        },
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
