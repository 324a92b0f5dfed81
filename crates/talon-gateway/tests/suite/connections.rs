//! Connections a long-lived server must not keep: a client trickling its
//! request head, a stream reader that stopped reading (its stream's place
//! is freed), a WebSocket peer that stopped answering pings.

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey};

use futures::StreamExt as _;
use serde_json::json;
use talon_gateway::Limits;
use talon_protocol::{Event, EventType};
use talon_testing::wait;
use tokio_tungstenite::tungstenite::Message;

use super::TestGateway;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_that_never_ends_is_cut_off() {
    let g = TestGateway::start_with(Limits {
        header_read_timeout: Duration::from_millis(300),
        ..Limits::default()
    })
    .await;
    let addr = g.running.addr;
    let (answer, took) = tokio::task::spawn_blocking(move || {
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            .unwrap();
        let started = Instant::now();
        let mut answer = Vec::new();
        // The server closes the connection (a 408 first, at most).
        tcp.read_to_end(&mut answer).unwrap();
        (
            String::from_utf8_lossy(&answer).into_owned(),
            started.elapsed(),
        )
    })
    .await
    .unwrap();
    assert!(took < Duration::from_secs(5), "held for {took:?}");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    // Whole requests are still served.
    assert_eq!(g.call(&g.admin, "agents.list", json!({})).await.0, 200);
}

fn big(n: u64) -> Event {
    Event {
        subject: None,
        version: 1,
        id: Default::default(),
        ts: n,
        kind: EventType::AssistantDelta,
        run_id: Some(RunId::new("r")),
        session_id: Some(SessionId::new("s")),
        session_key: Some(SessionKey::new("k")),
        task_id: None,
        agent_id: Some(AgentId::new("main")),
        request_id: None,
        data: json!({"text": "x".repeat(4096)}),
        raw: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_reader_that_stops_reading_is_dropped_and_its_place_freed() {
    let g = TestGateway::start_with(Limits {
        max_streams: 1,
        stalled_write_timeout: Duration::from_millis(500),
        ..Limits::default()
    })
    .await;
    // A reader with a tiny receive window that never reads.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&g.running.addr.into()).unwrap();
    let mut stalled: std::net::TcpStream = socket.into();
    write!(
        stalled,
        "GET /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\r\n",
        g.admin
    )
    .unwrap();
    // It is open (its answer's head has come) before anyone else asks, so
    // the one place is its own.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stalled.read(&mut byte).unwrap(),
            1,
            "the stream's answer ended"
        );
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    // Its place is taken.
    let open = || async {
        g.client
            .get(g.url("/v1/events"))
            .bearer_auth(&g.admin)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    wait::until_async(
        "the stalled stream to open",
        wait::DEADLINE,
        async || match open().await {
            503 => Ok(()),
            status => Err(status),
        },
    )
    .await;
    // More than the socket buffers hold.
    for chunk in 0..8 {
        g.running
            .store
            .append((0..256).map(|n| big(chunk * 256 + n)).collect())
            .await
            .unwrap();
    }
    wait::until_async(
        "the stalled reader to lose the only stream",
        wait::DEADLINE,
        async || match open().await {
            200 => Ok(()),
            status => Err(status),
        },
    )
    .await;
    drop(stalled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_peer_that_stops_answering_pings_is_closed() {
    use tokio::io::AsyncReadExt as _;
    let g = TestGateway::start_with(Limits {
        ws_ping_interval: Duration::from_millis(40),
        ..Limits::default()
    })
    .await;
    // A peer that reads (and so answers pings) stays, over more than the
    // two silent intervals that close one.
    let mut live = super::ws::connect(&g, &g.admin).await.unwrap();
    let kept = tokio::time::timeout(Duration::from_millis(100), async {
        while let Some(frame) = live.next().await {
            if matches!(frame, Ok(Message::Close(_)) | Err(_)) {
                return false;
            }
        }
        false
    })
    .await
    .is_err();
    assert!(kept, "a peer answering pings was closed");
    // A peer that reads the bytes but answers nothing (no WebSocket layer
    // between it and the socket, so no pong) is pinged, then closed.
    let mut silent = super::ws::connect(&g, &g.admin).await.unwrap();
    let tokio_tungstenite::MaybeTlsStream::Plain(tcp) = silent.get_mut() else {
        panic!("a plain connection");
    };
    let mut pings = 0;
    let mut bytes = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut chunk = [0u8; 512];
        loop {
            let n = tcp.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                return;
            }
            bytes.extend_from_slice(&chunk[..n]);
            // Server frames are unmasked; control frames are short.
            while bytes.len() >= 2 && bytes.len() >= 2 + usize::from(bytes[1] & 0x7f) {
                let (opcode, len) = (bytes[0] & 0x0f, usize::from(bytes[1] & 0x7f));
                bytes.drain(..2 + len);
                match opcode {
                    0x9 => pings += 1,
                    0x8 => return,
                    _ => {}
                }
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the silent peer was not closed");
    assert!(pings >= 1, "it was pinged first");
}
