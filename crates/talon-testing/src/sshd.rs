//! A real OpenSSH server for tests: no mock, Debian's `openssh-server`
//! (`/usr/sbin/sshd`; `scripts/setup.sh --test-servers` installs it, with
//! `openssh-client` for the `ssh` the tests check with).
//!
//! What it owns: one temporary directory per server (`talon-sshd-*` under
//! `$TMPDIR`, removed when the [`Sshd`] is dropped) holding its ed25519
//! host key, the client's ed25519 key pair, `authorized_keys`, the
//! `sshd_config`, a `known_hosts` pinning the host key, the pid file and
//! the server's log (`sshd.log`, its `-e` output); `/run/sshd`, the
//! privilege separation directory sshd insists on when run as root
//! (created if missing); and the server process and its sessions.
//!
//! The server listens on 127.0.0.1 on a free port (chosen by binding port
//! 0; a start that loses the port to another process is retried) and lets
//! in only the current user, only with the client key: no passwords, no
//! PAM, no `StrictModes` (the files live in a temporary directory),
//! `PermitRootLogin prohibit-password` (the tests run as root here). Its
//! sftp subsystem is `internal-sftp`.
//!
//! It is spawned through `setpriv --pdeathsig SIGKILL` by a keeper thread
//! that lives as long as the server (and reaps it), so a test process that
//! dies however it dies takes the server with it. [`Sshd::stop`] (and
//! `Drop`) kills the listener and every process under it: the sessions of
//! clients still connected end too.

use std::fs;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::wait;

/// The OpenSSH server binary (Debian's `openssh-server`).
pub const SSHD: &str = "/usr/sbin/sshd";
/// The host every server of this module listens on.
pub const HOST: &str = "127.0.0.1";

/// Starts tried when another process takes the chosen port first.
const START_ATTEMPTS: usize = 3;
/// How long a killed server may take to be reaped.
const STOP_DEADLINE: Duration = Duration::from_secs(10);
/// How much of the log an error quotes.
const LOG_TAIL_CHARS: usize = 4000;

/// Failures of the harness.
#[derive(Debug, thiserror::Error)]
pub enum SshdError {
    /// A program the harness runs is not installed.
    #[error(
        "{program} not found; run scripts/setup.sh --test-servers, which installs the Debian packages openssh-server and openssh-client"
    )]
    NotFound {
        /// The program.
        program: String,
    },
    /// A file system or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A program (`ssh-keygen`, `id`) failed.
    #[error("{program} failed: {output}")]
    Command {
        /// The program and its arguments.
        program: String,
        /// Its status and output.
        output: String,
    },
    /// The server did not come up.
    #[error("sshd did not start: {message}\n--- sshd log ---\n{log}")]
    Startup {
        /// Why.
        message: String,
        /// The end of the server's log.
        log: String,
    },
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> SshdError {
    let context = context.into();
    move |source| SshdError::Io { context, source }
}

/// A running OpenSSH server on 127.0.0.1, with the keys to reach it.
pub struct Sshd {
    dir: tempfile::TempDir,
    port: u16,
    user: String,
    host_public_key: String,
    client_key_path: PathBuf,
    client_key: String,
    client_public_key: String,
    known_hosts_path: PathBuf,
    process: Option<Process>,
}

