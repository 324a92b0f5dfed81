//! `/v1/responses` over real HTTP: sequence numbers that are log cursors
//! (a resume from any number, also after a restart on the same store),
//! `previous_response_id` honoured or refused, background and cancel, and
//! the surface's approval rule.

use std::time::Duration;

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};

use super::openai::{get, post};
use super::{Options, TestGateway, call_then_say};

/// A Responses stream's events, from `event:`/`data:` frames.
fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn numbers(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_stream_resumes_from_any_sequence_number_also_after_a_restart() {
    let g = TestGateway::with_script(call_then_say("list", json!({"path": "."}), "Listed.")).await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let created = post(
        &g,
        &g.admin,
        "/v1/responses",
        json!({"model": "talon/main", "input": "list it", "stream": true}),
        &[],
    )
    .await;
    let whole = events(&created.text);
    let types: Vec<&str> = whole.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"response.created"));
    assert_eq!(types.last(), Some(&"response.completed"));
    for kind in [
        "response.output_item.added",
        "response.mcp_call.completed",
        "response.output_text.delta",
        "response.output_text.done",
    ] {
        assert!(types.contains(&kind), "{kind} in {types:?}");
    }
    let seqs = numbers(&whole);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let id = whole[0]["response"]["id"].as_str().unwrap().to_owned();
    let replayed = get(&g, &g.admin, &format!("/v1/responses/{id}?stream=true")).await;
    assert_eq!(events(&replayed.text), whole, "a replay is the same stream");
    for cut in [0, 1, 3, whole.len() / 2, whole.len() - 1] {
        let after = seqs[cut];
        let rest = get(
            &g,
            &g.admin,
            &format!("/v1/responses/{id}?stream=true&starting_after={after}"),
        )
        .await;
        assert_eq!(events(&rest.text), whole[cut + 1..], "after {after}");
    }
    let snapshot = get(&g, &g.admin, &format!("/v1/responses/{id}"))
        .await
        .json();
    assert_eq!(snapshot["output_text"], "Listed.");
    assert_eq!(snapshot["output"][0]["type"], "mcp_call", "{snapshot}");
    // The same numbers from another gateway process on the same store.
    let config = g.same_state();
    g.running.shutdown().await;
    let again = talon_gateway::start(config).await.unwrap();
    let url = format!(
        "http://{}/v1/responses/{id}?stream=true&starting_after={}",
        again.addr, seqs[2]
    );
    let text = reqwest::Client::new()
        .get(url)
        .bearer_auth(&g.admin)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(events(&text), whole[3..]);
    again.shutdown().await;
}

