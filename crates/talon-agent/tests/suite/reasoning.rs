//! The reasoning exposure plans, on both wires: a model that thinks
//! before a tool call and before its answer shows `thinking.delta` events
//! only under `reasoningDefault` `on` or `stream`; hidden or not, the
//! Anthropic thinking block goes back with the tool result.

use std::sync::Arc;

use serde_json::{Value, json};
use talon_agent::{AgentRun, CollectSink, Reasoning, RunEvents, RunOptions};
use talon_core_tools::CoreTools;
use talon_protocol::EventType;
use talon_tools::{CatalogBuilder, DirectSurface, ToolPolicy, ToolRunner};

use super::e2e::{TestTools, Wire, ctx, provider};

/// A run whose model thinks before a tool call and before its answer,
/// under `reasoning`: its events' kinds (consecutive repeats folded) and
/// the requests the model got.
async fn thinking_run(wire: Wire, reasoning: Reasoning) -> (Vec<EventType>, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "42").unwrap();
    let (mock, client) = provider(
        wire,
        json!([
            {"thinking": "Read the notes first.", "signature": "sig-n",
             "toolCalls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
            {"thinking": "They say 42.", "text": "42."},
        ]),
    )
    .await;
    let catalog = CatalogBuilder::new(ctx("th").scope)
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    let executor = Arc::new(TestTools {
        core: CoreTools::new(dir.path()).unwrap(),
        mcp: None,
        release: Arc::new(tokio::sync::Notify::new()),
    });
    let runner = Arc::new(ToolRunner::new(Arc::new(catalog), executor));
    let sink = Arc::new(CollectSink::default());
    let run = AgentRun {
        provider: client.as_ref(),
        surface: Arc::new(DirectSurface::new(runner)),
        ctx: ctx("th"),
        events: Arc::new(RunEvents::new(sink.clone(), &ctx("th"))),
        options: RunOptions {
            model: "m".into(),
            reasoning,
            ..RunOptions::default()
        },
    };
    assert_eq!(
        run.run(Vec::new(), "what do my notes say?").await.text,
        "42."
    );
    let mut kinds: Vec<EventType> = sink.events().into_iter().map(|e| e.kind).collect();
    kinds.dedup();
    (kinds, mock.requests())
}

#[tokio::test]
async fn reasoning_is_shown_only_where_the_policy_allows_on_either_wire() {
    use EventType::*;
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        for reasoning in [Reasoning::Stream, Reasoning::On] {
            let (kinds, _) = thinking_run(wire, reasoning).await;
            assert_eq!(
                kinds,
                [
                    RunStarted,
                    ThinkingDelta,
                    AssistantMessage,
                    ToolCallStarted,
                    ToolCallCompleted,
                    ThinkingDelta,
                    AssistantDelta,
                    AssistantMessage,
                    RunCompleted
                ],
                "{wire:?} {reasoning:?}"
            );
        }
        let (kinds, requests) = thinking_run(wire, Reasoning::Off).await;
        assert_eq!(
            kinds,
            [
                RunStarted,
                AssistantMessage,
                ToolCallStarted,
                ToolCallCompleted,
                AssistantDelta,
                AssistantMessage,
                RunCompleted
            ],
            "{wire:?}"
        );
        // Hidden or not, Anthropic's signed thinking goes back with the
        // tool result; Chat Completions reasoning is never sent back.
        let replayed = match wire {
            Wire::Anthropic => requests[1]["messages"][1]["content"][0].clone(),
            Wire::OpenAi => requests[1]["messages"][2].clone(),
        };
        let expected = match wire {
            Wire::Anthropic => {
                json!({"type": "thinking", "thinking": "Read the notes first.", "signature": "sig-n"})
            }
            Wire::OpenAi => json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"notes.txt\"}"}}]}),
        };
        assert_eq!(replayed, expected, "{wire:?}");
    }
}
