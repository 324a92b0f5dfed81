//! The `ssh` provider against a real OpenSSH server (`talon_testing::sshd`:
//! this machine, as the current user, on 127.0.0.1, host key pinned):
//! prepare uploads, commands run remotely in their sandbox with their
//! variables, files come back, hosts and settings are checked, hostile
//! names and commands cross unharmed, a killed connection kills its
//! command, release and sweep remove remote workspaces.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use talon_environments::ssh::{
    RemoteSandbox, RemoteShell, Ssh, SshConfigError, SshHost, SshIdentity,
};
use talon_environments::{Context, EnvironmentPolicy, EnvironmentProvider, SecretSource, dir_of};
use talon_jail::Network;
use talon_protocol::gateway::ErrorCode;
use talon_testing::sshd::{Sshd, generate_key};
use talon_testing::wait;

/// A server, the admin's sources and secrets, a state directory, and the
/// remote workdir (on this same machine), whose name needs quoting.
struct Fixture {
    sshd: Sshd,
    sources: tempfile::TempDir,
    state: tempfile::TempDir,
    remote: tempfile::TempDir,
    policy: EnvironmentPolicy,
}

impl Fixture {
    fn start() -> Fixture {
        let sshd = Sshd::start().unwrap();
        let sources = tempfile::tempdir().unwrap();
        let root = sources.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("app")).unwrap();
        std::fs::write(root.join("app/main.txt"), "one\n").unwrap();
        std::fs::write(root.join("token"), "s3cret\n").unwrap();
        let policy = EnvironmentPolicy {
            source_roots: vec![root.clone()],
            secrets: BTreeMap::from([
                (
                    "DEPLOY_TOKEN".to_owned(),
                    SecretSource::File(root.join("token")),
                ),
                (
                    "BUILD_KEY".to_owned(),
                    SecretSource::File(sshd.client_key_path().to_path_buf()),
                ),
            ]),
            ..EnvironmentPolicy::default()
        };
        Fixture {
            sshd,
            sources,
            state: tempfile::tempdir().unwrap(),
            remote: tempfile::Builder::new()
                .prefix("talon-ssh-remote-")
                .tempdir_in("/var/tmp")
                .unwrap(),
            policy,
        }
    }

    fn source(&self) -> PathBuf {
        self.sources.path().canonicalize().unwrap().join("app")
    }

    /// The remote workdir: `it's a $(dir)` under the remote temp dir.
    fn workdir(&self) -> String {
        format!("{}/it's a $(dir) `x`", self.remote.path().display())
    }

    fn host(&self, sandbox: RemoteSandbox) -> SshHost {
        SshHost {
            host: self.sshd.host().to_owned(),
            port: self.sshd.port(),
            user: self.sshd.user().to_owned(),
            host_key: self.sshd.host_public_key().to_owned(),
            identity: SshIdentity {
                secret: "BUILD_KEY".to_owned(),
            },
            workdir: self.workdir(),
            sandbox,
            lease_seconds: 600,
        }
    }

    fn ssh(&self, sandbox: RemoteSandbox) -> Ssh {
        Ssh::new(
            BTreeMap::from([("build".to_owned(), self.host(sandbox))]),
            &self.policy,
        )
        .unwrap()
    }

    fn context(&self) -> Context<'_> {
        Context {
            room: None,
            policy: &self.policy,
            state_dir: self.state.path(),
            sandboxed: true,
        }
    }

    fn settings(&self) -> Value {
        json!({"host": "build", "source": {"path": self.source()}, "secrets": ["DEPLOY_TOKEN"]})
    }

    fn dir(&self, id: &str) -> PathBuf {
        dir_of(self.state.path(), id)
    }

    fn remote_root(&self, id: &str) -> PathBuf {
        PathBuf::from(format!("{}/{id}", self.workdir()))
    }
}

