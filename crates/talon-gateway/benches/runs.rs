//! The gateway's run benchmarks (issue 14), in-process against the scripted
//! mock model on 127.0.0.1, over real HTTP and SSE:
//!
//! 1. `runs.create` to the first SSE event of the run (`run.started`)
//!    seen on a pre-opened `/v1/events` stream; no model time is inside it;
//! 2. runs with a two-turn Code Mode script (an `exec` cell, then the
//!    answer), 50 in flight at once, 1,000 in all: runs per second, p50/p99
//!    latency (the mock answers at once, so model time is its own
//!    handling), and resident memory after 100 and after 1,000 runs;
//!    again with a 200-tool MCP server (`codemode-mcp`: the cell reads
//!    `ALL_TOOLS` and calls one of its tools);
//! 3. SSE fan-out: 1,000 subscribers on one run, the delay from each
//!    event's `ts` to its arrival at every subscriber;
//! 4. two nodes on one PostgreSQL (started by the harness): a run created
//!    on one, seen started and waited on through the other.
//!
//! `cargo bench -p talon-gateway --bench runs` (`-- quick` for a smoke run;
//! name `create`, `codemode`, `codemode-mcp`, `fanout` or `nodes` to run
//! only those parts;
//! `TALON_BENCH_DEBUG=1` adds the fan-out delays per event of the run;
//! `TALON_BENCH_CLIENT=reqwest` makes the fan-out's subscribers reqwest
//! clients instead of lean HTTP/1.1 readers; `TALON_BENCH_HOLD=1` makes
//! them keep their connections until every subscriber has the run's end,
//! so that no closing connection's cost, theirs or the gateway's, falls
//! inside another's delivery); `TALON_BENCH_TOKEN=bound` makes the
//! clients use a token bound to a subject (the `app` preset's scopes)
//! instead of the admin token, so that every look-up, list and stream
//! goes through the ownership checks.
//! Clients, mock and gateway share the machine's cores, so every figure
//! includes the clients' own cost.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    missing_docs,
    reason = "a benchmark binary fails loudly and prints its table"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::Subject;

use serde_json::{Value, json};
use talon_gateway::{GatewayConfig, Limits, RunLimits};
use talon_mock_model::{MockModel, Replay, Script, ScriptedCall, Turn};
use talon_runtime::{Host, ModelRoute};

use talon_testing::stats::rss_mib;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

struct Bench {
    running: talon_gateway::Running,
    token: String,
    client: reqwest::Client,
    _mock: MockModel,
    _dir: tempfile::TempDir,
}

/// A node of a shared PostgreSQL store: its URL and the node's name.
struct Shared {
    url: String,
    node: String,
}

impl Bench {
    async fn start(script: Script, config: Value) -> Self {
        Self::start_on(script, config, None).await
    }

    async fn start_on(script: Script, config: Value, shared: Option<Shared>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockModel::start(script).await.unwrap();
        let mut doc = json!({"agents": {"defaults": {"workspace": dir.path().join("workspace")}}});
        for (k, v) in config.as_object().unwrap() {
            doc[k] = v.clone();
        }
        let host = Host::new(
            Arc::new(talon_config::Config::parse(&doc.to_string(), None).unwrap()),
            ModelRoute {
                base_url: Some(mock.base_url()),
            },
        )
        .unwrap();
        let config = GatewayConfig {
            limits: Limits {
                calls_per_second: 1e9,
                burst: 1_000_000,
                max_streams: 4_096,
                // One token (or subject) holds every fan-out subscriber.
                max_streams_per_token: 4_096,
                max_streams_per_subject: 4_096,
                ..Limits::default()
            },
            runs: RunLimits {
                max_concurrent: 64,
                ..RunLimits::default()
            },
            ..GatewayConfig::local(dir.path(), 0, Arc::new(host))
        };
        let config = match shared {
            Some(Shared { url, node }) => GatewayConfig {
                store: talon_store::StoreConfig::at(url, dir.path()),
                node: Some(node),
                ..config
            },
            None => config,
        };
        let running = talon_gateway::start(config).await.unwrap();
        // A second node of a shared store mints no admin token: the
        // caller sets the first node's.
        let mut token = running.admin_token.clone().unwrap_or_default();
        if std::env::var("TALON_BENCH_TOKEN").as_deref() == Ok("bound") {
            let binding = talon_protocol::gateway::Binding {
                subject: Some(Subject::new("bench-user")),
                agents: None,
            };
            let scopes = talon_protocol::gateway::ScopePreset::App.scopes().to_vec();
            let now = running.store.now_ms();
            token = talon_gateway::tokens::create_bound(
                &running.store,
                (Some("bench".into()), &binding),
                scopes,
                None,
                now,
            )
            .await
            .unwrap()
            .secret;
        }
        Self {
            running,
            token,
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(256)
                .build()
                .unwrap(),
            _mock: mock,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.running.addr)
    }

