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
    assert!(response.ends_with("{\"agents\":[]}"), "{response}");
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
