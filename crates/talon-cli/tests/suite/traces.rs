//! OpenTelemetry traces over OTLP/HTTP, against a collector this test
//! starts (a plain HTTP server decoding what it is sent with the
//! OpenTelemetry protobuf types): a Code Mode run's span tree (the
//! request, the run, each model call, each tool call, the cell's nested
//! calls under the `exec` call), a caller's `traceparent` honoured and a
//! malformed one ignored, a collector that is down costing nothing but
//! one warning, and a protocol Talon cannot speak refused at start.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use talon_testing::wait;

use super::gateway::{Gateway, body, post, start_gateway_with};
use super::{finish, spawn_talon};

/// What the collector was sent: every span, and each post's resource
/// attributes and path.
#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    resources: Vec<HashMap<String, String>>,
    paths: Vec<String>,
}

/// An OTLP/HTTP receiver on 127.0.0.1.
struct Collector {
    addr: String,
    received: Arc<Mutex<Received>>,
}

fn text(value: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// One HTTP/1.1 request on a kept-alive connection: its path and body.
fn read_request(reader: &mut BufReader<std::net::TcpStream>) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some((path, body))
}

impl Collector {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let received = Arc::new(Mutex::new(Received::default()));
        let shared = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let mut writer = stream.try_clone().unwrap();
                    let mut reader = BufReader::new(stream);
                    while let Some((path, body)) = read_request(&mut reader) {
                        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
                        let mut received = shared.lock().unwrap();
                        received.paths.push(path);
                        for resource_spans in request.resource_spans {
                            let resource = resource_spans.resource.unwrap_or_default();
                            received.resources.push(
                                resource
                                    .attributes
                                    .iter()
                                    .map(|kv| (kv.key.clone(), text(&kv.value)))
                                    .collect(),
                            );
                            for scope in resource_spans.scope_spans {
                                received.spans.extend(scope.spans);
                            }
                        }
                        drop(received);
                        writer
                            .write_all(
                                b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
                            )
                            .unwrap();
                    }
                });
            }
        });
        Self { addr, received }
    }

    /// Waits until `done` holds for the spans received.
    fn wait_for(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        wait::until(what, Duration::from_secs(60), || {
            let spans = self.received.lock().unwrap().spans.clone();
            if done(&spans) { Ok(spans) } else { Err(spans) }
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| text(&kv.value))
}

/// A cell that reads a file: a model call, the `exec` call with a nested
/// `read`, a second model call.
const SCRIPT: &str = r#"{"replay": "perRun", "turns": [
     {"toolCalls": [{"name": "exec", "arguments": {"code": "const r = await tools.read({path: 'notes.txt'}); return r.content;"}}],
      "usage": {"prompt": 120, "completion": 9}},
     {"text": "The notes say: the answer is 42.", "usage": {"prompt": 180, "completion": 11}}]}"#;

/// A gateway with Code Mode on the scripted model, exporting to
/// `endpoint`; its admin token.
fn gateway(
    home: &Path,
    endpoint: &str,
) -> (
    Gateway,
    String,
    String,
    BufReader<std::process::ChildStderr>,
) {
    let workspace = home.join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "the answer is 42").unwrap();
    std::fs::write(home.join("script.json"), SCRIPT).unwrap();
    let config = home.join("talon.json5");
    std::fs::write(
        &config,
        format!(
            r#"{{ tools: {{ codeMode: {{ enabled: true }} }}, agents: {{ defaults: {{ workspace: "{}" }} }},
                 diagnostics: {{ otel: {{ serviceName: "talon-under-test" }} }} }}"#,
            workspace.display()
        ),
    )
    .unwrap();
    let (mut gateway, addr, stderr) = start_gateway_with(
        home,
        &[
            "--config",
            config.to_str().unwrap(),
            "--mock-script",
            home.join("script.json").to_str().unwrap(),
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", Path::new(endpoint)),
            ("OTEL_BSP_SCHEDULE_DELAY", Path::new("20")),
        ],
    );
    let mut admin = String::new();
    BufReader::new(gateway.0.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    (gateway, addr, admin.trim().to_owned(), stderr)
}

/// `runs.create` with a `traceparent` header, then `runs.wait`.
fn run_traced(addr: &str, token: &str, traceparent: &str) -> String {
    let body_text = r#"{"input": "What do my notes say?"}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/runs.create HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         traceparent: {traceparent}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body_text}",
        body_text.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let run_id = body(&response)["id"].as_str().unwrap().to_owned();
    let result = body(&post(
        addr,
        token,
        "runs.wait",
        // The first Code Mode cell of a home compiles QuickJS (a debug
        // build, several tests at once): time enough for that.
        &format!(r#"{{"runId": "{run_id}", "timeoutMs": 300000}}"#),
    ));
    assert_eq!(result["status"], "completed", "{result}");
    run_id
}

/// The spans of one trace as (name, parent's name), in start order; a
/// parent outside the trace's received spans is shown by its id.
fn tree(spans: &[Span], trace: &[u8]) -> Vec<(String, String)> {
    let mut ours: Vec<&Span> = spans.iter().filter(|s| s.trace_id == trace).collect();
    ours.sort_by_key(|s| s.start_time_unix_nano);
    let names: HashMap<&[u8], &str> = ours
        .iter()
        .map(|s| (s.span_id.as_slice(), s.name.as_str()))
        .collect();
    ours.iter()
        .map(|s| {
            let parent = match names.get(s.parent_span_id.as_slice()) {
                Some(name) => (*name).to_owned(),
                None if s.parent_span_id.is_empty() => "-".to_owned(),
                None => format!("remote {}", hex(&s.parent_span_id)),
            };
            (s.name.clone(), parent)
        })
        .collect()
}

fn run_span_done(run_id: &str) -> impl Fn(&[Span]) -> bool + '_ {
    move |spans: &[Span]| {
        spans
            .iter()
            .any(|s| s.name == "run" && attribute(s, "talon.run.id").as_deref() == Some(run_id))
    }
}

