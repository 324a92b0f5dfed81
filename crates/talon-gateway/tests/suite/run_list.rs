//! `runs.list` over HTTP: newest first, filtered by status, agent,
//! session, time and text, paged with `nextCursor`; bad params name the
//! field. What the listed runs cost (`usage.summary`) and a run's events
//! read from its end (`runs.events` with `last` and `before`).

use serde_json::{Value, json};

use talon_testing::redact::Redactor;

use super::TestGateway;
use super::artifacts::sized;

fn ids(page: &Value) -> Vec<&str> {
    page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect()
}

async fn list(g: &TestGateway, params: Value) -> Value {
    let (status, page) = g.call(&g.admin, "runs.list", params).await;
    assert_eq!(status, 200, "{page}");
    page
}

#[tokio::test]
async fn runs_are_listed_filtered_and_paged() {
    let g = TestGateway::with_script(talon_mock_model::Script {
        replay: talon_mock_model::Replay::PerRun,
        ..talon_mock_model::Script::texts(&["Hello."])
    })
    .await;
    let mut created = Vec::new();
    let mut results = Vec::new();
    for key in ["a", "b", "a", "c", "a"] {
        let (status, run) = g
            .call(
                &g.admin,
                "runs.create",
                json!({"input": "hi", "sessionKey": key}),
            )
            .await;
        assert_eq!(status, 200, "{run}");
        let id = run["id"].as_str().unwrap().to_owned();
        let (_, done) = g
            .call(
                &g.admin,
                "runs.wait",
                json!({"runId": id, "timeoutMs": 20_000}),
            )
            .await;
        results.push(done);
        created.push((id, run["sessionId"].as_str().unwrap().to_owned()));
    }
    let newest_first: Vec<&str> = created.iter().rev().map(|(id, _)| id.as_str()).collect();
    // Runs and sessions numbered in the order they were created.
    let mut redactor = Redactor::new();
    redactor.value(&json!(created));
    insta::assert_json_snapshot!("completed", sized(redactor.value(&json!(results))));
    let page = list(&g, json!({})).await;
    // Newest first, one page.
    insta::assert_json_snapshot!("listed", redactor.value(&page));
    assert_eq!(ids(&page), newest_first);
    let (_, first) = g
        .call(&g.admin, "runs.get", json!({"runId": created[0].0}))
        .await;
    assert_eq!(page["runs"][4], first, "the same run as runs.get");

    // Pages of two, to the end.
    let mut seen = Vec::new();
    let mut params = json!({"limit": 2});
    loop {
        let page = list(&g, params.clone()).await;
        seen.extend(ids(&page).into_iter().map(str::to_owned));
        match page.get("nextCursor") {
            Some(cursor) => params["cursor"] = cursor.clone(),
            None => break,
        }
    }
    assert_eq!(seen, newest_first);

    let session_a = &created[0].1;
    let page = list(
        &g,
        json!({"sessionId": session_a, "status": ["completed"], "agentId": "main"}),
    )
    .await;
    assert_eq!(ids(&page), [&created[4].0, &created[2].0, &created[0].0]);
    assert!(ids(&list(&g, json!({"status": ["failed", "queued"]})).await).is_empty());
    assert!(ids(&list(&g, json!({"agentId": "nobody"})).await).is_empty());
    let third_at = page["runs"][1]["createdAt"].as_u64().unwrap();
    let page = list(&g, json!({"createdBefore": third_at})).await;
    assert!(
        ids(&page)
            .iter()
            .all(|id| *id != created[2].0 && *id != created[3].0 && *id != created[4].0),
        "{page}"
    );
    let page = list(
        &g,
        json!({"createdAfter": third_at, "createdBefore": u64::MAX}),
    )
    .await;
    assert_eq!(ids(&page)[..], newest_first[..ids(&page).len()]);
    assert!(ids(&page).contains(&created[2].0.as_str()));
    // A limit past the cap is the cap; zero is one.
    assert_eq!(ids(&list(&g, json!({"limit": 0})).await).len(), 1);
    assert_eq!(ids(&list(&g, json!({"limit": u32::MAX})).await).len(), 5);
}

#[tokio::test]
async fn bad_params_name_the_field() {
    let g = TestGateway::start().await;
    let cases = [
        (
            json!({"cursor": "run_nope"}),
            "cursor",
            "cursor \"run_nope\" is not a run: pass the previous page's nextCursor",
        ),
        (
            json!({"status": ["paused"]}),
            "status",
            "status: an unknown run status",
        ),
        (
            json!({"createdAfter": 50, "createdBefore": 50}),
            "createdAfter",
            "createdAfter (50) must be before createdBefore (50)",
        ),
    ];
    for (params, field, message) in cases {
        let (status, body) = g.call(&g.admin, "runs.list", params.clone()).await;
        assert_eq!(
            (status, body),
            (
                400,
                json!({"error": {"code": "invalid_request", "message": message, "retryable": false,
                                   "details": {"field": field}}})
            ),
            "{params}"
        );
    }
    let mut decoded = Vec::new();
    for params in [
        json!({"text": "x".repeat(201)}),
        json!({"status": "completed"}),
        json!({"createdAfter": -1}),
        json!({"cursor": "x".repeat(10_000)}),
        json!({"agentId": "main", "extra": true}),
    ] {
        let (status, body) = g.call(&g.admin, "runs.list", params.clone()).await;
        decoded.push(json!([status, body]));
    }
    insta::assert_json_snapshot!("decoder_refused", decoded);
}

