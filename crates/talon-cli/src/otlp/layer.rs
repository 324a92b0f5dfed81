//! The `tracing` layer that turns Talon's spans into OpenTelemetry spans
//! (the SDK's, through `opentelemetry`'s `Tracer`) while an exporter runs
//! ([`super::EXPORT`]); without one it does nothing.
//!
//! A span's place in its trace comes from, in order: a `traceparent`
//! field (a W3C value: the span is that remote span's child; the gateway
//! records the caller's header on its `request` span and the stored one
//! on a run's), the nearest enclosing span that is being traced, else a new
//! trace, kept at the sample rate. An unsampled parent's children are not
//! kept either. Other fields become attributes; `otel.name`, `otel.kind`
//! (`server`, `client`, `internal`), `otel.status_code` (`error`) and
//! `otel.status_message` set the span's name, kind and status, as
//! `tracing-opentelemetry` reads them. Sampling is the SDK's (a parent's
//! decision, else the sample rate); ids are the SDK's.
//!
//! Hand-written rather than `tracing-opentelemetry`: that crate takes a
//! remote parent only through `OpenTelemetrySpanExt::set_parent` on the
//! span's handle, where the span is made (talon-gateway, which must not
//! depend on the exporter), not from a `traceparent` field; it needs its
//! tracer when the subscriber is installed, before the config is read
//! (and a `reload` layer hides it from `OpenTelemetrySpanExt`); and it
//! sets a recorded field again as a second attribute of the same key.
//! What is left here is reading fields and choosing the parent.

use std::borrow::Cow;
use std::time::SystemTime;

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId, TraceState,
    Tracer as _,
};
use opentelemetry::{Context as OtelContext, KeyValue, Value};
use talon_protocol::trace::TraceContext;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// Attributes kept per span.
pub(crate) const MAX_ATTRIBUTES: usize = 64;
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

/// Whether a log line is shown, as far as the OpenTelemetry crates'
/// events go: only the batch processor's dropped-span warnings (the
/// first drop, and the count at shutdown); the exporter's failures are
/// logged by [`super::export::Logged`], once per run of failures.
pub(crate) fn shown(meta: &Metadata<'_>) -> bool {
    !meta.target().starts_with("opentelemetry")
        || matches!(
            meta.name(),
            "BatchSpanProcessor.SpanDroppingStarted" | "BatchSpanProcessor.SpansDropped"
        )
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

/// A span being traced, kept in its extensions until it closes: the
/// SDK's span (in a context, so children can name it as their parent)
/// and what its fields said, applied when it ends (a field recorded twice
/// is one attribute).
struct Open {
    cx: OtelContext,
    name: String,
    renamed: bool,
    error: bool,
    status_message: String,
    attributes: Vec<KeyValue>,
}

/// What a span's fields say.
#[derive(Default)]
struct Fields {
    traceparent: Option<String>,
    name: Option<String>,
    kind: Option<SpanKind>,
    error: Option<bool>,
    status_message: Option<String>,
    attributes: Vec<KeyValue>,
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
        let text = || value.as_str().into_owned();
        match field.name() {
            "traceparent" => self.traceparent = Some(text()),
            "otel.name" => self.name = Some(clip(text())),
            "otel.kind" => {
                self.kind = match text().to_ascii_lowercase().as_str() {
                    "server" => Some(SpanKind::Server),
                    "client" => Some(SpanKind::Client),
                    _ => Some(SpanKind::Internal),
                }
            }
            "otel.status_code" => self.error = Some(text().eq_ignore_ascii_case("error")),
            "otel.status_message" => self.status_message = Some(clip(text())),
            name if self.attributes.len() < MAX_ATTRIBUTES => {
                let value = match value {
                    Value::String(s) => Value::from(clip(s.to_string())),
                    other => other,
                };
                match self
                    .attributes
                    .iter_mut()
                    .find(|kv| kv.key.as_str() == name)
                {
                    Some(slot) => slot.value = value,
                    None => self.attributes.push(KeyValue::new(name, value)),
                }
            }
            _ => {}
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value.to_owned()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(
            field,
            i64::try_from(value).map_or(Value::F64(value as f64), Value::I64),
        );
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::F64(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::from(clip(format!("{value:?}"))));
    }
}

impl Open {
    /// Takes what a record of the span's fields says (its kind is fixed
    /// once the span started).
    fn apply(&mut self, fields: Fields) {
        if let Some(name) = fields.name {
            self.name = name;
            self.renamed = true;
        }
        if let Some(error) = fields.error {
            self.error = error;
        }
        if let Some(message) = fields.status_message {
            self.status_message = message;
        }
        for kv in fields.attributes {
            let attributes = &mut self.attributes;
            if let Some(slot) = attributes.iter_mut().find(|k| k.key == kv.key) {
                slot.value = kv.value;
            } else if attributes.len() < MAX_ATTRIBUTES {
                attributes.push(kv);
            }
        }
    }

    /// Ends the span with what its fields said.
    fn end(self) {
        let span = self.cx.span();
        if !span.is_recording() {
            return;
        }
        if self.renamed {
            span.update_name(self.name);
        }
        if self.error {
            span.set_status(Status::error(self.status_message));
        }
        span.set_attributes(self.attributes);
        span.end();
    }
}

/// The context a remote `traceparent` names.
fn remote(context: TraceContext) -> OtelContext {
    let flags = if context.sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    OtelContext::new().with_remote_span_context(SpanContext::new(
        TraceId::from_bytes(context.trace_id),
        SpanId::from_bytes(context.span_id),
        flags,
        true,
        TraceState::default(),
    ))
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
        // A remote parent, else the nearest enclosing traced span, else a
        // new trace (the SDK's sampler decides).
        let parent = match fields.traceparent.as_deref().and_then(TraceContext::parse) {
            Some(context) => remote(context),
            None => span
                .scope()
                .skip(1)
                .find_map(|s| s.extensions().get::<Open>().map(|o| o.cx.clone()))
                .unwrap_or_default(),
        };
        let name: Cow<'static, str> = match &fields.name {
            Some(name) => Cow::Owned(name.clone()),
            None => Cow::Borrowed(attrs.metadata().name()),
        };
        let builder = export
            .tracer
            .span_builder(name.clone())
            .with_kind(fields.kind.take().unwrap_or(SpanKind::Internal))
            .with_start_time(SystemTime::now());
        let started = export.tracer.build_with_context(builder, &parent);
        let mut open = Open {
            cx: parent.with_span(started),
            name: name.into_owned(),
            renamed: false,
            error: false,
            status_message: String::new(),
            attributes: Vec::new(),
        };
        fields.name = None;
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
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let open = span.extensions_mut().remove::<Open>();
        if let Some(open) = open {
            open.end();
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
                s.extensions().get::<Open>().map(|o| {
                    let context = o.cx.span().span_context().clone();
                    TraceContext {
                        trace_id: context.trace_id().to_bytes(),
                        span_id: context.span_id().to_bytes(),
                        sampled: context.is_sampled(),
                    }
                })
            })
        })
        .flatten()
}