impl std::fmt::Debug for Sshd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sshd")
            .field("port", &self.port)
            .field("user", &self.user)
            .field("dir", &self.dir.path())
            .field("pid", &self.pid())
            .finish_non_exhaustive()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Sshd {
    /// Generates the keys and the config in a fresh temporary directory,
    /// starts `sshd -D -e` on a free port of 127.0.0.1 and returns once it
    /// accepts connections. Blocking (keys and start take ~100 ms). A
    /// missing `sshd` or `ssh-keygen` is an error (tests fail, they never
    /// skip); a server that does not start within [`wait::DEADLINE`]
    /// panics, naming what it waited for.
    pub fn start() -> Result<Sshd, SshdError> {
        if !Path::new(SSHD).is_file() {
            return Err(SshdError::NotFound {
                program: SSHD.to_owned(),
            });
        }
        let dir = tempfile::Builder::new()
            .prefix("talon-sshd-")
            .tempdir()
            .map_err(io_error("creating the sshd directory"))?;
        let host_public_key = generate_key(&dir.path().join("host_ed25519"))?;
        let client_key_path = dir.path().join("client_ed25519");
        let client_public_key = generate_key(&client_key_path)?;
        let client_key =
            fs::read_to_string(&client_key_path).map_err(io_error("reading the client key"))?;
        let user = current_user()?;
        write(
            &dir.path().join("authorized_keys"),
            &format!("{client_public_key}\n"),
        )?;
        let config = dir.path().join("sshd_config");
        write(&config, &config_text(dir.path(), &user))?;
        // sshd checks this directory (its privilege separation chroot)
        // exists whenever it runs as root; a fresh container lacks it.
        // Without root it is not needed (nor creatable): ignore failures.
        let _ = fs::create_dir_all("/run/sshd");

        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port()?;
            let log_path = dir.path().join("sshd.log");
            let process = Process::spawn(&config, port, &log_path)?;
            match process.await_listening(port, &log_path) {
                Ok(()) => {
                    let known_hosts_path = dir.path().join("known_hosts");
                    write(
                        &known_hosts_path,
                        &format!("{}\n", known_hosts_line(port, &host_public_key)),
                    )?;
                    tracing::debug!(port, pid = process.pid, "test sshd listening");
                    return Ok(Sshd {
                        dir,
                        port,
                        user,
                        host_public_key,
                        client_key_path,
                        client_key,
                        client_public_key,
                        known_hosts_path,
                        process: Some(process),
                    });
                }
                Err(message) => {
                    let log = log_tail(&log_path);
                    if !log.contains("Address already in use") {
                        return Err(SshdError::Startup { message, log });
                    }
                    last = log;
                }
            }
        }
        Err(SshdError::Startup {
            message: format!("lost the port to another process {START_ATTEMPTS} times"),
            log: last,
        })
    }

    /// `127.0.0.1`.
    pub fn host(&self) -> &str {
        HOST
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The user it lets in (the current user, `root` here).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The host's public key, `ssh-ed25519 AAAA...` (no comment), for
    /// pinning.
    pub fn host_public_key(&self) -> &str {
        &self.host_public_key
    }

    /// `[127.0.0.1]:PORT ssh-ed25519 AAAA...`: the host key as a
    /// `known_hosts` line.
    pub fn known_hosts_line(&self) -> String {
        known_hosts_line(self.port, &self.host_public_key)
    }

    /// A `known_hosts` file holding [`Sshd::known_hosts_line`].
    pub fn known_hosts_path(&self) -> &Path {
        &self.known_hosts_path
    }

    /// The client's private key file (OpenSSH format, mode 0600).
    pub fn client_key_path(&self) -> &Path {
        &self.client_key_path
    }

    /// The client's private key (`-----BEGIN OPENSSH PRIVATE KEY-----...`).
    pub fn client_key(&self) -> &str {
        &self.client_key
    }

    /// The client's public key, `ssh-ed25519 AAAA...` (the one
    /// `authorized_keys` holds).
    pub fn client_public_key(&self) -> &str {
        &self.client_public_key
    }

    /// The server's temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's process id, until it is stopped.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid)
    }

    /// The server's log so far (its `-e` output: connections, failed
    /// authentications, errors).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// An `ssh` command that reaches the server as [`Sshd::user`] with the
    /// client key and the pinned host key (nothing from `~/.ssh`, no agent,
    /// no prompts): append the remote command and run it.
    pub fn ssh_command(&self) -> Command {
        self.ssh_command_with(&self.known_hosts_path, &self.client_key_path)
    }

    /// [`Sshd::ssh_command`] with another `known_hosts` file and identity,
    /// e.g. to check that a wrong host key or client key is refused.
    pub fn ssh_command_with(&self, known_hosts: &Path, identity: &Path) -> Command {
        let mut command = Command::new("ssh");
        command
            .args(["-F", "/dev/null", "-p"])
            .arg(self.port.to_string())
            .arg("-i")
            .arg(identity)
            .args(["-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none"])
            .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
            .args(["-o", "GlobalKnownHostsFile=/dev/null"])
            .args(["-o", "ConnectTimeout=10"])
            .args(["-l", &self.user, HOST])
            .stdin(Stdio::null());
        command
    }

    /// Runs `command` on the server through the real `ssh` client
    /// ([`Sshd::ssh_command`]) and returns its output.
    pub fn run(&self, command: &str) -> Result<Output, SshdError> {
        self.ssh_command()
            .arg(command)
            .output()
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::NotFound => SshdError::NotFound {
                    program: "ssh".to_owned(),
                },
                _ => SshdError::Io {
                    context: "running ssh".to_owned(),
                    source,
                },
            })
    }

    /// Kills the server and every process under it (open sessions end);
    /// the port is then free. Idempotent; `Drop` does it too.
    pub fn stop(&mut self) {
        if let Some(process) = self.process.take() {
            process.kill();
        }
    }
}

