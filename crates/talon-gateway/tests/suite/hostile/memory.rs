//! Memory and places per token: a token's unread streams hold at most its
//! byte budget, and a stream starved of it ends (`slow_reader`) and
//! resumes from its cursor with no gap; a token's streams and requests in
//! flight are capped so no token takes another's; a body trickled in is
//! cut, and the gateway keeps answering others meanwhile; an unread
//! stream's socket holds little in the kernel.

use std::io::{Read as _, Write as _};
use std::time::Duration;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey};

use serde_json::{Value, json};
use talon_gateway::{Limits, tokens};
use talon_protocol::gateway::Scope;
use talon_protocol::{Event, EventType};

use super::super::{Options, TestGateway};

/// `n` events of about `size` bytes each, on one run.
async fn log(g: &TestGateway, n: u64, size: usize) {
    let events = (0..n)
        .map(|i| Event {
            subject: None,
            version: 1,
            id: Default::default(),
            ts: 1_000 + i,
            kind: EventType::AssistantDelta,
            run_id: Some(RunId::new("run_big")),
            session_id: Some(SessionId::new("s1")),
            session_key: Some(SessionKey::new("key-big")),
            task_id: None,
            agent_id: Some(AgentId::new("main")),
            request_id: None,
            data: json!({"text": "x".repeat(size), "i": i}),
            raw: None,
        })
        .collect::<Vec<_>>();
    for chunk in events.chunks(50) {
        g.running.store.append(chunk.to_vec()).await.unwrap();
    }
}

async fn token(g: &TestGateway, name: &str) -> String {
    tokens::create(
        &g.running.store,
        Some(name.into()),
        vec![Scope::SessionRead, Scope::AgentRead, Scope::AgentRun],
        None,
        g.running.store.now_ms(),
    )
    .await
    .unwrap()
    .secret
}

/// A stream of `token`'s at `path`, never read past its head.
fn unread(g: &TestGateway, token: &str, path: &str) -> std::net::TcpStream {
    talon_testing::unread::unread_stream(g.running.addr, token, path).unwrap()
}

