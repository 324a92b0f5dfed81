//! `talon gateway`'s log at `info` as JSON: one object a line, no ANSI
//! escapes on a pipe, an access line per request with its request id, and
//! a line for each step of a run's life; the gateway's request id in the
//! run's events and a client's only beside it in the access line; no
//! input makes a line of its own, in either format.

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
    // The gateway's own id comes back, never the client's.
    let request_id = created
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("x-request-id: ")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("{created}"));
    assert!(request_id.starts_with("req_"), "{created}");
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
                   "session_id": "session_id", "request_id": request_id, "queued": ""}),
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

/// Sends one masked text frame on a raw WebSocket (no client library in
/// this crate's tests) and reads the first frame back.
fn ws_call(addr: &str, token: &str, text: &str) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET /v1/ws HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 101"), "{line}");
    while line != "\r\n" {
        line.clear();
        reader.read_line(&mut line).unwrap();
    }
    let payload = text.as_bytes();
    assert!(payload.len() < 126);
    let mask = [7u8, 1, 9, 3];
    let mut frame = vec![0x81, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    stream.write_all(&frame).unwrap();
    let mut head = [0u8; 2];
    reader.read_exact(&mut head).unwrap();
    assert_eq!(head[0], 0x81, "a text frame answers");
}

/// A token named with a newline and an ANSI escape, and a WebSocket
/// method holding a newline, each log exactly one access line, escaped,
/// in text and in JSON.
#[test]
fn no_input_makes_a_log_line_of_its_own_in_either_format() {
    for format in ["text", "json"] {
        let home = tempfile::tempdir().unwrap();
        let (mut gateway, addr, mut stderr) = start_gateway_with(
            home.path(),
            &[],
            &[
                ("TALON_LOG", std::path::Path::new("talon::access=info")),
                ("TALON_LOG_FORMAT", std::path::Path::new(format)),
            ],
        );
        let mut admin = String::new();
        BufReader::new(gateway.stdout.take().unwrap())
            .read_line(&mut admin)
            .unwrap();
        let admin = admin.trim().to_owned();
        let minted = body(&post(
            &addr,
            &admin,
            "tokens.create",
            r#"{"name": "a\nforged-by-name \u001b[31m", "scopes": ["agent.read"], "expiresInMs": 600000}"#,
        ));
        let token = minted["token"]
            .as_str()
            .unwrap_or_else(|| panic!("{minted}"));
        let listed = post_with_id(&addr, token, "agents.list", "{}", "client-7");
        assert!(listed.starts_with("HTTP/1.1 200"), "{listed}");
        ws_call(
            &addr,
            &admin,
            r#"{"type": "req", "id": 1, "method": "x\nforged-by-method", "params": {}}"#,
        );
        Command::new("kill")
            .args(["-TERM", &gateway.id().to_string()])
            .status()
            .unwrap();
        assert!(gateway.wait().unwrap().success());
        let mut log = String::new();
        stderr.read_to_string(&mut log).unwrap();
        assert!(!log.contains('\u{1b}'), "{format}: a raw escape: {log}");
        for forged in ["forged-by-name", "forged-by-method"] {
            let lines: Vec<&str> = log.lines().filter(|l| l.contains(forged)).collect();
            assert_eq!(lines.len(), 1, "{format}: {forged}: {log}");
            assert!(lines[0].contains("talon::access"), "{format}: {log}");
        }
        match format {
            "text" => {
                let named = log.lines().find(|l| l.contains("forged-by-name")).unwrap();
                assert!(
                    named.contains(r#"token_name="a\nforged-by-name \u{1b}[31m""#),
                    "{named}"
                );
                assert!(named.contains(r#"client_request_id="client-7""#), "{named}");
                let called = log
                    .lines()
                    .find(|l| l.contains("forged-by-method"))
                    .unwrap();
                assert!(
                    called.contains(r"method=x\u{a}forged-by-method"),
                    "{called}"
                );
            }
            _ => {
                let access: Vec<Value> = log
                    .lines()
                    .filter(|l| l.starts_with('{'))
                    .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                    .collect();
                let named = lines_of(&access, "talon::access")
                    .into_iter()
                    .find(|a| a["client_request_id"] == "client-7")
                    .unwrap_or_else(|| panic!("{log}"));
                assert_eq!(named["token_name"], "a\nforged-by-name \u{1b}[31m");
                assert!(named["request_id"].as_str().unwrap().starts_with("req_"));
                assert!(
                    lines_of(&access, "talon::access")
                        .iter()
                        .any(|a| a["method"] == "x\nforged-by-method"),
                    "{log}"
                );
            }
        }
    }
}