/// The server process, reaped by its keeper thread.
struct Process {
    pid: u32,
    /// The exit status once reaped, and the signal of it.
    exited: Arc<(Mutex<Option<String>>, Condvar)>,
}

impl Process {
    /// Spawns `sshd` from a keeper thread that waits for it (and lives as
    /// long as it does: the parent-death signal fires when the spawning
    /// thread exits).
    fn spawn(config: &Path, port: u16, log_path: &Path) -> Result<Process, SshdError> {
        let log = fs::File::create(log_path).map_err(io_error("creating the sshd log"))?;
        let stderr = log.try_clone().map_err(io_error("opening the sshd log"))?;
        let mut command = match find_in_path("setpriv") {
            Some(setpriv) => {
                let mut command = Command::new(setpriv);
                command.args(["--pdeathsig", "SIGKILL", "--", SSHD]);
                command
            }
            None => {
                tracing::warn!(
                    "setpriv not found: the test sshd may outlive a killed test process"
                );
                Command::new(SSHD)
            }
        };
        command
            .args(["-D", "-e", "-f"])
            .arg(config)
            .arg("-p")
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr);
        let exited: Arc<(Mutex<Option<String>>, Condvar)> = Arc::default();
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let reaped = exited.clone();
        std::thread::Builder::new()
            .name("talon-sshd-keeper".to_owned())
            .spawn(move || {
                let mut child = match command.spawn() {
                    Ok(child) => child,
                    Err(error) => {
                        let _ = started_tx.send(Err(error));
                        return;
                    }
                };
                let _ = started_tx.send(Ok(child.id()));
                let status = match child.wait() {
                    Ok(status) => status.to_string(),
                    Err(error) => format!("unknown ({error})"),
                };
                let (lock, signal) = &*reaped;
                *lock.lock().unwrap_or_else(PoisonError::into_inner) = Some(status);
                signal.notify_all();
            })
            .map_err(io_error("spawning the sshd keeper thread"))?;
        let pid = match started_rx.recv() {
            Ok(Ok(pid)) => pid,
            Ok(Err(error)) => return Err(io_error(format!("spawning {SSHD}"))(error)),
            Err(_) => {
                return Err(SshdError::Startup {
                    message: "the keeper thread died".to_owned(),
                    log: String::new(),
                });
            }
        };
        Ok(Process { pid, exited })
    }

    fn exit_status(&self) -> Option<String> {
        self.exited
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until the server listens on `port` (its log says so and a
    /// connection is accepted) or exits (an `Err` saying how).
    fn await_listening(&self, port: u16, log_path: &Path) -> Result<(), String> {
        let listening = format!("Server listening on {HOST} port {port}");
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let outcome = wait::until(
            &format!("sshd to accept connections on {addr}"),
            wait::DEADLINE,
            || {
                if let Some(status) = self.exit_status() {
                    return Ok(Err(format!("sshd exited ({status})")));
                }
                let log = fs::read_to_string(log_path).unwrap_or_default();
                if log.contains(&listening)
                    && TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
                {
                    return Ok(Ok(()));
                }
                Err(log.lines().last().unwrap_or("an empty log").to_owned())
            },
        );
        if outcome.is_err() {
            self.kill();
        }
        outcome
    }

    /// Stops the listener (so it forks no more sessions), kills every
    /// process under it, kills it, and waits for the keeper to reap it.
    fn kill(&self) {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        if self.exit_status().is_some() {
            return;
        }
        let Ok(raw) = i32::try_from(self.pid) else {
            return;
        };
        let pid = Pid::from_raw(raw);
        let _ = kill(pid, Signal::SIGSTOP);
        for child in descendants(self.pid) {
            if let Ok(child) = i32::try_from(child) {
                let _ = kill(Pid::from_raw(child), Signal::SIGKILL);
            }
        }
        let _ = kill(pid, Signal::SIGKILL);
        let (lock, signal) = &*self.exited;
        let guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let (guard, timeout) = signal
            .wait_timeout_while(guard, STOP_DEADLINE, |status| status.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        if timeout.timed_out() && guard.is_none() {
            tracing::warn!(pid = self.pid, "the test sshd was not reaped after SIGKILL");
        }
    }
}

/// The processes under `pid` (children, their children, ...), from
/// `/proc/*/stat`.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // `pid (comm) state ppid ...`; comm may hold spaces and parens.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parents.push((child, ppid));
            }
        }
    }
    let mut found = vec![pid];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(
            parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(child, _)| *child),
        );
        next += 1;
    }
    found.remove(0);
    found
}

