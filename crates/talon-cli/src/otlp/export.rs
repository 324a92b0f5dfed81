//! The exporter task: batches finished spans (up to [`BATCH`], or what
//! came within the schedule delay) and posts each batch to the collector
//! as one `ExportTraceServiceRequest`. A failed post is logged (once per
//! run of failures, with the count dropped) and its batch dropped: traces
//! are diagnostics, and a collector that is down must not grow the
//! gateway's memory.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::Settings;
use super::proto::{self, Span, Value};

/// Spans in one post, at most.
pub(crate) const BATCH: usize = 512;
/// A post's deadline.
const TIMEOUT: Duration = Duration::from_secs(10);

struct Poster {
    client: reqwest::Client,
    url: String,
    headers: reqwest::header::HeaderMap,
    resource: Vec<(String, Value)>,
    /// Whether the last post failed (the next failure is not logged).
    failing: bool,
}

impl Poster {
    async fn post(&mut self, spans: &[Span]) {
        if spans.is_empty() {
            return;
        }
        let body =
            proto::export_request(&self.resource, ("talon", env!("CARGO_PKG_VERSION")), spans);
        let outcome = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .timeout(TIMEOUT)
            .body(body)
            .send()
            .await;
        let failure = match outcome {
            Ok(response) if response.status().is_success() => None,
            Ok(response) => Some(format!("the collector answered {}", response.status())),
            Err(e) => Some(format!("is the collector running at {}? {e}", self.url)),
        };
        match failure {
            None => {
                if self.failing {
                    tracing::info!(target: "talon::otlp", url = %self.url, "exporting traces again");
                }
                self.failing = false;
            }
            Some(why) => {
                if !self.failing {
                    tracing::warn!(
                        target: "talon::otlp",
                        url = %self.url,
                        spans = spans.len(),
                        dropped_before = super::dropped(),
                        "could not export traces ({why}); dropping them until it works"
                    );
                }
                self.failing = true;
            }
        }
    }
}

/// Runs until the span queue closes.
pub(crate) async fn run(
    settings: Settings,
    mut spans: mpsc::Receiver<Span>,
    mut flushes: mpsc::Receiver<oneshot::Sender<()>>,
) {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &settings.headers {
        // `settings` checked them.
        if let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
            reqwest::header::HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    let mut poster = Poster {
        client: reqwest::Client::new(),
        url: settings.url.clone(),
        headers,
        resource: settings
            .resource
            .iter()
            .map(|(k, v)| (k.clone(), Value::Str(v.clone())))
            .collect(),
        failing: false,
    };
    let mut batch: Vec<Span> = Vec::with_capacity(BATCH);
    loop {
        // Wait for a first span (or a flush), then gather for the delay.
        tokio::select! {
            got = spans.recv() => match got {
                Some(span) => batch.push(span),
                None => break,
            },
            Some(done) = flushes.recv() => {
                while let Ok(span) = spans.try_recv() {
                    batch.push(span);
                    if batch.len() >= BATCH {
                        poster.post(&batch).await;
                        batch.clear();
                    }
                }
                poster.post(&batch).await;
                batch.clear();
                let _ = done.send(());
                continue;
            }
        }
        let deadline = tokio::time::Instant::now() + settings.delay;
        while batch.len() < BATCH {
            match tokio::time::timeout_at(deadline, spans.recv()).await {
                Ok(Some(span)) => batch.push(span),
                Ok(None) | Err(_) => break,
            }
        }
        poster.post(&batch).await;
        batch.clear();
    }
    poster.post(&batch).await;
}
