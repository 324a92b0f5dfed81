//! `talon gateway` against its own state: a full disk on a small
//! filesystem the test mounts itself (answers instead of dropped
//! connections, `/healthz` 503 with the reason, recovery without a
//! restart, interrupted runs ended `failed`, SIGTERM within the grace),
//! and start-up integrity (a missing or empty database beside a state
//! directory that served before is refused; `--new-store` creates anew
//! and keeps the old admin token aside; a damaged database is reported
//! and refuses writes).

use std::io::{BufRead, BufReader, Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_testing::redact::Redactor;
use talon_testing::wait;

use super::gateway::{Gateway, body, post, start_gateway};
use super::{MockFiles, finish, spawn_talon};

/// `GET path` over plain HTTP/1.1: the status and the body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    (status(&response), response)
}

/// `value` redacted, the test's home directory as `<home>`.
fn redacted_in(home: &Path, value: &Value) -> Value {
    Redactor::new()
        .with(home.to_str().unwrap(), "<home>")
        .value(value)
}

fn status(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"))
}

/// A gateway whose state directory is on a tmpfs of `size` mounted in a
/// mount namespace of its own; the tmpfs is reached from here through
/// `/proc/<pid>/root`.
struct OnTmpfs {
    gateway: Gateway,
    addr: String,
    admin: String,
    /// The tmpfs, as this process sees it.
    mount: PathBuf,
    _stderr: std::thread::JoinHandle<String>,
}

fn start_on_tmpfs(home: &Path, size: &str, extra: &[&str]) -> OnTmpfs {
    let mount = home.join("mnt");
    std::fs::create_dir_all(&mount).unwrap();
    let mut child = Command::new("unshare")
        .args(["-Urm", "--", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o "size=$1" tmpfs "$2" && shift 2 && exec "$@""#)
        .args(["sh", size])
        .arg(&mount)
        .arg(env!("CARGO_BIN_EXE_talon"))
        .args(["gateway", "--listen", "127.0.0.1:0"])
        .args(extra)
        .env("HOME", home)
        .env("TALON_STATE_DIR", mount.join("state"))
        .env_remove("TALON_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unshare runs (util-linux)");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        let read = stderr.read_line(&mut line).unwrap();
        assert!(
            read > 0,
            "the gateway on a tmpfs exited (this test needs a user and mount namespace: unshare -Urm): {line}"
        );
        if let Some(rest) = line
            .trim()
            .strip_prefix("talon gateway: listening on http://")
        {
            break rest.to_owned();
        }
    };
    let mut admin = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let pid = child.id();
    let logs = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });
    OnTmpfs {
        gateway: Gateway(child),
        addr,
        admin: admin.trim().to_owned(),
        mount: PathBuf::from(format!("/proc/{pid}/root")).join(mount.strip_prefix("/").unwrap()),
        _stderr: logs,
    }
}

/// Fills the filesystem at `dir` until it refuses another byte.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let chunk = vec![0x5a_u8; 16 << 10];
    loop {
        if let Err(error) = file.write_all(&chunk).and_then(|()| file.sync_all()) {
            assert_eq!(
                error.raw_os_error(),
                Some(28),
                "the filesystem fills up: {error}"
            );
            break;
        }
    }
    // Whatever is left in a partly written block, too.
    while file.write_all(&[0]).and_then(|()| file.sync_all()).is_ok() {}
    path
}

fn run_status(addr: &str, token: &str, id: &str) -> Value {
    body(&post(
        addr,
        token,
        "runs.get",
        &json!({"runId": id}).to_string(),
    ))
}

