//! Runs through the agent loop: created, waited on, streamed, cancelled;
//! idempotency keys; one run per session lane and the multitask
//! strategies; history between a session's runs; compaction; models.

use std::time::Duration;

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};
use talon_testing::redact::transcript;
use talon_testing::wait;

use super::ws::{Transport, connect};
use super::{Options, TestGateway};

/// A script every run replays from its first turn.
fn per_run(turns: Vec<Turn>) -> Script {
    Script {
        turns,
        replay: Replay::PerRun,
        ..Script::default()
    }
}

/// Waits until the model has had `count` requests: the run that made the
/// last one is running, its reply on its way.
async fn asked(g: &TestGateway, count: usize) {
    wait::until_async(
        &format!("the model to get request {count}"),
        wait::DEADLINE,
        async || g.mock.requests().len() >= count,
    )
    .await;
}

fn text(text: &str, delay_ms: u64) -> Turn {
    Turn {
        text: Some(text.into()),
        delay: Duration::from_millis(delay_ms),
        usage: (12, 4),
        ..Turn::default()
    }
}

/// The types of a run's events, in order (from `runs.events`).
async fn types(g: &TestGateway, run_id: &str) -> Vec<String> {
    let (status, page) = g
        .call(&g.admin, "runs.events", json!({"runId": run_id}))
        .await;
    assert_eq!(status, 200, "{page}");
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

async fn wait(g: &TestGateway, run_id: &str) -> Value {
    let (status, result) = g
        .call(
            &g.admin,
            "runs.wait",
            json!({"runId": run_id, "timeoutMs": 20_000}),
        )
        .await;
    assert_eq!(status, 200, "{result}");
    result
}

/// One body, over HTTP and over WebSocket.
async fn a_run_end_to_end(g: &TestGateway, t: &Transport, tag: &str) {
    let params = json!({"input": "Say hello.", "sessionKey": format!("app:{tag}"), "idempotencyKey": format!("run-{tag}")});
    let run = t.call(g, "runs.create", params.clone()).await.unwrap();
    let run_id = run["id"].as_str().unwrap().to_owned();
    // At least {runId, status, sessionId, sessionKey}; `runId` is `id`.
    assert_eq!(run["runId"], run["id"]);
    assert!(run["status"].is_string(), "{run}");
    assert_eq!(run["agentId"], "main");
    assert_eq!(run["sessionKey"], format!("app:{tag}"));
    assert!(run["sessionId"].as_str().unwrap().starts_with("sess_"));
    // The same key and params: the same run, never a second.
    let again = t.call(g, "runs.create", params.clone()).await.unwrap();
    assert_eq!(again["id"], run["id"]);
    // The same key, other params: conflict.
    let mut other = params.clone();
    other["input"] = json!("Something else.");
    assert_eq!(
        t.call(g, "runs.create", other).await.unwrap_err()["code"],
        "conflict"
    );
    let result = t
        .call(
            g,
            "runs.wait",
            json!({"runId": run_id, "timeoutMs": 20_000}),
        )
        .await
        .unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["output"]["text"], "Hello from the mock.");
    assert_eq!(result["usage"]["inputTokens"], 12);
    assert_eq!(result["sessionKey"], format!("app:{tag}"));
    let got = t
        .call(g, "runs.get", json!({"runId": run_id}))
        .await
        .unwrap();
    assert_eq!(got["status"], "completed");
    assert!(got["startedAt"].as_u64().unwrap() <= got["endedAt"].as_u64().unwrap());
    let page = t
        .call(g, "runs.events", json!({"runId": run_id}))
        .await
        .unwrap();
    let mut kinds: Vec<&str> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    // The mock streams a delta per word.
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "run.created",
            "run.started",
            "assistant.delta",
            "assistant.message",
            "run.completed"
        ]
    );
    assert_eq!(page["done"], true);
    let ids: Vec<u64> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let messages = t.session_messages(g, &run["sessionId"]).await;
    let roles: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        roles,
        [
            ("user", "Say hello."),
            ("assistant", "Hello from the mock.")
        ]
    );
    // A session's next message is a run on it.
    let sent = t
        .call(
            g,
            "sessions.send",
            json!({"sessionId": run["sessionId"], "input": "Again."}),
        )
        .await
        .unwrap();
    assert_eq!(sent["sessionId"], run["sessionId"]);
    assert_eq!(sent["runId"], sent["id"]);
    let result = t
        .call(
            g,
            "runs.wait",
            json!({"runId": sent["id"], "timeoutMs": 20_000}),
        )
        .await
        .unwrap();
    assert_eq!(result["status"], "completed");
    let bad = t
        .call(g, "runs.create", json!({"input": "  "}))
        .await
        .unwrap_err();
    assert_eq!(bad["code"], "invalid_request");
    let ghost = t
        .call(g, "runs.wait", json!({"runId": "run_ghost"}))
        .await
        .unwrap_err();
    assert_eq!(ghost["code"], "not_found");
}

