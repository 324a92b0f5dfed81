//! An `ssh` environment's create-to-first-command time, against a real
//! OpenSSH server on 127.0.0.1 (`talon_testing::sshd`, as the tests in
//! `tests/suite/ssh.rs` use it: this machine is both the gateway and the
//! host).
//!
//! Each round creates one environment per variant from the same source
//! directory (20 small files in three directories and one 1 MiB file of
//! pseudo-random bytes) and times:
//!
//! - *create*: `Ssh::check` and `Ssh::prepare` (the copy and baseline on
//!   the gateway, the upload with the lease and seccomp filters, the
//!   sandbox probe, which runs `true` there);
//! - *first command*: what the gateway does for a run's first shell
//!   command: `Ssh::remote` (the run's `RemoteShell`, its key written),
//!   `push` (the mirror is unchanged, so only the check that the remote
//!   workspace is there), `true` through `RemoteShell::command` (pipes, a
//!   process group, network off, as `talon-core-tools` spawns it), `pull`
//!   (the workspace back into the mirror);
//! - *total*: both.
//!
//! The variants are the host's `sandbox` `"bubblewrap"` (`bwrap`) and
//! `"none"` (`none`), interleaved, the first of the two alternating
//! round by round, and, as a reference, the `local` provider (`local`:
//! `Local::prepare`, then `true` in `talon-jail`'s sandbox, the default
//! `Policy`, as a local environment's command runs). Each environment is
//! released after its round's timing, outside it.
//!
//! For where the create time goes, each round also prepares one more
//! environment per `ssh` variant step by step (the same calls `prepare`
//! makes: `Local::prepare`, `Ssh::remote`, `push`, a probe `true`), and
//! times three anchors: a bare `ssh ... true` to the same server (one
//! connection and the remote login shell, nothing of Talon's), that
//! login shell alone running `true` as sshd starts it (the remote user's
//! startup files, paid by every connection), and
//! `talon_jail::seccomp_filters()` (compiled for each upload). The first
//! warm-up round's totals are printed too (`first-round`).
//!
//! `cargo bench -p talon-environments --bench ssh [-- --runs N] [--warmup N]`
//! (30 rounds after 3 warm-up rounds by default). One JSON object per
//! line on stdout (`env`, `remote-user`, `first-round`, `upload`, then
//! `create-to-first-command` per variant and phase: p50, p90, p99, min,
//! max, mean in ms, `paired-delta` bwrap − none per phase, `anchor`,
//! `end`); progress on stderr. Results in `docs/benchmarks.md`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    missing_docs,
    reason = "a benchmark binary fails loudly and prints its figures"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_environments::local::Local;
use talon_environments::ssh::{RemoteSandbox, Ssh, SshHost, SshIdentity};
use talon_environments::{Context, EnvironmentPolicy, EnvironmentProvider, SecretSource, dir_of};
use talon_jail::{Access, Jail, Network, Policy, Spec};
use talon_testing::sshd::Sshd;
use talon_testing::stats::{median, round3, summary};

/// Settings from the command line.
struct Options {
    runs: usize,
    warmup: usize,
}

fn options() -> Options {
    let mut o = Options {
        runs: 30,
        warmup: 3,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .expect("a number after the option")
        };
        match arg.as_str() {
            "--bench" => {}
            "--runs" => o.runs = number(),
            "--warmup" => o.warmup = number(),
            other => panic!("unknown argument {other:?} (--runs N, --warmup N)"),
        }
    }
    assert!(o.runs > 0, "--runs must be at least 1");
    o
}

