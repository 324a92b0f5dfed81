//! [`RemoteShell`]: what a gateway runs an environment's commands with
//! on its SSH host. The local mirror (`<dir>/workspace`, where the
//! gateway's file tools work and the baseline diff is taken) is the truth
//! between commands; before each command [`RemoteShell::push`] makes the
//! remote workspace equal to it, [`RemoteShell::command`] is the `ssh`
//! process running the command there, and [`RemoteShell::pull`] makes the
//! mirror equal to the remote workspace again.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::sync::atomic::{AtomicU64, Ordering};

use talon_jail::remote::{Arg, RemoteSpec, bwrap_arguments};
use talon_jail::{Confined, Guard, Jail, Network};
use talon_protocol::gateway::{ApiError, ErrorCode};

use super::client::Connection;
use super::config::RemoteSandbox;
use super::script::{self, has_nul};
use super::transfer::{self, Caps, Counts};

/// How long an upload or download may take.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest remote command line (the command, the bound values and
/// the script): the remote kernel takes 128 KiB per argument.
const MAX_LINE: usize = 120 << 10;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message)
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::Internal, e.to_string())
}

/// Whether `name` can be a variable's name (and so stand in a script).
fn is_variable(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name.len() <= 128
}

/// One environment's commands on its SSH host. Holds the client key on
/// disk (a private temporary directory) for as long as it lives: keep it
/// until every command it made has ended.
#[derive(Debug)]
pub struct RemoteShell {
    connection: Connection,
    /// The local mirror, `<dir>/workspace`.
    local: PathBuf,
    /// `<workdir>/<id>` on the host.
    root: String,
    /// `<workdir>/<id>/workspace` on the host.
    workspace: String,
    /// The sandbox policy (limits, `allowHosts`) commands get.
    jail: Jail,
}

