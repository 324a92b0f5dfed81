//! The fake gateway over real HTTP, SSE and WebSocket on 127.0.0.1: a
//! scripted run streamed and waited on, resumption after a dropped
//! stream, expired cursors, rate limits and other faults, approvals,
//! questions, artifacts, idempotency keys, unsupported methods, bad
//! tokens and bodies, the WebSocket's calls and subscriptions.

use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use talon_protocol::EventData;
use talon_protocol::event_data::GitBranchData;
use talon_protocol::gateway::{ArtifactType, ErrorCode};
use talon_sdk_testing::{FakeGateway, FakeRun, Fault, RecordedCall};
use talon_testing::wait;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

/// One client per test (building one reads the system's certificates,
/// which is slow; its connections belong to the test's runtime, and each
/// test has a thread of its own).
fn client() -> reqwest::Client {
    thread_local! {
        static CLIENT: reqwest::Client = reqwest::Client::new();
    }
    CLIENT.with(Clone::clone)
}

async fn call(g: &FakeGateway, method: &str, params: Value) -> (u16, Value) {
    let response = client()
        .post(format!("{}/v1/{method}", g.url()))
        .bearer_auth(g.token())
        .json(&params)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn ok(g: &FakeGateway, method: &str, params: Value) -> Value {
    let (status, body) = call(g, method, params).await;
    assert_eq!(status, 200, "{method}: {body}");
    body
}

/// One SSE event.
#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: String,
    kind: String,
    data: Value,
}

/// An open SSE response, read event by event.
struct Reader {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl Reader {
    /// The next event; `Ok(None)` when the stream ended, `Err` when the
    /// connection broke.
    async fn next(&mut self) -> Result<Option<Sse>, String> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut sse = Sse {
                    id: String::new(),
                    kind: String::new(),
                    data: Value::Null,
                };
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        sse.id = v.into();
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        sse.kind = v.into();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        sse.data = serde_json::from_str(v).unwrap();
                    }
                }
                if sse.kind.is_empty() {
                    continue;
                }
                return Ok(Some(sse));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.body.next())
                .await
                .expect("the stream stalled");
            match chunk {
                None => return Ok(None),
                Some(Err(e)) => return Err(e.to_string()),
                Some(Ok(bytes)) => self.buffer.push_str(std::str::from_utf8(&bytes).unwrap()),
            }
        }
    }

    /// Every event until the stream ends (it must end cleanly).
    async fn rest(&mut self) -> Vec<Sse> {
        let mut all = Vec::new();
        while let Some(event) = self.next().await.unwrap() {
            all.push(event);
        }
        all
    }
}

async fn open(
    g: &FakeGateway,
    token: &str,
    path: &str,
    last_event_id: Option<&str>,
) -> Result<Reader, (u16, Option<String>, Value)> {
    let mut request = client()
        .get(format!("{}{path}", g.url()))
        .bearer_auth(token);
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    if status != 200 {
        let retry = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        return Err((status, retry, response.json().await.unwrap()));
    }
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    Ok(Reader {
        body: response.bytes_stream().boxed(),
        buffer: String::new(),
    })
}