fn emit(line: Value) {
    println!("{line}");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The server, the admin's sources and key, the gateway's state
/// directory and the remote workdir (all on this machine).
struct Setup {
    sshd: Sshd,
    _sources: tempfile::TempDir,
    state: tempfile::TempDir,
    remote: tempfile::TempDir,
    policy: EnvironmentPolicy,
    source: PathBuf,
}

/// A small, deterministic, incompressible byte stream (xorshift64).
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.extend_from_slice(&seed.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// 20 small text files in `src/`, `src/util/`, `docs/`, and a 1 MiB
/// binary file in `assets/`. Returns (files, bytes).
fn write_source(app: &Path) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0u64;
    for dir in ["src/util", "docs", "assets"] {
        std::fs::create_dir_all(app.join(dir)).unwrap();
    }
    for i in 0..20 {
        let dir = match i % 3 {
            0 => "src",
            1 => "src/util",
            _ => "docs",
        };
        let mut text = String::new();
        for line in 0..(40 + i * 5) {
            text.push_str(&format!(
                "// file {i}, line {line}: the quick brown fox jumps over the lazy dog\n"
            ));
        }
        std::fs::write(app.join(format!("{dir}/file_{i:02}.rs")), &text).unwrap();
        files += 1;
        bytes += text.len() as u64;
    }
    let blob = noise(1 << 20, 0x9e37_79b9_7f4a_7c15);
    std::fs::write(app.join("assets/blob.bin"), &blob).unwrap();
    files += 1;
    bytes += blob.len() as u64;
    (files, bytes)
}

impl Setup {
    fn start() -> (Setup, usize, u64) {
        let sshd = Sshd::start().unwrap();
        let sources = tempfile::tempdir().unwrap();
        let root = sources.path().canonicalize().unwrap();
        let source = root.join("app");
        let (files, bytes) = write_source(&source);
        let policy = EnvironmentPolicy {
            source_roots: vec![root],
            secrets: BTreeMap::from([(
                "BUILD_KEY".to_owned(),
                SecretSource::File(sshd.client_key_path().to_path_buf()),
            )]),
            ..EnvironmentPolicy::default()
        };
        let state = tempfile::tempdir().unwrap();
        let remote = tempfile::Builder::new()
            .prefix("talon-ssh-bench-")
            .tempdir_in("/var/tmp")
            .unwrap();
        (
            Setup {
                sshd,
                _sources: sources,
                state,
                remote,
                policy,
                source,
            },
            files,
            bytes,
        )
    }

    fn state_dir(&self) -> PathBuf {
        self.state.path().canonicalize().unwrap()
    }

    fn ssh(&self, sandbox: RemoteSandbox) -> Ssh {
        let host = SshHost {
            host: self.sshd.host().to_owned(),
            port: self.sshd.port(),
            user: self.sshd.user().to_owned(),
            host_key: self.sshd.host_public_key().to_owned(),
            identity: SshIdentity {
                secret: "BUILD_KEY".to_owned(),
            },
            workdir: format!("{}/work", self.remote.path().display()),
            sandbox,
            lease_seconds: 600,
        };
        Ssh::new(BTreeMap::from([("build".to_owned(), host)]), &self.policy).unwrap()
    }

    fn context(&self) -> Context<'_> {
        Context {
            room: None,
            policy: &self.policy,
            state_dir: self.state.path(),
            sandboxed: true,
        }
    }

    fn local_settings(&self) -> Value {
        json!({"source": {"path": self.source}})
    }

    fn ssh_settings(&self) -> Value {
        json!({"host": "build", "source": {"path": self.source}})
    }
}

/// One `ssh` environment from create to the end of its first command.
struct SshSample {
    create: f64,
    shell: f64,
    push: f64,
    exec: f64,
    pull: f64,
    first: f64,
    total: f64,
}