#[tokio::test]
async fn runs_are_found_by_their_summary_and_what_they_cost_is_summed() {
    let g = TestGateway::with_script(talon_mock_model::Script {
        replay: talon_mock_model::Replay::PerRun,
        ..talon_mock_model::Script::texts(&["Hello."])
    })
    .await;
    let mut runs = Vec::new();
    for input in [
        "\n Deploy the API \nnow",
        "deploy the docs",
        "Check the logs",
    ] {
        let (_, run) = g
            .call(&g.admin, "runs.create", json!({"input": input}))
            .await;
        let id = run["id"].as_str().unwrap().to_owned();
        g.call(
            &g.admin,
            "runs.wait",
            json!({"runId": id, "timeoutMs": 20_000}),
        )
        .await;
        let (_, run) = g.call(&g.admin, "runs.get", json!({"runId": id})).await;
        runs.push(run);
    }
    let summaries = |page: &Value| -> Vec<Value> {
        page["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["summary"].clone())
            .collect()
    };
    assert_eq!(
        summaries(&list(&g, json!({"text": "DEPLOY THE"})).await),
        [json!("deploy the docs"), json!("Deploy the API")]
    );
    assert_eq!(
        summaries(&list(&g, json!({"text": "now"})).await),
        Vec::<Value>::new()
    );
    // The model a run started on, as its `run.started` event says.
    let (_, events) = g
        .call(&g.admin, "runs.events", json!({"runId": runs[0]["id"]}))
        .await;
    let started = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "run.started")
        .unwrap();
    let model = started["data"]["model"].clone();
    assert!(runs.iter().all(|r| r["model"] == model), "{runs:?}");
    // All three today, one row: their usage summed.
    let (status, usage) = g.call(&g.admin, "usage.summary", json!({})).await;
    assert_eq!(status, 200, "{usage}");
    let sum = |field: &str| -> Value {
        json!(
            runs.iter()
                .map(|r| r["usage"][field].as_u64().unwrap())
                .sum::<u64>()
        )
    };
    let total = json!({"inputTokens": sum("inputTokens"), "outputTokens": sum("outputTokens"),
                       "totalTokens": sum("totalTokens")});
    let today = runs[0]["createdAt"].as_u64().unwrap() / 86_400_000 * 86_400_000;
    assert_eq!(
        json!({"runs": usage["runs"], "usage": usage["usage"], "rows": usage["rows"]}),
        json!({"runs": 3, "usage": total,
               "rows": [{"day": today, "agentId": "main", "model": model, "runs": 3, "usage": total}]})
    );
    // Another agent's, or another window's: none.
    let (_, other) = g
        .call(&g.admin, "usage.summary", json!({"agentId": "helper"}))
        .await;
    assert_eq!(other["runs"], 0);
}

#[tokio::test]
async fn a_runs_events_are_read_from_its_end_a_page_at_a_time() {
    let g = TestGateway::with_script(talon_mock_model::Script::texts(&[
        "A reply long enough to stream in several deltas, one after another.",
    ]))
    .await;
    let (_, run) = g
        .call(&g.admin, "runs.create", json!({"input": "hi"}))
        .await;
    let id = run["id"].clone();
    g.call(
        &g.admin,
        "runs.wait",
        json!({"runId": id, "timeoutMs": 20_000}),
    )
    .await;
    let page = |params: Value| {
        let g = &g;
        async move {
            let (status, body) = g.call(&g.admin, "runs.events", params).await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let all = page(json!({"runId": id})).await;
    let all = all["events"].as_array().unwrap().clone();
    assert!(all.len() > 6, "{all:?}");
    let tail = page(json!({"runId": id, "last": 3})).await;
    assert_eq!(tail, json!({"done": true, "events": all[all.len() - 3..]}));
    // Back a page at a time from the tail, to the start, once each.
    let mut read: Vec<Value> = tail["events"].as_array().unwrap().clone();
    loop {
        let before = read[0]["id"].clone();
        let earlier = page(json!({"runId": id, "before": before, "last": 3})).await;
        let earlier = earlier["events"].as_array().unwrap().clone();
        if earlier.is_empty() {
            break;
        }
        read.splice(0..0, earlier);
    }
    assert_eq!(read, all);
    let (status, body) = g
        .call(
            &g.admin,
            "runs.events",
            json!({"runId": id, "last": 3, "limit": 3}),
        )
        .await;
    assert_eq!(
        (status, &body["error"]["details"]["field"]),
        (400, &json!("last"))
    );
}
