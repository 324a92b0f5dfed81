//! Hostile commands in the default sandbox: each tries to reach past it
//! and must fail, while the test process (standing in for the gateway)
//! and the files beside the workspace are untouched.

use std::io::Read;
use std::net::TcpListener;

use pretty_assertions::assert_eq;
use talon_jail::{Limits, Network, Policy};

use super::{run_in, workspace};

/// A C program compiled and run in the sandbox, printing one line per
/// system call it tries: `name=0` or `name=errno`.
const SYSCALLS: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/if_ether.h>
static void *thread(void *arg) { return arg; }
#define TRY(name, expr) do { long r = (expr); printf("%s=%d\n", name, r == -1 ? errno : 0); } while (0)
int main(void) {
  TRY("ptrace", ptrace(PTRACE_ATTACH, 1, 0, 0));
  TRY("mount", mount("none", "/tmp", "tmpfs", 0, 0));
  TRY("unshare", unshare(CLONE_NEWUSER));
  TRY("packet", socket(AF_PACKET, SOCK_RAW, 0));
  TRY("raw", socket(AF_INET, SOCK_RAW, 1));
  TRY("bpf", syscall(SYS_bpf, 0, 0, 0));
  TRY("io_uring", syscall(SYS_io_uring_setup, 1, 0));
  TRY("keyctl", syscall(SYS_keyctl, 0, 0, 0));
  pthread_t t;
  printf("thread=%d\n", pthread_create(&t, 0, thread, 0));
  pthread_join(t, 0);
  return 0;
}
"#;

#[tokio::test]
async fn the_host_outside_the_workspace_is_absent() {
    let (dir, ws) = workspace();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("admin.token"), "tln_admin_secret").unwrap();
    std::os::unix::fs::symlink(state.join("admin.token"), ws.join("link")).unwrap();
    std::os::unix::fs::symlink("/etc/shadow", ws.join("shadow")).unwrap();
    let token = state.join("admin.token");
    let script = format!(
        "for f in /etc/shadow /etc/gshadow /etc/sudoers /root /home /run /var/lib {token} link shadow {state}; do \
           if [ -e \"$f\" ]; then echo \"reached $f\"; fi; done; \
         ln /etc/passwd hard 2>/dev/null && echo linked; echo done",
        token = token.display(),
        state = state.display()
    );
    let ran = run_in(Policy::default(), &ws, Network::Off, &script).await;
    assert_eq!(ran.stdout, "done\n", "{ran:?}");
}

#[tokio::test]
async fn only_the_bound_variables_are_seen_and_no_other_process() {
    // Safety of the test process's environment: a variable only this
    // process has, which a command must not find anywhere.
    let (_dir, ws) = workspace();
    let marker = format!("gateway-secret-{}", std::process::id());
    let script = format!(
        "env | sort | grep -v '^_=' | grep -v '^SHLVL=' | grep -v '^PWD=' | grep -v '^LANG=' | grep -v '^LC_ALL=' | grep -v '^TERM='; \
         cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c {marker}; \
         kill -9 {pid} 2>&1 | sed 's/.*kill: [0-9]*: //'; ls /proc | grep -c '^[0-9]'",
        pid = std::process::id()
    );
    let ran = run_in(Policy::default(), &ws, Network::Off, &script).await;
    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "BOUND=only-this",
            "HOME=/tmp",
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "TMPDIR=/tmp"
        ],
        "{ran:?}"
    );
    // No process but the sandbox's own: the marker is nowhere, the test
    // process's pid names nobody (or some sandbox process, never us).
    assert_eq!(lines[4], "0", "{ran:?}");
    let processes: usize = lines.last().unwrap().parse().unwrap();
    assert!(processes <= 6, "{ran:?}");
}

#[tokio::test]
async fn writes_land_only_in_the_workspace_and_a_private_tmp() {
    let (dir, ws) = workspace();
    let marker = format!("talon-jail-{}", std::process::id());
    let script = format!(
        "for f in /usr/x /etc/x /x /proc/sys/vm/drop_caches /proc/sysrq-trigger /proc/sys/kernel/hostname; do echo x > \"$f\" 2>/dev/null && echo \"wrote $f\"; done; \
         echo x > {parent}/x; \
         echo in > /tmp/{marker} && echo tmp; echo ok > made; echo done",
        parent = dir.path().display()
    );
    let ran = run_in(Policy::default(), &ws, Network::Off, &script).await;
    assert_eq!(ran.stdout, "tmp\ndone\n", "{ran:?}");
    assert!(
        ran.stderr
            .contains("cannot create /usr/x: Read-only file system"),
        "{ran:?}"
    );
    // The workspace's parent, recreated inside the private /tmp, took
    // that write; the host's did not.
    assert_eq!(std::fs::read_to_string(ws.join("made")).unwrap(), "ok\n");
    assert!(!std::path::Path::new("/tmp").join(&marker).exists());
    assert!(!dir.path().join("x").exists());
}