fn kinds(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

async fn create(g: &FakeGateway, params: Value) -> String {
    ok(g, "runs.create", params).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn wait(g: &FakeGateway, run_id: &str) -> Value {
    ok(
        g,
        "runs.wait",
        json!({"runId": run_id, "timeoutMs": 10_000}),
    )
    .await
}

/// Removes the fields that change from run to run.
fn strip(value: &mut Value, fields: &[&str]) {
    if let Some(object) = value.as_object_mut() {
        for field in fields {
            object.remove(*field);
        }
    }
}

#[tokio::test]
async fn a_scripted_reply_streams_to_its_terminal_event_and_waits_completed() {
    let g = FakeGateway::start().await.unwrap();
    g.script_run(
        FakeRun::reply("Hello from the fake.").event(EventData::GitBranch(GitBranchData {
            branch: "main".into(),
            head: None,
            action: "observed".into(),
        })),
    );
    let accepted = ok(
        &g,
        "runs.create",
        json!({"input": "Say hello.", "sessionKey": "app:1"}),
    )
    .await;
    assert_eq!(accepted["runId"], accepted["id"]);
    assert_eq!(
        (
            &accepted["status"],
            &accepted["agentId"],
            &accepted["sessionKey"]
        ),
        (&json!("queued"), &json!("main"), &json!("app:1"))
    );
    let run_id = accepted["id"].as_str().unwrap().to_owned();
    let mut reader = open(&g, g.token(), &format!("/v1/runs/{run_id}/events"), None)
        .await
        .unwrap();
    let events = reader.rest().await;
    assert_eq!(
        kinds(&events),
        [
            "run.created",
            "run.started",
            "git.branch",
            "assistant.delta",
            "assistant.delta",
            "assistant.delta",
            "assistant.message",
            "run.completed"
        ]
    );
    // The SSE id is the envelope's id, increasing; the envelope is whole.
    let ids: Vec<u64> = events.iter().map(|e| e.id.parse().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for e in &events {
        assert_eq!(e.data["id"], json!(e.id));
        assert_eq!(e.data["type"], json!(e.kind));
        assert_eq!(
            (
                &e.data["version"],
                &e.data["runId"],
                &e.data["agentId"],
                &e.data["sessionKey"]
            ),
            (&json!(1), &json!(run_id), &json!("main"), &json!("app:1"))
        );
    }
    let deltas: String = events
        .iter()
        .filter(|e| e.kind == "assistant.delta")
        .map(|e| e.data["data"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Hello from the fake.");
    assert_eq!(events[0].data["data"], json!({"input": "Say hello."}));
    assert_eq!(
        events[1].data["data"],
        json!({"model": "mock/mock-model", "surface": "direct", "tools": []})
    );
    assert_eq!(
        events[6].data["data"],
        json!({"text": "Hello from the fake.", "toolCalls": 0, "finishReason": "stop"})
    );
    let mut ended = events[7].data["data"].clone();
    assert!(ended["durationMs"].is_u64());
    strip(&mut ended, &["durationMs"]);
    assert_eq!(
        ended,
        json!({"text": "Hello from the fake.", "turns": 1, "toolCalls": 0,
               "usage": {"inputTokens": 2, "outputTokens": 4, "totalTokens": 6}})
    );
    // runs.wait: the result, with the run's trajectory.
    let mut result = wait(&g, &run_id).await;
    let artifacts = result["artifacts"].as_array().unwrap().clone();
    assert_eq!(artifacts.len(), 1);
    assert_eq!(
        (
            &artifacts[0]["type"],
            &artifacts[0]["mimeType"],
            &artifacts[0]["runId"]
        ),
        (
            &json!("trajectory"),
            &json!("application/json"),
            &json!(run_id)
        )
    );
    assert!(result["startedAt"].as_u64().unwrap() <= result["endedAt"].as_u64().unwrap());
    strip(
        &mut result,
        &["startedAt", "endedAt", "artifacts", "sessionId"],
    );
    assert_eq!(
        result,
        json!({"runId": run_id, "status": "completed", "sessionKey": "app:1",
               "output": {"text": "Hello from the fake."},
               "usage": {"inputTokens": 2, "outputTokens": 4, "totalTokens": 6}})
    );
    // runs.events gives the same events; the session has both messages.
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    assert_eq!(page["done"], true);
    let paged: Vec<Value> = page["events"].as_array().unwrap().clone();
    assert_eq!(
        paged,
        events.iter().map(|e| e.data.clone()).collect::<Vec<_>>()
    );
    let messages = ok(
        &g,
        "sessions.messages",
        json!({"sessionId": accepted["sessionId"]}),
    )
    .await;
    let roles: Vec<(&str, &str)> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        roles,
        [
            ("user", "Say hello."),
            ("assistant", "Hello from the fake.")
        ]
    );
    // An unscripted run replies "ok".
    let next = ok(
        &g,
        "sessions.send",
        json!({"sessionId": accepted["sessionId"], "input": "Again."}),
    )
    .await;
    assert_eq!(
        wait(&g, next["id"].as_str().unwrap()).await["output"]["text"],
        "ok"
    );
    g.shutdown().await;
}

#[tokio::test]
async fn a_dropped_stream_resumes_by_last_event_id_without_gap_or_duplicate() {
    let g = FakeGateway::start().await.unwrap();
    let pause = Duration::from_millis(30);
    g.script_run(
        FakeRun::reply("a reply long enough for several deltas")
            .delay(pause)
            .event(EventData::GitBranch(GitBranchData {
                branch: "b".into(),
                head: None,
                action: "created".into(),
            }))
            .delay(pause),
    );
    g.inject(Fault::DropStream { after_events: 2 });
    let run_id = create(&g, json!({"input": "go"})).await;
    let path = format!("/v1/runs/{run_id}/events");
    let mut first = open(&g, g.token(), &path, None).await.unwrap();
    let mut seen = vec![
        first.next().await.unwrap().unwrap(),
        first.next().await.unwrap().unwrap(),
    ];
    assert!(first.next().await.is_err(), "the connection is cut");
    let last = seen.last().unwrap().id.clone();
    let mut resumed = open(&g, g.token(), &path, Some(&last)).await.unwrap();
    seen.extend(resumed.rest().await);
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    let all: Vec<String> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(seen.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), all);
    assert_eq!(seen.last().unwrap().kind, "run.completed");
}

#[tokio::test]
async fn an_expired_cursor_is_410_before_the_stream_and_in_runs_events() {
    let g = FakeGateway::start().await.unwrap();
    let run_id = create(&g, json!({"input": "go"})).await;
    wait(&g, &run_id).await;
    // Without a cursor the fault waits.
    g.inject(Fault::ExpireCursor);
    let mut whole = open(&g, g.token(), &format!("/v1/runs/{run_id}/events"), None)
        .await
        .unwrap();
    assert_eq!(whole.rest().await.last().unwrap().kind, "run.completed");
    let (status, retry, body) = open(
        &g,
        g.token(),
        &format!("/v1/runs/{run_id}/events?after=1"),
        None,
    )
    .await
    .err()
    .unwrap();
    assert_eq!((status, retry), (410, None));
    assert_eq!(
        body,
        json!({"error": {"code": "cursor_expired",
            "message": "cursor 1 has expired; the oldest event kept is 2",
            "retryable": false, "details": {"cursor": "1", "oldestId": "2"}}})
    );
    // Used up: the same cursor now streams.
    let mut again = open(
        &g,
        g.token(),
        &format!("/v1/runs/{run_id}/events?after=1"),
        None,
    )
    .await
    .unwrap();
    assert_eq!(again.rest().await[0].kind, "run.started");
    g.inject(Fault::ExpireCursor);
    let (status, body) = call(&g, "runs.events", json!({"runId": run_id, "after": "3"})).await;
    assert_eq!(
        (status, body["error"]["details"].clone()),
        (410, json!({"cursor": "3", "oldestId": "4"}))
    );
    // Bad cursors and unknown runs.
    let (status, _, body) = open(&g, g.token(), "/v1/events?after=abc", None)
        .await
        .err()
        .unwrap();
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("invalid_request"))
    );
    let (status, _, body) = open(&g, g.token(), "/v1/runs/run_ghost/events", None)
        .await
        .err()
        .unwrap();
    assert_eq!(
        (status, body),
        (
            404,
            json!({"error": {"code": "not_found", "message": "run \"run_ghost\" not found", "retryable": false}})
        )
    );
}

#[tokio::test]
async fn call_faults_rate_limit_make_unavailable_and_slow_then_let_calls_through() {
    let g = FakeGateway::start().await.unwrap();
    g.inject(Fault::RateLimited {
        method: "agents.list".into(),
        times: 2,
        retry_after_ms: 1_500,
    });
    g.inject(Fault::Unavailable {
        method: "models.list".into(),
        times: 1,
    });
    g.inject(Fault::Slow {
        method: "models.status".into(),
        delay: Duration::from_millis(300),
    });
    for _ in 0..2 {
        let response = client()
            .post(format!("{}/v1/agents.list", g.url()))
            .bearer_auth(g.token())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 429);
        assert_eq!(response.headers()["retry-after"], "2");
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body,
            json!({"error": {"code": "rate_limited",
                "message": "this token is over its rate (injected by the fake gateway)",
                "retryable": true, "retryAfterMs": 1500}})
        );
    }
    let agents = ok(&g, "agents.list", json!({})).await;
    assert_eq!(
        agents,
        json!({"agents": [{"id": "main", "description": "The default agent", "source": "config"}]})
    );
    let (status, body) = call(&g, "models.list", json!({})).await;
    assert_eq!(
        (status, &body["error"]["code"], &body["error"]["retryable"]),
        (503, &json!("unavailable"), &json!(true))
    );
    assert_eq!(
        ok(&g, "models.list", json!({})).await,
        json!({"models": [{"id": "mock/mock-model", "provider": "mock", "name": "mock-model"}]})
    );
    let started = std::time::Instant::now();
    ok(&g, "models.status", json!({})).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    let started = std::time::Instant::now();
    ok(&g, "models.status", json!({})).await;
    assert!(started.elapsed() < Duration::from_millis(300));
    let methods: Vec<String> = g.calls().into_iter().map(|c| c.method).collect();
    assert_eq!(
        methods,
        [
            "agents.list",
            "agents.list",
            "agents.list",
            "models.list",
            "models.list",
            "models.status",
            "models.status"
        ]
    );
    assert_eq!(
        g.calls()[0],
        RecordedCall {
            method: "agents.list".into(),
            params: json!({})
        }
    );
}

