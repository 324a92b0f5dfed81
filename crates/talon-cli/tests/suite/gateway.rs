//! `talon gateway` and `talon token`: the first start prints the admin
//! token once and serves with it; tokens are created (printed alone on
//! stdout), listed without secrets, revoked; SIGTERM stops the gateway
//! cleanly.

use std::io::{BufRead, BufReader, Read};
use std::process::Command;

use super::{finish, spawn_talon};

fn talon(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    finish(spawn_talon(home, args, &[]))
}

/// One call over plain HTTP/1.1 (no client library in this crate's tests).
fn post(addr: &str, token: &str, method: &str, body: &str) -> String {
    use std::io::Write as _;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/{method} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn the_gateway_serves_with_its_first_admin_token_and_stops_on_sigterm() {
    let home = tempfile::tempdir().unwrap();
    let mut child = spawn_talon(home.path(), &["gateway", "--listen", "127.0.0.1:0"], &[]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut addr = None;
    let mut line = String::new();
    while addr.is_none() {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the gateway exited"
        );
        if let Some(rest) = line
            .trim()
            .strip_prefix("talon gateway: listening on http://")
        {
            addr = Some(rest.to_owned());
        }
    }
    let addr = addr.unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut admin = String::new();
    stdout.read_line(&mut admin).unwrap();
    let admin = admin.trim().to_owned();
    assert!(admin.starts_with("talon_"), "{admin}");
    let stored = std::fs::read_to_string(home.path().join("state/admin.token")).unwrap();
    assert_eq!(stored.trim(), admin);
    let response = post(&addr, &admin, "agents.list", "{}");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert_eq!(
        body(&response),
        serde_json::json!({"agents": [{"id": "main", "description": "The default agent", "source": "config"}]})
    );
    let refused = post(&addr, "talon_wrong", "agents.list", "{}");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    // A token made by the CLI works against the running gateway.
    let created = talon(
        home.path(),
        &["token", "create", "--scope", "agent.read", "--name", "ci"],
    );
    assert!(created.status.success(), "{created:?}");
    let secret = String::from_utf8(created.stdout).unwrap();
    assert_eq!(secret.lines().count(), 1);
    assert!(post(&addr, secret.trim(), "agents.list", "{}").starts_with("HTTP/1.1 200"));
    let forbidden = post(&addr, secret.trim(), "sessions.list", "{}");
    assert!(forbidden.starts_with("HTTP/1.1 403"), "{forbidden}");
    // SIGTERM: a clean stop.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(
        !rest.contains(&admin) && !rest.contains(secret.trim()),
        "a secret was logged: {rest}"
    );
}

#[test]
fn tokens_are_created_listed_and_revoked() {
    let home = tempfile::tempdir().unwrap();
    let created = talon(
        home.path(),
        &[
            "token",
            "create",
            "--scope",
            "agent.run",
            "--scope",
            "session.read",
            "--name",
            "app",
            "--expires-in",
            "30d",
        ],
    );
    assert!(created.status.success(), "{created:?}");
    let secret = String::from_utf8(created.stdout).unwrap();
    let listed = talon(home.path(), &["token", "list"]);
    let list = String::from_utf8(listed.stdout).unwrap();
    let fields: Vec<&str> = list.trim().split('\t').collect();
    assert_eq!(fields[1..], ["live", "app", "agent.run,session.read"]);
    assert!(!list.contains(secret.trim()), "secrets are never listed");
    let id = fields[0].to_owned();
    assert!(
        talon(home.path(), &["token", "revoke", &id])
            .status
            .success()
    );
    let list = String::from_utf8(talon(home.path(), &["token", "list"]).stdout).unwrap();
    assert!(list.contains(&format!("{id}\trevoked")), "{list}");
    // Usage errors.
    for args in [
        &["token", "create", "--scope", "root"][..],
        &[
            "token",
            "create",
            "--scope",
            "admin",
            "--expires-in",
            "soon",
        ][..],
    ] {
        let out = talon(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty());
    }
    let out = talon(home.path(), &["token", "revoke", "tok_nope"]);
    assert_eq!(out.status.code(), Some(1));
}