#[tokio::test]
async fn system_calls_past_the_sandbox_are_refused_and_threads_still_start() {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join("calls.c"), SYSCALLS).unwrap();
    let ran = run_in(
        Policy::default(),
        &ws,
        Network::Off,
        "gcc -o /tmp/calls calls.c -lpthread && /tmp/calls && grep NoNewPrivs /proc/self/status",
    )
    .await;
    let eperm = libc::EPERM;
    assert_eq!(
        ran.stdout,
        format!(
            "ptrace={eperm}\nmount={eperm}\nunshare={eperm}\npacket={eperm}\nraw={eperm}\nbpf={eperm}\n\
             io_uring={eperm}\nkeyctl={eperm}\nthread=0\nNoNewPrivs:\t1\n"
        ),
        "{ran:?}"
    );
}

#[tokio::test]
async fn the_network_is_off_unless_the_policy_gives_the_host_one() {
    let (_dir, ws) = workspace();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected; \
         getent hosts example.com >/dev/null && echo resolved; echo done"
    );
    let bash = |script: &str| format!("exec bash -c '{}'", script.replace('\'', "'\\''"));
    let off = run_in(Policy::default(), &ws, Network::Host, &bash(&script)).await;
    assert_eq!(
        off.stdout, "done\n",
        "the policy's off wins over a caller's host: {off:?}"
    );
    let host = Policy {
        network: Network::Host,
        ..Policy::default()
    };
    let on = run_in(host.clone(), &ws, Network::Host, &bash(&script)).await;
    assert!(on.stdout.starts_with("connected\n"), "{on:?}");
    let (mut conn, _) = listener.accept().unwrap();
    let mut got = String::new();
    conn.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hi\n");
    let narrowed = run_in(host, &ws, Network::Off, &bash(&script)).await;
    assert_eq!(narrowed.stdout, "done\n", "a caller narrows: {narrowed:?}");
}

#[tokio::test]
async fn a_fork_bomb_meets_the_process_limit_and_dies_with_the_command() {
    let (_dir, ws) = workspace();
    let policy = Policy {
        limits: Limits {
            processes: 32,
            ..Limits::default()
        },
        ..Policy::default()
    };
    let marker = format!(
        "{}.{}",
        4000 + std::process::id() % 1000,
        std::process::id() % 97
    );
    // The bomb's shell exits when a fork fails (dash does); the count of
    // processes needs no fork (a glob, and builtins).
    let script = format!(
        "(i=0; while [ $i -lt 100 ]; do sleep {marker} & i=$((i+1)); done) 2>/dev/null; echo \"exit=$?\"; \
         set -- /proc/[0-9]*; echo \"processes=$#\""
    );
    let ran = run_in(policy, &ws, Network::Off, &script).await;
    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert_eq!(lines[0], "exit=2", "{ran:?}");
    let processes: usize = lines[1].trim_start_matches("processes=").parse().unwrap();
    assert!((20..=32).contains(&processes), "{ran:?}");
    // The sleeps outlived `sh` inside; they died with the namespace.
    let survivors = std::process::Command::new("pgrep")
        .args(["-f", &format!("sleep {marker}")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&survivors.stdout), "");
}

#[tokio::test]
async fn memory_file_size_and_tmp_are_bounded() {
    let (_dir, ws) = workspace();
    let policy = Policy {
        limits: Limits {
            memory_bytes: 256 << 20,
            file_size_bytes: 1 << 20,
            tmp_bytes: 2 << 20,
            ..Limits::default()
        },
        ..Policy::default()
    };
    let ran = run_in(
        policy,
        &ws,
        Network::Off,
        "perl -e '$x = \"a\" x (1 << 30); print \"allocated\\n\"' 2>/dev/null || echo memory; \
         (dd if=/dev/zero of=big bs=1M count=4 2>/dev/null) || echo size; \
         (dd if=/dev/zero of=/tmp/a bs=512K count=3; dd if=/dev/zero of=/tmp/b bs=512K count=3) 2>/dev/null || echo tmp",
    )
    .await;
    assert_eq!(ran.stdout, "memory\nsize\ntmp\n", "{ran:?}");
    assert_eq!(std::fs::metadata(ws.join("big")).unwrap().len(), 1 << 20);
}

#[tokio::test]
async fn setuid_binaries_do_not_elevate() {
    let (_dir, ws) = workspace();
    let ran = run_in(
        Policy::default(),
        &ws,
        Network::Off,
        "cp /bin/sh ./suid 2>/dev/null; chmod 4755 ./suid 2>/dev/null; ./suid -c 'cat /proc/self/status' | grep -E '^(Uid|CapEff)'",
    )
    .await;
    assert_eq!(
        ran.stdout
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>(),
        [
            format!("Uid: {u} {u} {u} {u}", u = nix::unistd::Uid::current()),
            "CapEff: 0000000000000000".to_owned()
        ],
        "{ran:?}"
    );
}
