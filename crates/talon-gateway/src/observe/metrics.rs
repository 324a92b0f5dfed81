//! The gateway's metrics, rendered as Prometheus text (exposition format
//! 0.0.4) and served at `GET /metrics` ([`super::scrape`]) to a token
//! holding `metrics.read` (`admin` holds it).
//!
//! Counted by this node as it works: HTTP requests by method and status
//! and their duration, WebSocket calls by outcome, open SSE streams and
//! WebSocket connections, runs created, runs ended by status and their
//! duration, the latency of the event appends the gateway waits on, store
//! faults. Read from the store at each scrape: runs waiting in the queue
//! and approvals pending (every node's), and this node's running runs and
//! runs waiting on a person.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use talon_protocol::gateway::ErrorCode;

/// Store faults (the store could not be reached or could not write), in
/// this process.
static STORE_ERRORS: AtomicU64 = AtomicU64::new(0);

/// Counts one store fault.
pub(crate) fn store_error() {
    STORE_ERRORS.fetch_add(1, Ordering::Relaxed);
}

/// Upper bounds (seconds) of the latency histograms.
const LATENCY: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];
/// Upper bounds (seconds) of the run duration histogram.
const RUN: [f64; 10] = [0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0];

/// A histogram with fixed bounds.
#[derive(Debug)]
struct Histogram {
    bounds: &'static [f64],
    /// Observations at or under each bound (not cumulative), then above
    /// the last.
    buckets: Vec<AtomicU64>,
    sum_micros: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
        }
    }

    fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let at = self
            .bounds
            .iter()
            .position(|&bound| seconds <= bound)
            .unwrap_or(self.bounds.len());
        self.buckets[at].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        header(out, name, "histogram", help);
        let mut seen = 0;
        for (bound, count) in self.bounds.iter().zip(&self.buckets) {
            seen += count.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {seen}");
        }
        if let Some(last) = self.buckets.last() {
            seen += last.load(Ordering::Relaxed);
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {seen}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}");
        let _ = writeln!(out, "{name}_count {seen}");
    }
}

/// What the node counts (shared by the HTTP layer and the run engine).
#[derive(Debug)]
pub(crate) struct Metrics {
    /// By HTTP method and status.
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    request_seconds: Histogram,
    /// By outcome: `ok` or the error's code.
    ws_calls: Mutex<BTreeMap<&'static str, u64>>,
    sse_open: AtomicI64,
    ws_open: AtomicI64,
    runs_created: AtomicU64,
    /// By terminal status.
    runs_ended: Mutex<BTreeMap<&'static str, u64>>,
    /// What the runs this node ended cost, by agent, in billionths of a
    /// US dollar.
    cost_nano_usd: Mutex<BTreeMap<String, u64>>,
    run_seconds: Histogram,
    append_seconds: Histogram,
    /// Counts streams and sockets as they close (the heap trimmer
    /// follows it: what a closed stream held is returned).
    closed: tokio::sync::watch::Sender<u64>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: Mutex::default(),
            request_seconds: Histogram::new(&LATENCY),
            ws_calls: Mutex::default(),
            sse_open: AtomicI64::new(0),
            ws_open: AtomicI64::new(0),
            runs_created: AtomicU64::new(0),
            runs_ended: Mutex::default(),
            cost_nano_usd: Mutex::default(),
            run_seconds: Histogram::new(&RUN),
            append_seconds: Histogram::new(&LATENCY),
            closed: tokio::sync::watch::Sender::new(0),
        }
    }
}

/// What kind of connection an [`Open`] counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Connection {
    /// A Server-Sent Events stream.
    Sse,
    /// A WebSocket.
    WebSocket,
}

/// Counts an open connection while it lives.
#[derive(Debug)]
pub(crate) struct Open {
    metrics: Arc<Metrics>,
    kind: Connection,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.metrics
            .gauge(self.kind)
            .fetch_sub(1, Ordering::Relaxed);
        self.metrics.closed.send_modify(|n| *n += 1);
    }
}

fn bump<K: Ord>(map: &Mutex<BTreeMap<K, u64>>, key: K) {
    let mut map = map
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *map.entry(key).or_default() += 1;
}

impl Metrics {
    fn gauge(&self, kind: Connection) -> &AtomicI64 {
        match kind {
            Connection::Sse => &self.sse_open,
            Connection::WebSocket => &self.ws_open,
        }
    }