/// Generates an ed25519 key pair without a passphrase: the private key at
/// `path` (mode 0600), the public one at `path.pub`. Returns the public
/// key, `ssh-ed25519 AAAA...` (no comment). Tests use it for a second,
/// wrong, client key.
pub fn generate_key(path: &Path) -> Result<String, SshdError> {
    let output = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => SshdError::NotFound {
                program: "ssh-keygen".to_owned(),
            },
            _ => SshdError::Io {
                context: "running ssh-keygen".to_owned(),
                source,
            },
        })?;
    if !output.status.success() {
        return Err(SshdError::Command {
            program: format!("ssh-keygen -t ed25519 -f {}", path.display()),
            output: describe(&output),
        });
    }
    let mut public = path.as_os_str().to_owned();
    public.push(".pub");
    let public = fs::read_to_string(&public).map_err(io_error("reading a public key"))?;
    // `ssh-ed25519 AAAA... [comment]`: keep the type and the key.
    let mut parts = public.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some(kind), Some(key)) => Ok(format!("{kind} {key}")),
        _ => Err(SshdError::Command {
            program: "ssh-keygen".to_owned(),
            output: format!("unexpected public key {public:?}"),
        }),
    }
}

fn known_hosts_line(port: u16, host_public_key: &str) -> String {
    format!("[{HOST}]:{port} {host_public_key}")
}

fn config_text(dir: &Path, user: &str) -> String {
    let dir = dir.display();
    format!(
        "# talon-testing's sshd: the client key only, for {user} only.
ListenAddress {HOST}
HostKey {dir}/host_ed25519
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
AllowUsers {user}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitEmptyPasswords no
UsePAM no
StrictModes no
PrintMotd no
PrintLastLog no
X11Forwarding no
UseDNS no
MaxStartups 100
MaxSessions 100
LogLevel VERBOSE
Subsystem sftp internal-sftp
"
    )
}

/// The current user's name (`id -un`).
fn current_user() -> Result<String, SshdError> {
    let output = Command::new("id")
        .arg("-un")
        .stdin(Stdio::null())
        .output()
        .map_err(io_error("running id -un"))?;
    let user = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || user.is_empty() {
        return Err(SshdError::Command {
            program: "id -un".to_owned(),
            output: describe(&output),
        });
    }
    Ok(user)
}

/// A port of 127.0.0.1 free when asked (another process may take it before
/// sshd binds it: the start is then retried).
fn free_port() -> Result<u16, SshdError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(io_error("finding a free port"))
}

fn write(path: &Path, text: &str) -> Result<(), SshdError> {
    fs::write(path, text).map_err(io_error(format!("writing {}", path.display())))
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

fn describe(output: &Output) -> String {
    format!(
        "{}; stdout: {}; stderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout).trim(),
        String::from_utf8_lossy(&output.stderr).trim()
    )
}

fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = fs::File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    let start = text
        .char_indices()
        .rev()
        .nth(LOG_TAIL_CHARS)
        .map_or(0, |(i, _)| i);
    text[start..].to_owned()
}