    async fn call(&self, method: &str, params: Value) -> Value {
        let response = self
            .client
            .post(self.url(&format!("/v1/{method}")))
            .bearer_auth(&self.token)
            .json(&params)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert_eq!(status, 200, "{method}: {body}");
        body
    }

    async fn stream(&self, path: &str) -> reqwest::Response {
        let response = self
            .client
            .get(self.url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response
    }
}

/// The envelope fields the benchmarks read (a subscriber that parses
/// what it needs, as an app would; parsing a whole `Value` tree per event
/// would put the client's own cost into the delivery figure).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Seen {
    ts: u64,
    #[serde(rename = "type")]
    kind: String,
    run_id: Option<String>,
}

/// Reads SSE events from a response body.
struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Events {
    fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: Vec::new(),
        }
    }

    async fn next(&mut self) -> Option<Seen> {
        loop {
            if let Some(seen) = take_event(&mut self.buffer) {
                return Some(seen);
            }
            let chunk = self.response.chunk().await.ok()??;
            self.buffer.extend_from_slice(&chunk);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Takes the whole SSE events at the front of `body` up to the first with
/// readable `data:` (comments and heartbeats are dropped).
fn take_event(body: &mut Vec<u8>) -> Option<Seen> {
    while let Some(end) = find(body, b"\n\n") {
        let seen = body[..end]
            .split(|b| *b == b'\n')
            .find_map(|l| l.strip_prefix(b"data: "))
            .and_then(|data| serde_json::from_slice(data).ok());
        body.drain(..end + 2);
        if seen.is_some() {
            return seen;
        }
    }
    None
}

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
    Reqwest(Events),
}

impl Subscriber {
    async fn next(&mut self) -> Option<Seen> {
        match self {
            Self::Raw(s) => s.next().await,
            Self::Reqwest(s) => s.next().await,
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The wall clock in microseconds: a delivery's delay is its arrival in
/// µs less its event's `ts` (ms) × 1,000, so that the percentiles are not
/// whole milliseconds (the `ts` truncation adds 0.5 ms on average, the
/// same before and after a change).
fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

async fn create_to_started(iterations: usize) {
    let script = Script {
        turns: vec![Turn {
            text: Some("ok".into()),
            ..Turn::default()
        }],
        replay: Replay::PerRun,
        ..Script::default()
    };
    let bench = Bench::start(script, json!({})).await;
    let mut stream = Events::new(bench.stream("/v1/events?types=run.started").await);
    let mut samples = Vec::new();
    for n in 0..iterations + 20 {
        let sent = Instant::now();
        let run = bench
            .call(
                "runs.create",
                json!({"input": "go", "sessionKey": format!("s{n}")}),
            )
            .await;
        loop {
            let event = stream.next().await.unwrap();
            if event.run_id.as_deref() == run["id"].as_str() {
                break;
            }
        }
        let ms = sent.elapsed().as_secs_f64() * 1e3;
        bench
            .call(
                "runs.wait",
                json!({"runId": run["id"], "timeoutMs": 10_000}),
            )
            .await;
        if n >= 20 {
            samples.push(ms);
        }
    }
    let s = sorted(samples);
    println!(
        "| runs.create → run.started on SSE | p50 {:.2} ms | p95 {:.2} ms | p99 {:.2} ms | n = {} |",
        percentile(&s, 50.0),
        percentile(&s, 95.0),
        percentile(&s, 99.0),
        s.len()
    );
    bench.running.shutdown().await;
}

/// The fixture MCP server (`node fixture_server.mjs catalog 200`: 200
/// synthetic tools).
fn fixture_js() -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../talon-mcp/tests/fixtures/fixture_server.mjs")
        .display()
        .to_string()
}

async fn concurrent_code_mode(total: usize, in_flight: usize, mcp_catalog: bool) {
    // With the catalog, the cell reads it (`ALL_TOOLS`) and calls one of
    // its tools.
    let code = if mcp_catalog {
        "const n = ALL_TOOLS.length; const r = await MCP.synth.synth000CreateIssue({workspace_id: 'w1'}); text(String(n)); return n;"
    } else {
        "const xs = [1, 2, 3].map((x) => x * 2); text(String(xs)); return xs.length;"
    };
    let script = Script {
        turns: vec![
            Turn {
                tool_calls: vec![ScriptedCall {
                    name: "exec".into(),
                    arguments: json!({"code": code}),
                }],
                ..Turn::default()
            },
            Turn {
                text: Some("There are three.".into()),
                ..Turn::default()
            },
        ],
        replay: Replay::PerRun,
        forget_requests: true,
        ..Script::default()
    };
    let mut config = json!({"tools": {"codeMode": {"enabled": true}}});
    if mcp_catalog {
        config["mcp"] = json!({"servers": {"synth": {"command": "node", "args": [fixture_js(), "catalog", "200"]}}});
    }
    let bench = Arc::new(Bench::start(script, config).await);
    // Warm the sandbox's images and the caches once.
    let warm = bench.call("runs.create", json!({"input": "warm"})).await;
    let result = bench
        .call(
            "runs.wait",
            json!({"runId": warm["id"], "timeoutMs": 60_000}),
        )
        .await;
    assert_eq!(result["status"], "completed", "{result}");
    // Two phases: the first 100 runs, then the rest. RSS is sampled under
    // load every 100 runs, and settled (the gateway idle for longer than
    // its heap trimmer waits) after each phase: the settled figures are
    // the flatness measure, the loaded ones show the working set.
    let started = Instant::now();
    let latencies = Arc::new(std::sync::Mutex::new(Vec::new()));
    let first = total.min(100);
    load(&bench, 0..first, in_flight, &latencies).await;
    let rss_100 = settled_rss().await;
    load(&bench, first..total, in_flight, &latencies).await;
    let elapsed = started.elapsed().as_secs_f64();
    let rss_loaded = rss_mib();
    let rss_end = settled_rss().await;
    let s = sorted(latencies.lock().unwrap().clone());
    println!(
        "| {total} two-turn Code Mode runs, {in_flight} in flight{} | {:.1} runs/s | p50 {:.1} ms | p99 {:.1} ms | settled RSS after 100: {:.1} MiB, after {total}: {:.1} MiB ({:+.1} %); {:.1} MiB as the last run ends |",
        if mcp_catalog {
            ", a 200-tool MCP catalog"
        } else {
            ""
        },
        total as f64 / (elapsed - SETTLE.as_secs_f64()),
        percentile(&s, 50.0),
        percentile(&s, 99.0),
        rss_100,
        rss_end,
        (rss_end / rss_100 - 1.0) * 100.0,
        rss_loaded,
    );
    if std::env::var_os("TALON_BENCH_DEBUG").is_some() {
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
    match Arc::try_unwrap(bench) {
        Ok(bench) => bench.running.shutdown().await,
        Err(_) => panic!("the bench is still shared"),
    }
}

/// Longer than the gateway's heap trimmer waits after runs end.
const SETTLE: Duration = Duration::from_secs(3);

/// RSS once the gateway has been idle for [`SETTLE`].
async fn settled_rss() -> f64 {
    tokio::time::sleep(SETTLE).await;
    rss_mib()
}

/// Runs `runs` (numbered, each on its own session) with `in_flight` at
/// once, adding each one's create-to-result latency to `latencies`.
async fn load(
    bench: &Arc<Bench>,
    runs: std::ops::Range<usize>,
    in_flight: usize,
    latencies: &Arc<std::sync::Mutex<Vec<f64>>>,
) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(runs.start));
    let mut workers = Vec::new();
    for _ in 0..in_flight {
        let bench = bench.clone();
        let next = next.clone();
        let latencies = latencies.clone();
        let end = runs.end;
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n >= end {
                    return;
                }
                let t = Instant::now();
                let run = bench
                    .call(
                        "runs.create",
                        json!({"input": "count", "sessionKey": format!("c{n}")}),
                    )
                    .await;
                let result = bench
                    .call(
                        "runs.wait",
                        json!({"runId": run["id"], "timeoutMs": 120_000}),
                    )
                    .await;
                assert_eq!(result["status"], "completed", "{result}");
                let mut l = latencies.lock().unwrap();
                l.push(t.elapsed().as_secs_f64() * 1e3);
                if l.len().is_multiple_of(100) {
                    eprintln!("{} runs, RSS {:.1} MiB", l.len(), rss_mib());
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
}

static KINDS: std::sync::Mutex<Vec<(usize, String, u64)>> = std::sync::Mutex::new(Vec::new());

async fn fan_out(subscribers: usize) {
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
    let bench = Arc::new(Bench::start(script, json!({})).await);
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
                Subscriber::Reqwest(Events::new(bench.stream(&path).await))
            } else {
                Subscriber::Raw(RawSse::open(bench.running.addr, &path, &bench.token).await)
            };
            connected.wait().await;
            let mut delays = Vec::new();
            while let Some(event) = events.next().await {
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
    if std::env::var_os("TALON_BENCH_DEBUG").is_some() {
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
    match Arc::try_unwrap(bench) {
        Ok(bench) => bench.running.shutdown().await,
        Err(_) => panic!("the bench is still shared"),
    }
}

/// Two nodes on one PostgreSQL: a run created on node A, seen through
/// node B (its `run.started` on B's SSE stream, then `runs.wait` on B
/// answering its end). Either node may claim it; events and ends another
/// node commits reach B by notification (LISTEN/NOTIFY), the polls being
/// the fallback.
async fn nodes(iterations: usize) {
    let pg = talon_testing::postgres::TestPostgres::shared().unwrap();
    let url = pg.fresh_database().unwrap();
    let script = || Script {
        turns: vec![Turn {
            text: Some("ok".into()),
            ..Turn::default()
        }],
        replay: Replay::PerRun,
        forget_requests: true,
        ..Script::default()
    };
    let a = Bench::start_on(
        script(),
        json!({}),
        Some(Shared {
            url: url.clone(),
            node: "node-a".into(),
        }),
    )
    .await;
    let mut b = Bench::start_on(
        script(),
        json!({}),
        Some(Shared {
            url,
            node: "node-b".into(),
        }),
    )
    .await;
    b.token = a.token.clone();
    let mut stream = Events::new(b.stream("/v1/events?types=run.started").await);
    let (mut started, mut ended) = (Vec::new(), Vec::new());
    for n in 0..iterations + 10 {
        let sent = Instant::now();
        let run = a
            .call(
                "runs.create",
                json!({"input": "go", "sessionKey": format!("s{n}")}),
            )
            .await;
        loop {
            let event = stream.next().await.unwrap();
            if event.run_id.as_deref() == run["id"].as_str() {
                break;
            }
        }
        let seen = sent.elapsed().as_secs_f64() * 1e3;
        let result = b
            .call(
                "runs.wait",
                json!({"runId": run["id"], "timeoutMs": 10_000}),
            )
            .await;
        assert_eq!(result["status"], "completed", "{result}");
        if n >= 10 {
            started.push(seen);
            ended.push(sent.elapsed().as_secs_f64() * 1e3);
        }
    }
    let (s, e) = (sorted(started), sorted(ended));
    println!(
        "| two nodes on PostgreSQL: `runs.create` on A → `run.started` on B's SSE | p50 {:.2} ms | p95 {:.2} ms | max {:.2} ms | n = {} |",
        percentile(&s, 50.0),
        percentile(&s, 95.0),
        s.last().copied().unwrap_or(f64::NAN),
        s.len()
    );
    println!(
        "| two nodes on PostgreSQL: `runs.create` on A → `runs.wait` on B answers `completed` | p50 {:.2} ms | p95 {:.2} ms | max {:.2} ms | n = {} |",
        percentile(&e, 50.0),
        percentile(&e, 95.0),
        e.last().copied().unwrap_or(f64::NAN),
        e.len()
    );
    a.running.shutdown().await;
    b.running.shutdown().await;
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TALON_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "quick");
    let parts = ["create", "codemode", "codemode-mcp", "fanout", "nodes"];
    let chosen: Vec<&str> = parts
        .iter()
        .copied()
        .filter(|p| args.iter().any(|a| a == p))
        .collect();
    let wants = |part: &str| chosen.is_empty() || chosen.contains(&part);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!("| measure | | | | |\n|---|---|---|---|---|");
        if wants("create") {
            create_to_started(if quick { 20 } else { 300 }).await;
        }
        if wants("codemode") {
            let in_flight = std::env::var("TALON_BENCH_IN_FLIGHT")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(50);
            concurrent_code_mode(if quick { 100 } else { 1_000 }, in_flight, false).await;
        }
        if wants("codemode-mcp") {
            // `TALON_BENCH_RUNS`: more runs, to see where memory levels off.
            let total = std::env::var("TALON_BENCH_RUNS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(if quick { 100 } else { 1_000 });
            concurrent_code_mode(total, 50, true).await;
        }
        if wants("fanout") {
            fan_out(if quick { 50 } else { 1_000 }).await;
        }
        if wants("nodes") {
            nodes(if quick { 20 } else { 200 }).await;
        }
    });
}