async fn ssh_once(setup: &Setup, ssh: &Ssh, id: &str) -> SshSample {
    let settings = setup.ssh_settings();
    let dir = dir_of(&setup.state_dir(), id);
    let start = Instant::now();
    ssh.check(&settings, setup.context()).unwrap();
    ssh.prepare(&settings, &dir, setup.context()).await.unwrap();
    let created = Instant::now();
    let binding = ssh.bind(&settings, setup.context()).unwrap();
    let shell = ssh.remote(&settings, &dir).unwrap();
    let shelled = Instant::now();
    let pushed_counts = shell.push().await.unwrap();
    assert_eq!(pushed_counts.entries, 0, "nothing changed since prepare");
    let pushed = Instant::now();
    let confined = shell
        .command("true", &binding.env, binding.network)
        .unwrap();
    let mut command = confined.command;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let output = command.output().await.unwrap();
    drop(confined.guard);
    let ran = Instant::now();
    assert!(
        output.status.success(),
        "{id}: {:?} {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    shell.pull().await.unwrap();
    let end = Instant::now();
    drop(shell);
    ssh.release(&settings, &dir).await.unwrap();
    SshSample {
        create: ms(created - start),
        shell: ms(shelled - created),
        push: ms(pushed - shelled),
        exec: ms(ran - pushed),
        pull: ms(end - ran),
        first: ms(end - created),
        total: ms(end - start),
    }
}

/// `prepare`'s steps, one at a time, for another environment.
struct Parts {
    copy: f64,
    key: f64,
    upload: f64,
    probe: f64,
    sum: f64,
    entries: usize,
    bytes: u64,
}

async fn ssh_parts(setup: &Setup, ssh: &Ssh, id: &str) -> Parts {
    let settings = setup.ssh_settings();
    let dir = dir_of(&setup.state_dir(), id);
    let start = Instant::now();
    Local
        .prepare(&setup.local_settings(), &dir, setup.context())
        .await
        .unwrap();
    let copied = Instant::now();
    let shell = ssh.remote(&settings, &dir).unwrap();
    let keyed = Instant::now();
    let counts = shell.push().await.unwrap();
    let uploaded = Instant::now();
    let probe = shell.command("true", &[], Some(Network::Off)).unwrap();
    let mut command = probe.command;
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    let output = command.output().await.unwrap();
    drop(probe.guard);
    let end = Instant::now();
    assert!(
        output.status.success(),
        "{id}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    drop(shell);
    ssh.release(&settings, &dir).await.unwrap();
    Parts {
        copy: ms(copied - start),
        key: ms(keyed - copied),
        upload: ms(uploaded - keyed),
        probe: ms(end - uploaded),
        sum: ms(end - start),
        entries: counts.entries,
        bytes: counts.bytes,
    }
}

/// A `local` environment from create to the end of its first command.
struct LocalSample {
    create: f64,
    exec: f64,
    total: f64,
}

async fn local_once(setup: &Setup, jail: &Jail, id: &str) -> LocalSample {
    let settings = setup.local_settings();
    let dir = dir_of(&setup.state_dir(), id);
    let start = Instant::now();
    Local.check(&settings, setup.context()).unwrap();
    let workspace = Local
        .prepare(&settings, &dir, setup.context())
        .await
        .unwrap();
    let created = Instant::now();
    let binding = Local.bind(&settings, setup.context()).unwrap();
    let spec = Spec {
        workspace: &workspace,
        access: Access::ReadWrite,
        network: binding.network.unwrap_or(Network::Off),
        env: &binding.env,
        program: "/bin/sh",
        args: &["-c", "true"],
        limits: &jail.policy().limits,
    };
    let confined = jail.command(&spec).unwrap();
    let mut command = confined.command;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let output = command.output().await.unwrap();
    let end = Instant::now();
    drop(confined.guard);
    assert!(
        output.status.success(),
        "{id}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Local.release(&settings, &dir).await.unwrap();
    LocalSample {
        create: ms(created - start),
        exec: ms(end - created),
        total: ms(end - start),
    }
}

/// A bare `ssh ... true` to the same server, with the options that
/// matter for its speed as the provider gives them (no config, no
/// agent, no connection sharing, the pinned host key).
async fn bare_ssh(setup: &Setup) -> f64 {
    let sshd = &setup.sshd;
    let mut command = tokio::process::Command::new("/usr/bin/ssh");
    command
        .args(["-F", "/dev/null", "-T", "-x", "-a"])
        .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
        .arg("-o")
        .arg(format!(
            "UserKnownHostsFile={}",
            sshd.known_hosts_path().display()
        ))
        .args(["-o", "GlobalKnownHostsFile=/dev/null"])
        .args(["-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none"])
        .arg("-i")
        .arg(sshd.client_key_path())
        .args(["-o", "ControlMaster=no", "-o", "ControlPath=none"])
        .args(["-o", "LogLevel=ERROR"])
        .arg("-p")
        .arg(sshd.port().to_string())
        .arg("-l")
        .arg(sshd.user())
        .args(["--", sshd.host(), "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let output = command.output().await.unwrap();
    let took = ms(start.elapsed());
    assert!(
        output.status.success(),
        "bare ssh: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    took
}

/// The remote user's login shell and home (`/etc/passwd`): the server
/// runs every remote command line with `<shell> -c`.
fn login_shell(user: &str) -> (String, String) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let fields: Vec<&str> = passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() >= 7 && f[0] == user)
        .expect("the user in /etc/passwd");
    (fields[6].to_owned(), fields[5].to_owned())
}

/// That shell running `true` as sshd starts it (`SSH_CLIENT` set, so
/// bash reads `~/.bashrc`), without any connection: what the remote
/// user's startup files cost each of the provider's connections here.
async fn shell_startup(shell: &str, home: &str) -> f64 {
    let mut command = tokio::process::Command::new(shell);
    command
        .args(["-c", "true"])
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("SSH_CLIENT", "127.0.0.1 40000 22")
        .env("SSH_CONNECTION", "127.0.0.1 40000 127.0.0.1 22")
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let start = Instant::now();
    let status = command.status().await.unwrap();
    let took = ms(start.elapsed());
    assert!(status.success(), "{shell} -c true: {status}");
    took
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Bwrap,
    Off,
    Local,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Bwrap => "bwrap",
            Variant::Off => "none",
            Variant::Local => "local",
        }
    }
}

/// The order of round `i`: `bwrap` and `none` alternate which goes
/// first, `local` goes first or last every other pair of rounds.
fn order(i: usize) -> [Variant; 3] {
    use Variant::{Bwrap, Local, Off};
    match i % 4 {
        0 => [Bwrap, Off, Local],
        1 => [Off, Bwrap, Local],
        2 => [Local, Bwrap, Off],
        _ => [Local, Off, Bwrap],
    }
}

/// Samples of one series, by phase.
#[derive(Default)]
struct Series(BTreeMap<&'static str, Vec<f64>>);

impl Series {
    fn push(&mut self, phase: &'static str, value: f64) {
        self.0.entry(phase).or_default().push(value);
    }

    fn get(&self, phase: &str) -> &[f64] {
        self.0.get(phase).map_or(&[], Vec::as_slice)
    }
}

fn record_ssh(series: &mut Series, s: &SshSample) {
    series.push("create", s.create);
    series.push("first_command", s.first);
    series.push("total", s.total);
    series.push("first_command.remote_shell", s.shell);
    series.push("first_command.push_check", s.push);
    series.push("first_command.exec_true", s.exec);
    series.push("first_command.pull", s.pull);
}

fn record_parts(series: &mut Series, p: &Parts) {
    series.push("prepare.copy_and_baseline", p.copy);
    series.push("prepare.remote_shell", p.key);
    series.push("prepare.upload", p.upload);
    series.push("prepare.probe_true", p.probe);
    series.push("prepare.sum", p.sum);
}

fn uptime() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn main() {
    let o = options();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (setup, files, bytes) = Setup::start();
    emit(json!({
        "bench": "env",
        "uid": std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .map(|v| v.split_whitespace().nth(1).unwrap_or("?").to_owned()),
        "runs": o.runs,
        "warmup": o.warmup,
        "source_files": files,
        "source_bytes": bytes,
        "sshd_port": setup.sshd.port(),
        "loadavg_start": uptime(),
    }));
    let (shell, home) = login_shell(setup.sshd.user());
    emit(json!({"bench": "remote-user", "user": setup.sshd.user(), "shell": shell, "home": home}));
    let bwrap = setup.ssh(RemoteSandbox::Bubblewrap);
    let none = setup.ssh(RemoteSandbox::Off);
    let jail = Jail::new(Policy::default());
    let mut ssh_series = [Series::default(), Series::default()];
    let mut local_series = Series::default();
    let mut anchors = Series::default();
    let mut transferred = None;
    runtime.block_on(async {
        for round in 0..(o.warmup + o.runs) {
            let measured = round >= o.warmup;
            let mut ssh_samples: [Option<SshSample>; 2] = [None, None];
            let mut local = None;
            for variant in order(round) {
                let id = format!("env_{round}_{}", variant.name());
                match variant {
                    Variant::Bwrap => ssh_samples[0] = Some(ssh_once(&setup, &bwrap, &id).await),
                    Variant::Off => ssh_samples[1] = Some(ssh_once(&setup, &none, &id).await),
                    Variant::Local => local = Some(local_once(&setup, &jail, &id).await),
                }
            }
            let mut parts: [Option<Parts>; 2] = [None, None];
            for variant in order(round) {
                let id = format!("env_{round}_{}_parts", variant.name());
                match variant {
                    Variant::Bwrap => parts[0] = Some(ssh_parts(&setup, &bwrap, &id).await),
                    Variant::Off => parts[1] = Some(ssh_parts(&setup, &none, &id).await),
                    Variant::Local => {}
                }
            }
            let bare = bare_ssh(&setup).await;
            let startup = shell_startup(&shell, &home).await;
            let compile = Instant::now();
            talon_jail::seccomp_filters().unwrap();
            let compile = ms(compile.elapsed());
            let [Some(b), Some(n)] = ssh_samples else {
                unreachable!()
            };
            let [Some(pb), Some(pn)] = parts else {
                unreachable!()
            };
            let local = local.unwrap();
            eprintln!(
                "round {round}{}: total bwrap {:.1} ms, none {:.1} ms, local {:.1} ms; bare ssh {bare:.1} ms",
                if measured { "" } else { " (warm-up)" },
                b.total,
                n.total,
                local.total
            );
            if round == 0 {
                emit(json!({"bench": "first-round", "unit": "ms",
                    "bwrap_total": round3(b.total), "none_total": round3(n.total),
                    "local_total": round3(local.total), "local_first_command": round3(local.exec)}));
            }
            if !measured {
                continue;
            }
            transferred = Some((pb.entries, pb.bytes));
            record_ssh(&mut ssh_series[0], &b);
            record_ssh(&mut ssh_series[1], &n);
            record_parts(&mut ssh_series[0], &pb);
            record_parts(&mut ssh_series[1], &pn);
            local_series.push("create", local.create);
            local_series.push("first_command", local.exec);
            local_series.push("total", local.total);
            anchors.push("bare_ssh_true", bare);
            anchors.push("login_shell_startup", startup);
            anchors.push("seccomp_filters_compile", compile);
        }
    });
    let (entries, sent) = transferred.unwrap();
    emit(json!({"bench": "upload", "entries": entries, "bytes": sent}));
    for (name, series) in [("bwrap", &ssh_series[0]), ("none", &ssh_series[1])] {
        for (phase, samples) in &series.0 {
            let mut line = summary(samples);
            line["bench"] = "create-to-first-command".into();
            line["variant"] = name.into();
            line["phase"] = (*phase).into();
            line["unit"] = "ms".into();
            emit(line);
        }
    }
    for (phase, samples) in &local_series.0 {
        let mut line = summary(samples);
        line["bench"] = "create-to-first-command".into();
        line["variant"] = "local".into();
        line["phase"] = (*phase).into();
        line["unit"] = "ms".into();
        emit(line);
    }
    for phase in ssh_series[0].0.keys() {
        let deltas: Vec<f64> = ssh_series[0]
            .get(phase)
            .iter()
            .zip(ssh_series[1].get(phase))
            .map(|(b, n)| b - n)
            .collect();
        emit(json!({
            "bench": "paired-delta",
            "what": "bwrap - none",
            "phase": phase,
            "unit": "ms",
            "pairs": deltas.len(),
            "median": round3(median(&deltas)),
            "p50_difference": round3(median(ssh_series[0].get(phase)) - median(ssh_series[1].get(phase))),
        }));
    }
    for (what, samples) in &anchors.0 {
        let mut line = summary(samples);
        line["bench"] = "anchor".into();
        line["what"] = (*what).into();
        line["unit"] = "ms".into();
        emit(line);
    }
    emit(json!({"bench": "end", "loadavg_end": uptime()}));
}
