//! Server-Sent Events over the store: backlog then live tail with no gap
//! or duplicate, `Last-Event-ID`, the end after a run's terminal event,
//! filters, `raw` only for admin tokens, expired and bad cursors.

use std::time::Duration;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey};

use futures::StreamExt as _;
use serde_json::{Value, json};
use talon_gateway::tokens;
use talon_protocol::gateway::{Run, RunStatus, Scope};
use talon_protocol::{Event, EventType};

use super::TestGateway;

fn event(run: &str, kind: EventType, n: u64) -> Event {
    Event {
        subject: None,
        version: 1,
        id: Default::default(),
        ts: 1_000 + n,
        kind,
        run_id: Some(RunId::new(run)),
        session_id: Some(SessionId::new("s1")),
        session_key: Some(SessionKey::new(format!("key-{run}"))),
        task_id: None,
        agent_id: Some(AgentId::new("main")),
        request_id: None,
        data: json!({"n": n}),
        raw: Some(json!({"native": n})),
    }
}

async fn run(g: &TestGateway, id: &str) {
    let run = Run {
        summary: None,
        model: None,
        subject: None,
        id: RunId::new(id),
        agent_id: AgentId::new("main"),
        session_id: Some(SessionId::new("s1")),
        session_key: Some(SessionKey::new(format!("key-{id}"))),
        status: RunStatus::Running,
        created_at: 1,
        started_at: Some(1),
        ended_at: None,
        usage: None,
        error: None,
    };
    g.running
        .store
        .create_run(&run, None, "h", "test", None)
        .await
        .unwrap();
}

/// One SSE event: id, type, envelope.
#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: String,
    kind: String,
    data: Value,
}

/// The SSE event `e` is sent as, whole; `raw` only if `with_raw`.
fn sse(e: &Event, with_raw: bool) -> Sse {
    let e = Event {
        raw: e.raw.clone().filter(|_| with_raw),
        ..e.clone()
    };
    Sse {
        id: e.id.as_str().to_owned(),
        kind: e.kind.as_str().to_owned(),
        data: serde_json::to_value(&e).unwrap(),
    }
}

/// An open SSE response, read event by event.
struct Reader {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl Reader {
    /// The next event (heartbeat comments skipped); `None` when the stream
    /// ended.
    async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut sse = Sse {
                    id: String::new(),
                    kind: String::new(),
                    data: Value::Null,
                };
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        sse.id = v.trim().into();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        sse.kind = v.trim().into();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        sse.data = serde_json::from_str(v.trim()).unwrap();
                    }
                }
                if sse.kind.is_empty() {
                    continue;
                }
                return Some(sse);
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.body.next())
                .await
                .expect("the stream stalled")?;
            self.buffer
                .push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
    }
}

async fn open(
    g: &TestGateway,
    token: &str,
    path: &str,
    last_event_id: Option<&str>,
) -> Result<Reader, (u16, Value)> {
    let mut request = g.client.get(g.url(path)).bearer_auth(token);
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    if status != 200 {
        return Err((status, response.json().await.unwrap()));
    }
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    Ok(Reader {
        body: response.bytes_stream().boxed(),
        buffer: String::new(),
    })
}

