//! What a run cost: its model's prices (`models.providers.*.models[].cost`)
//! price each reply's usage, and the run's total is in its result, its
//! end event and `/metrics`; a model without prices reports no cost.

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, ScriptedCall, Turn};

use super::{Options, TestGateway};

/// A gateway whose agent runs `mock/m1` with `cost` (or none), the mock
/// answering every run with a tool call then text, 1,000 prompt and 200
/// completion tokens a reply.
async fn gateway(cost: Option<Value>) -> TestGateway {
    let reply = |turn: Turn| Turn {
        usage: (1_000, 200),
        ..turn
    };
    let mut model = json!({"id": "m1"});
    if let Some(cost) = cost {
        model["cost"] = cost;
    }
    TestGateway::start_opts(Options {
        script: Script {
            turns: vec![
                reply(Turn {
                    tool_calls: vec![ScriptedCall {
                        name: "list".into(),
                        arguments: json!({"path": "."}),
                    }],
                    ..Turn::default()
                }),
                reply(Turn {
                    text: Some("done".into()),
                    ..Turn::default()
                }),
            ],
            replay: Replay::PerRun,
            ..Script::default()
        },
        config: json!({
            "models": {"providers": {"mock": {"baseUrl": "http://unused/v1", "models": [model]}}},
            "agents": {"defaults": {"model": "mock/m1"}}
        }),
        ..Options::default()
    })
    .await
}

/// One run to its end: its result's usage and its end event's.
async fn run(g: &TestGateway) -> (Value, Value) {
    let (result, ended, _) = run_and_calls(g).await;
    (result, ended)
}

/// One run to its end: its result's usage, its end event's, and each
/// model call's (its `assistant.message`s').
async fn run_and_calls(g: &TestGateway) -> (Value, Value, Vec<Value>) {
    let (result, events) = g.completed_run("go").await;
    let ended = events
        .iter()
        .find(|e| e["type"] == "run.completed")
        .map(|e| e["data"]["usage"].clone())
        .unwrap_or_else(|| panic!("no run.completed in {events:?}"));
    let calls = events
        .iter()
        .filter(|e| e["type"] == "assistant.message")
        .map(|e| e["data"]["usage"].clone())
        .collect();
    (result["usage"].clone(), ended, calls)
}

/// The `talon_model_cost_usd_total` lines of `/metrics`.
async fn cost_lines(g: &TestGateway) -> Vec<String> {
    let text = g
        .client
        .get(g.url("/metrics"))
        .bearer_auth(&g.admin)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with("talon_model_cost_usd_total{"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_cost_is_priced_from_its_models_row() {
    // Two replies of 1,000 prompt and 200 completion tokens at $3 and
    // $15 per million: 2 × ($0.003 + $0.003) = $0.012 a run.
    let g = gateway(Some(
        json!({"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}),
    ))
    .await;
    let (result, ended, calls) = run_and_calls(&g).await;
    let usage =
        json!({"inputTokens": 2_000, "outputTokens": 400, "totalTokens": 2_400, "costUsd": 0.012});
    assert_eq!((&result, &ended), (&usage, &usage));
    // Each model call's price is on its own message.
    let call =
        json!({"inputTokens": 1_000, "outputTokens": 200, "totalTokens": 1_200, "costUsd": 0.006});
    assert_eq!(calls, [call.clone(), call]);
    run(&g).await;
    assert_eq!(
        cost_lines(&g).await,
        ["talon_model_cost_usd_total{agent=\"main\"} 0.024"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_prices_reports_no_cost() {
    let g = gateway(None).await;
    let (result, ended, calls) = run_and_calls(&g).await;
    let usage = json!({"inputTokens": 2_000, "outputTokens": 400, "totalTokens": 2_400});
    assert_eq!((&result, &ended), (&usage, &usage));
    let call = json!({"inputTokens": 1_000, "outputTokens": 200, "totalTokens": 1_200});
    assert_eq!(calls, [call.clone(), call]);
    assert_eq!(cost_lines(&g).await, Vec::<String>::new());
}
