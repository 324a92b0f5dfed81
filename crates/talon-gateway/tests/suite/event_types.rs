//! Every event type the protocol declares reaches the log through a real
//! path: each has a gateway test that sees it emitted (this file adds
//! the one for `thinking.delta`), and a walk over `EventType::ALL` fails
//! for a type no test of this suite names, as a string in a test or a
//! snapshot, or as its `EventType` variant (`task.updated`: the `tasks`
//! suite).

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};
use talon_protocol::EventType;

use super::{Options, TestGateway};

/// Every file under `dir`, recursively.
fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn every_declared_event_type_is_seen_by_a_gateway_test() {
    let mut paths = Vec::new();
    files(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite"),
        &mut paths,
    );
    let text: String = paths
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    let unseen: Vec<&str> = EventType::ALL
        .iter()
        .filter(|t| !matches!(t, EventType::Unknown))
        .filter(|t| {
            !text.contains(&format!("\"{}\"", t.as_str()))
                && !text.contains(&format!("{}=", t.as_str()))
                && !text.contains(&format!("event: {}", t.as_str()))
                && !text.contains(&format!("EventType::{t:?}"))
        })
        .map(|t| t.as_str())
        .collect();
    assert_eq!(unseen, Vec::<&str>::new());
}

#[tokio::test]
async fn reasoning_streams_as_thinking_deltas_where_the_agent_shows_it() {
    let g = TestGateway::start_opts(Options {
        script: Script {
            turns: vec![Turn {
                thinking: Some("Weighing the colours.".into()),
                text: Some("Teal.".into()),
                ..Turn::default()
            }],
            replay: Replay::PerRun,
            ..Script::default()
        },
        config: json!({"agents": {"defaults": {"reasoningDefault": "stream"}}}),
        ..Options::default()
    })
    .await;
    let (_, events) = g.completed_run("pick one").await;
    let thinking: String = events
        .iter()
        .filter(|e| e["type"] == "thinking.delta")
        .map(|e| e["data"]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(thinking, "Weighing the colours.");
    let kinds: Vec<Value> = events
        .iter()
        .map(|e| e["type"].clone())
        .filter(|t| t != "assistant.delta" && t != "thinking.delta")
        .collect();
    assert_eq!(
        kinds,
        [
            "run.created",
            "run.started",
            "assistant.message",
            "run.completed"
        ]
    );
}
