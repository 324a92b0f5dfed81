//! The `tracing` layer that turns Talon's spans into OTLP spans while an
//! exporter runs ([`super::EXPORT`]); without one it does nothing.
//!
//! A span's place in its trace comes from, in order: a `traceparent`
//! field (a W3C value: the span is that remote span's child; the gateway
//! records the caller's header on its `request` span and the stored one
//! on a run's), the nearest enclosing span that is being traced, else a new
//! trace, kept at the sample rate. An unsampled parent's children are not
//! kept either. Other fields become attributes; `otel.name`, `otel.kind`
//! (`server`, `client`, `internal`), `otel.status_code` (`error`) and
//! `otel.status_message` set the span's name, kind and status, as
//! `tracing-opentelemetry` reads them.

use std::time::{SystemTime, UNIX_EPOCH};

use talon_protocol::trace::TraceContext;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use super::proto::{Kind, Span, StatusCode, Value};

/// Attributes kept per span.
const MAX_ATTRIBUTES: usize = 64;
/// Bytes kept of a string attribute (and of a name).
const MAX_VALUE: usize = 1024;

/// The layer; see the module documentation.
pub(crate) struct OtlpLayer;

/// The target of the spans that are exported (and never logged).
pub(crate) const TARGET: &str = "talon::trace";

/// Whether a callsite can make an exported span: a [`TARGET`] span while
/// an exporter runs.
pub(crate) fn wanted(meta: &Metadata<'_>) -> bool {
    meta.is_span() && meta.target() == TARGET && super::EXPORT.get().is_some()
}

/// The layer's filter: [`wanted`], with a level hint of `OFF` while no
/// exporter runs and `INFO` (the level of Talon's trace spans) once one
/// does. Without a hint the subscriber's maximum level would be `TRACE`,
/// and with it the `log` crate's: every `log::trace!` in Cranelift's
/// compiler would then be formatted and filtered one by one (a QuickJS
/// compile in a debug build went from about 12 s to 40 s).
pub(crate) struct Wanted;

impl<S> tracing_subscriber::layer::Filter<S> for Wanted {
    fn enabled(&self, meta: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        wanted(meta)
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        // Cached per callsite; `start` rebuilds the cache once it runs.
        if wanted(meta) {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(if super::EXPORT.get().is_some() {
            tracing::level_filters::LevelFilter::INFO
        } else {
            tracing::level_filters::LevelFilter::OFF
        })
    }
}

/// A span being traced, kept in its extensions until it closes.
struct Open {
    span: Span,
    sampled: bool,
}

/// What a span's fields say.
#[derive(Default)]
struct Fields {
    traceparent: Option<String>,
    name: Option<String>,
    kind: Option<Kind>,
    error: Option<bool>,
    status_message: Option<String>,
    attributes: Vec<(String, Value)>,
}

fn clip(mut text: String) -> String {
    if text.len() > MAX_VALUE {
        let mut end = MAX_VALUE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        let text = || match &value {
            Value::Str(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Double(d) => d.to_string(),
        };
        match field.name() {
            "traceparent" => self.traceparent = Some(text()),
            "otel.name" => self.name = Some(clip(text())),
            "otel.kind" => {
                self.kind = match text().to_ascii_lowercase().as_str() {
                    "server" => Some(Kind::Server),
                    "client" => Some(Kind::Client),
                    _ => Some(Kind::Internal),
                }
            }
            "otel.status_code" => self.error = Some(text().eq_ignore_ascii_case("error")),
            "otel.status_message" => self.status_message = Some(clip(text())),
            name if self.attributes.len() < MAX_ATTRIBUTES => {
                let value = match value {
                    Value::Str(s) => Value::Str(clip(s)),
                    other => other,
                };
                match self.attributes.iter_mut().find(|(k, _)| k == name) {
                    Some(slot) => slot.1 = value,
                    None => self.attributes.push((name.to_owned(), value)),
                }
            }
            _ => {}
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::Str(value.to_owned()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::Int(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(
            field,
            i64::try_from(value).map_or(Value::Double(value as f64), Value::Int),
        );
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::Double(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::Str(clip(format!("{value:?}"))));
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Open {
    fn apply(&mut self, fields: Fields) {
        if let Some(name) = fields.name {
            self.span.name = name;
        }
        if let Some(kind) = fields.kind {
            self.span.kind = kind;
        }
        if let Some(error) = fields.error {
            self.span.status = if error {
                StatusCode::Error
            } else {
                StatusCode::Unset
            };
        }
        if let Some(message) = fields.status_message {
            self.span.status_message = message;
        }
        for (key, value) in fields.attributes {
            let attributes = &mut self.span.attributes;
            if let Some(at) = attributes.iter().position(|(k, _)| *k == key) {
                attributes[at].1 = value;
            } else if attributes.len() < MAX_ATTRIBUTES {
                attributes.push((key, value));
            }
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for OtlpLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(export) = super::EXPORT.get() else {
            return;
        };
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let remote = fields.traceparent.as_deref().and_then(TraceContext::parse);
        let enclosing = span.scope().skip(1).find_map(|s| {
            s.extensions()
                .get::<Open>()
                .map(|o| (o.span.trace_id, o.span.span_id, o.sampled))
        });
        let (trace_id, parent, sampled) = match (remote, enclosing) {
            (Some(remote), _) => (remote.trace_id, Some(remote.span_id), remote.sampled),
            (None, Some((trace, parent, sampled))) => (trace, Some(parent), sampled),
            (None, None) => (super::random(), None, export.sample()),
        };
        let span_id = super::random();
        let mut open = Open {
            span: Span {
                trace_id,
                span_id,
                parent_span_id: parent,
                name: attrs.metadata().name().to_owned(),
                kind: Kind::Internal,
                start_unix_nano: now_ns(),
                end_unix_nano: 0,
                attributes: Vec::new(),
                status: StatusCode::Unset,
                status_message: String::new(),
            },
            sampled,
        };
        open.apply(fields);
        span.extensions_mut().insert(open);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(open) = extensions.get_mut::<Open>() {
            let mut fields = Fields::default();
            values.record(&mut fields);
            open.apply(fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(export) = super::EXPORT.get() else {
            return;
        };
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(mut open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        if open.sampled {
            open.span.end_unix_nano = now_ns().max(open.span.start_unix_nano);
            export.send(open.span);
        }
    }
}

/// The context of the nearest traced span around the caller (installed
/// as [`talon_protocol::trace::current`]).
pub(crate) fn current() -> Option<TraceContext> {
    tracing::Span::current()
        .with_subscriber(|(id, dispatch)| {
            let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
            let span = registry.span(id)?;
            span.scope().find_map(|s| {
                s.extensions().get::<Open>().map(|o| TraceContext {
                    trace_id: o.span.trace_id,
                    span_id: o.span.span_id,
                    sampled: o.sampled,
                })
            })
        })
        .flatten()
}