/// Where the mirror's fingerprint when it last equalled the remote
/// workspace is kept (with when, for people): `<dir>/remote-sync`, so
/// that every [`RemoteShell`] of the environment knows.
fn sync_file(local: &Path) -> Option<PathBuf> {
    local.parent().map(|dir| dir.join("remote-sync"))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl RemoteShell {
    pub(crate) fn new(connection: Connection, dir: &Path, root: String) -> RemoteShell {
        let workspace = format!("{root}/workspace");
        RemoteShell {
            connection,
            local: dir.join("workspace"),
            root,
            workspace,
            jail: Jail::default(),
        }
    }

    /// This sandbox policy for the commands it makes (its limits, and
    /// with the network `"allow"` its hosts), instead of the default
    /// (the gateway passes the agent's).
    pub fn with_jail(mut self, jail: Jail) -> RemoteShell {
        self.jail = jail;
        self
    }

    /// The host's name (`settings.host`).
    pub fn host(&self) -> &str {
        self.connection.name()
    }

    /// The remote workspace, `<workdir>/<id>/workspace`.
    pub fn remote_workspace(&self) -> &str {
        &self.workspace
    }

    /// The local mirror, `<dir>/workspace`.
    pub fn local_workspace(&self) -> &Path {
        &self.local
    }

    /// Whether commands run in bubblewrap there.
    pub fn sandboxed(&self) -> bool {
        self.connection.host().sandbox == RemoteSandbox::Bubblewrap
    }

    fn lease(&self) -> String {
        self.connection.host().lease_seconds.to_string()
    }

    /// Notes that the mirror equals the remote workspace (with its
    /// fingerprint), or may not (`None`).
    async fn remember(&self, fingerprint: Option<u64>) {
        let Some(file) = sync_file(&self.local) else {
            return;
        };
        // A note that cannot be written only costs a push.
        let _ = match fingerprint {
            Some(f) => tokio::fs::write(&file, format!("{f} {}\n", unix_now())).await,
            None => match tokio::fs::remove_file(&file).await {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
        };
    }

    /// The mirror's fingerprint when it was last in sync.
    async fn remembered(&self) -> Option<u64> {
        let file = sync_file(&self.local)?;
        let text = tokio::fs::read_to_string(file).await.ok()?;
        text.split_whitespace().next()?.parse().ok()
    }

    /// Makes the remote workspace equal to the local mirror: the whole
    /// mirror sent as a tar stream into a fresh remote workspace (so
    /// nothing removed locally survives there), and the lease renewed.
    /// Nothing is sent when the mirror did not change since the last push
    /// or pull and the remote workspace is still there (one short round
    /// trip, which renews the lease); a swept one is remade. With the
    /// sandbox `"bubblewrap"`, each upload also writes the seccomp filters
    /// next to the lease, and a host of another architecture than the
    /// gateway's is refused. Bounded: at most 200,000 entries and 4 GiB,
    /// ten minutes.
    pub async fn push(&self) -> Result<Counts, ApiError> {
        let local = self.local.clone();
        let now =
            tokio::task::spawn_blocking(move || transfer::fingerprint(&local, Caps::default()))
                .await
                .map_err(internal)?
                .map_err(|e| invalid(format!("the local workspace: {e}")))?;
        let unchanged = self.remembered().await == Some(now);
        let lease = self.lease();
        let host = self.connection.host();
        let need = match host.sandbox {
            RemoteSandbox::Bubblewrap => "bwrap",
            RemoteSandbox::Off => "none",
        };
        if unchanged {
            let line = script::remote_line(
                &[],
                script::PRESENT,
                &[&self.root, &self.workspace, &lease, need],
            );
            let finished = self
                .connection
                .run("checking the remote workspace", &line, TRANSFER_TIMEOUT)
                .await?;
            match finished.status.code() {
                Some(0) => return Ok(Counts::default()),
                Some(4) => {}
                _ => {
                    return Err(self.connection.failure(
                        "checking the remote workspace",
                        finished.status,
                        &finished.stderr,
                    ));
                }
            }
        }
        self.remember(None).await;
        // The sandbox's seccomp filters, written next to the lease, for a
        // host of the gateway's architecture (the script refuses others).
        let filters = match host.sandbox {
            RemoteSandbox::Bubblewrap => {
                let filters = talon_jail::seccomp_filters().map_err(|e| {
                    ApiError::new(ErrorCode::Unavailable, format!("the sandbox: {e}"))
                })?;
                let [a, b] = &filters.programs;
                vec![
                    filters.arch.to_owned(),
                    script::printf_bytes(a),
                    script::printf_bytes(b),
                ]
            }
            RemoteSandbox::Off => Vec::new(),
        };
        let mut args = vec![
            host.workdir.as_str(),
            &self.root,
            &self.workspace,
            &lease,
            need,
        ];
        args.extend(filters.iter().map(String::as_str));
        let line = script::remote_line(&[], script::RECEIVE, &args);
        let counts = self
            .connection
            .upload(
                "uploading the workspace",
                &line,
                &self.local,
                Caps::default(),
                TRANSFER_TIMEOUT,
            )
            .await?;
        self.remember(Some(now)).await;
        Ok(counts)
    }

    /// The local `ssh` process running `command` with `sh -c` in the
    /// remote workspace: in the host's sandbox (bubblewrap on the line
    /// `talon_jail::remote::bwrap_arguments` makes, under the seccomp
    /// filters the last push wrote), with the network the policy gives
    /// `network` (the narrower of the two): `off`, the host's, or
    /// `"allow"`, through a filtering proxy of the gateway's whose socket
    /// this `ssh` forwards to the host (`-R`, a socket of the command's
    /// own beside the workspace; the sandbox's bridge needs `socat`
    /// there; an unsandboxed host runs `"allow"` as `off`), with only
    /// `env` besides `PATH`, `HOME` and `TMPDIR`, the lease renewed.
    /// Killing this process (its connection) kills the remote command
    /// within a second. Stdin is null and it is killed on drop; the
    /// caller adds pipes and a process group and spawns it, as for a
    /// local command, and keeps the guard (the proxy) until it ended.
    /// Must be called inside a tokio runtime.
    pub fn command(
        &self,
        command: &str,
        env: &[(String, String)],
        network: Option<Network>,
    ) -> Result<Confined, ApiError> {
        if has_nul(command) {
            return Err(invalid("the command holds a NUL byte"));
        }
        let mut exports = Vec::with_capacity(env.len());
        let mut names = Vec::with_capacity(env.len());
        for (i, (name, value)) in env.iter().enumerate() {
            if !is_variable(name) {
                return Err(invalid(format!(
                    "{:?} is not a variable name",
                    name.chars().take(64).collect::<String>()
                )));
            }
            if has_nul(value) {
                return Err(invalid(format!("the value of {name} holds a NUL byte")));
            }
            exports.push((format!("TALON_E{i}"), value.as_str()));
            names.push(name.as_str());
        }
        let host = self.connection.host();
        let sandboxed = host.sandbox == RemoteSandbox::Bubblewrap;
        let asked = network.unwrap_or(Network::Host);
        let network = self.jail.policy().effective_network().narrow(asked);
        // `allow` needs the sandbox's bridge: `off` on an unsandboxed host.
        let proxy = match network {
            Network::Allow if sandboxed => Some(
                self.jail
                    .remote_proxy(asked)
                    .map_err(|e| ApiError::new(ErrorCode::Unavailable, e.to_string()))?,
            ),
            _ => None,
        }
        .flatten();
        let network = match (network, &proxy) {
            (Network::Allow, None) => Network::Off,
            (network, _) => network,
        };
        let forward = proxy.as_ref().map(|proxy| {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let remote = format!(
                "{}/proxy-{}-{}.sock",
                self.root,
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            (remote, proxy.socket())
        });
        // `ssh -R there:here` reads a colon as the separator.
        if let Some((there, here)) = &forward
            && (there.contains(':') || here.to_string_lossy().contains(':'))
        {
            return Err(invalid(format!(
                "the network proxy cannot be forwarded: {there} or {} holds a colon",
                here.display()
            )));
        }
        let shell = ["-c", command];
        let words: Vec<Arg> = if sandboxed {
            bwrap_arguments(&RemoteSpec {
                workspace: &self.workspace,
                writable: true,
                network,
                limits: &self.jail.policy().limits,
                proxy: forward.as_ref().map(|(remote, _)| remote.as_str()),
                program: "/bin/sh",
                args: &shell,
            })
        } else {
            ["/bin/sh", "-c", command]
                .map(|w| Arg::Word(w.to_owned()))
                .into()
        };
        let numbers = [
            host.lease_seconds.to_string(),
            (host.lease_seconds / 3).max(1).to_string(),
        ];
        let count = env.len().to_string();
        let words_count = words.len().to_string();
        let mut args: Vec<&str> = vec![&self.root, &self.workspace];
        args.extend(numbers.iter().map(String::as_str));
        args.extend([
            if sandboxed { "bwrap" } else { "none" },
            match network {
                Network::Host => "host",
                Network::Allow => "allow",
                Network::Off => "off",
            },
            talon_jail::remote::PATH,
            forward.as_ref().map_or("", |(remote, _)| remote.as_str()),
            &count,
        ]);
        args.extend(names);
        args.push(&words_count);
        for word in &words {
            args.extend(match word {
                Arg::Word(w) => ["w", w.as_str()],
                Arg::System(dir) => ["s", dir.as_str()],
                Arg::Mask(file) => ["m", file.as_str()],
            });
        }
        let line = script::remote_line(&exports, script::RUN, &args);
        if line.len() > MAX_LINE {
            return Err(invalid(format!(
                "the command and its variables are {} bytes, more than the {MAX_LINE} a remote command line takes",
                line.len()
            )));
        }
        let command = self.connection.command(
            &line,
            forward
                .as_ref()
                .map(|(remote, local)| (remote.as_str(), local.as_path())),
        );
        Ok(Confined {
            command,
            guard: proxy.map_or_else(Guard::default, Guard::holding),
        })
    }

    /// Makes the local mirror equal to the remote workspace: its tar
    /// stream read into a fresh directory beside the mirror (`transfer`:
    /// no absolute path, no `..`, never through a link, special files
    /// left out), which then replaces the mirror. Bounded as
    /// [`RemoteShell::push`].
    pub async fn pull(&self) -> Result<Counts, ApiError> {
        self.remember(None).await;
        let parent = self
            .local
            .parent()
            .ok_or_else(|| internal("the local workspace has no parent"))?
            .to_path_buf();
        let staging = parent.join("workspace.pull");
        let old = parent.join("workspace.old");
        for leftover in [&staging, &old] {
            remove_dir(leftover).await?;
        }
        let lease = self.lease();
        let line = script::remote_line(&[], script::SEND, &[&self.root, &self.workspace, &lease]);
        let counts = match self
            .connection
            .download(
                "downloading the workspace",
                &line,
                &staging,
                Caps::default(),
                TRANSFER_TIMEOUT,
            )
            .await
        {
            Ok(counts) => counts,
            Err(e) => {
                remove_dir(&staging).await?;
                return Err(e);
            }
        };
        let swap = |e: std::io::Error| {
            ApiError::new(
                ErrorCode::Unavailable,
                format!("replacing the local workspace: {e}"),
            )
        };
        match tokio::fs::rename(&self.local, &old).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(swap(e)),
        }
        tokio::fs::rename(&staging, &self.local)
            .await
            .map_err(swap)?;
        remove_dir(&old).await?;
        let local = self.local.clone();
        let now =
            tokio::task::spawn_blocking(move || transfer::fingerprint(&local, Caps::default()))
                .await
                .map_err(internal)?
                .ok();
        self.remember(now).await;
        Ok(counts)
    }

    /// Runs `true` the way commands run, so that a host whose sandbox
    /// cannot be made is found when the environment is prepared.
    pub(crate) async fn probe(&self) -> Result<(), ApiError> {
        let Confined { command, guard } = self.command("true", &[], Some(Network::Off))?;
        let output = tokio::time::timeout(Duration::from_secs(60), async {
            let _guard = guard;
            let mut command = command;
            command
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .output()
                .await
        })
        .await
        .map_err(|_| {
            ApiError::new(
                ErrorCode::Timeout,
                format!(
                    "ssh host {:?}: the sandbox probe did not finish",
                    self.host()
                ),
            )
        })?
        .map_err(|e| ApiError::new(ErrorCode::Unavailable, format!("ssh: {e}")))?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let error =
            self.connection
                .failure("running a command in its sandbox", output.status, &stderr);
        Err(error)
    }
}

/// Removes a directory tree if it is there.
async fn remove_dir(path: &Path) -> Result<(), ApiError> {
    match tokio::fs::remove_dir_all(path).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ApiError::new(
            ErrorCode::Unavailable,
            format!("{}: {e}", path.display()),
        )),
    }
}