    /// Counts a connection until the returned guard drops.
    /// Bumped as each stream or socket closes.
    pub(crate) fn closed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.closed.subscribe()
    }

    pub(crate) fn open(self: &Arc<Self>, kind: Connection) -> Open {
        self.gauge(kind).fetch_add(1, Ordering::Relaxed);
        Open {
            metrics: self.clone(),
            kind,
        }
    }

    /// One HTTP request answered.
    pub(crate) fn request(&self, method: &axum::http::Method, status: u16, took: Duration) {
        let method = match method.as_str() {
            "GET" => "GET",
            "POST" => "POST",
            "HEAD" => "HEAD",
            "OPTIONS" => "OPTIONS",
            "PUT" => "PUT",
            "DELETE" => "DELETE",
            "PATCH" => "PATCH",
            _ => "other",
        };
        bump(&self.requests, (method, status));
        self.request_seconds.observe(took);
    }

    /// One WebSocket call answered, `ok` or with `code`.
    pub(crate) fn ws_call(&self, code: Option<ErrorCode>) {
        bump(&self.ws_calls, code.map_or("ok", ErrorCode::as_str));
    }

    /// A run accepted.
    pub(crate) fn run_created(&self) {
        self.runs_created.fetch_add(1, Ordering::Relaxed);
    }

    /// A run of `agent` ended with `status` after `took`, having cost
    /// `cost_usd` (when its model's prices are known).
    pub(crate) fn run_ended(
        &self,
        status: &'static str,
        took: Duration,
        agent: &str,
        cost_usd: Option<f64>,
    ) {
        bump(&self.runs_ended, status);
        self.run_seconds.observe(took);
        if let Some(usd) = cost_usd.filter(|usd| usd.is_finite() && *usd > 0.0) {
            let mut costs = locked(&self.cost_nano_usd);
            let total = costs.entry(agent.to_owned()).or_default();
            *total = total.saturating_add((usd * 1e9).round() as u64);
        }
    }

    /// An event append the gateway waited on took `took`.
    pub(crate) fn appended(&self, took: Duration) {
        self.append_seconds.observe(took);
    }

    /// The text exposition of the counted metrics and of `sampled`.
    pub(crate) fn render(&self, sampled: &Sampled) -> String {
        let mut out = String::with_capacity(4096);
        header(
            &mut out,
            "talon_http_requests_total",
            "counter",
            "HTTP requests answered, by method and status.",
        );
        for ((method, status), n) in locked(&self.requests).iter() {
            let _ = writeln!(
                out,
                "talon_http_requests_total{{method=\"{method}\",status=\"{status}\"}} {n}"
            );
        }
        self.request_seconds.render(
            &mut out,
            "talon_http_request_duration_seconds",
            "Time from a request's arrival to its response head.",
        );
        header(
            &mut out,
            "talon_ws_calls_total",
            "counter",
            "WebSocket calls answered, by outcome (ok or the error code).",
        );
        for (outcome, n) in locked(&self.ws_calls).iter() {
            let _ = writeln!(out, "talon_ws_calls_total{{outcome=\"{outcome}\"}} {n}");
        }
        gauge(
            &mut out,
            "talon_sse_connections",
            "Open Server-Sent Events streams.",
            self.sse_open.load(Ordering::Relaxed),
        );
        gauge(
            &mut out,
            "talon_ws_connections",
            "Open WebSocket connections.",
            self.ws_open.load(Ordering::Relaxed),
        );
        header(
            &mut out,
            "talon_runs_created_total",
            "counter",
            "Runs this node accepted.",
        );
        let created = self.runs_created.load(Ordering::Relaxed);
        let _ = writeln!(out, "talon_runs_created_total {created}");
        header(
            &mut out,
            "talon_runs_finished_total",
            "counter",
            "Runs this node ended, by status.",
        );
        for (status, n) in locked(&self.runs_ended).iter() {
            let _ = writeln!(out, "talon_runs_finished_total{{status=\"{status}\"}} {n}");
        }
        header(
            &mut out,
            "talon_model_cost_usd_total",
            "counter",
            "What the runs this node ended cost in US dollars, by agent, priced by their models' `cost` (runs without prices count nothing).",
        );
        for (agent, nano) in locked(&self.cost_nano_usd).iter() {
            let _ = writeln!(
                out,
                "talon_model_cost_usd_total{{agent=\"{}\"}} {}",
                label(agent),
                *nano as f64 / 1e9
            );
        }
        self.run_seconds.render(
            &mut out,
            "talon_run_duration_seconds",
            "Time from a run's creation to its end, of the runs this node ended.",
        );
        self.append_seconds.render(
            &mut out,
            "talon_event_append_duration_seconds",
            "Time until an event append the gateway waits on is durable.",
        );
        header(
            &mut out,
            "talon_store_errors_total",
            "counter",
            "Store faults (unreachable, disk full, read-only, closed) seen by this process.",
        );
        let errors = STORE_ERRORS.load(Ordering::Relaxed);
        let _ = writeln!(out, "talon_store_errors_total {errors}");
        header(
            &mut out,
            "talon_runs",
            "gauge",
            "Runs by status: queued in the store (every node's), running and waiting on a person on this node.",
        );
        for (status, n) in [
            ("queued", sampled.queued),
            ("running", sampled.running),
            ("waiting", sampled.waiting),
        ] {
            let _ = writeln!(out, "talon_runs{{status=\"{status}\"}} {n}");
        }
        gauge(
            &mut out,
            "talon_queue_depth",
            "Runs waiting in the store to be claimed (every node's).",
            sampled.queued as i64,
        );
        gauge(
            &mut out,
            "talon_approvals_pending",
            "Approvals waiting for an answer (every node's).",
            sampled.approvals as i64,
        );
        gauge(
            &mut out,
            "talon_store_up",
            "1 while the store can write, else 0.",
            i64::from(sampled.store_up),
        );
        header(
            &mut out,
            "talon_node_info",
            "gauge",
            "This node, by its id.",
        );
        let _ = writeln!(
            out,
            "talon_node_info{{node=\"{}\"}} 1",
            label(&sampled.node)
        );
        header(
            &mut out,
            "talon_node_runs",
            "gauge",
            "Live runs each node holds a lease on (every node's).",
        );
        for lease in &sampled.leases {
            let _ = writeln!(
                out,
                "talon_node_runs{{node=\"{}\"}} {}",
                label(&lease.node),
                lease.runs
            );
        }
        header(
            &mut out,
            "talon_node_lease_seconds",
            "gauge",
            "Seconds until the earliest lease of each node's runs lapses; below 0, another node takes them back.",
        );
        for lease in &sampled.leases {
            if let Some(until) = lease.lease_until {
                let left = (until as f64 - sampled.now as f64) / 1000.0;
                let _ = writeln!(
                    out,
                    "talon_node_lease_seconds{{node=\"{}\"}} {left:.3}",
                    label(&lease.node)
                );
            }
        }
        out
    }
}

