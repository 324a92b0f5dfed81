//! Part `fanout`: 1,000 subscribers on one run, each event's delay from
//! its `ts` to its arrival at every subscriber; the lean HTTP/1.1
//! subscriber it reads with.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use talon_mock_model::{Replay, Script, ScriptedCall, Turn};

use super::{Seen, start};
use crate::support::measure::{now_ms, now_us, percentile, sorted};
use crate::support::sse::{Events, find, take_event};

/// A subscriber as lean as HTTP/1.1 allows, for the fan-out: one task,
/// one socket, the chunked body decoded in place. With a client library
/// each delivery also costs the client's connection task and the hop to
/// the reader's task, on the same two cores as the gateway; this keeps
/// the clients' share of the figure to the kernel's receive path and
/// parsing the two fields the bench reads. (`TALON_BENCH_CLIENT=reqwest`
/// measures with reqwest instead.)
struct RawSse {
    socket: tokio::net::TcpStream,
    /// Bytes read and not yet decoded.
    wire: Vec<u8>,
    /// The decoded body not yet parsed into events.
    body: Vec<u8>,
    /// Whether the last chunk came.
    ended: bool,
}

impl RawSse {
    async fn open(addr: std::net::SocketAddr, path: &str, token: &str) -> Self {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        socket.set_nodelay(true).unwrap();
        socket
            .write_all(
                format!(
                    "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
                     Accept: text/event-stream\r\n\r\n"
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        let mut wire = Vec::with_capacity(8192);
        loop {
            assert!(socket.read_buf(&mut wire).await.unwrap() > 0, "closed");
            if let Some(end) = find(&wire, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&wire[..end]).to_ascii_lowercase();
                assert!(head.starts_with("http/1.1 200"), "{head}");
                assert!(head.contains("transfer-encoding: chunked"), "{head}");
                wire.drain(..end + 4);
                break;
            }
        }
        Self {
            socket,
            wire,
            body: Vec::with_capacity(8192),
            ended: false,
        }
    }

    async fn next(&mut self) -> Option<Seen> {
        use tokio::io::AsyncReadExt as _;
        loop {
            if let Some(seen) = take_event(&mut self.body) {
                return Some(seen);
            }
            if self.ended {
                return None;
            }
            // Decode the whole chunks read so far.
            let mut decoded = false;
            while let Some(line) = find(&self.wire, b"\r\n") {
                let size = std::str::from_utf8(&self.wire[..line])
                    .ok()
                    .and_then(|t| usize::from_str_radix(t.trim(), 16).ok())
                    .unwrap();
                if size == 0 {
                    self.ended = true;
                    decoded = true;
                    break;
                }
                let end = line + 2 + size;
                if self.wire.len() < end + 2 {
                    break;
                }
                self.body.extend_from_slice(&self.wire[line + 2..end]);
                self.wire.drain(..end + 2);
                decoded = true;
            }
            if !decoded && self.socket.read_buf(&mut self.wire).await.ok()? == 0 {
                return None;
            }
        }
    }
}

/// A fan-out subscriber: the lean one, or reqwest's.
enum Subscriber {
    Raw(RawSse),
    Reqwest(Events<Seen>),
}

impl Subscriber {
    async fn next(&mut self) -> Option<Seen> {
        match self {
            Self::Raw(s) => s.next().await,
            Self::Reqwest(s) => s.next().await,
        }
    }
}

static KINDS: std::sync::Mutex<Vec<(usize, String, u64)>> = std::sync::Mutex::new(Vec::new());

/// With `TALON_BENCH_DEBUG`, the fan-out's delays (ms) by the event's
/// place in the run: its type, p50, p99 and min.
pub fn print_kinds() {
    if std::env::var_os("TALON_BENCH_DEBUG").is_none() {
        return;
    }
    let kinds = KINDS.lock().unwrap();
    for n in 1..=16 {
        let mut d: Vec<f64> = kinds
            .iter()
            .filter(|k| k.0 == n)
            .map(|k| k.2 as f64)
            .collect();
        let kind = kinds
            .iter()
            .find(|k| k.0 == n)
            .map(|k| k.1.clone())
            .unwrap_or_default();
        d = sorted(d);
        println!(
            "{n} {kind} p50 {} p99 {} min {}",
            percentile(&d, 50.0),
            percentile(&d, 99.0),
            d.first().copied().unwrap_or(0.0)
        );
    }
}

pub async fn fan_out(subscribers: usize) {
    let call = |delay: u64| Turn {
        tool_calls: vec![ScriptedCall {
            name: "list".into(),
            arguments: json!({"path": "."}),
        }],
        delay: Duration::from_millis(delay),
        ..Turn::default()
    };
    // The first reply waits for the subscribers to connect; the rest are
    // spaced so that events arrive one burst at a time.
    let script = Script {
        turns: vec![
            call(5_000),
            call(100),
            call(100),
            call(100),
            Turn {
                text: Some("fan out done with a few words".into()),
                delay: Duration::from_millis(100),
                ..Turn::default()
            },
        ],
        replay: Replay::PerRun,
        ..Script::default()
    };
    let bench = Arc::new(start(script, json!({})).await);
    let run = bench.call("runs.create", json!({"input": "fan"})).await;
    let run_id = run["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/runs/{run_id}/events");
    let mut readers = Vec::new();
    let connected = Arc::new(tokio::sync::Barrier::new(subscribers + 1));
    let done = Arc::new(tokio::sync::Barrier::new(subscribers));
    for _ in 0..subscribers {
        let done = done.clone();
        let bench = bench.clone();
        let path = path.clone();
        let connected = connected.clone();
        readers.push(tokio::spawn(async move {
            let mut events = if std::env::var("TALON_BENCH_CLIENT").as_deref() == Ok("reqwest") {
                Subscriber::Reqwest(bench.events(&path).await)
            } else {
                Subscriber::Raw(RawSse::open(bench.running.addr, &path, &bench.token).await)
            };
            connected.wait().await;
            let mut delays = Vec::new();
            while let Some(event) = events.next().await {
                // A delivery's delay is its arrival in µs less its event's
                // `ts` (ms) × 1,000, so that the percentiles are not whole
                // milliseconds (the `ts` truncation adds 0.5 ms on average,
                // the same before and after a change).
                let arrived = now_us();
                delays.push((event.ts, arrived));
                if std::env::var_os("TALON_BENCH_DEBUG").is_some() {
                    KINDS.lock().unwrap().push((
                        delays.len(),
                        event.kind.clone(),
                        (arrived / 1_000).saturating_sub(event.ts),
                    ));
                }
                if event.kind == "run.completed" {
                    break;
                }
            }
            if std::env::var_os("TALON_BENCH_HOLD").is_some() {
                done.wait().await;
            }
            drop(events);
            delays
        }));
    }
    connected.wait().await;
    let since = now_ms();
    let mut delays = Vec::new();
    let mut events = 0;
    for reader in readers {
        let seen = reader.await.unwrap();
        events = events.max(seen.len());
        delays.extend(
            seen.into_iter()
                .filter(|(ts, _)| *ts > since)
                .map(|(ts, arrived)| arrived.saturating_sub(ts * 1_000) as f64 / 1e3),
        );
    }
    let s = sorted(delays);
    println!(
        "| SSE fan-out, {subscribers} subscribers on one run ({events} events each) | p50 {:.2} ms | p99 {:.2} ms | max {:.2} ms | mean {:.3} ms | {} deliveries measured |",
        percentile(&s, 50.0),
        percentile(&s, 99.0),
        s.last().copied().unwrap_or(f64::NAN),
        s.iter().sum::<f64>() / s.len().max(1) as f64,
        s.len()
    );
    print_kinds();
    match Arc::try_unwrap(bench) {
        Ok(bench) => bench.running.shutdown().await,
        Err(_) => panic!("the bench is still shared"),
    }
}
