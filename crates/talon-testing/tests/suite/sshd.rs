//! The sshd harness: a real OpenSSH server that the real `ssh` client
//! reaches with the pinned host key and the client key, and that refuses a
//! client expecting another host key or holding another key.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use talon_testing::sshd::{self, Sshd};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn report(output: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    )
}

#[test]
fn ssh_runs_a_command_with_the_pinned_host_key() {
    let server = Sshd::start().unwrap();
    let output = server.run("echo hi").unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        report(&output),
        server.log()
    );
    assert_eq!(text(&output.stdout), "hi\n");

    let user = Command::new("id").arg("-un").output().unwrap();
    assert_eq!(server.user(), text(&user.stdout).trim());
    assert_eq!(server.host(), "127.0.0.1");
    let key = server.host_public_key();
    assert!(key.starts_with("ssh-ed25519 AAAA"), "{key}");
    assert_eq!(key.split(' ').count(), 2, "{key}");
    assert_eq!(
        server.known_hosts_line(),
        format!("[127.0.0.1]:{} {key}", server.port())
    );
    assert_eq!(
        std::fs::read_to_string(server.known_hosts_path()).unwrap(),
        format!("{}\n", server.known_hosts_line())
    );
    assert!(
        server
            .client_key()
            .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"),
        "{}",
        server.client_key()
    );
    assert_eq!(
        std::fs::read_to_string(server.client_key_path()).unwrap(),
        server.client_key()
    );
    // The host key pinned is the one the server presents.
    let scan = Command::new("ssh-keyscan")
        .args([
            "-t",
            "ed25519",
            "-p",
            &server.port().to_string(),
            "127.0.0.1",
        ])
        .output()
        .unwrap();
    assert!(
        text(&scan.stdout).contains(&server.known_hosts_line()),
        "{}",
        report(&scan)
    );
}

#[test]
fn a_client_expecting_another_host_key_is_refused() {
    let server = Sshd::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let other = sshd::generate_key(&dir.path().join("other_host")).unwrap();
    let known_hosts = dir.path().join("known_hosts");
    std::fs::write(
        &known_hosts,
        format!("[127.0.0.1]:{} {other}\n", server.port()),
    )
    .unwrap();
    let output = server
        .ssh_command_with(&known_hosts, server.client_key_path())
        .arg("echo hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(255), "{}", report(&output));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
            && stderr.contains("Host key verification failed"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());

    // A client that knows no key for the host is refused too (no
    // trust-on-first-use).
    let empty = dir.path().join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    let output = server
        .ssh_command_with(&empty, server.client_key_path())
        .arg("echo hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(255), "{}", report(&output));
    assert!(
        text(&output.stderr).contains("Host key verification failed"),
        "{}",
        report(&output)
    );
}

#[test]
fn a_wrong_client_key_is_refused() {
    let server = Sshd::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong_client");
    sshd::generate_key(&wrong).unwrap();
    let output = server
        .ssh_command_with(server.known_hosts_path(), &wrong)
        .arg("echo hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(255), "{}", report(&output));
    assert!(
        text(&output.stderr).contains("Permission denied (publickey)"),
        "{}",
        report(&output)
    );
    assert!(output.stdout.is_empty());
    // The right key still gets in.
    assert!(server.run("true").unwrap().status.success());
}

#[test]
fn stop_ends_the_server_and_its_sessions() {
    let mut server = Sshd::start().unwrap();
    let pid = server.pid().unwrap();
    let port = server.port();
    // A session still open when the server stops ends with it.
    let session = server
        .ssh_command()
        .arg("sleep 600")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    talon_testing::wait::until(
        "the session's shell to start",
        talon_testing::wait::DEADLINE,
        || {
            server.log().contains("Accepted publickey")
                && Command::new("pgrep")
                    .args(["-f", "^sleep 600$"])
                    .output()
                    .is_ok_and(|o| o.status.success())
        },
    );
    server.stop();
    assert_eq!(server.pid(), None);
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    let output = session.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(255), "{}", report(&output));
    assert!(
        text(&output.stderr).contains("closed by remote host"),
        "{}",
        report(&output)
    );
    server.stop();
}
