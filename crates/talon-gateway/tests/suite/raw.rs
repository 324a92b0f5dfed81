//! The envelope's `raw`: each model call's `assistant.message` carries the
//! provider's reply as it came (the stream's events), bounded, stored with
//! the secrets the gateway knows redacted, and shown to admin callers
//! only: another token's `runs.events`, its SSE stream and the run's
//! trajectory have none.

use serde_json::{Value, json};
use talon_mock_model::Script;

use super::openai::token;
use super::{Options, TestGateway};

const KEY: &str = "sk-raw-secret-789";

/// Every event of `run_id` read by `who` with `runs.events`.
async fn events(g: &TestGateway, who: &str, run_id: &Value) -> Vec<Value> {
    let (status, page) = g.call(who, "runs.events", json!({"runId": run_id})).await;
    assert_eq!(status, 200, "{page}");
    page["events"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_calls_native_reply_reaches_admins_only_and_redacted() {
    let g = TestGateway::start_opts(Options {
        script: Script {
            api_key: Some(KEY.into()),
            ..Script::texts(&["all is well"])
        },
        config: json!({
            "models": {"providers": {"mock": {"baseUrl": "http://unused/v1", "apiKey": KEY, "models": [{"id": "m1"}]}}},
            "agents": {"defaults": {"model": "mock/m1"}}
        }),
        ..Options::default()
    })
    .await;
    let (result, admin_events) = g.completed_run("go").await;
    let run_id = &result["runId"];
    let message = admin_events
        .iter()
        .find(|e| e["type"] == "assistant.message")
        .unwrap_or_else(|| panic!("no assistant.message in {admin_events:?}"));
    // The mock streams Chat Completions chunks: the raw payload is those
    // chunks as they came (the usage counts are no credentials), then the
    // stream's end.
    let chunk = |delta: Value, finish: Value| {
        json!({"choices": [{"delta": delta, "finish_reason": finish, "index": 0}],
               "created": 0, "id": "chatcmpl-mock", "model": "m1", "object": "chat.completion.chunk"})
    };
    let mut last = chunk(json!({}), json!("stop"));
    last["usage"] = message["raw"]["events"][3]["usage"].clone();
    assert!(last["usage"]["prompt_tokens"].is_u64(), "{message}");
    assert_eq!(
        message["raw"],
        json!({"events": [
            chunk(json!({"content": "", "role": "assistant"}), Value::Null),
            chunk(json!({"content": "all is w"}), Value::Null),
            chunk(json!({"content": "ell"}), Value::Null),
            last,
            "[DONE]"
        ]})
    );

    // Another token reads the same events without it.
    let reader = token(&g, &["session.read", "artifacts.read"]).await;
    let plain = events(&g, &reader, run_id).await;
    let without: Vec<Value> = admin_events
        .iter()
        .cloned()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("raw");
            e
        })
        .collect();
    assert_eq!(plain, without);

    // Its SSE stream neither.
    let body = g
        .client
        .get(g.url(&format!("/v1/runs/{}/events", run_id.as_str().unwrap())))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("assistant.message"), "{body}");
    assert!(!body.contains("\"raw\""), "{body}");

    // Nor the trajectory, whoever reads it.
    let trajectory = result["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["type"] == "trajectory")
        .unwrap();
    let stored = g.artifact_text(&trajectory["id"]).await;
    assert!(stored.contains("assistant.message"), "{stored}");
    assert!(!stored.contains("\"raw\""), "{stored}");
}
