//! OpenTelemetry traces over OTLP/HTTP (protobuf), off by default.
//!
//! On when `diagnostics.otel.enabled` is true, or when the file says
//! nothing and `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; off whatever else says
//! when `diagnostics.enabled` or `diagnostics.otel.enabled`/`traces` is
//! false, `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. The
//! file's keys win over the environment's: endpoint (`/v1/traces` is
//! added to a base URL; the `_TRACES_` variable is used as it is),
//! headers (`OTEL_EXPORTER_OTLP_HEADERS`, `k=v,k2=v2`, values
//! percent-decoded), service name (`OTEL_SERVICE_NAME`, else `talon`) and
//! `OTEL_RESOURCE_ATTRIBUTES`. A protocol other than `http/protobuf` is a
//! config error.
//!
//! The spans are the ones Talon's crates open ([`layer`]): `request` per
//! HTTP request or WebSocket call, `run` per agent run, `model` per model
//! call, `tool` per tool call, and a Code Mode cell's nested calls as
//! children of the `exec` call.
//!
//! Everything past the layer is the OpenTelemetry crates': the SDK's
//! tracer provider (its parent-based ratio sampler, random ids, at most
//! [`layer::MAX_ATTRIBUTES`] attributes a span), its batch span processor
//! (a queue of at most [`QUEUE`] spans, more dropped and counted, the
//! count logged by the SDK at the first drop and at shutdown; batches of
//! [`BATCH`] or what came within `OTEL_BSP_SCHEDULE_DELAY`, default 1 s)
//! and `opentelemetry-otlp`'s HTTP/protobuf exporter, posting with the
//! workspace's `reqwest` ([`export`]). Shutdown flushes what is queued,
//! waiting at most [`SHUTDOWN_FLUSH`].

use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracer, SdkTracerProvider,
};
use talon_config::{OTLP_PROTOCOL, OtelSettings};

mod export;
pub(crate) mod layer;

/// Spans waiting to be sent, at most.
pub(crate) const QUEUE: usize = 8192;

/// Spans in one post, at most.
pub(crate) const BATCH: usize = 512;

/// How long shutdown waits for the last spans to go out.
pub(crate) const SHUTDOWN_FLUSH: Duration = Duration::from_secs(5);

/// The running exporter's tracer.
pub(crate) static EXPORT: OnceLock<Export> = OnceLock::new();

/// Where spans are made.
pub(crate) struct Export {
    tracer: SdkTracer,
}

/// What the exporter is told.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    /// The URL spans are posted to.
    pub url: String,
    /// Headers sent with every post.
    pub headers: Vec<(String, String)>,
    /// Resource attributes (`service.name` first).
    pub resource: Vec<(String, String)>,
    /// The share of new traces kept.
    pub sample_rate: f64,
    /// How long a span may wait for its batch.
    pub delay: Duration,
}

