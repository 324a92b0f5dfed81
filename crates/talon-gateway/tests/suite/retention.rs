//! `store.retention`: the engine prunes the event log after runs end, and
//! a cursor older than what is kept answers `cursor_expired`, over a call
//! and over a stream, instead of skipping events silently.

use serde_json::json;
use talon_testing::redact::redacted;
use talon_testing::wait;

use super::{Options, TestGateway};

#[tokio::test]
async fn events_past_retention_are_pruned_and_their_cursors_expire() {
    let g = TestGateway::start_opts(Options {
        runs: talon_gateway::RunLimits {
            event_retention: talon_store::Retention {
                max_age: None,
                max_events: Some(3),
            },
            ..talon_gateway::RunLimits::default()
        },
        ..Options::default()
    })
    .await;
    let (_, run) = g
        .call(&g.admin, "runs.create", json!({"input": "hello"}))
        .await;
    let run_id = run["id"].clone();
    let (_, result) = g
        .call(
            &g.admin,
            "runs.wait",
            json!({"runId": run_id, "timeoutMs": 20_000}),
        )
        .await;
    assert_eq!(result["status"], "completed", "{result}");
    // The run's end wakes the pruner; its first events go.
    let expired = wait::until_async(
        "the run's first event to be pruned",
        wait::DEADLINE,
        async || {
            let (status, page) = g
                .call(
                    &g.admin,
                    "runs.events",
                    json!({"runId": run_id, "after": "1"}),
                )
                .await;
            (status == 410).then_some(page)
        },
    )
    .await;
    insta::assert_json_snapshot!("expired_call", redacted(&expired));
    // Reading from the start is refused too (the start is gone), naming
    // the oldest event kept; from just before it, what the log kept of the
    // run (its newest three events, the run's last two among them) is
    // there, the terminal one last.
    let (_, from_start) = g
        .call(&g.admin, "runs.events", json!({"runId": run_id}))
        .await;
    assert_eq!(
        from_start["error"]["code"], "cursor_expired",
        "{from_start}"
    );
    let oldest: u64 = from_start["error"]["details"]["oldestId"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .unwrap();
    let (_, kept) = g
        .call(
            &g.admin,
            "runs.events",
            json!({"runId": run_id, "after": (oldest - 1).to_string()}),
        )
        .await;
    insta::assert_json_snapshot!("kept", redacted(&kept));
    // A stream from the old cursor is refused the same way.
    let response = g
        .client
        .get(g.url(&format!(
            "/v1/runs/{}/events?after=1",
            run_id.as_str().unwrap()
        )))
        .bearer_auth(&g.admin)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap();
    insta::assert_json_snapshot!("expired_stream", redacted(&json!([status, body])));
}