/// Runs one command the way the gateway does: pipes, to its end.
async fn run(
    shell: &RemoteShell,
    command: &str,
    env: &[(String, String)],
    network: Option<Network>,
) -> (Option<i32>, String, String) {
    let confined = shell.command(command, env, network).unwrap();
    let (mut command, _guard) = (confined.command, confined.guard);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let output = wait::within("the remote command", wait::DEADLINE, command.output())
        .await
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn lease_of(root: &Path) -> u64 {
    std::fs::read_to_string(root.join(".talon-lease"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread")]
async fn prepare_uploads_a_command_runs_remotely_and_its_files_come_back() {
    let f = Fixture::start();
    let ssh = f.ssh(RemoteSandbox::Bubblewrap);
    let capabilities = serde_json::to_value(ssh.capabilities(f.context())).unwrap();
    assert_eq!(
        capabilities,
        json!({"checkout": true, "sandbox": true, "networkPolicy": true, "secrets": true,
               "artifacts": true, "logs": true, "pullRequests": false, "longRunning": true})
    );
    let settings = f.settings();
    ssh.check(&settings, f.context()).unwrap();
    let dir = f.dir("env_1");
    let workspace = ssh.prepare(&settings, &dir, f.context()).await.unwrap();
    assert_eq!(workspace, dir.join("workspace"));
    let root = f.remote_root("env_1");
    assert_eq!(
        std::fs::read_to_string(root.join("workspace/main.txt")).unwrap(),
        "one\n"
    );
    assert!(lease_of(&root) > now() + 500, "the lease is now + 600 s");

    let binding = ssh.bind(&settings, f.context()).unwrap();
    assert_eq!(
        binding.env,
        vec![("DEPLOY_TOKEN".to_owned(), "s3cret".to_owned())]
    );
    let shell = ssh.remote(&settings, &dir).unwrap();
    let remote_ws = format!("{}/env_1/workspace", f.workdir());
    assert_eq!(shell.remote_workspace(), remote_ws);
    assert!(shell.sandboxed());
    // Nothing changed since prepare: nothing is sent.
    assert_eq!(shell.push().await.unwrap().entries, 0);
    let (code, stdout, stderr) = run(
        &shell,
        "pwd; printf '%s\\n' \"$DEPLOY_TOKEN\"; echo two > main.txt; mkdir -p out && echo made > out/new.txt",
        &binding.env,
        binding.network,
    )
    .await;
    assert_eq!(
        (code, stdout, stderr),
        (Some(0), format!("{remote_ws}\ns3cret\n"), String::new())
    );
    // The remote side, not the mirror, changed.
    assert_eq!(
        std::fs::read_to_string(workspace.join("main.txt")).unwrap(),
        "one\n"
    );
    let pulled = shell.pull().await.unwrap();
    assert_eq!((pulled.entries, pulled.skipped), (3, 0));
    assert_eq!(
        std::fs::read_to_string(workspace.join("main.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("out/new.txt")).unwrap(),
        "made\n"
    );
    let collected = ssh.collect(&dir).await.unwrap();
    let diff = collected.diff.unwrap();
    assert!(diff.contains("-one\n+two\n"), "{diff}");
    assert!(diff.contains("+++ b/out/new.txt"), "{diff}");

    // The sandbox: no network but a loopback, and none of the gateway's
    // files (its state directory) in sight.
    let (code, stdout, _) = run(
        &shell,
        &format!(
            "grep -c : /proc/net/dev; test -e {} && echo visible || echo hidden",
            talon_environments::ssh::quote(&workspace.display().to_string())
        ),
        &[],
        None,
    )
    .await;
    assert_eq!((code, stdout.as_str()), (Some(0), "1\nhidden\n"));

    // A change made on the mirror (the file tools) reaches the host.
    std::fs::write(workspace.join("main.txt"), "three\n").unwrap();
    std::fs::remove_file(workspace.join("out/new.txt")).unwrap();
    assert!(shell.push().await.unwrap().entries > 0);
    let (_, stdout, _) = run(&shell, "cat main.txt; ls out", &[], None).await;
    assert_eq!(stdout, "three\n");

    drop(shell);
    let released = ssh.release(&settings, &dir).await.unwrap();
    assert!(released.contains("was removed"), "{released}");
    assert!(!root.exists(), "the remote directory is gone");
    assert!(!dir.exists(), "the local directory is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_presenting_another_key_than_the_pinned_one_is_refused() {
    let f = Fixture::start();
    let other = f.state.path().join("other_host_key");
    let mut host = f.host(RemoteSandbox::Bubblewrap);
    host.host_key = generate_key(&other).unwrap();
    let ssh = Ssh::new(BTreeMap::from([("build".to_owned(), host)]), &f.policy).unwrap();
    let error = ssh
        .prepare(&f.settings(), &f.dir("env_1"), f.context())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Unavailable, "{}", error.message);
    assert!(
        error.message.starts_with("ssh host \"build\" (")
            && error.message.contains("host-key mismatch"),
        "{}",
        error.message
    );
    assert_eq!(
        error.details.unwrap().reason.as_deref(),
        Some("hostKeyMismatch")
    );
    assert!(
        !Path::new(&f.workdir()).exists(),
        "nothing was made on the host"
    );
}

#[test]
fn unknown_hosts_are_forbidden_and_bad_settings_refused() {
    let sources = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let root = sources.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("app")).unwrap();
    let policy = EnvironmentPolicy {
        source_roots: vec![root.clone()],
        secrets: BTreeMap::from([
            ("BUILD_KEY".to_owned(), SecretSource::Env("KEY".into())),
            ("DEPLOY_TOKEN".to_owned(), SecretSource::Env("TOKEN".into())),
        ]),
        ..EnvironmentPolicy::default()
    };
    let host: SshHost = serde_json::from_value(json!({
        "host": "127.0.0.1", "user": "talon",
        "hostKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB5",
        "identity": {"secret": "BUILD_KEY"}
    }))
    .unwrap();
    let ssh = Ssh::new(
        BTreeMap::from([("build".to_owned(), host.clone())]),
        &policy,
    )
    .unwrap();
    let context = Context {
        room: None,
        policy: &policy,
        state_dir: state.path(),
        sandboxed: true,
    };
    let app = root.join("app");
    ssh.check(&json!({"host": "build", "source": {"path": app}}), context)
        .unwrap();
    for (settings, code, message) in [
        (
            json!({"host": "elsewhere", "source": {"path": app}}),
            ErrorCode::Forbidden,
            "settings.host: \"elsewhere\" is not an SSH host of this gateway (its admin names them: [\"build\"])",
        ),
        (
            json!({"source": {"path": app}}),
            ErrorCode::InvalidRequest,
            "settings.host: required",
        ),
        (
            json!({"host": 7, "source": {"path": app}}),
            ErrorCode::InvalidRequest,
            "settings.host: expected",
        ),
        (
            json!({"host": "build", "source": {"path": app}, "secrets": ["BUILD_KEY"]}),
            ErrorCode::Forbidden,
            "settings.secrets: \"BUILD_KEY\" is the client key of SSH host \"build\"",
        ),
        (
            json!({"host": "build", "source": {"path": "/etc"}}),
            ErrorCode::Forbidden,
            "settings.source.path: /etc is not inside a source root",
        ),
        (
            json!({"host": "build", "source": {"path": app}, "network": "maybe"}),
            ErrorCode::InvalidRequest,
            "settings: ",
        ),
        (
            json!({"host": "build", "source": {"path": app}, "pullRequest": {"forge": "gh"}}),
            ErrorCode::InvalidRequest,
            "settings.pullRequest: ",
        ),
        (json!("build"), ErrorCode::InvalidRequest, "settings: "),
    ] {
        let error = ssh.check(&settings, context).unwrap_err();
        assert_eq!(error.code, code, "{settings}: {}", error.message);
        assert!(
            error.message.starts_with(message),
            "{settings}: {}",
            error.message
        );
    }
    let error = ssh
        .bind(
            &json!({"host": "build", "source": {"path": app}, "secrets": ["BUILD_KEY"]}),
            context,
        )
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Forbidden);
    // The admin's config: an identity that is no secret of theirs.
    let mut stray = host;
    stray.identity.secret = "MISSING".to_owned();
    let error = Ssh::new(BTreeMap::from([("build".to_owned(), stray)]), &policy).unwrap_err();
    assert!(
        matches!(
            &error,
            SshConfigError::Invalid {
                field: "identity.secret",
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "sshHosts.build.identity.secret: \"MISSING\" is not one of the admin's secrets (gateway.environments.secrets)"
    );
}

/// Names no shell may interpret.
const HOSTILE: &[&str] = &[
    "it's",
    "$(touch PWNED)",
    "`touch PWNED2`",
    "new\nline",
    "-rf",
    "back\\slash",
    "\"double\"",
    "semi;colon & pipe| <redir>",
    "* glob ?",
    " leading space",
    "ünïcödé ✓",
];

#[tokio::test(flavor = "multi_thread")]
async fn hostile_names_commands_and_values_cross_unharmed() {
    let f = Fixture::start();
    let app = f.source();
    for name in HOSTILE {
        std::fs::write(app.join(name), name).unwrap();
    }
    std::fs::create_dir(app.join("dir $(x) 'y'")).unwrap();
    std::fs::write(app.join("dir $(x) 'y'/inner\n'z'"), "inner").unwrap();
    let ssh = f.ssh(RemoteSandbox::Bubblewrap);
    let settings = f.settings();
    let dir = f.dir("env_1");
    let workspace = ssh.prepare(&settings, &dir, f.context()).await.unwrap();
    let remote_ws = f.remote_root("env_1").join("workspace");
    for name in HOSTILE {
        assert_eq!(
            std::fs::read_to_string(remote_ws.join(name)).unwrap(),
            *name,
            "{name:?} crossed"
        );
    }
    let shell = ssh.remote(&settings, &dir).unwrap();
    let value = "'; touch PWNED3; echo '$(touch PWNED4)\"`touch PWNED5`\nsecond line\\";
    let env = vec![("HOSTILE".to_owned(), value.to_owned())];
    let command = "printf '%s|' \"it's\" '$(touch PWNED6)' \"$(echo sub)\" 'multi\nline' \"$HOSTILE\"\n\
                   mv -- \"it's\" \"it's moved\"; printf 'x' > '$(y)'";
    let (code, stdout, stderr) = run(&shell, command, &env, None).await;
    assert_eq!(
        (code, stdout, stderr),
        (
            Some(0),
            format!("it's|$(touch PWNED6)|sub|multi\nline|{value}|"),
            String::new()
        )
    );
    shell.pull().await.unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&workspace)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut expected: Vec<String> = HOSTILE
        .iter()
        .map(|n| if *n == "it's" { "it's moved" } else { n }.to_string())
        .chain(["main.txt", "dir $(x) 'y'", "$(y)"].map(String::from))
        .collect();
    expected.sort();
    assert_eq!(names, expected, "no PWNED file anywhere");
    assert_eq!(
        std::fs::read_to_string(workspace.join("dir $(x) 'y'/inner\n'z'")).unwrap(),
        "inner"
    );
    // Where an injected `touch` would have written: the remote side's
    // directories and the remote user's home (this user's).
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    for place in [&remote_ws, Path::new(&f.workdir()), f.remote.path(), &home] {
        let pwned = std::fs::read_dir(place)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with("PWNED"));
        assert!(!pwned, "{} holds no PWNED file", place.display());
    }
    // A NUL byte cannot cross and is refused, not cut.
    let error = shell.command("echo a\0b", &[], None).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    let error = shell
        .command("true", &[("A B".to_owned(), "x".to_owned())], None)
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
}

/// The processes of this machine whose command line holds `marker`, but
/// `except`.
fn holding(marker: &str, except: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == except || pid == std::process::id() {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push((pid, cmdline.chars().take(120).collect()));
        }
    }
    found
}

async fn killing_the_connection_kills_the_command(sandbox: RemoteSandbox) {
    let f = Fixture::start();
    let ssh = f.ssh(sandbox);
    let settings = f.settings();
    let dir = f.dir("env_1");
    ssh.prepare(&settings, &dir, f.context()).await.unwrap();
    let shell = ssh.remote(&settings, &dir).unwrap();
    // A sleep of a unique length: the marker is in the sleep's own
    // command line, and in every shell above it.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let marker = format!("4321.{:09}", nanos.max(1));
    let mut command = shell
        .command(
            &format!("sleep {marker} & sleep {marker}; echo done"),
            &[],
            None,
        )
        .unwrap()
        .command;
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let ssh_pid = child.id().unwrap();
    let sleeping = wait::until_async("the remote sleeps to start", wait::DEADLINE, || {
        let marker = marker.clone();
        async move {
            let found = holding(&marker, ssh_pid);
            let sleeps = found
                .iter()
                .filter(|(_, c)| c.starts_with("sleep "))
                .count();
            if sleeps == 2 { Ok(found) } else { Err(found) }
        }
    })
    .await;
    assert!(sleeping.len() >= 3, "{sleeping:?}");
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let marker2 = marker.clone();
    wait::until_async(
        "every remote process of the command to die with its connection",
        wait::DEADLINE,
        || {
            let marker = marker2.clone();
            async move {
                let left = holding(&marker, ssh_pid);
                if left.is_empty() { Ok(()) } else { Err(left) }
            }
        },
    )
    .await;
    drop(shell);
    ssh.release(&settings, &dir).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_local_ssh_kills_the_remote_command_in_bubblewrap() {
    killing_the_connection_kills_the_command(RemoteSandbox::Bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_local_ssh_kills_the_remote_command_unsandboxed() {
    killing_the_connection_kills_the_command(RemoteSandbox::Off).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_command_runs_under_the_gateways_seccomp_filter() {
    let f = Fixture::start();
    let ssh = f.ssh(RemoteSandbox::Bubblewrap);
    let settings = f.settings();
    let dir = f.dir("env_1");
    ssh.prepare(&settings, &dir, f.context()).await.unwrap();
    let root = f.remote_root("env_1");
    // The filters, once per upload, next to the lease, as the gateway
    // compiled them.
    let filters = talon_jail::seccomp_filters().unwrap();
    for (i, program) in filters.programs.iter().enumerate() {
        assert_eq!(
            &std::fs::read(root.join(format!("seccomp-{i}.bpf"))).unwrap(),
            program
        );
    }
    let shell = ssh.remote(&settings, &dir).unwrap();
    let (code, stdout, stderr) = run(
        &shell,
        "grep Seccomp: /proc/self/status; unshare -U true; echo \"unshare: $?\"",
        &[],
        None,
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "Seccomp:\t2\nunshare: 1\n");
    assert!(stderr.contains("Operation not permitted"), "{stderr}");
    // Without its filters, no command runs (nor unfiltered).
    std::fs::remove_file(root.join("seccomp-1.bpf")).unwrap();
    let (code, _, stderr) = run(&shell, "true", &[], None).await;
    assert_eq!(code, Some(125));
    assert!(stderr.contains("seccomp filters"), "{stderr}");
    // A push that finds them missing uploads them again.
    assert!(shell.push().await.unwrap().entries > 0);
    let (code, _, stderr) = run(&shell, "true", &[], None).await;
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unsandboxed_host_runs_commands_with_only_their_variables() {
    let f = Fixture::start();
    let ssh = f.ssh(RemoteSandbox::Off);
    assert_eq!(ssh.capabilities(f.context()).sandbox, Some(false));
    let settings = json!({"host": "build", "source": {"path": f.source()}, "network": "host"});
    let dir = f.dir("env_1");
    ssh.prepare(&settings, &dir, f.context()).await.unwrap();
    let shell = ssh.remote(&settings, &dir).unwrap();
    assert!(!shell.sandboxed());
    let binding = ssh.bind(&settings, f.context()).unwrap();
    let (code, stdout, _) = run(
        &shell,
        "pwd; env | grep -c -e '^SSH_' -e '^TALON_E' -e '^USER='; exit 3",
        &[("ONLY".to_owned(), "me".to_owned())],
        binding.network,
    )
    .await;
    assert_eq!(
        (code, stdout),
        (Some(3), format!("{}/env_1/workspace\n0\n", f.workdir()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn release_and_sweep_remove_remote_workspaces() {
    let f = Fixture::start();
    let ssh = f.ssh(RemoteSandbox::Bubblewrap);
    let settings = f.settings();
    for id in ["env_live", "env_dead", "env_kept"] {
        ssh.prepare(&settings, &f.dir(id), f.context())
            .await
            .unwrap();
    }
    // A node died holding env_dead: its lease ran out long ago.
    std::fs::write(f.remote_root("env_dead").join(".talon-lease"), "1000\n").unwrap();
    // env_kept was released with retain: no lease, never swept.
    let retain = json!({"host": "build", "source": {"path": f.source()}, "retain": true});
    let released = ssh.release(&retain, &f.dir("env_kept")).await.unwrap();
    assert!(released.contains("was kept at build:"), "{released}");
    assert!(
        f.remote_root("env_kept")
            .join("workspace/main.txt")
            .exists()
    );
    assert!(!f.remote_root("env_kept").join(".talon-lease").exists());

    let report = ssh.sweep().await;
    assert_eq!(report.failed, vec![]);
    assert_eq!(
        report.removed,
        vec![("build".to_owned(), format!("{}/env_dead", f.workdir()))]
    );
    assert!(!f.remote_root("env_dead").exists());
    assert!(
        f.remote_root("env_live")
            .join("workspace/main.txt")
            .exists()
    );
    assert!(f.remote_root("env_kept").exists());

    // A swept environment's next push remakes its remote workspace.
    let shell = ssh.remote(&settings, &f.dir("env_dead")).unwrap();
    shell.push().await.unwrap();
    let (_, stdout, _) = run(&shell, "cat main.txt", &[], None).await;
    assert_eq!(stdout, "one\n");
    assert!(lease_of(&f.remote_root("env_dead")) > now());

    // Release removes the remote directory.
    ssh.release(&settings, &f.dir("env_live")).await.unwrap();
    assert!(!f.remote_root("env_live").exists());
}

/// An HTTP server on 127.0.0.1 answering every request with `body`.
async fn http_server(body: &'static str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// Sockets left in an environment's remote directory.
fn sockets(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sock"))
        .collect()
}

/// The network `"allow"` on the remote host: the listed host through the
/// gateway's proxy (forwarded over the command's own connection), an
/// unlisted port refused, no direct way out, and nothing left behind. An
/// unsandboxed host runs it as `"off"`.
#[tokio::test(flavor = "multi_thread")]
async fn allow_reaches_the_listed_hosts_through_the_gateways_proxy_and_nothing_else() {
    let f = Fixture::start();
    let listed = http_server("listed\n").await;
    let unlisted = http_server("never\n").await;
    let policy = talon_jail::Policy {
        network: Network::Allow,
        allow_hosts: vec![format!("localhost:{listed}").parse().unwrap()],
        ..talon_jail::Policy::default()
    };
    let script = format!(
        "c='curl -s -m 10 -A talon-test'
         $c -w '|%{{http_code}}\\n' http://localhost:{listed}/a
         $c -p -w '|%{{http_code}}\\n' http://localhost:{listed}/tunnel
         $c -w '|%{{http_code}}\\n' http://localhost:{unlisted}/b
         $c --noproxy '*' http://127.0.0.1:{listed}/direct; echo \"direct=$?\"
         env | grep -c '^HTTPS_PROXY='; true"
    );
    for (sandbox, expected) in [
        (
            RemoteSandbox::Bubblewrap,
            format!(
                "listed\n|200\nlisted\n|200\n\
                 refused by the sandbox's proxy: localhost:{unlisted} is not in allowHosts\n|403\n\
                 direct=7\n1\n"
            ),
        ),
        (
            RemoteSandbox::Off,
            "|000\n|000\n|000\ndirect=7\n0\n".to_owned(),
        ),
    ] {
        let ssh = f.ssh(sandbox);
        let settings = f.settings();
        let dir = f.dir("env_1");
        ssh.prepare(&settings, &dir, f.context()).await.unwrap();
        let shell = ssh
            .remote(&settings, &dir)
            .unwrap()
            .with_jail(talon_jail::Jail::new(policy.clone()));
        let (code, stdout, stderr) = run(&shell, &script, &[], Some(Network::Allow)).await;
        assert_eq!((code, stdout), (Some(0), expected), "{sandbox:?}: {stderr}");
        assert_eq!(sockets(&f.remote_root("env_1")), Vec::<String>::new());
        ssh.release(&settings, &dir).await.unwrap();
    }
}