/// Reads the environment the way [`settings`] does.
pub(crate) trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process's environment.
pub(crate) struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k.trim()), decode(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// Percent-decoding (`%20` → space); malformed escapes are kept as they
/// are.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The exporter's settings from the file's `diagnostics.otel` and the
/// environment; `Ok(None)`: traces are off.
pub(crate) fn settings(file: &OtelSettings, env: &dyn Env) -> Result<Option<Settings>, String> {
    let truthy = |name: &str| {
        env.var(name)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    };
    let env_url = env.var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let env_base = env.var("OTEL_EXPORTER_OTLP_ENDPOINT");
    let on = file
        .enabled
        .unwrap_or(env_url.is_some() || env_base.is_some());
    if !on
        || file.traces == Some(false)
        || truthy("OTEL_SDK_DISABLED")
        || env
            .var("OTEL_TRACES_EXPORTER")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
    {
        return Ok(None);
    }
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(protocol) = env.var(name)
            && protocol.trim() != OTLP_PROTOCOL
        {
            return Err(format!(
                "{name}={protocol:?}: Talon exports OTLP as {OTLP_PROTOCOL:?} (to the collector's HTTP port, 4318); set it to {OTLP_PROTOCOL} or unset it"
            ));
        }
    }
    let traces = |base: &str| format!("{}/v1/traces", base.trim_end_matches('/'));
    let url = match (&file.endpoint, env_url, env_base) {
        (Some(base), _, _) => traces(base),
        (None, Some(url), _) => url,
        (None, None, Some(base)) => traces(&base),
        (None, None, None) => traces("http://localhost:4318"),
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "the OTLP endpoint {url:?} is not an http:// or https:// URL"
        ));
    }
    let mut headers = env
        .var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        .or_else(|| env.var("OTEL_EXPORTER_OTLP_HEADERS"))
        .map(|h| pairs(&h))
        .unwrap_or_default();
    for (name, value) in &file.headers {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name.clone(), value.clone()));
    }
    for (name, value) in &headers {
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
            || reqwest::header::HeaderValue::from_str(value).is_err()
        {
            return Err(format!(
                "the OTLP header {name:?} is not a valid HTTP header"
            ));
        }
    }
    let service = file
        .service_name
        .clone()
        .or_else(|| env.var("OTEL_SERVICE_NAME"))
        .unwrap_or_else(|| "talon".into());
    let mut resource = vec![
        ("service.name".to_owned(), service),
        (
            "service.version".to_owned(),
            env!("CARGO_PKG_VERSION").to_owned(),
        ),
    ];
    for (key, value) in env
        .var("OTEL_RESOURCE_ATTRIBUTES")
        .map(|a| pairs(&a))
        .unwrap_or_default()
    {
        if !resource.iter().any(|(k, _)| *k == key) {
            resource.push((key, value));
        }
    }
    let delay = env
        .var("OTEL_BSP_SCHEDULE_DELAY")
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(1), |ms| {
            Duration::from_millis(ms.clamp(1, 60_000))
        });
    Ok(Some(Settings {
        url,
        headers,
        resource,
        sample_rate: file.sample_rate.unwrap_or(1.0),
        delay,
    }))
}

/// The SDK's tracer provider for `settings`, exporting in batches.
fn provider(settings: &Settings) -> Result<SdkTracerProvider, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(settings.url.clone())
        .with_timeout(export::TIMEOUT)
        .with_http_client(export::Client::new(&settings.headers)?)
        .build()
        .map_err(|e| format!("the OTLP exporter: {e}"))?;
    let exporter = export::Logged {
        inner: exporter,
        url: settings.url.clone(),
        failing: AtomicBool::new(false),
    };
    let batches = BatchConfigBuilder::default()
        .with_max_queue_size(QUEUE)
        .with_max_export_batch_size(BATCH)
        .with_scheduled_delay(settings.delay)
        .build();
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(batches)
        .build();
    let ratio = if settings.sample_rate >= 1.0 {
        Sampler::AlwaysOn
    } else {
        Sampler::TraceIdRatioBased(settings.sample_rate.max(0.0))
    };
    let resource = Resource::builder_empty()
        .with_attributes(
            settings
                .resource
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
        )
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(Sampler::ParentBased(Box::new(ratio)))
        .with_max_attributes_per_span(layer::MAX_ATTRIBUTES as u32)
        .with_resource(resource)
        .build())
}

/// Starts exporting (inside a Tokio runtime); a second start is ignored,
/// and an exporter that cannot be built is logged and left off. The
/// handle flushes what is queued at shutdown.
pub(crate) fn start(settings: Settings) -> Option<Flush> {
    if EXPORT.get().is_some() {
        return None;
    }
    let provider = match provider(&settings) {
        Ok(provider) => provider,
        Err(error) => {
            tracing::warn!(target: "talon::otlp", "traces are not exported: {error}");
            return None;
        }
    };
    let scope = opentelemetry::InstrumentationScope::builder("talon")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let tracer = provider.tracer_with_scope(scope);
    if EXPORT.set(Export { tracer }).is_err() {
        return None;
    }
    // The layer's filter is cached per callsite ([`layer::wanted`] said no
    // to any span seen before this): ask again.
    tracing::callsite::rebuild_interest_cache();
    talon_protocol::trace::install(layer::current);
    tracing::info!(
        target: "talon::otlp",
        url = %settings.url,
        sample_rate = settings.sample_rate,
        "exporting traces over OTLP/HTTP"
    );
    Some(Flush(provider))
}