/// The run's pending approvals, once there is one.
async fn pending(g: &FakeGateway, method: &str, run_id: &str) -> Vec<Value> {
    let key = if method == "approvals.list" {
        "approvals"
    } else {
        "questions"
    };
    wait::until_async(
        &format!("something pending in {method}"),
        wait::DEADLINE,
        async || {
            let list = ok(g, method, json!({"runId": run_id, "status": "pending"})).await;
            let found = list[key].as_array().unwrap().clone();
            (!found.is_empty()).then_some(found)
        },
    )
    .await
}

#[tokio::test]
async fn an_approval_holds_the_run_until_the_first_decision_which_wins() {
    let g = FakeGateway::start().await.unwrap();
    let arguments = json!({"path": "note.txt", "content": "hi"});
    g.script_run(FakeRun::reply("Written.").approval("write", arguments.clone()));
    let run_id = create(&g, json!({"input": "write it", "sessionKey": "s"})).await;
    let asked = pending(&g, "approvals.list", &run_id).await;
    assert_eq!(asked.len(), 1);
    let id = asked[0]["id"].clone();
    let mut shown = asked[0].clone();
    assert!(shown["expiresAt"].as_u64().unwrap() > shown["createdAt"].as_u64().unwrap());
    strip(
        &mut shown,
        &["id", "sessionId", "toolCallId", "createdAt", "expiresAt"],
    );
    assert_eq!(
        shown,
        json!({
            "runId": run_id,
            "kind": "tool",
            "summary": "write {\"content\":\"hi\",\"path\":\"note.txt\"}",
            "toolName": "write",
            "arguments": arguments,
            "risk": "medium",
            "decisions": ["approve_once", "approve_session", "approve_always", "deny"],
            "reusable": true,
            "status": "pending"
        })
    );
    // It waits: a short wait answers `accepted`.
    let early = ok(&g, "runs.wait", json!({"runId": run_id, "timeoutMs": 50})).await;
    assert_eq!(early["status"], "accepted");
    let (status, body) = call(
        &g,
        "approvals.respond",
        json!({"approvalId": id, "decision": "bogus"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let winner = ok(
        &g,
        "approvals.respond",
        json!({"approvalId": id, "decision": "approve_once", "reason": "fine"}),
    )
    .await;
    assert_eq!(
        (&winner["status"], &winner["decision"], &winner["reason"]),
        (&json!("approved"), &json!("approve_once"), &json!("fine"))
    );
    let (status, late) = call(
        &g,
        "approvals.respond",
        json!({"approvalId": id, "decision": "deny"}),
    )
    .await;
    assert_eq!(
        (status, late),
        (
            409,
            json!({"error": {"code": "conflict", "message": "this approval was already resolved",
                "retryable": false, "details": {"approval": winner}}})
        )
    );
    assert_eq!(wait(&g, &run_id).await["status"], "completed");
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    let events = page["events"].as_array().unwrap();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types[..6],
        [
            "run.created",
            "run.started",
            "tool.call.started",
            "approval.requested",
            "approval.resolved",
            "tool.call.completed"
        ]
    );
    assert_eq!(
        events[4]["data"],
        json!({"approvalId": id, "status": "approved", "decision": "approve_once", "reason": "fine", "reused": false})
    );
    let (status, _) = call(
        &g,
        "approvals.respond",
        json!({"approvalId": "appr_ghost", "decision": "deny"}),
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn cancelling_a_run_waiting_on_an_approval_cancels_both() {
    let g = FakeGateway::start().await.unwrap();
    g.script_run(FakeRun::reply("never").approval("exec", json!({"command": "ls"})));
    let run_id = create(&g, json!({"input": "go"})).await;
    let id = pending(&g, "approvals.list", &run_id).await[0]["id"].clone();
    let cancelled = ok(&g, "runs.cancel", json!({"runId": run_id})).await;
    assert_eq!(cancelled["status"], "cancelled");
    let result = wait(&g, &run_id).await;
    assert_eq!(
        (&result["status"], &result["output"]),
        (&json!("cancelled"), &Value::Null)
    );
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    let events = page["events"].as_array().unwrap();
    let tail: Vec<&Value> = events.iter().rev().take(3).collect();
    assert_eq!(
        (&tail[2]["type"], &tail[2]["data"]),
        (
            &json!("approval.resolved"),
            &json!({"approvalId": id, "status": "cancelled", "reason": "the run stopped waiting", "reused": false})
        )
    );
    assert_eq!(
        (&tail[1]["type"], &tail[1]["data"]["status"]),
        (&json!("tool.call.failed"), &json!("aborted"))
    );
    assert_eq!(tail[0]["type"], "run.cancelled");
    let list = ok(&g, "approvals.list", json!({"runId": run_id})).await;
    assert_eq!(list["approvals"][0]["status"], "cancelled");
}

#[tokio::test]
async fn a_question_takes_only_one_of_its_choices_and_stays_open_meanwhile() {
    let g = FakeGateway::start().await.unwrap();
    g.script_run(
        FakeRun::reply("On main.").question("Which branch?", vec!["main".into(), "dev".into()]),
    );
    let run_id = create(&g, json!({"input": "deploy"})).await;
    let asked = pending(&g, "questions.list", &run_id).await;
    let id = asked[0]["id"].clone();
    assert_eq!(
        (
            &asked[0]["prompt"],
            &asked[0]["choices"],
            &asked[0]["status"]
        ),
        (
            &json!("Which branch?"),
            &json!(["main", "dev"]),
            &json!("pending")
        )
    );
    let (status, body) = call(
        &g,
        "questions.respond",
        json!({"questionId": id, "answer": "prod"}),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": {"code": "invalid_request",
                "message": "the answer does not fit the question: the answer must be one of [\"main\", \"dev\"]",
                "retryable": false,
                "details": {"errors": ["the answer must be one of [\"main\", \"dev\"]"]}}})
        )
    );
    assert_eq!(pending(&g, "questions.list", &run_id).await.len(), 1);
    let answered = ok(
        &g,
        "questions.respond",
        json!({"questionId": id, "answer": "main"}),
    )
    .await;
    assert_eq!(
        (&answered["status"], &answered["answer"]),
        (&json!("answered"), &json!("main"))
    );
    let (status, late) = call(
        &g,
        "questions.respond",
        json!({"questionId": id, "answer": "dev"}),
    )
    .await;
    assert_eq!(
        (status, &late["error"]["details"]["question"]),
        (409, &answered)
    );
    assert_eq!(wait(&g, &run_id).await["output"]["text"], "On main.");
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    let answered_event = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "question.answered")
        .unwrap()
        .clone();
    assert_eq!(
        answered_event["data"],
        json!({"questionId": id, "answer": "main"})
    );
}