#[tokio::test]
async fn a_run_behaves_the_same_over_http_and_websocket() {
    let g = TestGateway::with_script(per_run(vec![text("Hello from the mock.", 0)])).await;
    a_run_end_to_end(&g, &Transport::Http, "http").await;
    let socket = connect(&g, &g.admin).await.unwrap();
    let ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0))));
    a_run_end_to_end(&g, &ws, "ws").await;
    // The second run of a session carried the first one's conversation.
    let requests = g.mock.requests();
    let last = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let roles: Vec<&str> = last.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(last[1]["content"], "Say hello.");
    assert_eq!(last[3]["content"], "Again.");
}

#[tokio::test]
async fn wait_answers_accepted_before_the_end_and_timed_out_only_past_the_runs_own_limit() {
    let g = TestGateway::with_script(per_run(vec![text("slow", 1_500)])).await;
    let (_, run) = g
        .call(&g.admin, "runs.create", json!({"input": "go"}))
        .await;
    let (status, early) = g
        .call(
            &g.admin,
            "runs.wait",
            json!({"runId": run["id"], "timeoutMs": 50}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(early["status"], "accepted", "{early}");
    assert_eq!(
        wait(&g, run["id"].as_str().unwrap()).await["status"],
        "completed"
    );
    let (_, limited) = g
        .call(
            &g.admin,
            "runs.create",
            json!({"input": "go", "timeoutMs": 200}),
        )
        .await;
    let result = wait(&g, limited["id"].as_str().unwrap()).await;
    assert_eq!(result["status"], "timed_out", "{result}");
    assert_eq!(result["error"]["code"], "timeout");
    assert_eq!(
        types(&g, limited["id"].as_str().unwrap())
            .await
            .last()
            .unwrap(),
        "run.timed_out"
    );
}

#[tokio::test]
async fn cancel_ends_a_running_run_and_a_queued_one() {
    let g = TestGateway::with_script(per_run(vec![text("never", 10_000)])).await;
    let (_, run) = g
        .call(
            &g.admin,
            "runs.create",
            json!({"input": "go", "sessionKey": "c"}),
        )
        .await;
    let (_, queued) = g
        .call(
            &g.admin,
            "runs.create",
            json!({"input": "next", "sessionKey": "c"}),
        )
        .await;
    // The first one is running once the model has the request.
    asked(&g, 1).await;
    let (status, cancelled) = g
        .call(&g.admin, "runs.cancel", json!({"runId": queued["id"]}))
        .await;
    assert_eq!(
        (status, cancelled["status"].clone()),
        (200, json!("cancelled"))
    );
    assert_eq!(
        types(&g, queued["id"].as_str().unwrap()).await,
        ["run.created", "run.queued", "run.cancelled"]
    );
    let (status, cancelled) = g
        .call(
            &g.admin,
            "runs.cancel",
            json!({"runId": run["id"], "reason": "user"}),
        )
        .await;
    assert_eq!(
        (status, cancelled["status"].clone()),
        (200, json!("cancelled")),
        "{cancelled}"
    );
    assert_eq!(
        wait(&g, run["id"].as_str().unwrap()).await["status"],
        "cancelled"
    );
    assert_eq!(
        types(&g, run["id"].as_str().unwrap()).await.last().unwrap(),
        "run.cancelled"
    );
    // Cancelling an ended run changes nothing.
    let (status, again) = g
        .call(&g.admin, "runs.cancel", json!({"runId": run["id"]}))
        .await;
    assert_eq!((status, again["status"].clone()), (200, json!("cancelled")));
}

#[tokio::test]
async fn a_busy_session_follows_its_multitask_strategy() {
    let g = TestGateway::with_script(per_run(vec![text("done", 600)])).await;
    let create = |input: &str, strategy: Option<&str>| {
        let mut params = json!({"input": input, "sessionKey": "lane"});
        if let Some(s) = strategy {
            params["multitaskStrategy"] = json!(s);
        }
        params
    };
    let (_, first) = g.call(&g.admin, "runs.create", create("one", None)).await;
    let (status, refused) = g
        .call(&g.admin, "runs.create", create("two", Some("reject")))
        .await;
    assert_eq!(
        (status, refused["error"]["code"].clone()),
        (409, json!("conflict"))
    );
    assert_eq!(
        refused["error"]["details"]["activeRunIds"],
        json!([first["id"]])
    );
    let (_, queued) = g
        .call(&g.admin, "runs.create", create("two", Some("enqueue")))
        .await;
    assert_eq!(
        wait(&g, first["id"].as_str().unwrap()).await["status"],
        "completed"
    );
    let second = wait(&g, queued["id"].as_str().unwrap()).await;
    assert_eq!(second["status"], "completed");
    let (_, first_run) = g
        .call(&g.admin, "runs.get", json!({"runId": first["id"]}))
        .await;
    let (_, second_run) = g
        .call(&g.admin, "runs.get", json!({"runId": queued["id"]}))
        .await;
    assert!(second_run["startedAt"].as_u64() >= first_run["endedAt"].as_u64());
    assert_eq!(
        types(&g, queued["id"].as_str().unwrap()).await[..3],
        ["run.created", "run.queued", "run.started"]
    );
    // interrupt: the active run is cancelled, its messages stay.
    let (_, active) = g.call(&g.admin, "runs.create", create("three", None)).await;
    asked(&g, 3).await;
    let (_, interrupting) = g
        .call(&g.admin, "runs.create", create("four", Some("interrupt")))
        .await;
    assert_eq!(
        wait(&g, active["id"].as_str().unwrap()).await["status"],
        "cancelled"
    );
    assert_eq!(
        wait(&g, interrupting["id"].as_str().unwrap()).await["status"],
        "completed"
    );
    // rollback: the active run is cancelled and its messages dropped.
    let (_, doomed) = g.call(&g.admin, "runs.create", create("five", None)).await;
    asked(&g, 5).await;
    let (_, rolling) = g
        .call(&g.admin, "runs.create", create("six", Some("rollback")))
        .await;
    assert_eq!(
        wait(&g, doomed["id"].as_str().unwrap()).await["status"],
        "cancelled"
    );
    assert_eq!(
        wait(&g, rolling["id"].as_str().unwrap()).await["status"],
        "completed"
    );
    let (_, messages) = g
        .call(
            &g.admin,
            "sessions.messages",
            json!({"sessionId": first["sessionId"]}),
        )
        .await;
    let users: Vec<&str> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["one", "two", "three", "four", "six"]);
}

#[tokio::test]
async fn abort_and_compact_a_session() {
    let g = TestGateway::with_script(Script {
        turns: vec![
            text("first answer", 0),
            text("We greeted each other.", 0),
            text("fresh answer", 0),
            text("stuck", 10_000),
        ],
        ..Script::default()
    })
    .await;
    let (_, run) = g
        .call(
            &g.admin,
            "runs.create",
            json!({"input": "hello", "sessionKey": "s"}),
        )
        .await;
    wait(&g, run["id"].as_str().unwrap()).await;
    let session_id = run["sessionId"].clone();
    let (status, session) = g
        .call(
            &g.admin,
            "sessions.compact",
            json!({"sessionId": session_id}),
        )
        .await;
    assert_eq!(status, 200, "{session}");
    let (_, page) = g
        .call(
            &g.admin,
            "sessions.messages",
            json!({"sessionId": session_id}),
        )
        .await;
    let last = page["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["role"].clone(), last["text"].clone()),
        (json!("compaction"), json!("We greeted each other."))
    );
    let (_, events) = g
        .call(&g.admin, "runs.events", json!({"runId": run["id"]}))
        .await;
    assert_eq!(events["done"], true);
    let mut stream = g
        .client
        .get(g.url("/v1/events?types=session.compacted"))
        .bearer_auth(&g.admin)
        .send()
        .await
        .unwrap();
    let chunk = tokio::time::timeout(Duration::from_secs(5), stream.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let chunk = String::from_utf8_lossy(&chunk);
    assert!(chunk.contains("event: session.compacted"), "{chunk}");
    assert!(chunk.contains("\"replacedMessages\":2"), "{chunk}");
    // The next run reads the summary, not what it replaced.
    let (_, next) = g
        .call(
            &g.admin,
            "sessions.send",
            json!({"sessionId": session_id, "input": "and now?"}),
        )
        .await;
    wait(&g, next["id"].as_str().unwrap()).await;
    let request = g.mock.requests()[2].clone();
    let contents: Vec<String> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        contents
            .iter()
            .any(|c| c.contains("We greeted each other.")),
        "{contents:?}"
    );
    assert!(!contents.iter().any(|c| c == "hello"), "{contents:?}");
    // abort: every live run of the session is cancelled.
    let (_, stuck) = g
        .call(
            &g.admin,
            "sessions.send",
            json!({"sessionId": session_id, "input": "wait"}),
        )
        .await;
    let (_, queued) = g
        .call(
            &g.admin,
            "sessions.send",
            json!({"sessionId": session_id, "input": "later"}),
        )
        .await;
    asked(&g, 4).await;
    let (status, busy) = g
        .call(
            &g.admin,
            "sessions.compact",
            json!({"sessionId": session_id}),
        )
        .await;
    assert_eq!(
        (status, busy["error"]["code"].clone()),
        (409, json!("conflict"))
    );
    let (status, aborted) = g
        .call(&g.admin, "sessions.abort", json!({"sessionId": session_id}))
        .await;
    assert_eq!(status, 200, "{aborted}");
    let mut ids: Vec<Value> = aborted["cancelledRunIds"].as_array().unwrap().clone();
    ids.sort_by_key(|v| v.as_str().unwrap().to_owned());
    let mut want = vec![stuck["id"].clone(), queued["id"].clone()];
    want.sort_by_key(|v| v.as_str().unwrap().to_owned());
    assert_eq!(ids, want);
    assert_eq!(
        wait(&g, stuck["id"].as_str().unwrap()).await["status"],
        "cancelled"
    );
    assert_eq!(
        wait(&g, queued["id"].as_str().unwrap()).await["status"],
        "cancelled"
    );
    let _ = session;
}

#[tokio::test]
async fn a_run_streams_over_sse_to_its_terminal_event() {
    let g = TestGateway::with_script(per_run(vec![text("streamed", 300)])).await;
    let (_, run) = g
        .call(&g.admin, "runs.create", json!({"input": "go"}))
        .await;
    let body = tokio::time::timeout(
        Duration::from_secs(20),
        g.client
            .get(g.url(&format!("/v1/runs/{}/events", run["id"].as_str().unwrap())))
            .bearer_auth(&g.admin)
            .send()
            .await
            .unwrap()
            .text(),
    )
    .await
    .expect("the stream ends after the run's terminal event")
    .unwrap();
    let kinds: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(
        kinds,
        [
            "run.created",
            "run.started",
            "assistant.delta",
            "assistant.message",
            "run.completed"
        ]
    );
}

#[tokio::test]
async fn models_list_and_status_never_show_a_key() {
    let g = TestGateway::start_opts(Options {
        script: Script {
            api_key: Some("sk-test-secret-123".into()),
            ..Script::texts(&["x"])
        },
        config: json!({"models": {"providers": {
            "good": {"baseUrl": "http://unused", "apiKey": "sk-test-secret-123", "models": [{"id": "m1", "contextWindow": 8192}]},
            "bad": {"baseUrl": "http://unused", "apiKey": "sk-wrong-456", "models": [{"id": "m2"}]},
            "none": {"baseUrl": "http://unused", "models": [{"id": "m3"}]}
        }}}),
        ..Options::default()
    })
    .await;
    let (status, models) = g.call(&g.admin, "models.list", json!({})).await;
    assert_eq!(status, 200, "{models}");
    let mut ids: Vec<&str> = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["bad/m2", "good/m1", "none/m3"]);
    let (status, health) = g.call(&g.admin, "models.status", json!({})).await;
    assert_eq!(status, 200, "{health}");
    let mut providers: Vec<(String, bool)> = health["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["provider"].as_str().unwrap().to_owned(),
                p["authenticated"].as_bool().unwrap(),
            )
        })
        .collect();
    providers.sort();
    assert_eq!(
        providers,
        [
            ("bad".to_owned(), false),
            ("good".to_owned(), true),
            ("none".to_owned(), false)
        ]
    );
    let text = format!("{models}{health}");
    assert!(
        !text.contains("sk-test-secret-123") && !text.contains("sk-wrong-456"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_mode_run_executes_its_cell() {
    let g = TestGateway::start_opts(Options {
        script: per_run(vec![
            Turn {
                tool_calls: vec![talon_mock_model::ScriptedCall {
                    name: "exec".into(),
                    arguments: json!({"code": "text('cell says hi'); return 6 * 7;"}),
                }],
                ..Turn::default()
            },
            text("The cell returned 42.", 0),
        ]),
        config: json!({"tools": {"codeMode": {"enabled": true}}}),
        ..Options::default()
    })
    .await;
    let (_, run) = g
        .call(&g.admin, "runs.create", json!({"input": "compute"}))
        .await;
    let result = wait(&g, run["id"].as_str().unwrap()).await;
    assert_eq!(result["status"], "completed", "{result}");
    let (_, page) = g
        .call(&g.admin, "runs.events", json!({"runId": run["id"]}))
        .await;
    insta::assert_json_snapshot!(transcript(page["events"].as_array().unwrap()));
}

#[tokio::test]
async fn shutdown_drains_runs_and_ends_open_streams() {
    let g =
        TestGateway::with_script(per_run(vec![text("finished in the grace period", 300)])).await;
    let (_, run) = g
        .call(&g.admin, "runs.create", json!({"input": "go"}))
        .await;
    let stream = g
        .client
        .get(g.url("/v1/events"))
        .bearer_auth(&g.admin)
        .send()
        .await
        .unwrap();
    let socket = connect(&g, &g.admin).await.unwrap();
    asked(&g, 1).await;
    let TestGateway { running, dir, .. } = g;
    let store_dir = dir.path().to_owned();
    tokio::time::timeout(Duration::from_secs(20), running.shutdown())
        .await
        .expect("shutdown ends streams and connections");
    // The open stream ended, after the run's terminal event.
    let body = tokio::time::timeout(Duration::from_secs(5), stream.text())
        .await
        .unwrap()
        .unwrap();
    assert!(body.contains("event: run.completed"), "{body}");
    drop(socket);
    // The run ended inside the grace period and its end is durable.
    let store = talon_store::open(&talon_store::StoreConfig::embedded(&store_dir))
        .await
        .unwrap();
    let ended = store
        .run(run["id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.status, talon_protocol::gateway::RunStatus::Completed);
    store.close().await;
}

/// A run the provider ends: its error's code says what kind of failure it
/// was, and whether trying again may help.
async fn provider_failure(script: Script, model: &str) -> Value {
    let g = TestGateway::start_opts(Options {
        script,
        config: json!({
            "models": {"providers": {"p": {"baseUrl": "http://unused/v1", "maxRetries": 0, "models": [{"id": "m1"}]}}},
            "agents": {"defaults": {"model": model}}
        }),
        ..Options::default()
    })
    .await;
    let (status, run) = g
        .call(
            &g.admin,
            "runs.create",
            json!({"input": "hi", "idempotencyKey": "k"}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    let result = wait(&g, run["id"].as_str().unwrap()).await;
    assert_eq!(result["status"], "failed", "{result}");
    result["error"].clone()
}

#[tokio::test]
async fn an_unknown_model_fails_the_run_as_not_found() {
    let error = provider_failure(
        Script {
            models: Some(vec!["m1".into()]),
            ..Script::texts(&["x"])
        },
        "p/nope",
    )
    .await;
    assert_eq!(
        (&error["code"], &error["retryable"], &error["details"]),
        (
            &json!("not_found"),
            &json!(false),
            &json!({"reason": "unknown_model", "provider": "p", "model": "nope"})
        ),
        "{error}"
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("provider \"p\" does not know model \"nope\""),
        "{error}"
    );
}

#[tokio::test]
async fn a_provider_that_keeps_failing_ends_the_run_unavailable_and_retryable() {
    let failing = Script {
        turns: vec![talon_mock_model::Turn {
            status: Some(503),
            ..talon_mock_model::Turn::default()
        }],
        ..Script::texts(&[])
    };
    let error = provider_failure(failing, "p/m1").await;
    assert_eq!(
        (&error["code"], &error["retryable"], &error["details"]),
        (
            &json!("unavailable"),
            &json!(true),
            &json!({"reason": "provider_unavailable", "provider": "p", "status": 503})
        ),
        "{error}"
    );
}
