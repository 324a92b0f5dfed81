//! One host's SSH client: the system OpenSSH `ssh` with a private key
//! file and a `known_hosts` holding only the pinned host key, both in a
//! private temporary directory (mode 0700, the key 0600) removed when the
//! [`Connection`] is dropped; nothing from the gateway user's `~/.ssh`,
//! config, agent or known hosts. Runs the remote scripts ([`super::script`])
//! with or without a tar stream, and says what a failure means (a host-key
//! mismatch, a refused key, an unreachable host) in words.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use talon_protocol::gateway::{ApiError, ErrorCode};
use tokio::io::{AsyncRead, AsyncReadExt as _};

use super::config::SshHost;
use super::transfer::{self, Caps, Counts};

/// The OpenSSH client (Debian's `openssh-client`).
const SSH: &str = "/usr/bin/ssh";

/// How much of the remote side's stderr an error quotes.
const STDERR_CAP: usize = 16 << 10;

/// How much of a script's stdout is read.
const STDOUT_CAP: usize = 1 << 20;

/// The `ssh` program: Debian's, or the first on `PATH`.
fn ssh_program() -> PathBuf {
    if Path::new(SSH).is_file() {
        return PathBuf::from(SSH);
    }
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("ssh"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("ssh"))
}

fn unavailable(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::Unavailable, message)
}

/// What a finished remote script gave.
#[derive(Debug)]
pub(crate) struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// The means to reach one host: its config, and the key and pinned host
/// key on disk for as long as this lives.
#[derive(Debug)]
pub(crate) struct Connection {
    name: String,
    host: SshHost,
    dir: tempfile::TempDir,
}