#[tokio::test]
async fn an_artifact_is_listed_and_its_bytes_come_with_etag_and_ranges() {
    let g = FakeGateway::start().await.unwrap();
    g.script_run(FakeRun::reply("Here.").artifact(
        "report.md",
        ArtifactType::File,
        b"# Report\nall good\n".to_vec(),
    ));
    let run_id = create(&g, json!({"input": "report"})).await;
    let result = wait(&g, &run_id).await;
    let artifacts = result["artifacts"].as_array().unwrap();
    assert_eq!(artifacts.len(), 2, "{result}");
    let mut summary = artifacts[0].clone();
    let id = summary["id"].as_str().unwrap().to_owned();
    // Epoch milliseconds, purged 30 days after.
    let created = summary["createdAt"].as_u64().unwrap();
    assert_eq!(
        summary["expiresAt"].as_u64(),
        Some(created + 30 * 86_400_000)
    );
    strip(&mut summary, &["id", "createdAt", "expiresAt", "sessionId"]);
    assert_eq!(
        summary,
        json!({"runId": run_id, "type": "file", "title": "report.md",
               "mimeType": "text/markdown", "sizeBytes": 18})
    );
    let got = ok(&g, "artifacts.get", json!({"artifactId": id})).await;
    assert_eq!(got, artifacts[0]);
    let listed = ok(&g, "artifacts.list", json!({"runId": run_id})).await;
    assert_eq!(listed["artifacts"].as_array().unwrap().len(), 2);
    let download = ok(&g, "artifacts.download", json!({"artifactId": id})).await;
    assert_eq!(
        download,
        json!({"artifact": artifacts[0], "url": format!("/v1/artifacts/{id}/content")})
    );
    let client = client();
    let url = format!("{}{}", g.url(), download["url"].as_str().unwrap());
    let whole = client
        .get(&url)
        .bearer_auth(g.token())
        .send()
        .await
        .unwrap();
    assert_eq!(whole.status().as_u16(), 200);
    assert_eq!(whole.headers()["content-type"], "text/markdown");
    assert_eq!(
        whole.headers()["etag"].to_str().unwrap(),
        format!("\"{}\"", sha256_hex(b"# Report\nall good\n"))
    );
    assert_eq!(&whole.bytes().await.unwrap()[..], b"# Report\nall good\n");
    let part = client
        .get(&url)
        .bearer_auth(g.token())
        .header("range", "bytes=2-7")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status().as_u16(), 206);
    assert_eq!(part.headers()["content-range"], "bytes 2-7/18");
    assert_eq!(&part.bytes().await.unwrap()[..], b"Report");
    let outside = client
        .get(&url)
        .bearer_auth(g.token())
        .header("range", "bytes=18-")
        .send()
        .await
        .unwrap();
    assert_eq!(outside.status().as_u16(), 416);
    let missing = client
        .get(format!("{}/v1/artifacts/art_ghost/content", g.url()))
        .bearer_auth(g.token())
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    let refused = client.get(&url).bearer_auth("nope").send().await.unwrap();
    assert_eq!(refused.status().as_u16(), 401);
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn an_idempotency_key_returns_the_first_run_and_never_starts_a_second() {
    let g = FakeGateway::start().await.unwrap();
    let params = json!({"input": "once", "sessionKey": "k", "idempotencyKey": "run-1"});
    let first = ok(&g, "runs.create", params.clone()).await;
    let again = ok(&g, "runs.create", params.clone()).await;
    assert_eq!(again["id"], first["id"]);
    let mut other = params.clone();
    other["input"] = json!("twice");
    let (status, body) = call(&g, "runs.create", other).await;
    assert_eq!(
        (status, body),
        (
            409,
            json!({"error": {"code": "conflict",
                "message": "idempotency key \"run-1\" was used with other parameters",
                "retryable": false}})
        )
    );
    wait(&g, first["id"].as_str().unwrap()).await;
    let created: Vec<Value> = ok(&g, "runs.events", json!({"runId": first["id"]})).await["events"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        created
            .iter()
            .filter(|e| e["type"] == "run.created")
            .count(),
        1
    );
    let sessions = ok(&g, "sessions.list", json!({})).await;
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn unsupported_unknown_and_malformed_calls_and_bad_tokens() {
    let g = FakeGateway::start().await.unwrap();
    let (status, body) = call(&g, "tasks.list", json!({})).await;
    assert_eq!(
        (status, body),
        (
            501,
            json!({"error": {"code": "unsupported",
                "message": "`tasks.list` is not supported by this gateway yet",
                "retryable": false, "details": {"method": "tasks.list"}}})
        )
    );
    let (status, body) = call(&g, "nope.nothing", json!({})).await;
    assert_eq!(
        (status, &body["error"]["details"]),
        (404, &json!({"method": "nope.nothing"}))
    );
    let (status, body) = call(&g, "runs.get", json!({"runId": "r", "extra": 1})).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("invalid_request"))
    );
    let (status, body) = call(&g, "runs.get", json!([1])).await;
    assert_eq!(
        (status, &body["error"]["message"]),
        (400, &json!("runs.get: params must be a JSON object"))
    );
    let client = client();
    let malformed = client
        .post(format!("{}/v1/agents.list", g.url()))
        .bearer_auth(g.token())
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status().as_u16(), 400);
    let body: Value = malformed.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the body is not JSON"),
        "{body}"
    );
    // An empty body is `{}`.
    let empty = client
        .post(format!("{}/v1/agents.list", g.url()))
        .bearer_auth(g.token())
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status().as_u16(), 200);
    // The gateway's refusals, with the same reasons and challenge.
    let unauthenticated = json!({"error": {"code": "unauthenticated",
        "message": "this token is not known to this gateway", "retryable": false,
        "details": {"reason": "unknown"}}});
    let bad = client
        .post(format!("{}/v1/agents.list", g.url()))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(
        (bad.status().as_u16(), bad.headers()["www-authenticate"].to_str().unwrap().to_owned()),
        (401, "Bearer realm=\"talon\", error=\"invalid_token\", error_description=\"the token is unknown\"".to_owned())
    );
    assert_eq!(bad.json::<Value>().await.unwrap(), unauthenticated);
    let none = client
        .post(format!("{}/v1/agents.list", g.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(none.status().as_u16(), 401);
    assert_eq!(
        none.json::<Value>().await.unwrap()["error"]["details"],
        json!({"reason": "missing"})
    );
    let (status, _, body) = open(&g, "wrong", "/v1/events", None).await.err().unwrap();
    assert_eq!((status, body), (401, unauthenticated));
    assert_eq!(connect(&g, "wrong").await.err(), Some(401));
    let health = client
        .get(format!("{}/healthz", g.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.text().await.unwrap(), "ok\n");
    let route = client
        .get(format!("{}/v2/x", g.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(route.status().as_u16(), 404);
    // events.subscribe is the WebSocket's.
    let (status, _) = call(&g, "events.subscribe", json!({})).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_failed_run_and_environments() {
    let g = FakeGateway::start().await.unwrap();
    g.script_run(FakeRun::reply("unused").fail(ErrorCode::Unavailable, "the model is down"));
    let run_id = create(&g, json!({"input": "go"})).await;
    let result = wait(&g, &run_id).await;
    assert_eq!(
        (&result["status"], &result["error"], &result["output"]),
        (
            &json!("failed"),
            &json!({"code": "unavailable", "message": "the model is down", "retryable": true}),
            &Value::Null
        )
    );
    let run = ok(&g, "runs.get", json!({"runId": run_id})).await;
    assert_eq!(run["status"], "failed");
    let env = ok(
        &g,
        "environments.create",
        json!({"provider": "local", "settings": {"path": "/src"}}),
    )
    .await;
    assert_eq!(
        (&env["status"], &env["provider"], &env["settings"]),
        (&json!("ready"), &json!("local"), &json!({"path": "/src"}))
    );
    let id = env["id"].clone();
    assert_eq!(
        ok(&g, "environments.status", json!({"environmentId": id})).await,
        env
    );
    let deleted = ok(&g, "environments.delete", json!({"environmentId": id})).await;
    assert_eq!(deleted["status"], "deleted");
    let (status, _) = call(&g, "environments.status", json!({"environmentId": "env_x"})).await;
    assert_eq!(status, 404);
    let (status, _) = call(&g, "environments.create", json!({"provider": "cloud"})).await;
    assert_eq!(status, 404);
    g.set_invoke_result("echo", json!({"said": "hi"}));
    let invoked = ok(
        &g,
        "tools.invoke",
        json!({"tool": "echo", "arguments": {}, "sessionKey": "t"}),
    )
    .await;
    assert_eq!(invoked, json!({"result": {"said": "hi"}}));
    let (status, _) = call(
        &g,
        "tools.invoke",
        json!({"tool": "other", "sessionKey": "t"}),
    )
    .await;
    assert_eq!(status, 404);
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(g: &FakeGateway, token: &str) -> Result<Socket, u16> {
    let url = format!("{}/v1/ws", g.url().replace("http://", "ws://"));
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            Err(response.status().as_u16())
        }
        Err(e) => panic!("{e}"),
    }
}

/// The next text frame; `None` when the connection ended or broke.
async fn frame(socket: &mut Socket) -> Option<Value> {
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("no frame")?;
        match next {
            Ok(Message::Text(text)) => return Some(serde_json::from_str(text.as_str()).unwrap()),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

async fn send(socket: &mut Socket, id: u64, method: &str, params: Value) {
    socket
        .send(Message::Text(
            json!({"type": "req", "id": id, "method": method, "params": params})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_websocket_serves_calls_and_subscriptions_with_the_sse_envelopes() {
    let g = FakeGateway::start().await.unwrap();
    let mut socket = connect(&g, g.token()).await.unwrap();
    send(&mut socket, 1, "agents.get", json!({"agentId": "main"})).await;
    assert_eq!(
        frame(&mut socket).await.unwrap(),
        json!({"type": "res", "id": 1, "ok": true,
               "result": {"id": "main", "description": "The default agent", "source": "config"}})
    );
    send(&mut socket, 2, "agents.get", json!({"agentId": "ghost"})).await;
    assert_eq!(
        frame(&mut socket).await.unwrap(),
        json!({"type": "res", "id": 2, "ok": false,
               "error": {"code": "not_found", "message": "agent \"ghost\" not found", "retryable": false}})
    );
    socket.send(Message::Text("not json".into())).await.unwrap();
    let bad = frame(&mut socket).await.unwrap();
    assert_eq!((&bad["id"], &bad["ok"]), (&Value::Null, &json!(false)));
    send(
        &mut socket,
        3,
        "events.subscribe",
        json!({"sessionKey": "ws"}),
    )
    .await;
    assert_eq!(
        frame(&mut socket).await.unwrap(),
        json!({"type": "res", "id": 3, "ok": true, "result": {"subscriptionId": "sub_1"}})
    );
    send(
        &mut socket,
        4,
        "runs.create",
        json!({"input": "hi", "sessionKey": "ws"}),
    )
    .await;
    let mut run_id = Value::Null;
    let mut events = Vec::new();
    while run_id.is_null()
        || events
            .last()
            .is_none_or(|e: &Value| e["type"] != "run.completed")
    {
        let f = frame(&mut socket).await.unwrap();
        match f["type"].as_str().unwrap() {
            "res" => run_id = f["result"]["id"].clone(),
            "event" => {
                assert_eq!(f["subscriptionId"], "sub_1");
                events.push(f["event"].clone());
            }
            other => panic!("{other}"),
        }
    }
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    assert_eq!(&events, page["events"].as_array().unwrap());
    send(
        &mut socket,
        5,
        "events.unsubscribe",
        json!({"subscriptionId": "sub_1"}),
    )
    .await;
    // The trajectory's announcement may come before the answer.
    let mut answer = frame(&mut socket).await.unwrap();
    while answer["type"] == "event" {
        answer = frame(&mut socket).await.unwrap();
    }
    assert_eq!(
        answer,
        json!({"type": "res", "id": 5, "ok": true, "result": {}})
    );
    let methods: Vec<String> = g.calls().into_iter().map(|c| c.method).collect();
    assert_eq!(
        methods,
        [
            "agents.get",
            "agents.get",
            "events.subscribe",
            "runs.create",
            "runs.events",
            "events.unsubscribe"
        ]
    );
}

#[tokio::test]
async fn a_dropped_subscription_cuts_the_connection_and_resumes_by_cursor() {
    let g = FakeGateway::start().await.unwrap();
    let run_id = create(&g, json!({"input": "go", "sessionKey": "cut"})).await;
    wait(&g, &run_id).await;
    g.inject(Fault::DropStream { after_events: 3 });
    let mut socket = connect(&g, g.token()).await.unwrap();
    send(
        &mut socket,
        1,
        "events.subscribe",
        json!({"sessionKey": "cut"}),
    )
    .await;
    assert_eq!(frame(&mut socket).await.unwrap()["ok"], true);
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(frame(&mut socket).await.unwrap()["event"]["id"].clone());
    }
    assert_eq!(frame(&mut socket).await, None, "the connection is cut");
    let mut socket = connect(&g, g.token()).await.unwrap();
    send(
        &mut socket,
        1,
        "events.subscribe",
        json!({"sessionKey": "cut", "after": ids[2]}),
    )
    .await;
    assert_eq!(frame(&mut socket).await.unwrap()["ok"], true);
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    let all: Vec<Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    while ids.len() < all.len() {
        ids.push(frame(&mut socket).await.unwrap()["event"]["id"].clone());
    }
    assert_eq!(ids, all);
    // And an expired cursor answers the subscription with the error.
    g.inject(Fault::ExpireCursor);
    send(&mut socket, 2, "events.subscribe", json!({"after": "1"})).await;
    let mut answer = frame(&mut socket).await.unwrap();
    while answer["type"] == "event" {
        answer = frame(&mut socket).await.unwrap();
    }
    assert_eq!(
        (&answer["id"], &answer["error"]["code"]),
        (&json!(2), &json!("cursor_expired"))
    );
}

#[tokio::test]
async fn a_busy_session_queues_its_next_run_and_a_run_past_its_limit_times_out() {
    let g = FakeGateway::start().await.unwrap();
    g.script_run(FakeRun::reply("first").delay(Duration::from_millis(1_000)));
    let first = create(&g, json!({"input": "one", "sessionKey": "lane"})).await;
    let (status, refused) = call(
        &g,
        "runs.create",
        json!({"input": "no", "sessionKey": "lane", "multitaskStrategy": "reject"}),
    )
    .await;
    assert_eq!(
        (status, &refused["error"]["details"]),
        (409, &json!({"activeRunIds": [first]}))
    );
    let second = create(&g, json!({"input": "two", "sessionKey": "lane"})).await;
    assert_eq!(wait(&g, &second).await["status"], "completed");
    let (one, two) = (
        ok(&g, "runs.get", json!({"runId": first})).await,
        ok(&g, "runs.get", json!({"runId": second})).await,
    );
    assert!(two["startedAt"].as_u64() >= one["endedAt"].as_u64());
    let page = ok(&g, "runs.events", json!({"runId": second})).await;
    assert_eq!(
        (&page["events"][1]["type"], &page["events"][1]["data"]),
        (&json!("run.queued"), &json!({"reason": "session"}))
    );
    g.script_run(FakeRun::reply("late").delay(Duration::from_secs(5)));
    let limited = create(&g, json!({"input": "go", "timeoutMs": 100})).await;
    let result = wait(&g, &limited).await;
    assert_eq!(
        (&result["status"], &result["error"]["code"]),
        (&json!("timed_out"), &json!("timeout"))
    );
    let page = ok(&g, "runs.events", json!({"runId": limited})).await;
    assert_eq!(
        page["events"].as_array().unwrap().last().unwrap()["type"],
        "run.timed_out"
    );
}

#[tokio::test]
async fn shutdown_ends_open_streams_and_sockets() {
    let g = FakeGateway::start().await.unwrap();
    let url = g.url();
    let mut stream = open(&g, g.token(), "/v1/events", None).await.unwrap();
    let mut socket = connect(&g, g.token()).await.unwrap();
    g.script_run(FakeRun::reply("never").approval("exec", json!({})));
    create(&g, json!({"input": "wait"})).await;
    assert_eq!(stream.next().await.unwrap().unwrap().kind, "run.created");
    tokio::time::timeout(Duration::from_secs(5), g.shutdown())
        .await
        .expect("shutdown ends streams and connections");
    while let Ok(Some(_)) = stream.next().await {}
    assert_eq!(frame(&mut socket).await, None);
    assert!(reqwest::get(format!("{url}/healthz")).await.is_err());
}