fn locked<K>(map: &Mutex<BTreeMap<K, u64>>) -> std::sync::MutexGuard<'_, BTreeMap<K, u64>> {
    map.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A label value as the text format writes it: `\\`, `"` and a line
/// break escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn gauge(out: &mut String, name: &str, help: &str, value: i64) {
    header(out, name, "gauge", help);
    let _ = writeln!(out, "{name} {value}");
}

/// What a scrape reads at its time.
#[derive(Debug, Default, Clone)]
pub(crate) struct Sampled {
    /// Runs queued in the store.
    pub queued: usize,
    /// Runs this node executes.
    pub running: usize,
    /// Runs of this node waiting on a person.
    pub waiting: usize,
    /// Approvals pending.
    pub approvals: usize,
    /// Whether the store can write.
    pub store_up: bool,
    /// This node's id.
    pub node: String,
    /// The nodes holding live runs, and their leases.
    pub leases: Vec<talon_store::NodeLeases>,
    /// When it was read (epoch ms).
    pub now: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative() {
        let h = Histogram::new(&[0.01, 0.1]);
        h.observe(Duration::from_millis(5));
        h.observe(Duration::from_millis(50));
        h.observe(Duration::from_secs(2));
        let mut out = String::new();
        h.render(&mut out, "x", "help");
        assert_eq!(
            out,
            "# HELP x help\n# TYPE x histogram\nx_bucket{le=\"0.01\"} 1\nx_bucket{le=\"0.1\"} 2\n\
             x_bucket{le=\"+Inf\"} 3\nx_sum 2.055\nx_count 3\n"
        );
    }
}