/// Starts `talon gateway` on a free port; returns it, its address and its
/// stderr (the admin token, on a first start, is on its stdout).
#[expect(
    clippy::zombie_processes,
    reason = "the child is handed to the caller, who waits for it"
)]
fn start_gateway(
    home: &std::path::Path,
    extra: &[&str],
) -> (
    std::process::Child,
    String,
    BufReader<std::process::ChildStderr>,
) {
    let mut args = vec!["gateway", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut child = spawn_talon(home, &args, &[]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the gateway exited"
        );
        if let Some(rest) = line
            .trim()
            .strip_prefix("talon gateway: listening on http://")
        {
            return (child, rest.to_owned(), stderr);
        }
    }
}

/// The JSON body of an HTTP response.
fn body(response: &str) -> serde_json::Value {
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

/// Opens a run's SSE stream and reads it until an event of type `until`;
/// returns the ids seen.
fn stream_until(addr: &str, token: &str, run_id: &str, until: &str) -> Vec<String> {
    use std::io::Write as _;
    let stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    write!(
        writer,
        "GET /v1/runs/{run_id}/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut ids = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        let line = line.trim();
        if let Some(id) = line.strip_prefix("id: ") {
            ids.push(id.to_owned());
        }
        if line == format!("event: {until}") {
            return ids;
        }
    }
}

#[test]
fn a_gateway_killed_mid_run_loses_nothing_and_ends_what_it_left() {
    let home = tempfile::tempdir().unwrap();
    let hang = home.path().join("hang.json");
    std::fs::write(
        &hang,
        r#"{"replay": "perRun", "turns": [{"delayMs": 60000, "text": "never"}]}"#,
    )
    .unwrap();
    let after = home.path().join("after.json");
    std::fs::write(
        &after,
        r#"{"replay": "perRun", "turns": [{"text": "after the restart"}]}"#,
    )
    .unwrap();
    let (mut first, addr, _) =
        start_gateway(home.path(), &["--mock-script", hang.to_str().unwrap()]);
    let mut admin = String::new();
    BufReader::new(first.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let admin = admin.trim().to_owned();
    let running = body(&post(
        &addr,
        &admin,
        "runs.create",
        r#"{"input": "hang", "sessionKey": "crash"}"#,
    ));
    let run_id = running["id"].as_str().unwrap().to_owned();
    let queued = body(&post(
        &addr,
        &admin,
        "runs.create",
        r#"{"input": "then this", "sessionKey": "crash"}"#,
    ));
    let seen = stream_until(&addr, &admin, &run_id, "run.started");
    assert_eq!(seen.len(), 2, "{seen:?}");
    // SIGKILL mid-run.
    first.kill().unwrap();
    first.wait().unwrap();
    let (mut second, addr, mut stderr) =
        start_gateway(home.path(), &["--mock-script", after.to_str().unwrap()]);
    // The interrupted run ended failed, with its terminal event after
    // every event a subscriber had seen.
    let run = body(&post(
        &addr,
        &admin,
        "runs.get",
        &format!(r#"{{"runId": "{run_id}"}}"#),
    ));
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["error"]["code"], "unavailable");
    assert_eq!(run["error"]["details"]["reason"], "interrupted");
    let page = body(&post(
        &addr,
        &admin,
        "runs.events",
        &format!(r#"{{"runId": "{run_id}"}}"#),
    ));
    let events = page["events"].as_array().unwrap();
    let ids: Vec<&str> = events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids[..2],
        seen.iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
    assert_eq!(events.last().unwrap()["type"], "run.failed");
    assert_eq!(page["done"], true);
    // The run queued behind it runs on the restarted gateway.
    let result = body(&post(
        &addr,
        &admin,
        "runs.wait",
        &format!(
            r#"{{"runId": "{}", "timeoutMs": 30000}}"#,
            queued["id"].as_str().unwrap()
        ),
    ));
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["output"]["text"], "after the restart");
    Command::new("kill")
        .args(["-TERM", &second.id().to_string()])
        .status()
        .unwrap();
    assert!(second.wait().unwrap().success());
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    assert!(!log.contains(&admin), "the admin token was logged: {log}");
}