impl Connection {
    /// Writes `key` (the client's private key) and the pinned host key
    /// into a fresh private directory.
    pub(crate) fn open(name: &str, host: &SshHost, key: &str) -> Result<Connection, ApiError> {
        let io = |e: std::io::Error| {
            unavailable(format!(
                "ssh host {name:?}: writing the client key to a private directory: {e}"
            ))
        };
        let (kind, base64) = host.pinned_key().ok_or_else(|| {
            unavailable(format!(
                "ssh host {name:?}: its hostKey is not a public key"
            ))
        })?;
        let dir = tempfile::Builder::new()
            .prefix("talon-ssh-")
            .tempdir()
            .map_err(io)?;
        let write = |file: &str, text: &str| -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(dir.path().join(file))?;
            f.write_all(text.as_bytes())?;
            f.sync_all()
        };
        // OpenSSH wants the key's last line ended.
        let mut key = key.trim_end().to_owned();
        key.push('\n');
        write("identity", &key).map_err(io)?;
        write("known_hosts", &format!("{} {kind} {base64}\n", alias(name))).map_err(io)?;
        Ok(Connection {
            name: name.to_owned(),
            host: host.clone(),
            dir,
        })
    }

    /// The host's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The host's config.
    pub(crate) fn host(&self) -> &SshHost {
        &self.host
    }

    /// `ssh ... -- host <remote>`: the local process whose remote side
    /// runs `remote` (a command line for the remote login shell), and
    /// with `forward` (a socket path there, a socket here) forwards that
    /// socket there to this one (`-R`; the connection fails if it cannot).
    /// Its environment is only `PATH`; stdin is null.
    pub(crate) fn command(
        &self,
        remote: &str,
        forward: Option<(&str, &Path)>,
    ) -> tokio::process::Command {
        let dir = self.dir.path();
        let mut command = tokio::process::Command::new(ssh_program());
        command
            .args(["-F", "/dev/null", "-T", "-x", "-a"])
            .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
            .arg("-o")
            .arg(format!(
                "UserKnownHostsFile={}",
                dir.join("known_hosts").display()
            ))
            .args(["-o", "GlobalKnownHostsFile=/dev/null"])
            .arg("-o")
            .arg(format!("HostKeyAlias={}", alias(&self.name)))
            .args(["-o", "CheckHostIP=no", "-o", "UpdateHostKeys=no"])
            .args(["-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none"])
            .arg("-i")
            .arg(dir.join("identity"))
            .args(["-o", "PreferredAuthentications=publickey"])
            .args(["-o", "PasswordAuthentication=no"])
            .args(["-o", "KbdInteractiveAuthentication=no"])
            .args(["-o", "ConnectTimeout=10"])
            .args([
                "-o",
                "ServerAliveInterval=15",
                "-o",
                "ServerAliveCountMax=4",
            ])
            .args(["-o", "ControlMaster=no", "-o", "ControlPath=none"])
            .args(["-o", "PermitLocalCommand=no"])
            .args(["-o", "LogLevel=ERROR"]);
        match forward {
            // Only the one forward asked for (none from a config: `-F
            // /dev/null`), which must be made.
            Some((there, here)) => {
                command
                    .args(["-o", "ExitOnForwardFailure=yes"])
                    .arg("-R")
                    .arg(format!("{there}:{}", here.display()));
            }
            None => {
                command.args(["-o", "ClearAllForwardings=yes"]);
            }
        }
        command
            .arg("-p")
            .arg(self.host.port.to_string())
            .arg("-l")
            .arg(&self.host.user)
            .arg("--")
            .arg(&self.host.host)
            .arg(remote)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// What a failed script (`what` was being done) means: ssh's own
    /// failures (status 255) said in words, the remote side's stderr
    /// otherwise.
    pub(crate) fn failure(&self, what: &str, status: ExitStatus, stderr: &str) -> ApiError {
        let name = &self.name;
        let host = &self.host;
        let at = format!("{}@{}:{}", host.user, host.host, host.port);
        let said: String = stderr.trim().chars().take(2000).collect();
        if said.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
            || said.contains("Host key verification failed")
        {
            return unavailable(format!(
                "ssh host {name:?} ({at}): host-key mismatch: the server did not present the pinned hostKey (sshHosts.{name}.hostKey), so Talon refused to connect (a man in the middle, or the host was reinstalled: an admin checks the key and updates it)"
            ))
            .with_details(talon_protocol::gateway::ErrorDetails {host: Some(name.to_string()), reason: Some("hostKeyMismatch".to_string()), ..Default::default() });
        }
        if said.contains("Permission denied") {
            return unavailable(format!(
                "ssh host {name:?} ({at}): the server refused the client key (sshHosts.{name}.identity): {said}"
            ))
            .with_details(talon_protocol::gateway::ErrorDetails {host: Some(name.to_string()), reason: Some("authentication".to_string()), ..Default::default() });
        }
        if status.code() == Some(255) {
            return unavailable(format!(
                "ssh host {name:?} ({at}): cannot connect while {what}: {said}"
            ))
            .with_details(talon_protocol::gateway::ErrorDetails {
                host: Some(name.to_string()),
                reason: Some("connection".to_string()),
                ..Default::default()
            });
        }
        unavailable(format!(
            "ssh host {name:?} ({at}): {what} failed ({status}): {said}"
        ))
        .with_details(talon_protocol::gateway::ErrorDetails {
            host: Some(name.to_string()),
            ..Default::default()
        })
    }

    /// Runs `remote` to its end (at most `timeout`), stdin null.
    pub(crate) async fn run(
        &self,
        what: &str,
        remote: &str,
        timeout: Duration,
    ) -> Result<Finished, ApiError> {
        let mut command = self.command(remote, None);
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.spawn(&mut command)?;
        let stdout = read_capped(child.stdout.take(), STDOUT_CAP);
        let stderr = read_capped(child.stderr.take(), STDERR_CAP);
        let all = async {
            let (status, stdout, stderr) = tokio::join!(child.wait(), stdout, stderr);
            status.map(|status| (status, stdout, stderr))
        };
        match tokio::time::timeout(timeout, all).await {
            Ok(Ok((status, stdout, stderr))) => Ok(Finished {
                status,
                stdout,
                stderr,
            }),
            Ok(Err(e)) => Err(unavailable(format!(
                "ssh host {:?}: {what}: {e}",
                self.name
            ))),
            Err(_) => Err(self.timed_out(what, timeout)),
        }
    }

    /// Runs `remote` with the tar stream of the local directory `root` on
    /// its stdin.
    pub(crate) async fn upload(
        &self,
        what: &str,
        remote: &str,
        root: &Path,
        caps: Caps,
        timeout: Duration,
    ) -> Result<Counts, ApiError> {
        let mut command = self.command(remote, None);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = self.spawn(&mut command)?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| unavailable("ssh: no stdin"))?
            .into_owned_fd()
            .map_err(|e| unavailable(format!("ssh: its stdin: {e}")))?;
        let root = root.to_path_buf();
        let writer = tokio::task::spawn_blocking(move || {
            let mut out = std::io::BufWriter::with_capacity(256 << 10, std::fs::File::from(stdin));
            let counts = transfer::pack(&root, &mut out, caps)?;
            out.flush()
                .map_err(|e| format!("sending the workspace: {e}"))?;
            Ok::<_, String>(counts)
        });
        let stderr = read_capped(child.stderr.take(), STDERR_CAP);
        let all = async {
            let (status, stderr) = tokio::join!(child.wait(), stderr);
            (status, stderr)
        };
        let ended = tokio::time::timeout(timeout, all).await;
        let (status, stderr) = match ended {
            Ok(ended) => ended,
            Err(_) => {
                let _ = child.start_kill();
                let _ = writer.await;
                return Err(self.timed_out(what, timeout));
            }
        };
        let packed = writer
            .await
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        let status = status.map_err(|e| unavailable(format!("ssh: {e}")))?;
        if !status.success() {
            // A cap the workspace went over is the reason the remote
            // side saw its archive end; otherwise the remote side's
            // reason comes before the broken pipe it caused.
            if let Err(e) = &packed
                && !e.contains("Broken pipe")
            {
                return Err(unavailable(format!(
                    "ssh host {:?}: {what}: {e}",
                    self.name
                )));
            }
            return Err(self.failure(what, status, &stderr));
        }
        packed.map_err(|e| unavailable(format!("ssh host {:?}: {what}: {e}", self.name)))
    }

    /// Runs `remote`, whose stdout is a tar stream, and unpacks it into
    /// the new directory `into` ([`transfer::unpack`]); a remote status of
    /// 0 or 1 is success (GNU tar says 1 for a file that changed as it was
    /// read).
    pub(crate) async fn download(
        &self,
        what: &str,
        remote: &str,
        into: &Path,
        caps: Caps,
        timeout: Duration,
    ) -> Result<Counts, ApiError> {
        let mut command = self.command(remote, None);
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.spawn(&mut command)?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| unavailable("ssh: no stdout"))?
            .into_owned_fd()
            .map_err(|e| unavailable(format!("ssh: its stdout: {e}")))?;
        let into = into.to_path_buf();
        let reader = tokio::task::spawn_blocking(move || {
            let mut input =
                std::io::BufReader::with_capacity(256 << 10, std::fs::File::from(stdout));
            let counts = transfer::unpack(&mut input, &into, caps);
            // Whatever follows the archive's end (tar's padding) is read,
            // so that ssh never writes into a closed pipe.
            let _ = std::io::copy(
                &mut std::io::Read::take(input, 1 << 20),
                &mut std::io::sink(),
            );
            counts
        });
        let stderr = read_capped(child.stderr.take(), STDERR_CAP);
        let all = async {
            let (status, stderr) = tokio::join!(child.wait(), stderr);
            (status, stderr)
        };
        let (status, stderr) = match tokio::time::timeout(timeout, all).await {
            Ok(ended) => ended,
            Err(_) => {
                let _ = child.start_kill();
                let _ = reader.await;
                return Err(self.timed_out(what, timeout));
            }
        };
        let unpacked = reader
            .await
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        let status = status.map_err(|e| unavailable(format!("ssh: {e}")))?;
        if !matches!(status.code(), Some(0 | 1)) {
            return Err(self.failure(what, status, &stderr));
        }
        unpacked.map_err(|e| unavailable(format!("ssh host {:?}: {what}: {e}", self.name)))
    }

    fn spawn(
        &self,
        command: &mut tokio::process::Command,
    ) -> Result<tokio::process::Child, ApiError> {
        command.spawn().map_err(|e| {
            unavailable(format!(
                "ssh host {:?}: cannot run ssh ({e}); install the OpenSSH client (Debian: apt-get install openssh-client)",
                self.name
            ))
        })
    }

    fn timed_out(&self, what: &str, timeout: Duration) -> ApiError {
        ApiError::new(
            ErrorCode::Timeout,
            format!(
                "ssh host {:?}: {what} did not finish within {} s",
                self.name,
                timeout.as_secs()
            ),
        )
    }
}

/// The name the pinned key is filed under (`HostKeyAlias`), so that the
/// `known_hosts` line does not depend on how the address and port are
/// written.
fn alias(name: &str) -> String {
    format!("talon-ssh.{name}")
}

/// The first `cap` bytes of a stream, read to its end (lossy UTF-8).
async fn read_capped<R: AsyncRead + Unpin>(reader: Option<R>, cap: usize) -> String {
    let Some(mut reader) = reader else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
