//! Runs through the agent loop: created, waited on, streamed, cancelled;
//! idempotency keys; one run per session lane and the multitask
//! strategies; history between a session's runs; compaction; models.

use std::time::Duration;

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};
use talon_testing::redact::{Redactor, redacted, transcript};
use talon_testing::wait;

use super::artifacts::sized;
use super::ws::{Transport, connect};
use super::{Options, TestGateway};

/// `value` redacted by `r`, message ids too: a message id,
/// `msg_<run id>_<n>`, holds its run's id where the redactor does not see
/// it (joined to `msg` and `n`), so it is numbered here as the run is.
pub(super) fn whole(r: &mut Redactor, value: &Value) -> Value {
    fn walk(r: &mut Redactor, value: &mut Value) {
        match value {
            Value::String(text) => {
                let mut from = 0;
                while let Some(at) = text[from..].find("msg_run_").map(|i| from + i) {
                    let run = at + "msg_".len()..at + "msg_run_".len() + 24;
                    let id = text.get(run.clone()).filter(|id| {
                        id[4..].bytes().all(|b| b.is_ascii_hexdigit())
                            && text[run.end..].starts_with('_')
                    });
                    let Some(id) = id else {
                        from = at + 1;
                        continue;
                    };
                    let placeholder = r.value(&json!(id)).as_str().unwrap().to_owned();
                    text.replace_range(run.clone(), &placeholder);
                    from = run.start + placeholder.len();
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(r, v)),
            Value::Object(map) => map.values_mut().for_each(|v| walk(r, v)),
            _ => {}
        }
    }
    let mut value = value.clone();
    walk(r, &mut value);
    r.value(&value)
}

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

/// One body, over HTTP and over WebSocket: what each call answered,
/// redacted, the transport's tag as `<tag>`.
async fn a_run_end_to_end(g: &TestGateway, t: &Transport, tag: &str) -> Value {
    let params = json!({"input": "Say hello.", "sessionKey": format!("app:{tag}"), "idempotencyKey": format!("run-{tag}")});
    let run = t.call(g, "runs.create", params.clone()).await.unwrap();
    let run_id = run["id"].as_str().unwrap().to_owned();
    let mut r = Redactor::new()
        .with(format!("app:{tag}"), "app:<tag>")
        .with(format!("run-{tag}"), "run-<tag>");
    // At least {runId, status, sessionId, sessionKey}; `runId` is `id`.
    let created = whole(&mut r, &run);
    // The same key and params: the same run, never a second.
    let again = t.call(g, "runs.create", params.clone()).await.unwrap();
    assert_eq!(again["id"], run["id"]);
    // The same key, other params: conflict.
    let mut other = params.clone();
    other["input"] = json!("Something else.");
    let conflict = t.call(g, "runs.create", other).await.unwrap_err();
    let result = t
        .call(
            g,
            "runs.wait",
            json!({"runId": run_id, "timeoutMs": 20_000}),
        )
        .await
        .unwrap();
    let got = t
        .call(g, "runs.get", json!({"runId": run_id}))
        .await
        .unwrap();
    assert!(got["startedAt"].as_u64().unwrap() <= got["endedAt"].as_u64().unwrap());
    let page = t
        .call(g, "runs.events", json!({"runId": run_id}))
        .await
        .unwrap();
    let ids: Vec<u64> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let messages = t.session_messages(g, &run["sessionId"]).await;
    // A session's next message is a run on it.
    let sent = t
        .call(
            g,
            "sessions.send",
            json!({"sessionId": run["sessionId"], "input": "Again."}),
        )
        .await
        .unwrap();
    let sent_result = t
        .call(
            g,
            "runs.wait",
            json!({"runId": sent["id"], "timeoutMs": 20_000}),
        )
        .await
        .unwrap();
    let bad = t
        .call(g, "runs.create", json!({"input": "  "}))
        .await
        .unwrap_err();
    let ghost = t
        .call(g, "runs.wait", json!({"runId": "run_ghost"}))
        .await
        .unwrap_err();
    json!({
        "created": created,
        "conflict": whole(&mut r, &conflict),
        // Completed with the mock's text and usage.
        "result": whole(&mut r, &result),
        "got": whole(&mut r, &got),
        // run.created, run.started, the mock's deltas, assistant.message,
        // run.completed; done.
        "events": whole(&mut r, &page),
        "messages": whole(&mut r, &json!(messages)),
        // On the same session.
        "sent": whole(&mut r, &sent),
        "sentResult": whole(&mut r, &sent_result),
        "bad": whole(&mut r, &bad),
        "ghost": whole(&mut r, &ghost),
    })
}

#[tokio::test]
async fn a_run_behaves_the_same_over_http_and_websocket() {
    let g = TestGateway::with_script(per_run(vec![text("Hello from the mock.", 0)])).await;
    let http = a_run_end_to_end(&g, &Transport::Http, "http").await;
    insta::assert_json_snapshot!("end_to_end_http", sized(http));
    let socket = connect(&g, &g.admin).await.unwrap();
    let ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0))));
    let ws = a_run_end_to_end(&g, &ws, "ws").await;
    insta::assert_json_snapshot!("end_to_end_ws", sized(ws));
    // The second run of a session carried the first one's conversation:
    // system, user "Say hello.", assistant, user "Again.".
    let requests = g.mock.requests();
    insta::assert_json_snapshot!(
        "end_to_end_carried",
        redacted(&requests.last().unwrap()["messages"])
    );
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
    let mut r = Redactor::new();
    insta::assert_json_snapshot!(
        "early",
        json!({"status": status, "body": whole(&mut r, &early)})
    );
    let completed = wait(&g, run["id"].as_str().unwrap()).await;
    insta::assert_json_snapshot!("completed", sized(whole(&mut r, &completed)));
    let (_, limited) = g
        .call(
            &g.admin,
            "runs.create",
            json!({"input": "go", "timeoutMs": 200}),
        )
        .await;
    let result = wait(&g, limited["id"].as_str().unwrap()).await;
    insta::assert_json_snapshot!("timed_out", sized(whole(&mut r, &result)));
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
    let mut r = Redactor::new();
    whole(&mut r, &json!([run["id"], queued["id"]]));
    let (status, cancelled) = g
        .call(&g.admin, "runs.cancel", json!({"runId": queued["id"]}))
        .await;
    insta::assert_json_snapshot!(
        "queued_cancelled",
        json!({"status": status, "body": whole(&mut r, &cancelled)})
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
    insta::assert_json_snapshot!(
        "running_cancelled",
        json!({"status": status, "body": whole(&mut r, &cancelled)})
    );
    let result = wait(&g, run["id"].as_str().unwrap()).await;
    insta::assert_json_snapshot!("running_result", sized(whole(&mut r, &result)));
    assert_eq!(
        types(&g, run["id"].as_str().unwrap()).await.last().unwrap(),
        "run.cancelled"
    );
    // Cancelling an ended run changes nothing.
    let (status, again) = g
        .call(&g.admin, "runs.cancel", json!({"runId": run["id"]}))
        .await;
    insta::assert_json_snapshot!(
        "ended_cancelled",
        json!({"status": status, "body": whole(&mut r, &again)})
    );
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
    let mut r = Redactor::new();
    whole(&mut r, &first["id"]);
    // A conflict naming the active run, `<run_1>`.
    insta::assert_json_snapshot!(
        "refused",
        json!({"status": status, "body": whole(&mut r, &refused)})
    );
    let (_, queued) = g
        .call(&g.admin, "runs.create", create("two", Some("enqueue")))
        .await;
    let first_result = wait(&g, first["id"].as_str().unwrap()).await;
    let second = wait(&g, queued["id"].as_str().unwrap()).await;
    insta::assert_json_snapshot!(
        "enqueued",
        sized(json!({"first": whole(&mut r, &first_result), "second": whole(&mut r, &second)}))
    );
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
    let active = wait(&g, active["id"].as_str().unwrap()).await;
    let interrupting = wait(&g, interrupting["id"].as_str().unwrap()).await;
    // The active run cancelled, the interrupting one completed.
    insta::assert_json_snapshot!(
        "interrupted",
        sized(
            json!({"active": whole(&mut r, &active), "interrupting": whole(&mut r, &interrupting)})
        )
    );
    // rollback: the active run is cancelled and its messages dropped.
    let (_, doomed) = g.call(&g.admin, "runs.create", create("five", None)).await;
    asked(&g, 5).await;
    let (_, rolling) = g
        .call(&g.admin, "runs.create", create("six", Some("rollback")))
        .await;
    let doomed = wait(&g, doomed["id"].as_str().unwrap()).await;
    let rolling = wait(&g, rolling["id"].as_str().unwrap()).await;
    // The active run cancelled, the rolling-back one completed.
    insta::assert_json_snapshot!(
        "rolled_back",
        sized(json!({"doomed": whole(&mut r, &doomed), "rolling": whole(&mut r, &rolling)}))
    );
    let (_, messages) = g
        .call(
            &g.admin,
            "sessions.messages",
            json!({"sessionId": first["sessionId"]}),
        )
        .await;
    // The users' one, two, three, four and six, not five.
    insta::assert_json_snapshot!("messages", whole(&mut r, &messages));
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
    let mut r = Redactor::new();
    // Ends with the compaction, "We greeted each other.".
    insta::assert_json_snapshot!(
        "compacted",
        json!({"session": whole(&mut r, &session), "messages": whole(&mut r, &page)})
    );
    let (_, events) = g
        .call(&g.admin, "runs.events", json!({"runId": run["id"]}))
        .await;
    insta::assert_json_snapshot!("first_events", whole(&mut r, &events));
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
    // The summary, "We greeted each other.", and no "hello".
    insta::assert_json_snapshot!("next_request", whole(&mut r, &request["messages"]));
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
    insta::assert_json_snapshot!(
        "busy",
        json!({"status": status, "body": whole(&mut r, &busy)})
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
    let stuck = wait(&g, stuck["id"].as_str().unwrap()).await;
    let queued = wait(&g, queued["id"].as_str().unwrap()).await;
    insta::assert_json_snapshot!(
        "aborted",
        sized(json!({"stuck": whole(&mut r, &stuck), "queued": whole(&mut r, &queued)}))
    );
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
    // bad/m2, good/m1 and none/m3; sorted, their order is not the
    // behaviour.
    let mut listed = models["models"].as_array().unwrap().clone();
    listed.sort_by_key(|m| m["id"].to_string());
    insta::assert_json_snapshot!("models", redacted(&json!(listed)));
    let (status, health) = g.call(&g.admin, "models.status", json!({})).await;
    assert_eq!(status, 200, "{health}");
    // Only good is authenticated; sorted, the order is not the behaviour.
    let mut status = health.clone();
    status["providers"]
        .as_array_mut()
        .unwrap()
        .sort_by_key(|p| p["provider"].to_string());
    insta::assert_json_snapshot!("status", redacted(&status));
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
        .run(&talon_protocol::gateway::bounded::RunId::new(
            run["id"].as_str().unwrap(),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.status, talon_protocol::gateway::RunStatus::Completed);
    store.close().await;
}

/// A run the provider ends, redacted: its error's code says what kind of
/// failure it was, and whether trying again may help.
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
    redacted(&wait(&g, run["id"].as_str().unwrap()).await)
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
    // Failed, not_found, not retryable: provider "p" does not know model
    // "nope".
    insta::assert_json_snapshot!(sized(error));
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
    // Failed, unavailable, retryable, the provider's 503.
    insta::assert_json_snapshot!(sized(error));
}
