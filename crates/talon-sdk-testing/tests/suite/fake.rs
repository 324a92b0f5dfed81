//! The fake gateway over real HTTP, SSE and WebSocket on 127.0.0.1: a
//! scripted run streamed and waited on, resumption after a dropped
//! stream, expired cursors, rate limits and other faults, approvals,
//! questions, artifacts, idempotency keys, unsupported methods, bad
//! tokens and bodies, the WebSocket's calls and subscriptions.

use std::time::Duration;

use super::sized;
use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use talon_protocol::EventData;
use talon_protocol::event_data::GitBranchData;
use talon_protocol::gateway::{ArtifactType, ErrorCode};
use talon_sdk_testing::{FakeGateway, FakeRun, Fault, RecordedCall};
use talon_testing::redact::Redactor;
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
    let mut r = Redactor::new();
    pretty_assertions::assert_eq!(
        r.value(&accepted),
        json!({
            "agentId": "main",
            "createdAt": "<time>",
            "id": "<run_1>",
            "runId": "<run_1>",
            "sessionId": "<sess_1>",
            "sessionKey": "app:1",
            "status": "queued",
            "summary": "Say hello."
        })
    );
    let run_id = accepted["id"].as_str().unwrap().to_owned();
    let mut reader = open(&g, g.token(), &format!("/v1/runs/{run_id}/events"), None)
        .await
        .unwrap();
    let events = reader.rest().await;
    // The SSE id is the envelope's id, increasing; the envelope is whole
    // (the deltas kept: their text is the reply).
    let ids: Vec<u64> = events.iter().map(|e| e.id.parse().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let stream: Vec<Value> = events
        .iter()
        .map(|e| json!({"id": e.id, "event": e.kind, "data": r.value(&e.data)}))
        .collect();
    insta::assert_json_snapshot!("reply_stream", sized(stream));
    // runs.wait: the result, with the run's trajectory.
    let result = wait(&g, &run_id).await;
    assert!(result["startedAt"].as_u64().unwrap() <= result["endedAt"].as_u64().unwrap());
    insta::assert_json_snapshot!("reply_result", sized(r.value(&result)));
    // runs.events gives the same events; the session has both messages.
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    pretty_assertions::assert_eq!(
        page,
        json!({"events": events.iter().map(|e| e.data.clone()).collect::<Vec<_>>(), "done": true})
    );
    let messages = ok(
        &g,
        "sessions.messages",
        json!({"sessionId": accepted["sessionId"]}),
    )
    .await;
    insta::assert_json_snapshot!("reply_messages", r.value(&messages));
    // An unscripted run replies "ok".
    let next = ok(
        &g,
        "sessions.send",
        json!({"sessionId": accepted["sessionId"], "input": "Again."}),
    )
    .await;
    let unscripted = wait(&g, next["id"].as_str().unwrap()).await;
    insta::assert_json_snapshot!("reply_unscripted", sized(r.value(&unscripted)));
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
    // Every event once, in order, each whole.
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    pretty_assertions::assert_eq!(
        page,
        json!({"events": seen.iter().map(|e| e.data.clone()).collect::<Vec<_>>(), "done": true})
    );
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
    // (Event 1 is the run's session's `session.created`.)
    assert_eq!(again.rest().await[0].kind, "run.created");
    g.inject(Fault::ExpireCursor);
    let (status, body) = call(&g, "runs.events", json!({"runId": run_id, "after": "3"})).await;
    assert_eq!(
        (status, body),
        (
            410,
            json!({"error": {"code": "cursor_expired",
                "message": "cursor 3 has expired; the oldest event kept is 4",
                "retryable": false, "details": {"cursor": "3", "oldestId": "4"}}})
        )
    );
    // Bad cursors and unknown runs.
    let (status, _, body) = open(&g, g.token(), "/v1/events?after=abc", None)
        .await
        .err()
        .unwrap();
    pretty_assertions::assert_eq!(
        (status, body),
        (
            400,
            json!({
                "error": {
                    "code": "invalid_request",
                    "message": "\"abc\" is not an event id",
                    "retryable": false
                }
            })
        )
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
        (status, body),
        (
            503,
            json!({"error": {"code": "unavailable",
                "message": "the gateway is unavailable (injected by the fake gateway)",
                "retryable": true}})
        )
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
    let mut r = Redactor::new();
    let asked = pending(&g, "approvals.list", &run_id).await;
    let id = asked[0]["id"].clone();
    assert!(asked[0]["expiresAt"].as_u64().unwrap() > asked[0]["createdAt"].as_u64().unwrap());
    insta::assert_json_snapshot!("approval_pending", r.value(&json!(asked)));
    // The run says it waits, as the gateway's does (in the same write as
    // the approval).
    let run = ok(&g, "runs.get", json!({"runId": run_id})).await;
    assert_eq!(run["status"], "waiting");
    // It waits: a short wait answers `accepted`.
    let early = ok(&g, "runs.wait", json!({"runId": run_id, "timeoutMs": 50})).await;
    pretty_assertions::assert_eq!(
        r.value(&early),
        json!({
            "runId": "<run_1>",
            "sessionId": "<sess_1>",
            "sessionKey": "s",
            "startedAt": "<time>",
            "status": "accepted"
        })
    );
    let (status, body) = call(
        &g,
        "approvals.respond",
        json!({"approvalId": id, "decision": "bogus"}),
    )
    .await;
    pretty_assertions::assert_eq!(
        (status, body),
        (
            400,
            json!({"error": {
                "code": "invalid_request",
                "message": "decision not offered for this approval; offered: approve_once, approve_session, approve_always, deny",
                "retryable": false,
            }})
        )
    );
    let winner = ok(
        &g,
        "approvals.respond",
        json!({"approvalId": id, "decision": "approve_once", "reason": "fine"}),
    )
    .await;
    insta::assert_json_snapshot!("approval_winner", r.value(&winner));
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
    insta::assert_json_snapshot!("approval_result", sized(r.value(&wait(&g, &run_id).await)));
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    insta::assert_json_snapshot!(
        "approval_events",
        sized(r.transcript(page["events"].as_array().unwrap()))
    );
    let (status, body) = call(
        &g,
        "approvals.respond",
        json!({"approvalId": "appr_ghost", "decision": "deny"}),
    )
    .await;
    pretty_assertions::assert_eq!(
        (status, body),
        (
            404,
            json!({
                "error": {
                    "code": "not_found",
                    "message": "approval \"appr_ghost\" not found",
                    "retryable": false
                }
            })
        )
    );
}

#[tokio::test]
async fn cancelling_a_run_waiting_on_an_approval_cancels_both() {
    let g = FakeGateway::start().await.unwrap();
    g.script_run(FakeRun::reply("never").approval("exec", json!({"command": "ls"})));
    let run_id = create(&g, json!({"input": "go"})).await;
    pending(&g, "approvals.list", &run_id).await;
    let mut r = Redactor::new();
    let cancelled = ok(&g, "runs.cancel", json!({"runId": run_id})).await;
    insta::assert_json_snapshot!("cancel_cancelled", r.value(&cancelled));
    insta::assert_json_snapshot!("cancel_result", sized(r.value(&wait(&g, &run_id).await)));
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    insta::assert_json_snapshot!(
        "cancel_events",
        sized(r.transcript(page["events"].as_array().unwrap()))
    );
    let list = ok(&g, "approvals.list", json!({"runId": run_id})).await;
    insta::assert_json_snapshot!("cancel_approvals", r.value(&list));
}

#[tokio::test]
async fn a_question_takes_only_one_of_its_choices_and_stays_open_meanwhile() {
    let g = FakeGateway::start().await.unwrap();
    g.script_run(
        FakeRun::reply("On main.").question("Which branch?", vec!["main".into(), "dev".into()]),
    );
    let run_id = create(&g, json!({"input": "deploy"})).await;
    let mut r = Redactor::new();
    let asked = pending(&g, "questions.list", &run_id).await;
    let id = asked[0]["id"].clone();
    insta::assert_json_snapshot!("question_pending", r.value(&json!(asked)));
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
    insta::assert_json_snapshot!("question_answered", r.value(&answered));
    let (status, late) = call(
        &g,
        "questions.respond",
        json!({"questionId": id, "answer": "dev"}),
    )
    .await;
    insta::assert_json_snapshot!("question_late", (status, r.value(&late)));
    insta::assert_json_snapshot!("question_result", sized(r.value(&wait(&g, &run_id).await)));
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    insta::assert_json_snapshot!(
        "question_events",
        sized(r.transcript(page["events"].as_array().unwrap()))
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
    let mut r = Redactor::new();
    insta::assert_json_snapshot!("artifact_result", sized(r.value(&result)));
    let artifacts = result["artifacts"].as_array().unwrap();
    let id = artifacts[0]["id"].as_str().unwrap().to_owned();
    // Epoch milliseconds, purged 30 days after.
    let created = artifacts[0]["createdAt"].as_u64().unwrap();
    assert_eq!(
        artifacts[0]["expiresAt"].as_u64(),
        Some(created + 30 * 86_400_000)
    );
    let got = ok(&g, "artifacts.get", json!({"artifactId": id})).await;
    assert_eq!(got, artifacts[0]);
    let listed = ok(&g, "artifacts.list", json!({"runId": run_id})).await;
    insta::assert_json_snapshot!("artifact_listed", sized(r.value(&listed)));
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
    // One run.created, one session.
    let mut r = Redactor::new();
    let page = ok(&g, "runs.events", json!({"runId": first["id"]})).await;
    insta::assert_json_snapshot!(
        "idempotency_events",
        sized(r.transcript(page["events"].as_array().unwrap()))
    );
    let sessions = ok(&g, "sessions.list", json!({})).await;
    pretty_assertions::assert_eq!(
        r.value(&sessions),
        json!({
            "sessions": [
                {
                    "agentId": "main",
                    "createdAt": "<time>",
                    "id": "<sess_1>",
                    "key": "k",
                    "updatedAt": "<time>"
                }
            ]
        })
    );
}

#[tokio::test]
async fn a_missing_task_unknown_and_malformed_calls_and_bad_tokens() {
    let g = FakeGateway::start().await.unwrap();
    let (status, body) = call(&g, "tasks.get", json!({"taskId": "task_nope"})).await;
    assert_eq!(
        (status, body),
        (
            404,
            json!({"error": {"code": "not_found",
                "message": "task \"task_nope\" not found", "retryable": false}})
        )
    );
    let (status, body) = call(&g, "nope.nothing", json!({})).await;
    assert_eq!(
        (status, body),
        (
            404,
            json!({"error": {"code": "not_found", "message": "no method `nope.nothing`",
                "retryable": false, "details": {"method": "nope.nothing"}}})
        )
    );
    let (status, body) = call(&g, "runs.get", json!({"runId": "r", "extra": 1})).await;
    pretty_assertions::assert_eq!(
        (status, body),
        (
            400,
            json!({
                "error": {
                    "code": "invalid_request",
                    "details": {"field": "extra"},
                    "message": "runs.get: extra: unknown field `extra`, expected `runId`",
                    "retryable": false
                }
            })
        )
    );
    let (status, body) = call(&g, "runs.get", json!([1])).await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": {"code": "invalid_request",
                "message": "runs.get: params must be a JSON object", "retryable": false}})
        )
    );
    let client = client();
    let malformed = client
        .post(format!("{}/v1/agents.list", g.url()))
        .bearer_auth(g.token())
        .body("{")
        .send()
        .await
        .unwrap();
    let status = malformed.status().as_u16();
    let body: Value = malformed.json().await.unwrap();
    pretty_assertions::assert_eq!(
        (status, body),
        (
            400,
            json!({
                "error": {
                    "code": "invalid_request",
                    "message": "the body is not JSON: EOF while parsing an object at line 1 column 1",
                    "retryable": false
                }
            })
        )
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
    assert_eq!(
        (none.status().as_u16(), none.json::<Value>().await.unwrap()),
        (
            401,
            json!({"error": {"code": "unauthenticated",
                "message": "no token: send Authorization: Bearer <token> (`talon token create` makes one)",
                "retryable": false, "details": {"reason": "missing"}}})
        )
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
    let (status, body) = call(&g, "events.subscribe", json!({})).await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": {"code": "invalid_request",
                "message": "events.subscribe is served on the WebSocket transport (GET /v1/ws)",
                "retryable": false}})
        )
    );
}

