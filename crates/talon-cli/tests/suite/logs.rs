//! `talon gateway`'s log at `info` as JSON: one object a line, no ANSI
//! escapes on a pipe, an access line per request with its request id, and
//! a line for each step of a run's life; the request id in the run's
//! events.

use std::io::{BufRead, BufReader, Read, Write as _};
use std::process::Command;

use serde_json::{Value, json};

use talon_testing::redact::Redactor;

use super::gateway::{body, post, start_gateway_with, stream_until};
use super::sized;

/// `POST /v1/<method>` with an `x-request-id`.
fn post_with_id(addr: &str, token: &str, method: &str, body: &str, id: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/{method} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         x-request-id: {id}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// The fields of the JSON log lines logged under `target`, without their
/// timestamps and durations (which vary).
fn lines_of(log: &[Value], target: &str) -> Vec<Value> {
    log.iter()
        .filter(|line| line["target"] == target)
        .map(|line| {
            let mut fields = line["fields"].clone();
            let object = fields.as_object_mut().unwrap();
            object.remove("duration_ms");
            fields
        })
        .collect()
}

#[test]
fn the_json_log_has_an_access_line_per_request_and_a_line_per_step_of_a_run() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"replay": "perRun", "turns": [
            {"toolCalls": [{"name": "ask_user", "arguments": {"prompt": "Which region?"}}]},
            {"text": "deploying"}
        ]}"#,
    )
    .unwrap();
    let (mut gateway, addr, mut stderr) = start_gateway_with(
        home.path(),
        &["--mock-script", script.to_str().unwrap()],
        &[
            ("TALON_LOG", std::path::Path::new("info")),
            ("TALON_LOG_FORMAT", std::path::Path::new("json")),
        ],
    );
    let mut admin = String::new();
    BufReader::new(gateway.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let admin = admin.trim().to_owned();
    let created = post_with_id(
        &addr,
        &admin,
        "runs.create",
        r#"{"input": "deploy"}"#,
        "app-req-1",
    );
    assert!(
        created
            .to_ascii_lowercase()
            .contains("x-request-id: app-req-1\r\n"),
        "{created}"
    );
    let run_id = body(&created)["id"].as_str().unwrap().to_owned();
    stream_until(&addr, &admin, &run_id, "question.requested");
    let questions = body(&post(
        &addr,
        &admin,
        "questions.list",
        &format!(r#"{{"runId": "{run_id}"}}"#),
    ));
    let question = questions["questions"][0]["id"].as_str().unwrap().to_owned();
    post(
        &addr,
        &admin,
        "questions.respond",
        &format!(r#"{{"questionId": "{question}", "answer": "eu"}}"#),
    );
    let result = body(&post(
        &addr,
        &admin,
        "runs.wait",
        &format!(r#"{{"runId": "{run_id}", "timeoutMs": 30000}}"#),
    ));
    let mut r = Redactor::new();
    insta::assert_json_snapshot!("result", sized(r.value(&result)));
    // Every event of the run carries the id of the call that created it,
    // the answer's too (the run emits it).
    let page = body(&post(
        &addr,
        &admin,
        "runs.events",
        &format!(r#"{{"runId": "{run_id}"}}"#),
    ));
    insta::assert_json_snapshot!(
        "events",
        super::events(&mut r, page["events"].as_array().unwrap())
    );
    Command::new("kill")
        .args(["-TERM", &gateway.id().to_string()])
        .status()
        .unwrap();
    assert!(gateway.wait().unwrap().success());
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    assert!(!log.contains('\u{1b}'), "ANSI escapes on a pipe: {log}");
    let lines: Vec<Value> = log
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert!(
        lines
            .iter()
            .all(|l| l["timestamp"].is_string() && l["level"].is_string()),
        "{log}"
    );
    // Every request, in order, each by the admin token (the same token id
    // on every line); the stream's line once its head went out; the
    // gateway's own request ids `<req_N>`.
    let access = lines_of(&lines, "talon::access");
    let token = access[0]["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("tok_"), "{token}");
    assert!(
        access.iter().all(|a| a["token"] == token.as_str()),
        "{access:?}"
    );
    insta::assert_json_snapshot!("access", r.value(&json!(access)));
    // The run's life, one line a step.
    let run: Vec<Value> = lines_of(&lines, "talon::run")
        .into_iter()
        .map(|mut fields| {
            let object = fields.as_object_mut().unwrap();
            for varying in ["session_id", "node", "question_id"] {
                if let Some(value) = object.get_mut(varying) {
                    *value = json!(varying);
                }
            }
            fields
        })
        .collect();
    assert_eq!(
        run,
        [
            json!({"message": "run created", "run_id": run_id, "agent": "main",
                   "session_id": "session_id", "request_id": "app-req-1", "queued": ""}),
            json!({"message": "run started", "run_id": run_id, "agent": "main",
                   "node": "node", "resumed": false}),
            json!({"message": "run waiting for an answer", "run_id": run_id,
                   "question_id": "question_id"}),
            json!({"message": "question settled", "run_id": run_id,
                   "question_id": "question_id", "status": "Answered"}),
            json!({"message": "run finished", "run_id": run_id, "status": "completed",
                   "error": ""}),
        ]
    );
}