#[test]
fn a_full_disk_is_answered_reported_survived_and_does_not_hold_up_a_stop() {
    let home = tempfile::tempdir().unwrap();
    let text = "word ".repeat(2_000);
    let files = MockFiles::write(
        home.path(),
        &json!({"replay": "perRun", "turns": [{"text": text, "delayMs": 50}]}).to_string(),
        r#"{gateway: {runs: {drainGraceMs: 2000}}}"#,
    );
    let mut g = start_on_tmpfs(home.path(), "6m", &files.args());
    let (addr, admin) = (g.addr.clone(), g.admin.clone());
    let create = |key: &str| {
        post(
            &addr,
            &admin,
            "runs.create",
            &json!({"input": "hi", "sessionKey": key}).to_string(),
        )
    };
    let wait = |id: &str| {
        body(&post(
            &addr,
            &admin,
            "runs.wait",
            &json!({"runId": id, "timeoutMs": 20_000}).to_string(),
        ))
    };
    let first = body(&create("before"));
    assert_eq!(wait(first["id"].as_str().unwrap())["status"], "completed");
    assert_eq!(get(&addr, "/healthz").0, 200);

    // The disk fills while runs go on.
    let filler = fill(&g.mount);
    let answers: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..20)
            .map(|worker| {
                let create = &create;
                scope.spawn(move || {
                    (0..10)
                        .map(|i| create(&format!("full-{worker}-{i}")))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    // Every request is answered: created, or `unavailable` and retryable.
    let mut created = Vec::new();
    let mut refused = 0;
    for answer in &answers {
        match status(answer) {
            200 => created.push(body(answer)["id"].as_str().unwrap().to_owned()),
            503 => {
                let error = &body(answer)["error"];
                assert_eq!(
                    (&error["code"], &error["retryable"]),
                    (&json!("unavailable"), &json!(true)),
                    "{answer}"
                );
                refused += 1;
            }
            other => panic!("{other}: {answer}"),
        }
    }
    assert_eq!(answers.len(), 200);
    assert!(refused > 0, "a full disk refuses writes");
    let (code, health) = wait::until("/healthz to say why", Duration::from_secs(20), || {
        let (code, response) = get(&addr, "/healthz");
        (code != 200).then_some((code, response))
    });
    insta::assert_json_snapshot!(
        "disk_full",
        (code, redacted_in(home.path(), &body(&health)))
    );
    // Reads still answer.
    assert!(post(&addr, &admin, "agents.list", "{}").starts_with("HTTP/1.1 200"));

    // Space returns: the gateway recovers by itself, and no run stays
    // stuck: each ends, and one the fault interrupted says so.
    std::fs::remove_file(&filler).unwrap();
    wait::until("/healthz to recover", wait::DEADLINE, || {
        get(&addr, "/healthz").0 == 200
    });
    for id in &created {
        let run = wait::until("every run to end", Duration::from_secs(60), || {
            let run = run_status(&addr, &admin, id);
            let ended = ["completed", "failed", "cancelled"].contains(&run["status"].as_str()?);
            ended.then_some(run)
        });
        if run["status"] == "failed" {
            assert_eq!(
                (&run["error"]["code"], &run["error"]["details"]["reason"]),
                (&json!("unavailable"), &json!("store")),
                "{run}"
            );
        } else {
            assert_eq!(run["status"], "completed", "{run}");
        }
    }
    let after = body(&create("after"));
    assert_eq!(wait(after["id"].as_str().unwrap())["status"], "completed");

    // Full again: SIGTERM still ends the gateway within its grace.
    let filler = fill(&g.mount);
    let _ = create("at the stop");
    let started = Instant::now();
    let pid = g.gateway.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let exited = wait::until("the gateway to exit", Duration::from_secs(20), || {
        g.gateway.try_wait().unwrap()
    });
    let took = started.elapsed();
    assert!(exited.success(), "{exited:?}");
    // Not a timing: a stop held up by the full disk would wait on its
    // writes without end; a loaded machine only makes a bounded one slow.
    assert!(
        took < Duration::from_secs(12),
        "SIGTERM on a full disk took {took:?} (grace 2 s): the stop waits on the disk"
    );
    eprintln!("SIGTERM on a full disk: exited in {took:?} (drain grace 2 s)");
    drop(filler);
}

/// Starts and stops a gateway once, so that `home` has served; its admin
/// token.
fn served(home: &Path) -> String {
    let (mut gateway, addr, _) = start_gateway(home, &[]);
    let mut admin = String::new();
    BufReader::new(gateway.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let admin = admin.trim().to_owned();
    for key in 0..20 {
        let created = post(
            &addr,
            &admin,
            "sessions.create",
            &json!({"agentId": "main", "key": format!("session-{key}"), "metadata": {"pad": "x".repeat(2_000)}}).to_string(),
        );
        assert!(created.starts_with("HTTP/1.1 200"), "{created}");
    }
    let pid = gateway.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(gateway.wait().unwrap().success());
    admin
}

#[test]
fn a_served_state_directory_without_its_database_refuses_to_start_until_told() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    let old = served(home.path());
    for (case, damage) in [("missing", None), ("empty", Some(""))] {
        for file in ["talon.db", "talon.db-wal", "talon.db-shm"] {
            let _ = std::fs::remove_file(state.join(file));
        }
        if let Some(content) = damage {
            std::fs::write(state.join("talon.db"), content).unwrap();
        }
        let out = finish(spawn_talon(
            home.path(),
            &["gateway", "--listen", "127.0.0.1:0"],
            &[],
        ));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{case}: {stderr}");
        assert!(
            stderr.contains("the state directory has served before")
                && stderr.contains("--new-store"),
            "{case}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{case}: no new admin token");
        assert_eq!(
            std::fs::read_to_string(state.join("admin.token"))
                .unwrap()
                .trim(),
            old,
            "{case}: admin.token untouched"
        );
    }
    // Told to, it starts anew, with a new admin token; the old one is
    // kept aside, never overwritten.
    let (mut gateway, addr, _) = start_gateway(home.path(), &["--new-store"]);
    let mut admin = String::new();
    BufReader::new(gateway.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let admin = admin.trim().to_owned();
    assert_ne!(admin, old);
    assert_eq!(
        std::fs::read_to_string(state.join("admin.token"))
            .unwrap()
            .trim(),
        admin
    );
    let kept: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.starts_with("admin.token.replaced-").then_some(name)
        })
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        std::fs::read_to_string(state.join(&kept[0]))
            .unwrap()
            .trim(),
        old
    );
    assert!(post(&addr, &admin, "agents.list", "{}").starts_with("HTTP/1.1 200"));
}

#[test]
fn a_damaged_database_is_reported_and_refuses_writes() {
    let home = tempfile::tempdir().unwrap();
    let admin = served(home.path());
    let db = home.path().join("state/talon.db");
    assert!(
        !home.path().join("state/talon.db-wal").exists()
            || std::fs::metadata(home.path().join("state/talon.db-wal"))
                .unwrap()
                .len()
                == 0,
        "a clean stop checkpoints the log"
    );
    // Garbage over pages in the middle of the file (the first page, the
    // header, is left alone: this is damage, not a different file).
    let mut bytes = std::fs::read(&db).unwrap();
    let pages = bytes.len() / 4096;
    assert!(pages > 8, "{pages} pages");
    for page in pages / 2..pages / 2 + 3 {
        for (i, b) in bytes[page * 4096..(page + 1) * 4096].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) ^ 0xa5;
        }
    }
    std::fs::write(&db, &bytes).unwrap();
    let mut child = spawn_talon(home.path(), &["gateway", "--listen", "127.0.0.1:0"], &[]);
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let _gateway = Gateway(child);
    let (lines, logged) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut seen = Vec::new();
    let addr = wait::until("the gateway to listen", Duration::from_secs(20), || {
        let line = logged.recv_timeout(Duration::from_millis(100)).ok()?;
        seen.push(line.clone());
        line.strip_prefix("talon gateway: listening on http://")
            .map(str::to_owned)
    });
    let (code, health) = wait::until("the integrity check", Duration::from_secs(20), || {
        let (code, response) = get(&addr, "/healthz");
        (code != 200).then_some((code, response))
    });
    insta::assert_json_snapshot!("health", (code, redacted_in(home.path(), &body(&health))));
    let refused = post(
        &addr,
        &admin,
        "sessions.create",
        r#"{"agentId": "main", "key": "after-damage"}"#,
    );
    insta::assert_json_snapshot!("refused", redacted_in(home.path(), &body(&refused)));
    // And said so in the log, as an error.
    let logged = wait::until("the log line", wait::DEADLINE, || {
        if let Some(line) = seen.iter().find(|l| l.contains("integrity check failed")) {
            return Some(line.clone());
        }
        seen.push(logged.recv_timeout(Duration::from_millis(100)).ok()?);
        None
    });
    assert!(logged.contains("ERROR"), "{logged}");
}