#[test]
fn a_code_mode_run_is_one_trace_under_the_callers_traceparent() {
    let collector = Collector::start();
    let home = tempfile::tempdir().unwrap();
    let (_gateway, addr, admin, _stderr) =
        gateway(home.path(), &format!("http://{}", collector.addr));
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let run_id = run_traced(&addr, &admin, &format!("00-{trace}-00f067aa0ba902b7-01"));
    let spans = collector.wait_for("the run's span", run_span_done(&run_id));
    let trace_bytes: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&trace[i * 2..i * 2 + 2], 16).unwrap())
        .collect();
    let model = spans
        .iter()
        .find(|s| s.name.starts_with("chat "))
        .map(|s| s.name.clone())
        .unwrap();
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    };
    assert_eq!(
        tree(&spans, &trace_bytes),
        pairs(&[
            ("POST /v1/runs.create", "remote 00f067aa0ba902b7"),
            ("run", "POST /v1/runs.create"),
            (&model, "run"),
            ("execute_tool exec", "run"),
            ("execute_tool openclaw:core:read", "execute_tool exec"),
            (&model, "run"),
        ])
    );
    let find = |name: &str| {
        spans
            .iter()
            .find(|s| s.trace_id == trace_bytes && s.name == name)
            .unwrap()
    };
    let request = find("POST /v1/runs.create");
    assert_eq!(request.kind, 2, "server");
    assert_eq!(
        (
            attribute(request, "http.request.method"),
            attribute(request, "http.response.status_code"),
            attribute(request, "url.path"),
        ),
        (
            Some("POST".into()),
            Some("200".into()),
            Some("/v1/runs.create".into())
        )
    );
    let run = find("run");
    assert_eq!(
        (
            attribute(run, "talon.run.id"),
            attribute(run, "talon.agent.id"),
            attribute(run, "talon.run.status"),
        ),
        (
            Some(run_id.clone()),
            Some("main".into()),
            Some("completed".into())
        )
    );
    let chat = find(&model);
    assert_eq!(chat.kind, 3, "client");
    assert_eq!(
        (
            attribute(chat, "gen_ai.operation.name"),
            attribute(chat, "gen_ai.usage.input_tokens"),
            attribute(chat, "gen_ai.usage.output_tokens"),
        ),
        (Some("chat".into()), Some("120".into()), Some("9".into()))
    );
    assert_eq!(
        attribute(find("execute_tool exec"), "gen_ai.tool.name").as_deref(),
        Some("exec")
    );
    // Children end before their parents; every span has an end.
    for span in spans.iter().filter(|s| s.trace_id == trace_bytes) {
        assert!(
            span.end_time_unix_nano >= span.start_time_unix_nano,
            "{span:?}"
        );
    }
    let received = collector.received.lock().unwrap();
    assert!(
        received.paths.iter().all(|p| p == "/v1/traces"),
        "{:?}",
        received.paths
    );
    assert_eq!(
        received.resources[0]
            .get("service.name")
            .map(String::as_str),
        Some("talon-under-test")
    );
}

#[test]
fn a_malformed_traceparent_starts_a_trace_of_its_own() {
    let collector = Collector::start();
    let home = tempfile::tempdir().unwrap();
    let (_gateway, addr, admin, _stderr) =
        gateway(home.path(), &format!("http://{}", collector.addr));
    for bad in [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01",
        "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "not a traceparent at all",
    ] {
        let run_id = run_traced(&addr, &admin, bad);
        let spans = collector.wait_for("the run's span", run_span_done(&run_id));
        let run = spans
            .iter()
            .find(|s| s.name == "run" && attribute(s, "talon.run.id").as_deref() == Some(&*run_id))
            .unwrap();
        let request = spans
            .iter()
            .find(|s| s.span_id == run.parent_span_id)
            .unwrap_or_else(|| panic!("{bad}: the run's parent was not received"));
        assert_eq!(
            (
                request.name.as_str(),
                request.parent_span_id.is_empty(),
                request.trace_id == run.trace_id
            ),
            ("POST /v1/runs.create", true, true),
            "{bad}"
        );
        assert_ne!(
            hex(&run.trace_id),
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "{bad}"
        );
    }
}

#[test]
fn a_collector_that_is_down_costs_one_warning_and_no_run() {
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let home = tempfile::tempdir().unwrap();
    let (gateway, addr, admin, mut stderr) =
        gateway(home.path(), &format!("http://127.0.0.1:{port}"));
    for _ in 0..3 {
        run_traced(
            &addr,
            &admin,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        );
    }
    Command::new("kill")
        .args(["-TERM", &gateway.0.id().to_string()])
        .status()
        .unwrap();
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("could not export traces"))
        .collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(
        warnings[0].contains(&format!(
            "is the collector running at http://127.0.0.1:{port}/v1/traces?"
        )),
        "{log}"
    );
    let mut gateway = gateway;
    assert!(gateway.0.wait().unwrap().success(), "{log}");
}

#[test]
fn an_otlp_protocol_talon_cannot_export_is_refused_at_start() {
    let home = tempfile::tempdir().unwrap();
    let out = finish(spawn_talon(
        home.path(),
        &["gateway", "--listen", "127.0.0.1:0"],
        &[
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                Path::new("http://127.0.0.1:4317"),
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", Path::new("grpc")),
        ],
    ));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "talon: OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\": Talon exports OTLP as \"http/protobuf\" \
         (to the collector's HTTP port, 4318); set it to http/protobuf or unset it"
    );
}
