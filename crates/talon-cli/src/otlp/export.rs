//! The two small pieces around `opentelemetry-otlp`'s span exporter:
//!
//! - [`Client`]: its HTTP client, the workspace's `reqwest` (native TLS,
//!   no second TLS stack) driven on the gateway's Tokio runtime. The
//!   SDK's batch processor exports from a thread of its own, outside any
//!   runtime, where an async `reqwest` call cannot run by itself; the
//!   client hands each post to the runtime and waits for it. It also
//!   sets the configured headers on each post, so the file's win over
//!   `OTEL_EXPORTER_OTLP_HEADERS` (which the OTLP builder reads itself).
//! - [`Logged`]: the exporter wrapped so a failed post is logged once per
//!   run of failures ("could not export traces …"), and its batch
//!   dropped: traces are diagnostics, and a collector that is down must
//!   not grow the gateway's memory.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// A post's deadline.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a collector's answer read (an OTLP answer is a few bytes).
const MAX_ANSWER: usize = 1 << 20;

/// `reqwest` on a Tokio runtime, with the configured headers.
#[derive(Debug)]
pub(crate) struct Client {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    headers: reqwest::header::HeaderMap,
}

impl Client {
    /// A client posting on the current runtime (call inside one).
    pub(crate) fn new(headers: &[(String, String)]) -> Result<Self, String> {
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes());
            let value = reqwest::header::HeaderValue::from_str(value);
            // `settings` checked them.
            if let (Ok(name), Ok(value)) = (name, value) {
                map.insert(name, value);
            }
        }
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| format!("the OTLP HTTP client: {e}"))?;
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| format!("the OTLP exporter needs a Tokio runtime: {e}"))?;
        Ok(Self {
            client,
            runtime,
            headers: map,
        })
    }
}

impl Client {
    async fn post(
        client: reqwest::Client,
        request: reqwest::Request,
    ) -> Result<Response<Bytes>, HttpError> {
        let mut response = client.execute(request).await?;
        let mut answer = Response::builder().status(response.status());
        if let Some(headers) = answer.headers_mut() {
            *headers = std::mem::take(response.headers_mut());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(format!("the collector's answer exceeds {MAX_ANSWER} bytes").into());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(answer.body(Bytes::from(body))?)
    }
}

impl HttpClient for Client {
    fn send_bytes<'a, 'b>(
        &'a self,
        mut request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        for (name, value) in &self.headers {
            request.headers_mut().insert(name, value.clone());
        }
        let client = self.client.clone();
        let runtime = self.runtime.clone();
        Box::pin(async move {
            let request = reqwest::Request::try_from(request)?;
            match runtime.spawn(Self::post(client, request)).await {
                Ok(result) => result,
                Err(e) => Err(e.into()),
            }
        })
    }
}

/// An exporter whose failures are logged once per run of failures.
#[derive(Debug)]
pub(crate) struct Logged<E> {
    pub inner: E,
    /// Where spans go, for the log.
    pub url: String,
    /// Whether the last export failed (the next failure is not logged).
    pub failing: AtomicBool,
}

impl<E: SpanExporter> SpanExporter for Logged<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!(target: "talon::otlp", url = %self.url, "exporting traces again");
                }
            }
            Err(error) => {
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        target: "talon::otlp",
                        url = %self.url,
                        spans,
                        "could not export traces (is the collector running at {}? {error}); dropping them until it works",
                        self.url
                    );
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};

    use super::*;

    /// One request on 127.0.0.1: its head, lowercased; answered 200.
    fn answer_once() -> (String, std::thread::JoinHandle<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim_end().is_empty() {
                    break;
                }
                let line = line.to_ascii_lowercase();
                if let Some(value) = line.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let mut stream = stream;
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                .unwrap();
            head
        });
        (url, server)
    }

    #[test]
    fn posts_from_outside_the_runtime_with_the_configured_headers() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let client = runtime
            .block_on(async { Client::new(&[("api-key".into(), "from-file".into())]) })
            .unwrap();
        let (url, server) = answer_once();
        let mut request = Request::post(&url)
            .body(Bytes::from_static(b"spans"))
            .unwrap();
        // What the OTLP builder puts from OTEL_EXPORTER_OTLP_HEADERS.
        request
            .headers_mut()
            .insert("api-key", "from-env".parse().unwrap());
        // The SDK's batch thread is no runtime thread.
        let answer =
            std::thread::spawn(move || futures::executor::block_on(client.send_bytes(request)))
                .join()
                .unwrap()
                .unwrap();
        assert_eq!(
            (answer.status().as_u16(), answer.body().as_ref()),
            (200, &b"ok"[..])
        );
        let head = server.join().unwrap();
        assert!(head.contains("api-key: from-file\r\n"), "{head}");
        assert!(!head.contains("from-env"), "{head}");
    }
}
