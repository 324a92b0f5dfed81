//! Request ids on every response and `GET /metrics` as valid Prometheus
//! text.

use std::collections::BTreeMap;

use serde_json::json;
use talon_gateway::tokens;
use talon_protocol::gateway::Scope;
use talon_testing::wait;

use super::TestGateway;

fn request_id(response: &reqwest::Response) -> String {
    response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

fn is_minted(id: &str) -> bool {
    id.len() == 28
        && id.starts_with("req_")
        && id[4..]
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

#[tokio::test]
async fn every_response_carries_the_gateways_own_request_id() {
    let g = TestGateway::start().await;
    // Minted whatever the client sent, on a success, an unknown route, a
    // refused token and a refused host.
    let mut seen = std::collections::BTreeSet::new();
    for (path, host) in [
        ("/healthz", None),
        ("/nowhere", None),
        ("/v1/agents.list", None),
        ("/healthz", Some("evil.example")),
    ] {
        let mut request = g
            .client
            .get(g.url(path))
            .header("x-request-id", "trace-abc.123");
        if let Some(host) = host {
            request = request.header("host", host);
        }
        let id = request_id(&request.send().await.unwrap());
        assert!(is_minted(&id), "{path} {host:?}: {id}");
        assert!(seen.insert(id));
    }
    // Without one, and with hostile ones: minted too, and never echoed.
    let long = "x".repeat(129);
    let hostile: [&[u8]; 5] = [b"", b"has space", long.as_bytes(), b"a\tb", b"caf\xe9"];
    let without = request_id(&g.client.get(g.url("/healthz")).send().await.unwrap());
    assert!(is_minted(&without) && seen.insert(without));
    for hostile in hostile {
        let response = g
            .client
            .get(g.url("/healthz"))
            .header(
                "x-request-id",
                reqwest::header::HeaderValue::from_bytes(hostile).unwrap(),
            )
            .send()
            .await
            .unwrap();
        let id = request_id(&response);
        assert!(
            is_minted(&id) && seen.insert(id.clone()),
            "{hostile:?} gave {id}"
        );
    }
    // A call's answer carries it too, and its run's events the same id,
    // never the client's.
    let response = g
        .client
        .post(g.url("/v1/runs.create"))
        .bearer_auth(&g.admin)
        .header("x-request-id", "call-1")
        .json(&json!({"input": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let id = request_id(&response);
    assert!(is_minted(&id), "{id}");
    let run: serde_json::Value = response.json().await.unwrap();
    let events: serde_json::Value = g
        .client
        .post(g.url("/v1/runs.events"))
        .bearer_auth(&g.admin)
        .json(&json!({"runId": run["id"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&serde_json::Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["requestId"])
        .collect();
    assert!(
        !ids.is_empty() && ids.iter().all(|r| **r == json!(id)),
        "{events}"
    );
}

/// The samples of a scrape, by metric name and labels.
fn scrape(text: &str) -> BTreeMap<String, f64> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let parsed = prometheus_parse::Scrape::parse(lines).unwrap();
    parsed
        .samples
        .into_iter()
        .filter_map(|s| {
            let labels: Vec<String> = {
                let mut l: Vec<_> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                l.sort();
                l
            };
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                // Histograms are checked by their series below.
                prometheus_parse::Value::Histogram(_) | prometheus_parse::Value::Summary(_) => {
                    return None;
                }
            };
            Some((format!("{}{{{}}}", s.metric, labels.join(",")), value))
        })
        .collect()
}

#[tokio::test]
async fn metrics_need_their_scope_and_parse_as_prometheus_text() {
    let g = TestGateway::start().await;
    let now = g.running.store.now_ms();
    let viewer = tokens::create(&g.running.store, None, vec![Scope::SessionRead], None, now)
        .await
        .unwrap();
    let reader = tokens::create(&g.running.store, None, vec![Scope::MetricsRead], None, now)
        .await
        .unwrap();
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(
        status(g.client.get(g.url("/metrics")).send().await.unwrap()),
        401
    );
    let refused = g
        .client
        .get(g.url("/metrics"))
        .bearer_auth(&viewer.secret)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let (created, run) = g
        .call(&g.admin, "runs.create", json!({"input": "hi"}))
        .await;
    assert_eq!(created, 200, "{run}");
    let (waited, result) = g
        .call(
            &g.admin,
            "runs.wait",
            json!({"runId": run["id"], "timeoutMs": 10_000}),
        )
        .await;
    insta::assert_json_snapshot!(
        "metrics_run",
        super::artifacts::sized(talon_testing::redact::redacted(&json!([waited, result])))
    );
    // The run's end is counted once the store has it.
    let text = wait::until_async("the run's end to be counted", wait::DEADLINE, async || {
        let response = g
            .client
            .get(g.url("/metrics"))
            .bearer_auth(&reader.secret)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        let text = response.text().await.unwrap();
        text.contains("talon_runs_finished_total{status=\"completed\"} 1")
            .then_some(text)
    })
    .await;
    let samples = scrape(&text);
    let mut plain: BTreeMap<String, f64> = samples
        .iter()
        .filter(|(name, _)| {
            !name.starts_with("talon_http_requests_total")
                && !name.starts_with("talon_store_errors_total")
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    // Store faults are the process's; other tests share it.
    assert!(samples.contains_key("talon_store_errors_total{}"));
    plain.retain(|name, _| !name.contains("_bucket") && !name.ends_with("_sum{}"));
    // This node, by its id; no node holds a live run now.
    let node = format!("talon_node_info{{node={}}}", g.running.node());
    assert_eq!(plain.remove(&node), Some(1.0), "{text}");
    let expected: BTreeMap<String, f64> = [
        ("talon_approvals_pending{}", 0.0),
        // The appends the gateway waits on: `run.created`, the run's
        // trajectory artifact as it ends, and its end with its terminal
        // event (the run's other events stream through its sink).
        ("talon_event_append_duration_seconds_count{}", 3.0),
        (
            "talon_http_request_duration_seconds_count{}",
            plain_count(&samples),
        ),
        ("talon_queue_depth{}", 0.0),
        ("talon_run_duration_seconds_count{}", 1.0),
        ("talon_runs_created_total{}", 1.0),
        ("talon_runs_finished_total{status=completed}", 1.0),
        ("talon_runs{status=queued}", 0.0),
        ("talon_runs{status=running}", 0.0),
        ("talon_runs{status=waiting}", 0.0),
        ("talon_sse_connections{}", 0.0),
        ("talon_store_up{}", 1.0),
        ("talon_ws_connections{}", 0.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(plain, expected, "{text}");
    // The requests so far, by method and status: the two refusals, the
    // two calls, and every scrape but this one.
    assert_eq!(
        samples["talon_http_requests_total{method=GET,status=401}"],
        1.0
    );
    assert_eq!(
        samples["talon_http_requests_total{method=GET,status=403}"],
        1.0
    );
    assert_eq!(
        samples["talon_http_requests_total{method=POST,status=200}"],
        2.0
    );
    // Histogram buckets are cumulative and end at the count.
    let buckets: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("talon_run_duration_seconds_bucket"))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
    assert_eq!(buckets.last(), Some(&1.0));
}

/// Requests counted by the duration histogram: every one in the
/// requests counter.
fn plain_count(samples: &BTreeMap<String, f64>) -> f64 {
    samples
        .iter()
        .filter(|(k, _)| k.starts_with("talon_http_requests_total"))
        .map(|(_, v)| v)
        .sum()
}

/// Log lines written into a buffer the test reads.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The fields of its `talon::access` lines, durations left out.
    fn access(&self) -> Vec<serde_json::Value> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|l| l["target"] == "talon::access")
            .map(|l| {
                let mut fields = l["fields"].clone();
                fields.as_object_mut().unwrap().remove("duration_ms");
                fields
            })
            .collect()
    }
}

// The default (current-thread) runtime: every task of the gateway runs on
// the test's thread, under its subscriber.
#[tokio::test]
async fn each_websocket_call_logs_an_access_line_with_the_connections_request_id() {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_env_filter("talon::access=info")
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let g = TestGateway::start().await;
    let mut request = format!("ws://{}/v1/ws", g.running.addr)
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    headers.insert(
        "authorization",
        format!("Bearer {}", g.admin).parse().unwrap(),
    );
    headers.insert("x-request-id", "socket-7".parse().unwrap());
    let (mut socket, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    let connection = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(is_minted(&connection), "{connection}");
    for (id, method, params) in [
        (1, "agents.list", json!({})),
        (2, "no.such", json!({})),
        (3, "events.unsubscribe", json!({"subscriptionId": "sub_9"})),
    ] {
        socket
            .send(Message::Text(
                json!({"type": "req", "id": id, "method": method, "params": params})
                    .to_string()
                    .into(),
            ))
            .await
            .unwrap();
        loop {
            let Some(Ok(Message::Text(text))) = socket.next().await else {
                panic!("the socket ended");
            };
            let frame: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
            if frame["id"] == id {
                break;
            }
        }
    }
    // The answer goes out after the line is logged.
    let access = captured.access();
    let token = access[0]["token"].as_str().unwrap().to_owned();
    assert_eq!(
        access,
        [
            json!({"message": "request", "transport": "http", "method": "GET",
                   "path": "/v1/ws", "status": 101, "token": token,
                   "token_name": "admin", "request_id": connection,
                   "client_request_id": "socket-7"}),
            json!({"message": "call", "transport": "ws", "method": "agents.list",
                   "status": "ok", "token": token, "token_name": "admin",
                   "request_id": connection, "frame": "1"}),
            json!({"message": "call", "transport": "ws", "method": "no.such",
                   "status": "not_found", "token": token, "token_name": "admin",
                   "request_id": connection, "frame": "2"}),
            json!({"message": "call", "transport": "ws", "method": "events.unsubscribe",
                   "status": "not_found", "token": token, "token_name": "admin",
                   "request_id": connection, "frame": "3"}),
        ]
    );
}
