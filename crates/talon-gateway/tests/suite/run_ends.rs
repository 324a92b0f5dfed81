//! A run's end is one moment: whoever sees its terminal event and then
//! reads the run finds it ended, with its usage and its whole result.

use std::time::Duration;

use serde_json::json;
use talon_mock_model::{Replay, Script, Turn};

use super::TestGateway;

#[tokio::test]
async fn a_reader_who_sees_the_terminal_event_finds_the_run_ended_whole() {
    let g = TestGateway::with_script(Script {
        turns: vec![Turn {
            text: Some("done".into()),
            usage: (12, 4),
            ..Turn::default()
        }],
        replay: Replay::PerRun,
        ..Script::default()
    })
    .await;
    for n in 0..6 {
        let (status, run) = g
            .call(
                &g.admin,
                "runs.create",
                json!({"input": "go", "sessionKey": format!("app:ends-{n}")}),
            )
            .await;
        assert_eq!(status, 200, "{run}");
        let run_id = run["id"].as_str().unwrap().to_owned();
        // Read the stream as it arrives; the moment the terminal event
        // does, ask for the run.
        let mut stream = g
            .client
            .get(g.url(&format!("/v1/runs/{run_id}/events")))
            .bearer_auth(&g.admin)
            .send()
            .await
            .unwrap();
        let mut seen = String::new();
        while !seen.contains("event: run.completed") {
            let chunk = tokio::time::timeout(Duration::from_secs(20), stream.chunk())
                .await
                .expect("the terminal event arrives")
                .unwrap()
                .expect("the stream is open until its terminal event");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        let (_, got) = g.call(&g.admin, "runs.get", json!({"runId": run_id})).await;
        assert_eq!(
            (&got["status"], &got["usage"]["totalTokens"]),
            (&json!("completed"), &json!(16)),
            "{got}"
        );
        let (_, result) = g
            .call(
                &g.admin,
                "runs.wait",
                json!({"runId": run_id, "timeoutMs": 0}),
            )
            .await;
        let artifacts: Vec<&str> = result["artifacts"]
            .as_array()
            .unwrap_or_else(|| panic!("{result}"))
            .iter()
            .map(|a| a["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            (&result["status"], &result["output"]["text"], artifacts),
            (&json!("completed"), &json!("done"), vec!["trajectory"]),
            "{result}"
        );
    }
}