#[tokio::test]
async fn a_run_stream_gives_the_backlog_then_the_live_tail_and_ends() {
    let g = TestGateway::start().await;
    run(&g, "r1").await;
    let store = &g.running.store;
    let first = store
        .append(vec![
            event("r1", EventType::RunStarted, 0),
            event("r1", EventType::AssistantDelta, 1),
        ])
        .await
        .unwrap();
    store
        .append(vec![event("r2", EventType::RunStarted, 9)])
        .await
        .unwrap();
    let mut reader = open(&g, &g.admin, "/v1/runs/r1/events", None)
        .await
        .unwrap();
    for e in &first {
        let got = reader.next().await.unwrap();
        assert_eq!(
            (got.id.as_str(), got.kind.as_str()),
            (e.id.as_str(), e.kind.as_str())
        );
        assert_eq!(got.data, serde_json::to_value(e).unwrap());
    }
    // Live: committed after the subscriber joined.
    let later = store
        .append(vec![
            event("r1", EventType::AssistantDelta, 2),
            event("r1", EventType::RunCompleted, 3),
        ])
        .await
        .unwrap();
    for e in &later {
        assert_eq!(reader.next().await.unwrap().id, e.id.as_str());
    }
    assert_eq!(
        reader.next().await,
        None,
        "the stream ends after the terminal event"
    );
    // Resuming after the first event gives exactly the rest.
    let mut resumed = open(
        &g,
        &g.admin,
        "/v1/runs/r1/events",
        Some(first[0].id.as_str()),
    )
    .await
    .unwrap();
    let mut ids = Vec::new();
    while let Some(e) = resumed.next().await {
        ids.push(e.id);
    }
    let expected: Vec<_> = first[1..]
        .iter()
        .chain(&later)
        .map(|e| e.id.as_str().to_owned())
        .collect();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn the_global_stream_filters_and_strips_raw_without_admin() {
    let g = TestGateway::start().await;
    let store = &g.running.store;
    let reader_token = tokens::create(
        store,
        None,
        vec![Scope::SessionRead, Scope::AgentRead],
        None,
        1,
    )
    .await
    .unwrap();
    let backlog = store
        .append(vec![
            event("r1", EventType::RunStarted, 0),
            event("r2", EventType::RunStarted, 1),
            event("r1", EventType::AssistantDelta, 2),
        ])
        .await
        .unwrap();
    let path = "/v1/events?sessionKey=key-r1&types=run.started,assistant.delta";
    let mut admin = open(&g, &g.admin, path, None).await.unwrap();
    // The admin's: whole, `raw` included.
    assert_eq!(admin.next().await.unwrap(), sse(&backlog[0], true));
    assert_eq!(admin.next().await.unwrap(), sse(&backlog[2], true));
    let scope = talon_protocol::gateway::Method::EventsSubscribe
        .spec()
        .scope;
    let mut plain = match open(&g, &reader_token.secret, path, None).await {
        Ok(mut plain) if scope.satisfied_by(&reader_token.stored.scopes) => {
            assert_eq!(plain.next().await.unwrap(), sse(&backlog[0], false));
            assert_eq!(plain.next().await.unwrap(), sse(&backlog[2], false));
            Some(plain)
        }
        Ok(_) => panic!("a token without {scope} streamed"),
        Err((status, body)) => {
            assert!(
                !scope.satisfied_by(&reader_token.stored.scopes),
                "{status} {body}"
            );
            assert_eq!(status, 403);
            None
        }
    };
    // Live events reach the open streams (through the node's tail); the
    // filter still applies, `raw` reaches only the admin, and a `raw`
    // too large for the tail is still delivered whole.
    let mut large = event("r1", EventType::AssistantDelta, 5);
    large.raw = Some(json!({"native": "x".repeat(100_000)}));
    let appended = store
        .append(vec![
            event("r2", EventType::AssistantDelta, 3),
            event("r1", EventType::AssistantDelta, 4),
            large,
            event("r1", EventType::AssistantDelta, 6),
        ])
        .await
        .unwrap();
    let live = [
        admin.next().await.unwrap(),
        admin.next().await.unwrap(),
        admin.next().await.unwrap(),
    ];
    assert!(
        live == [1, 2, 3].map(|i| sse(&appended[i], true)),
        "{live:?}"
    );
    if let Some(plain) = plain.as_mut() {
        let live = [
            plain.next().await.unwrap(),
            plain.next().await.unwrap(),
            plain.next().await.unwrap(),
        ];
        assert!(
            live == [1, 2, 3].map(|i| sse(&appended[i], false)),
            "{live:?}"
        );
    }
}

#[tokio::test]
async fn bad_and_expired_cursors_are_errors() {
    let g = TestGateway::start().await;
    run(&g, "r1").await;
    let store = &g.running.store;
    store
        .append(
            (0..5)
                .map(|n| event("r1", EventType::AssistantDelta, n))
                .collect(),
        )
        .await
        .unwrap();
    store
        .prune(
            talon_store::Retention {
                max_age: None,
                max_events: Some(2),
            },
            0,
        )
        .await
        .unwrap();
    let (status, body) = open(&g, &g.admin, "/v1/runs/r1/events?after=1", None)
        .await
        .err()
        .unwrap();
    insta::assert_json_snapshot!("expired", json!([status, body]));
    let (status, body) = open(&g, &g.admin, "/v1/runs/r1/events?after=abc", None)
        .await
        .err()
        .unwrap();
    insta::assert_json_snapshot!("bad", json!([status, body]));
    let (status, _) = open(&g, &g.admin, "/v1/runs/ghost/events", None)
        .await
        .err()
        .unwrap();
    assert_eq!(status, 404);
    let (status, _) = open(&g, "talon_nope", "/v1/runs/r1/events", None)
        .await
        .err()
        .unwrap();
    assert_eq!(status, 401);
    let (status, _) = open(&g, &g.admin, "/v1/events?types=bogus.kind", None)
        .await
        .err()
        .unwrap();
    assert_eq!(status, 400);
}

/// The frames of an SSE body read so far (each without its blank line).
fn frames(text: &str) -> Vec<&str> {
    text.split_terminator("\n\n").collect()
}

/// Reads `body` into `text` until `text[from..]` holds `n` whole frames.
async fn read_frames(
    body: &mut futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    text: &mut String,
    from: usize,
    n: usize,
) {
    while frames(&text[from..]).len() < n || !text.ends_with("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .expect("the stream stalled")
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_stream_gets_heartbeats_and_a_busy_one_does_not() {
    let g = TestGateway::start_with(talon_gateway::Limits {
        sse_heartbeat_interval: Duration::from_millis(1_000),
        ..talon_gateway::Limits::default()
    })
    .await;
    run(&g, "r1").await;
    let response = g
        .client
        .get(g.url("/v1/runs/r1/events"))
        .bearer_auth(&g.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(
        (
            response.status().as_u16(),
            response.headers()["content-type"].to_str().unwrap(),
            response.headers()["cache-control"].to_str().unwrap()
        ),
        (200, "text/event-stream", "no-cache")
    );
    let mut body = response.bytes_stream().boxed();
    let mut text = String::new();
    // Busy: an event every 100 ms for 1.5 s, never a second's silence.
    let store = g.running.store.clone();
    let writer = tokio::spawn(async move {
        for n in 0..15 {
            store
                .append(vec![event("r1", EventType::AssistantDelta, n)])
                .await
                .unwrap();
            // Not a wait: the writer's pace.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    read_frames(&mut body, &mut text, 0, 15).await;
    writer.await.unwrap();
    let busy = frames(&text);
    assert_eq!(busy.len(), 15, "{text}");
    for frame in &busy {
        assert!(
            frame.starts_with("id: ") && frame.contains("\nevent: assistant.delta\ndata: {"),
            "{frame:?}"
        );
    }
    // Idle: heartbeat comments and nothing else. (How far apart they
    // come is the server's timer, not something a loaded test machine
    // can measure from the reading side.)
    let busy_len = text.len();
    read_frames(&mut body, &mut text, busy_len, 2).await;
    assert_eq!(frames(&text[busy_len..]), vec![":", ":"]);
}

#[tokio::test]
async fn what_a_run_cost_is_stored_before_its_terminal_event_is_seen() {
    let g = TestGateway::with_script(talon_mock_model::Script {
        replay: talon_mock_model::Replay::PerRun,
        ..talon_mock_model::Script::texts(&["Hello."])
    })
    .await;
    for attempt in 0..5 {
        let (_, run) = g
            .call(&g.admin, "runs.create", json!({"input": "hi"}))
            .await;
        let id = run["id"].as_str().unwrap().to_owned();
        let mut reader = open(&g, &g.admin, &format!("/v1/runs/{id}/events"), None)
            .await
            .unwrap();
        let mut terminal = None;
        while let Some(e) = reader.next().await {
            if e.kind == "run.completed" {
                terminal = Some(e.data);
                break;
            }
        }
        let usage = terminal.unwrap()["data"]["usage"].clone();
        assert!(usage["totalTokens"].as_u64().unwrap() > 0, "{usage}");
        // Asked the moment the terminal event arrives.
        let (_, got) = g.call(&g.admin, "runs.get", json!({"runId": id})).await;
        assert_eq!(got["usage"], usage, "attempt {attempt}");
    }
}