#[tokio::test]
async fn previous_response_id_continues_its_session_or_is_refused() {
    let script = Script {
        turns: vec![Turn {
            text: Some("Ok.".into()),
            ..Turn::default()
        }],
        replay: Replay::PerRun,
        ..Script::default()
    };
    let g = TestGateway::with_script(script).await;
    let first = post(
        &g,
        &g.admin,
        "/v1/responses",
        json!({"model": "talon/main", "input": "one"}),
        &[],
    )
    .await
    .json();
    let second = post(
        &g,
        &g.admin,
        "/v1/responses",
        json!({"model": "talon/main", "input": "two", "previous_response_id": first["id"]}),
        &[],
    )
    .await;
    assert_eq!(second.json()["previous_response_id"], first["id"]);
    let told = |g: &TestGateway| -> Vec<String> {
        g.mock.requests().last().unwrap()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(told(&g), ["one", "two"]);
    // Going on from the first again forks after it.
    let branch = post(
        &g,
        &g.admin,
        "/v1/responses",
        json!({"model": "talon/main", "input": "three", "previous_response_id": first["id"]}),
        &[],
    )
    .await;
    assert_eq!(told(&g), ["one", "three"]);
    assert_ne!(
        branch.header("x-talon-session-key"),
        second.header("x-talon-session-key")
    );
    for missing in ["resp_run_000000000000000000000000", "resp_", "nonsense"] {
        let refused = post(
            &g,
            &g.admin,
            "/v1/responses",
            json!({"model": "talon/main", "input": "x", "previous_response_id": missing}),
            &[],
        )
        .await;
        let error = refused.json()["error"].clone();
        assert_eq!(
            (
                refused.status,
                error["code"].clone(),
                error["param"].clone()
            ),
            (
                404,
                json!("previous_response_not_found"),
                json!("previous_response_id")
            ),
            "{missing}"
        );
    }
}

#[tokio::test]
async fn a_background_response_can_be_cancelled() {
    let slow = Turn {
        text: Some("late".into()),
        delay: Duration::from_secs(30),
        ..Turn::default()
    };
    let g = TestGateway::with_script(Script {
        turns: vec![slow],
        replay: Replay::PerRun,
        ..Script::default()
    })
    .await;
    let started = post(
        &g,
        &g.admin,
        "/v1/responses",
        json!({"model": "talon/main", "input": "take your time", "background": true}),
        &[],
    )
    .await
    .json();
    assert!(
        ["queued", "in_progress"].contains(&started["status"].as_str().unwrap()),
        "{started}"
    );
    assert_eq!(started["background"], true);
    let id = started["id"].as_str().unwrap();
    let cancelled = post(
        &g,
        &g.admin,
        &format!("/v1/responses/{id}/cancel"),
        json!({}),
        &[],
    )
    .await
    .json();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(
        get(&g, &g.admin, &format!("/v1/responses/{id}"))
            .await
            .json()["status"],
        "cancelled"
    );
    // Cancelling again answers the same.
    let again = post(
        &g,
        &g.admin,
        &format!("/v1/responses/{id}/cancel"),
        json!({}),
        &[],
    )
    .await;
    assert_eq!(
        (again.status, again.json()["status"].clone()),
        (200, json!("cancelled"))
    );
    let stream = get(&g, &g.admin, &format!("/v1/responses/{id}?stream=true")).await;
    let last = events(&stream.text).pop().unwrap();
    assert_eq!(
        (last["type"].clone(), last["response"]["status"].clone()),
        (json!("response.incomplete"), json!("cancelled"))
    );
}

async fn approval_gateway(rule: talon_gateway::ApprovalRule) -> TestGateway {
    let g = TestGateway::start_opts(Options {
        script: call_then_say(
            "write",
            json!({"path": "note.txt", "content": "x"}),
            "Tried.",
        ),
        openai: talon_gateway::OpenAiPolicy {
            enabled: None,
            on_approval: rule,
        },
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    g
}

fn chat_write() -> Value {
    json!({"model": "talon/main", "messages": [{"role": "user", "content": "write the note"}]})
}

#[tokio::test]
async fn a_call_that_needs_an_approval_is_denied_by_the_rule() {
    for rule in [
        talon_gateway::ApprovalRule::Deny,
        talon_gateway::ApprovalRule::Wait(Duration::from_millis(300)),
    ] {
        let g = approval_gateway(rule).await;
        let answer = post(&g, &g.admin, "/v1/chat/completions", chat_write(), &[])
            .await
            .json();
        let progress = answer["choices"][0]["message"]["reasoning_content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            progress.contains("⏸ write waits for approval"),
            "{rule:?}: {progress}"
        );
        assert!(
            progress.contains("■ denied: approval"),
            "{rule:?}: {progress}"
        );
        assert_eq!(answer["choices"][0]["message"]["content"], "Tried.");
        assert!(!g.dir.path().join("workspace/note.txt").exists());
        let (_, list) = g
            .call(&g.admin, "approvals.list", json!({"status": "denied"}))
            .await;
        assert_eq!(
            list["approvals"][0]["reason"],
            "the OpenAI-compatible endpoint has no approver (gateway.openai.onApproval)"
        );
    }
}

#[tokio::test]
async fn a_waiting_call_goes_on_when_someone_approves() {
    let g = approval_gateway(talon_gateway::ApprovalRule::Wait(Duration::from_secs(60))).await;
    let pending = {
        let g = &g;
        async move {
            let id = talon_testing::wait::until_async(
                "an approval",
                talon_testing::wait::DEADLINE,
                async || {
                    let (_, list) = g
                        .call(&g.admin, "approvals.list", json!({"status": "pending"}))
                        .await;
                    list["approvals"][0]["id"].as_str().map(str::to_owned)
                },
            )
            .await;
            let (status, _) = g
                .call(
                    &g.admin,
                    "approvals.respond",
                    json!({"approvalId": id, "decision": "approve_once"}),
                )
                .await;
            assert_eq!(status, 200);
        }
    };
    let (answer, ()) = tokio::join!(
        post(&g, &g.admin, "/v1/chat/completions", chat_write(), &[]),
        pending
    );
    let progress = answer.json()["choices"][0]["message"]["reasoning_content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(progress.contains("▶ approved: approval"), "{progress}");
    assert!(progress.contains("✓ write"), "{progress}");
    assert_eq!(
        std::fs::read_to_string(g.dir.path().join("workspace/note.txt")).unwrap(),
        "x"
    );
}
