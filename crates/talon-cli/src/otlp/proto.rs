//! OTLP's trace export request (`ExportTraceServiceRequest`), written in
//! protobuf's wire format by hand: the few messages and fields a span
//! needs, so the binary carries no protobuf runtime. Field numbers are
//! those of `opentelemetry/proto/trace/v1/trace.proto` and
//! `common/v1/common.proto`; the tests decode what this writes with the
//! official generated types.

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// `string_value`.
    Str(String),
    /// `bool_value`.
    Bool(bool),
    /// `int_value`.
    Int(i64),
    /// `double_value`.
    Double(f64),
}

/// `Span.SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An operation inside the process.
    Internal = 1,
    /// A request the process serves.
    Server = 2,
    /// A request the process makes.
    Client = 3,
}

/// `Status.StatusCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusCode {
    /// Nothing said.
    Unset = 0,
    /// It failed.
    Error = 2,
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
    pub name: String,
    pub kind: Kind,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    pub attributes: Vec<(String, Value)>,
    pub status: StatusCode,
    pub status_message: String,
}

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn tag(out: &mut Vec<u8>, field: u64, wire: u64) {
    varint(out, (field << 3) | wire);
}

fn bytes(out: &mut Vec<u8>, field: u64, value: &[u8]) {
    tag(out, field, LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

fn message(out: &mut Vec<u8>, field: u64, write: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    write(&mut inner);
    bytes(out, field, &inner);
}

fn fixed64(out: &mut Vec<u8>, field: u64, value: u64) {
    tag(out, field, FIXED64);
    out.extend_from_slice(&value.to_le_bytes());
}

fn number(out: &mut Vec<u8>, field: u64, value: u64) {
    tag(out, field, VARINT);
    varint(out, value);
}

/// `KeyValue { key = 1; AnyValue value = 2 }`.
fn key_value(out: &mut Vec<u8>, field: u64, key: &str, value: &Value) {
    message(out, field, |kv| {
        bytes(kv, 1, key.as_bytes());
        message(kv, 2, |any| match value {
            Value::Str(s) => bytes(any, 1, s.as_bytes()),
            Value::Bool(b) => number(any, 2, u64::from(*b)),
            // int64 is written as its two's complement.
            Value::Int(i) => number(any, 3, *i as u64),
            Value::Double(d) => fixed64(any, 4, d.to_bits()),
        });
    });
}

fn span(out: &mut Vec<u8>, s: &Span) {
    message(out, 2, |m| {
        bytes(m, 1, &s.trace_id);
        bytes(m, 2, &s.span_id);
        if let Some(parent) = &s.parent_span_id {
            bytes(m, 4, parent);
        }
        bytes(m, 5, s.name.as_bytes());
        number(m, 6, s.kind as u64);
        fixed64(m, 7, s.start_unix_nano);
        fixed64(m, 8, s.end_unix_nano);
        for (key, value) in &s.attributes {
            key_value(m, 9, key, value);
        }
        if s.status != StatusCode::Unset {
            message(m, 15, |status| {
                if !s.status_message.is_empty() {
                    bytes(status, 2, s.status_message.as_bytes());
                }
                number(status, 3, s.status as u64);
            });
        }
    });
}

/// The request body: one resource (its attributes), one instrumentation
/// scope, the spans.
pub(crate) fn export_request(
    resource: &[(String, Value)],
    scope: (&str, &str),
    spans: &[Span],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + spans.len() * 256);
    // ExportTraceServiceRequest.resource_spans = 1
    message(&mut out, 1, |rs| {
        // ResourceSpans.resource = 1 (Resource.attributes = 1)
        message(rs, 1, |r| {
            for (key, value) in resource {
                key_value(r, 1, key, value);
            }
        });
        // ResourceSpans.scope_spans = 2
        message(rs, 2, |ss| {
            // ScopeSpans.scope = 1 (InstrumentationScope name = 1, version = 2)
            message(ss, 1, |scope_msg| {
                bytes(scope_msg, 1, scope.0.as_bytes());
                bytes(scope_msg, 2, scope.1.as_bytes());
            });
            // ScopeSpans.spans = 2
            for s in spans {
                span(ss, s);
            }
        });
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value;
    use prost::Message as _;

    #[test]
    fn the_official_types_decode_what_is_written() {
        let spans = [Span {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent_span_id: Some([3; 8]),
            name: "chat m1".into(),
            kind: Kind::Client,
            start_unix_nano: 1_700_000_000_000_000_001,
            end_unix_nano: u64::MAX - 1,
            attributes: vec![
                ("s".into(), Value::Str("é\u{0}x".into())),
                ("b".into(), Value::Bool(true)),
                ("i".into(), Value::Int(-42)),
                ("d".into(), Value::Double(0.25)),
            ],
            status: StatusCode::Error,
            status_message: "down".into(),
        }];
        let body = export_request(
            &[("service.name".into(), Value::Str("talon".into()))],
            ("talon", "0.1.0"),
            &spans,
        );
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        let rs = &decoded.resource_spans[0];
        let resource = rs.resource.as_ref().unwrap();
        assert_eq!(resource.attributes[0].key, "service.name");
        let scope = rs.scope_spans[0].scope.as_ref().unwrap();
        assert_eq!(
            (scope.name.as_str(), scope.version.as_str()),
            ("talon", "0.1.0")
        );
        let span = &rs.scope_spans[0].spans[0];
        assert_eq!(span.trace_id, vec![1; 16]);
        assert_eq!(span.span_id, vec![2; 8]);
        assert_eq!(span.parent_span_id, vec![3; 8]);
        assert_eq!(span.name, "chat m1");
        assert_eq!(span.kind, 3);
        assert_eq!(span.start_time_unix_nano, 1_700_000_000_000_000_001);
        assert_eq!(span.end_time_unix_nano, u64::MAX - 1);
        let values: Vec<(String, Option<any_value::Value>)> = span
            .attributes
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone().and_then(|v| v.value)))
            .collect();
        assert_eq!(
            values,
            [
                (
                    "s".into(),
                    Some(any_value::Value::StringValue("é\u{0}x".into()))
                ),
                ("b".into(), Some(any_value::Value::BoolValue(true))),
                ("i".into(), Some(any_value::Value::IntValue(-42))),
                ("d".into(), Some(any_value::Value::DoubleValue(0.25))),
            ]
        );
        let status = span.status.as_ref().unwrap();
        assert_eq!((status.code, status.message.as_str()), (2, "down"));
    }

    #[test]
    fn an_empty_batch_and_a_root_span_decode() {
        let body = export_request(&[], ("talon", ""), &[]);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        assert_eq!(decoded.resource_spans[0].scope_spans[0].spans.len(), 0);
        let root = Span {
            trace_id: [9; 16],
            span_id: [8; 8],
            parent_span_id: None,
            name: String::new(),
            kind: Kind::Internal,
            start_unix_nano: 0,
            end_unix_nano: 0,
            attributes: Vec::new(),
            status: StatusCode::Unset,
            status_message: String::new(),
        };
        let body = export_request(&[], ("talon", ""), &[root]);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        let span = &decoded.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(
            (span.parent_span_id.len(), span.status.is_none(), span.kind),
            (0, true, 1)
        );
    }
}