/// Sends what is queued when the process stops.
pub(crate) struct Flush(SdkTracerProvider);

impl Flush {
    /// Sends what is queued and stops the exporter; waits at most
    /// `limit`. The SDK blocks its caller, so it runs off the runtime
    /// (whose threads carry the last posts).
    pub(crate) async fn flush(&self, limit: Duration) {
        let provider = self.0.clone();
        let stop = tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(limit));
        let _ = tokio::time::timeout(limit + Duration::from_millis(100), stop).await;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    struct Vars(HashMap<&'static str, &'static str>);

    impl Env for Vars {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|v| (*v).to_owned())
        }
    }

    fn env(vars: &[(&'static str, &'static str)]) -> Vars {
        Vars(vars.iter().copied().collect())
    }

    #[test]
    fn off_unless_asked_and_the_file_wins_over_the_environment() {
        let none = OtelSettings::default();
        assert_eq!(settings(&none, &env(&[])), Ok(None));
        let on = settings(
            &none,
            &env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x-b=2"),
                ("OTEL_SERVICE_NAME", "svc"),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "deployment.environment=prod,service.name=no",
                ),
                ("OTEL_BSP_SCHEDULE_DELAY", "200"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            on,
            Settings {
                url: "http://collector:4318/v1/traces".into(),
                headers: vec![("api-key".into(), "a b".into()), ("x-b".into(), "2".into())],
                resource: vec![
                    ("service.name".into(), "svc".into()),
                    ("service.version".into(), env!("CARGO_PKG_VERSION").into()),
                    ("deployment.environment".into(), "prod".into()),
                ],
                sample_rate: 1.0,
                delay: Duration::from_millis(200),
            }
        );
        let file = OtelSettings {
            enabled: Some(true),
            endpoint: Some("https://file:4318".into()),
            headers: [("API-KEY".to_owned(), "f".to_owned())].into(),
            sample_rate: Some(0.25),
            ..OtelSettings::default()
        };
        let both = settings(
            &file,
            &env(&[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://env/v1/traces"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=e"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (both.url.as_str(), both.headers, both.sample_rate),
            (
                "https://file:4318/v1/traces",
                vec![("API-KEY".into(), "f".into())],
                0.25
            )
        );
        let default_url = settings(&file_on(), &env(&[])).unwrap().unwrap().url;
        assert_eq!(default_url, "http://localhost:4318/v1/traces");
    }

    fn file_on() -> OtelSettings {
        OtelSettings {
            enabled: Some(true),
            ..OtelSettings::default()
        }
    }

    #[test]
    fn switches_turn_it_off_and_other_protocols_are_refused() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert_eq!(settings(&file_on(), &env(&[endpoint, off])), Ok(None));
        }
        let disabled = OtelSettings {
            enabled: Some(false),
            ..OtelSettings::default()
        };
        assert_eq!(settings(&disabled, &env(&[endpoint])), Ok(None));
        let no_traces = OtelSettings {
            traces: Some(false),
            ..file_on()
        };
        assert_eq!(settings(&no_traces, &env(&[])), Ok(None));
        assert_eq!(
            settings(&file_on(), &env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")])),
            Err("OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\": Talon exports OTLP as \"http/protobuf\" (to the collector's HTTP port, 4318); set it to http/protobuf or unset it".into())
        );
        assert_eq!(
            settings(
                &file_on(),
                &env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "c:4318")])
            ),
            Err("the OTLP endpoint \"c:4318\" is not an http:// or https:// URL".into())
        );
        assert_eq!(
            settings(
                &file_on(),
                &env(&[("OTEL_EXPORTER_OTLP_HEADERS", "a=b\nc")])
            ),
            Err("the OTLP header \"a\" is not a valid HTTP header".into())
        );
    }
}