#[tokio::test]
async fn a_failed_run_and_environments() {
    let g = FakeGateway::start().await.unwrap();
    g.script_run(FakeRun::reply("unused").fail(ErrorCode::Unavailable, "the model is down"));
    let run_id = create(&g, json!({"input": "go"})).await;
    let mut r = Redactor::new();
    insta::assert_json_snapshot!("failed_result", sized(r.value(&wait(&g, &run_id).await)));
    let run = ok(&g, "runs.get", json!({"runId": run_id})).await;
    insta::assert_json_snapshot!("failed_run", sized(r.value(&run)));
    let env = ok(
        &g,
        "environments.create",
        json!({"provider": "local", "settings": {"path": "/src"}}),
    )
    .await;
    insta::assert_json_snapshot!("failed_environment", r.value(&env));
    let id = env["id"].clone();
    assert_eq!(
        ok(&g, "environments.status", json!({"environmentId": id})).await,
        env
    );
    let deleted = ok(&g, "environments.delete", json!({"environmentId": id})).await;
    insta::assert_json_snapshot!("failed_deleted", r.value(&deleted));
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
    pretty_assertions::assert_eq!(
        frame(&mut socket).await.unwrap(),
        json!({
            "error": {
                "code": "invalid_request",
                "message": "not JSON: expected ident at line 1 column 2",
                "retryable": false
            },
            "id": null,
            "ok": false,
            "type": "res"
        })
    );
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
    let mut frames = Vec::new();
    while run_id.is_null()
        || frames
            .last()
            .is_none_or(|f: &Value| f["event"]["type"] != "run.completed")
    {
        let f = frame(&mut socket).await.unwrap();
        match f["type"].as_str().unwrap() {
            "res" => run_id = f["result"]["id"].clone(),
            "event" => frames.push(f),
            other => panic!("{other}"),
        }
    }
    // Each event frame is the subscription's, with the SSE envelope: the
    // run's session's `session.created`, then the run's events, the
    // trajectory's `artifact.created` (on the session) just before its end.
    assert_eq!(frames[0]["event"]["type"], "session.created");
    frames.remove(0);
    let announced = frames.remove(frames.len() - 2);
    assert_eq!(
        (
            &announced["event"]["type"],
            &announced["event"]["data"]["type"]
        ),
        (&json!("artifact.created"), &json!("trajectory"))
    );
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    let expected: Vec<Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!({"type": "event", "subscriptionId": "sub_1", "event": e}))
        .collect();
    pretty_assertions::assert_eq!(frames, expected);
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
    pretty_assertions::assert_eq!(
        frame(&mut socket).await.unwrap(),
        json!({"id": 1, "ok": true, "result": {"subscriptionId": "sub_1"}, "type": "res"})
    );
    let mut frames = Vec::new();
    for _ in 0..3 {
        frames.push(frame(&mut socket).await.unwrap());
    }
    assert_eq!(frame(&mut socket).await, None, "the connection is cut");
    let mut socket = connect(&g, g.token()).await.unwrap();
    send(
        &mut socket,
        1,
        "events.subscribe",
        json!({"sessionKey": "cut", "after": frames[2]["event"]["id"]}),
    )
    .await;
    pretty_assertions::assert_eq!(
        frame(&mut socket).await.unwrap(),
        json!({"id": 1, "ok": true, "result": {"subscriptionId": "sub_1"}, "type": "res"})
    );
    // Every event once, in order, each whole: the session's
    // `session.created`, then its run's (and, on the session, its
    // trajectory's `artifact.created` just before its end).
    let page = ok(&g, "runs.events", json!({"runId": run_id})).await;
    let all = page["events"].as_array().unwrap();
    while frames.len() < all.len() + 2 {
        frames.push(frame(&mut socket).await.unwrap());
    }
    let mut events: Vec<Value> = frames.iter().map(|f| f["event"].clone()).collect();
    assert_eq!(events[0]["type"], "session.created");
    let announced = events.remove(events.len() - 2);
    assert_eq!(announced["type"], "artifact.created");
    pretty_assertions::assert_eq!(&events[1..], &all[..]);
    // And an expired cursor answers the subscription with the error.
    g.inject(Fault::ExpireCursor);
    send(&mut socket, 2, "events.subscribe", json!({"after": "1"})).await;
    let mut answer = frame(&mut socket).await.unwrap();
    while answer["type"] == "event" {
        answer = frame(&mut socket).await.unwrap();
    }
    pretty_assertions::assert_eq!(
        answer,
        json!({
            "error": {
                "code": "cursor_expired",
                "details": {"cursor": "1", "oldestId": "2"},
                "message": "cursor 1 has expired; the oldest event kept is 2",
                "retryable": false
            },
            "id": 2,
            "ok": false,
            "type": "res"
        })
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
    let mut r = Redactor::new();
    assert_eq!(r.value(&json!(first)), json!("<run_1>"));
    pretty_assertions::assert_eq!(
        (status, r.value(&refused)),
        (
            409,
            json!({
                "error": {
                    "code": "conflict",
                    "details": {"activeRunIds": ["<run_1>"]},
                    "message": "the session already has an active run (multitaskStrategy: reject)",
                    "retryable": false
                }
            })
        )
    );
    let second = create(&g, json!({"input": "two", "sessionKey": "lane"})).await;
    insta::assert_json_snapshot!("busy_second", sized(r.value(&wait(&g, &second).await)));
    let (one, two) = (
        ok(&g, "runs.get", json!({"runId": first})).await,
        ok(&g, "runs.get", json!({"runId": second})).await,
    );
    assert!(two["startedAt"].as_u64() >= one["endedAt"].as_u64());
    let page = ok(&g, "runs.events", json!({"runId": second})).await;
    insta::assert_json_snapshot!(
        "busy_queued",
        sized(r.transcript(page["events"].as_array().unwrap()))
    );
    g.script_run(FakeRun::reply("late").delay(Duration::from_secs(5)));
    let limited = create(&g, json!({"input": "go", "timeoutMs": 100})).await;
    insta::assert_json_snapshot!("busy_timed_out", sized(r.value(&wait(&g, &limited).await)));
    let page = ok(&g, "runs.events", json!({"runId": limited})).await;
    insta::assert_json_snapshot!(
        "busy_timed_out_events",
        sized(r.transcript(page["events"].as_array().unwrap()))
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
    // The run's session is announced, then the run.
    let mut kinds = Vec::new();
    for _ in 0..2 {
        kinds.push(stream.next().await.unwrap().unwrap().kind);
    }
    assert_eq!(kinds, ["session.created", "run.created"]);
    tokio::time::timeout(Duration::from_secs(5), g.shutdown())
        .await
        .expect("shutdown ends streams and connections");
    while let Ok(Some(_)) = stream.next().await {}
    assert_eq!(frame(&mut socket).await, None);
    assert!(reqwest::get(format!("{url}/healthz")).await.is_err());
}
