//! The PostgreSQL harness: a real server, fresh databases, owned durable
//! servers that vanish when dropped, and servers that die with their test
//! process even when it is SIGKILLed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use talon_testing::postgres::{PgOptions, TestPostgres};
use talon_testing::wait;

/// Marks the child's report on its stdout.
const REPORT: &str = "talon-pg-child:";

/// Whether the server of `url` (`postgres://USER@HOST:PORT/DATABASE`,
/// trust authentication) lets its user into its database: a protocol 3.0
/// startup message, answered by AuthenticationOk then ReadyForQuery, or by
/// an ErrorResponse.
fn connects(url: &str) -> bool {
    let rest = url.split_once("://").unwrap().1;
    let (authority, database) = rest.split_once('/').unwrap();
    let database = database.split('?').next().unwrap();
    let (user, host_port) = authority.rsplit_once('@').unwrap();
    let user = user.split(':').next().unwrap();
    let mut stream = TcpStream::connect(host_port).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut body = 196_608u32.to_be_bytes().to_vec();
    for part in ["user", user, "database", database] {
        body.extend_from_slice(part.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut message = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    message.extend(body);
    stream.write_all(&message).unwrap();
    // Trust authentication answers AuthenticationOk first; a missing
    // database fails after it. ReadyForQuery (`Z`) means in.
    loop {
        let mut head = [0u8; 5];
        stream.read_exact(&mut head).unwrap();
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        stream.read_exact(&mut body).unwrap();
        match head[0] {
            b'Z' => {
                // Terminate.
                let _ = stream.write_all(&[b'X', 0, 0, 0, 4]);
                return true;
            }
            b'E' => return false,
            b'R' => assert_eq!(body[..4], [0, 0, 0, 0], "trust authentication"),
            _ => {}
        }
    }
}

fn refuses(port: u16) -> bool {
    TcpStream::connect_timeout(&(Ipv4Addr::LOCALHOST, port).into(), Duration::from_secs(1)).is_err()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X')
    })
}

#[test]
fn postgres_shared_server_hands_out_fresh_databases() {
    let began = Instant::now();
    let pg = TestPostgres::shared().expect("PostgreSQL for tests");
    let started = began.elapsed();
    let again = TestPostgres::shared().unwrap();
    assert!(std::ptr::eq(pg, again), "one server per process");

    let began = Instant::now();
    let first = pg.fresh_database().unwrap();
    let first_took = began.elapsed();
    let began = Instant::now();
    let second = pg.fresh_database().unwrap();
    let second_took = began.elapsed();
    assert_ne!(first, second);
    println!(
        "shared() {} ms, fresh_database() {} ms then {} ms",
        started.as_millis(),
        first_took.as_millis(),
        second_took.as_millis()
    );

    let prefix = format!("postgres://talon@127.0.0.1:{}/", pg.port());
    if std::env::var_os(talon_testing::postgres::URL_ENV).is_none() {
        assert_eq!(pg.admin_url(), format!("{prefix}postgres"));
        assert!(first.starts_with(&prefix), "{first}");
    }
    for url in [&first, &second] {
        assert!(connects(url), "{url} accepts connections");
    }
    assert!(!connects(&pg.database_url("talon_no_such_database")));
}

#[test]
fn postgres_owned_durable_server_is_gone_after_drop() {
    let pg = TestPostgres::start(PgOptions {
        durable: true,
        ..PgOptions::default()
    })
    .expect("PostgreSQL for tests");
    let (port, pid) = (pg.port(), pg.pid().unwrap());
    let data_dir = pg.data_dir().unwrap().to_path_buf();
    assert!(data_dir.join("PG_VERSION").is_file());
    let url = pg.fresh_database().unwrap();
    assert!(connects(&url));
    assert!(alive(pid));

    drop(pg);
    assert!(refuses(port), "port {port} still accepts");
    assert!(!alive(pid), "postmaster {pid} still runs");
    assert!(!data_dir.exists(), "{} remains", data_dir.display());
}

#[test]
fn postgres_server_dies_with_a_killed_process() {
    // The child: `src/bin/talon-test-pg-child.rs`.
    let mut child = Command::new(env!("CARGO_BIN_EXE_talon-test-pg-child"))
        .env_remove(talon_testing::postgres::URL_ENV)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let line = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|line| Some(line.split_once(REPORT)?.1.to_owned()));
    // SIGKILL: no destructor, no exit handler.
    child.kill().unwrap();
    child.wait().unwrap();
    let line = line.expect("the child's report");
    let fields: Vec<&str> = line.split_whitespace().collect();
    let port: u16 = fields[0].parse().unwrap();
    let pid: u32 = fields[1].parse().unwrap();
    let data_dir = Path::new(fields[2]).to_path_buf();

    wait::until(
        &format!("postmaster {pid} to exit with its process"),
        wait::DEADLINE,
        || !alive(pid),
    );
    assert!(refuses(port), "port {port} still accepts");
    // A shutdown, not a kill: the postmaster removed its lock file (and
    // with it its shared memory segment).
    assert!(!data_dir.join("postmaster.pid").exists());

    // The next start sweeps the dead process's directory away.
    assert!(data_dir.exists());
    let other = TestPostgres::start(PgOptions::default()).unwrap();
    wait::until(
        &format!("{} to be swept", data_dir.display()),
        wait::DEADLINE,
        || !data_dir.exists(),
    );
    drop(other);
}