/// The ids of a stream's events, read until its end or `last`, and the
/// error that ended it, if any.
async fn read_stream(
    g: &TestGateway,
    token: &str,
    after: Option<u64>,
    last: u64,
) -> (Vec<u64>, Option<Value>) {
    use futures::StreamExt as _;
    let mut request = g.client.get(g.url("/v1/events")).bearer_auth(token);
    if let Some(after) = after {
        request = request.header("last-event-id", after.to_string());
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut text = String::new();
    let mut ids = Vec::new();
    loop {
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            if let Some(data) = frame.strip_prefix("event: error\ndata: ") {
                return (ids, Some(serde_json::from_str(data.trim()).unwrap()));
            }
            if let Some(id) = frame.strip_prefix("id: ") {
                let id: u64 = id.lines().next().unwrap().parse().unwrap();
                ids.push(id);
                if id == last {
                    return (ids, None);
                }
            }
        }
        match tokio::time::timeout(Duration::from_secs(30), body.next()).await {
            Ok(Some(chunk)) => text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap()),
            Ok(None) => return (ids, None),
            Err(_) => panic!("the stream stalled after {:?}", ids.last()),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_starved_of_its_tokens_budget_ends_and_resumes_with_no_gap() {
    let g = TestGateway::start_with(Limits {
        stream_bytes_per_token: 64 << 10,
        slow_reader_timeout: Duration::from_millis(100),
        stalled_write_timeout: Duration::from_secs(60),
        ..Limits::default()
    })
    .await;
    // 10 MB: more than the kernel buffers of a socket take.
    log(&g, 500, 20_000).await;
    let last = 500;
    let viewer = token(&g, "viewer").await;
    let other = token(&g, "other").await;
    // One unread stream holds the viewer's whole budget.
    let held = unread(&g, &viewer, "/v1/events?after=0");
    // Not a wait on a condition: lets the unread stream fill the socket.
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The viewer's next stream waits for room, then ends saying why.
    let (ids, error) = read_stream(&g, &viewer, None, last).await;
    assert_eq!(
        error
            .as_ref()
            .map(|e| (&e["error"]["code"], &e["error"]["details"])),
        Some((&json!("unavailable"), &json!({"reason": "slow_reader"}))),
        "{ids:?}"
    );
    let reached = ids.last().copied();
    assert_eq!(ids, (1..=reached.unwrap_or(0)).collect::<Vec<_>>());
    // Another token's stream meanwhile reads everything: its budget is its
    // own.
    let (all, error) = read_stream(&g, &other, None, last).await;
    assert_eq!((all, error), ((1..=last).collect(), None));
    // Once the hog is gone, the cut stream resumes from its cursor with
    // no gap and no duplicate.
    drop(held);
    let (rest, error) = read_stream(&g, &viewer, reached, last).await;
    assert_eq!(error, None);
    assert_eq!(rest, (reached.unwrap_or(0) + 1..=last).collect::<Vec<_>>());
}

/// Streams waiting for the next event hold none of their token's budget:
/// three live streams of a token whose budget is one page idle past
/// `slowReaderTimeout`, and each then gets the next event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_streams_hold_none_of_their_tokens_budget() {
    let g = TestGateway::start_with(Limits {
        stream_bytes_per_token: 64 << 10,
        slow_reader_timeout: Duration::from_millis(40),
        ..Limits::default()
    })
    .await;
    log(&g, 3, 100).await;
    let viewer = token(&g, "viewer").await;
    let streams: Vec<_> = (0..3)
        .map(|_| read_stream(&g, &viewer, Some(3), 4))
        .collect();
    let late = async {
        // Idle for more than twice the slow-reader timeout.
        tokio::time::sleep(Duration::from_millis(100)).await;
        log(&g, 1, 100).await;
    };
    let (read, ()) = tokio::join!(futures::future::join_all(streams), late);
    assert_eq!(read, vec![(vec![4], None); 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_at_its_stream_cap_leaves_the_others_theirs() {
    let g = TestGateway::start_opts(Options {
        limits: Limits {
            max_streams: 8,
            max_streams_per_token: 2,
            ..Limits::default()
        },
        // One answer for the run, one for the chat call.
        script: talon_mock_model::Script::texts(&["one", "two"]),
        ..Options::default()
    })
    .await;
    let viewer = token(&g, "viewer").await;
    let app = token(&g, "app").await;
    let _first = unread(&g, &viewer, "/v1/events");
    let _second = unread(&g, &viewer, "/v1/events");
    let refused = g
        .client
        .get(g.url("/v1/events"))
        .bearer_auth(&viewer)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        body["error"]["details"],
        json!({"limit": "maxStreamsPerToken"})
    );
    // A WebSocket subscription counts too.
    let socket = super::super::ws::connect(&g, &viewer).await.unwrap();
    let t = super::super::ws::Transport::Ws(Box::new(tokio::sync::Mutex::new((socket, 0))));
    let refused = t.call(&g, "events.subscribe", json!({})).await.unwrap_err();
    assert_eq!(refused["code"], "rate_limited", "{refused}");
    // Another token streams and runs as before, through the OpenAI route
    // too (a non-streamed call follows its run on a stream of its own).
    let _theirs = unread(&g, &app, "/v1/events");
    let (status, run) = g.call(&app, "runs.create", json!({"input": "hi"})).await;
    assert_eq!(status, 200, "{run}");
    let chat = g
        .client
        .post(g.url("/v1/chat/completions"))
        .bearer_auth(&app)
        .json(&json!({"model": "main", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status(), 200, "{}", chat.text().await.unwrap());
}

/// Sends a request head announcing a body of `len` bytes, and `sent` of
/// them.
fn trickle(g: &TestGateway, token: &str, len: usize, sent: &[u8]) -> std::net::TcpStream {
    let mut stream = std::net::TcpStream::connect(g.running.addr).unwrap();
    write!(
        stream,
        "POST /v1/agents.list HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    )
    .unwrap();
    stream.write_all(sent).unwrap();
    stream
}

/// Whether the gateway has answered on `stream` (without waiting).
fn answered(stream: &std::net::TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let answered = stream.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0);
    stream.set_nonblocking(false).unwrap();
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickled_bodies_are_cut_and_the_gateway_keeps_answering() {
    let g = TestGateway::start_with(Limits {
        body_read_timeout: Duration::from_secs(2),
        ..Limits::default()
    })
    .await;
    let slow = token(&g, "slow").await;
    let app = token(&g, "app").await;
    let held: Vec<_> = (0..20).map(|_| trickle(&g, &slow, 100, b"{")).collect();
    // Others are answered meanwhile, and so is the health check.
    let (status, _) = g.call(&app, "agents.list", json!({})).await;
    assert_eq!(status, 200);
    let health = g.client.get(g.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    // Past the deadline each trickled body is refused and its connection
    // closed.
    for mut stream in held {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
        assert!(answer.contains(r#""reason":"body_too_slow""#), "{answer}");
    }
    let (status, _) = g.call(&slow, "agents.list", json!({})).await;
    assert_eq!(status, 200);
}

/// A token's trickled requests hold its places in flight: past
/// `maxRequestsPerToken` its next call is refused while another token's
/// is answered; a body slower than `minBodyBytesPerSecond` (here 1 byte a
/// second, so ten bytes sent are cut at 5 + 11 s, well before the 60 s
/// deadline and long after a loaded machine has read their headers) is
/// cut before its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokens_trickled_requests_hold_its_places_until_the_rate_cuts_them() {
    let g = TestGateway::start_with(Limits {
        max_requests_per_token: 3,
        min_body_bytes_per_second: 1,
        body_read_timeout: Duration::from_secs(60),
        ..Limits::default()
    })
    .await;
    let slow = token(&g, "slow").await;
    let app = token(&g, "app").await;
    let started = std::time::Instant::now();
    let mut held: Vec<_> = (0..3)
        .map(|_| trickle(&g, &slow, 100, br#"{"a":"bbbb"#))
        .collect();
    // Once the three are in flight (before their cut at 16 s). A probe
    // that overtakes a trickle takes its place, and that trickle is
    // refused at once: it is opened again.
    let refused = loop {
        for stream in &mut held {
            if answered(stream) {
                *stream = trickle(&g, &slow, 100, br#"{"a":"bbbb"#);
            }
        }
        let (status, body) = g.call(&slow, "agents.list", json!({})).await;
        if status == 429 {
            break body;
        }
        assert!(
            started.elapsed() < Duration::from_secs(14),
            "{status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        refused["error"]["details"],
        json!({"limit": "maxRequestsPerToken"})
    );
    let (status, _) = g.call(&app, "agents.list", json!({})).await;
    assert_eq!(status, 200);
    for mut stream in held {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.contains(r#""reason":"body_too_slow""#), "{answer}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "cut by the rate, not the deadline"
    );
    let (status, _) = g.call(&slow, "agents.list", json!({})).await;
    assert_eq!(status, 200);
}

/// The tokens bound to one subject share its places: with
/// `maxStreamsPerSubject` 2, a third stream of the subject's is refused
/// whichever token opens it, and another subject's opens; with
/// `maxRequestsPerSubject` 2, two open sockets of the subject's take both
/// its places in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subjects_tokens_share_its_streams_and_requests() {
    let g = TestGateway::start_with(Limits {
        max_streams_per_subject: 2,
        max_requests_per_subject: 2,
        ..Limits::default()
    })
    .await;
    let alice = json!({"subject": "alice"});
    let one = super::bound_token(&g, "alice-1", alice.clone()).await;
    let two = super::bound_token(&g, "alice-2", alice).await;
    let bob = super::bound_token(&g, "bob", json!({"subject": "bob"})).await;
    let open = |token: String| {
        let request = g.client.get(g.url("/v1/events")).bearer_auth(token);
        async move { request.send().await.unwrap() }
    };
    let first = open(one.clone()).await;
    let second = open(two.clone()).await;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let third = open(two.clone()).await;
    assert_eq!(third.status(), 429);
    let refused: Value = third.json().await.unwrap();
    assert_eq!(
        refused["error"]["details"],
        json!({"limit": "maxStreamsPerSubject"})
    );
    assert_eq!(open(bob.clone()).await.status(), 200);
    drop((first, second));
    // Two sockets of alice's hold her two places in flight.
    let _sockets = (
        super::super::ws::connect(&g, &one).await.unwrap(),
        super::super::ws::connect(&g, &two).await.unwrap(),
    );
    let (status, body) = g.call(&one, "agents.list", json!({})).await;
    assert_eq!(
        (status, &body["error"]["details"]),
        (429, &json!({"limit": "maxRequestsPerSubject"})),
        "{body}"
    );
    let (status, _) = g.call(&bob, "agents.list", json!({})).await;
    assert_eq!(status, 200);
}

/// What the kernel holds unsent on the gateway's side of the connection
/// from `client` (the `tx_queue` of `/proc/net/tcp`), if it is open.
fn send_queue(gateway: u16, client: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let port = |address: &str| u16::from_str_radix(address.rsplit(':').next()?, 16).ok();
        if port(fields[1])? != gateway || port(fields[2])? != client {
            return None;
        }
        u64::from_str_radix(fields[4].split(':').next()?, 16).ok()
    })
}

/// An unread stream holds little in the kernel: its socket's send buffer
/// is capped ([`talon_gateway::STREAM_SEND_BUFFER`], which the kernel
/// doubles) where autotuning would let 8 MiB of backlog fill up to 4 MiB
/// of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unread_streams_socket_holds_little_in_the_kernel() {
    let g = TestGateway::start().await;
    log(&g, 80, 100_000).await;
    let admin = g.admin.clone();
    let addr = g.running.addr;
    let stream = tokio::task::spawn_blocking(move || {
        talon_testing::unread::unread_stream(addr, &admin, "/v1/events?after=0").unwrap()
    })
    .await
    .unwrap();
    let client = stream.local_addr().unwrap().port();
    // Until what the kernel holds has stopped growing for half a second.
    let (mut held, mut still) = (0, 0);
    while still < 5 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = send_queue(addr.port(), client).unwrap();
        (still, held) = if now == held {
            (still + 1, held)
        } else {
            (0, now)
        };
    }
    let cap = 2 * talon_gateway::STREAM_SEND_BUFFER as u64;
    assert!(
        held > 64 << 10 && held <= cap,
        "{held} bytes held, cap {cap}"
    );
    drop(stream);
}
