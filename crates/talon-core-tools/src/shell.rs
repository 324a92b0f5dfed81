//! The shell `exec`: `sh -c` in its own process group, output capped while
//! it streams, and the whole group killed (`killpg(SIGKILL)`) when `sh`
//! exits (background children do not outlive the call), at the timeout,
//! when the run is cancelled (the command waits on the run's token beside
//! its pipes, exit and deadline), when the workspace's filesystem falls
//! under the free space the policy keeps (the one thing looked at on a
//! timer, every [`DISK_CHECK`]: the kernel tells no one when space runs
//! low), and when the call's future is dropped (the runner drops it when
//! the run is cancelled). A host
//! may add variables (bound secrets) and narrow the network
//! ([`ShellOptions`]). Every command runs in the run's sandbox
//! (`talon-jail`): refused, saying why, where the host cannot make one,
//! unless the admin chose the unsandboxed mode.

use crate::deltas::{DELTA_INTERVAL, Deltas, Stream, Updates};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use talon_jail::{Access, DiskWatch, Jail, JailError, Network, Spec};
use talon_tools::{CancellationToken, ToolError, ToolErrorCode};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

use super::MAX_EXEC_OUTPUT;
use super::files::trim_partial_char;

/// How long pipes are drained after the group was killed; a process that
/// left the group (`setsid`) and holds them open does not hold the call.
pub(super) const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// How long to wait for `sh` to be reaped after it was killed.
const REAP_GRACE: Duration = Duration::from_secs(2);
/// Read buffer per pipe.
pub(super) const CHUNK: usize = 16 * 1024;
/// How often a running command's workspace filesystem is checked for the
/// free space the policy keeps.
const DISK_CHECK: Duration = Duration::from_millis(100);
/// How the shell runs commands, beyond the workspace.
#[derive(Debug, Clone, Default)]
pub struct ShellOptions {
    /// Variables added to the command's environment (bound secrets).
    pub env: Vec<(String, String)>,
    /// The network the caller asks for (`None`: the policy's); the
    /// sandbox gives the narrower of this and its policy's.
    pub network: Option<Network>,
    /// The sandbox every command runs in, with its policy.
    pub jail: Jail,
    /// Whether commands may write the workspace.
    pub access: Access,
    /// Where commands run when not on this host (an `ssh` environment's):
    /// the jail is then the remote side's.
    pub remote: Option<std::sync::Arc<dyn RemoteHost>>,
    /// Where `exec`'s `background` and `yieldMs` detach commands to (the
    /// gateway's); without it they are refused.
    pub background: Option<crate::background::Background>,
}

/// Another host an environment's commands run on: its workspace brought
/// up to date there before each command, the local process that runs the
/// command there (its output streams back through it, and killing it
/// kills the command), and the changes brought back after, whatever the
/// command's end.
pub trait RemoteHost: Send + Sync + std::fmt::Debug {
    /// Before a command.
    fn before(&self) -> talon_tools::BoxFuture<'_, Result<(), ToolError>>;

    /// The local process that runs `command` there with `env`, its network
    /// `network` (already narrowed by the policy), and what must live as
    /// long as it runs (with the network `"allow"`, its proxy).
    fn command(
        &self,
        command: &str,
        env: &[(String, String)],
        network: Network,
    ) -> Result<talon_jail::Confined, ToolError>;

    /// After it.
    fn after(&self) -> talon_tools::BoxFuture<'_, Result<(), ToolError>>;
}

impl ShellOptions {
    /// The sandbox a shell command runs in, foreground or background:
    /// `/bin/sh` with `sh_args` (`["-c", command]`) in `root` with these
    /// options' access, network (the caller's ask, else the host's,
    /// narrowed by the jail's policy), environment and the policy's limits.
    pub(crate) fn spec<'a>(&'a self, root: &'a Path, sh_args: &'a [&'a str; 2]) -> Spec<'a> {
        Spec {
            workspace: root,
            access: self.access,
            network: self.network.unwrap_or(Network::Host),
            env: &self.env,
            program: "/bin/sh",
            args: sh_args,
            limits: &self.jail.policy().limits,
        }
    }
}

/// Spawns `cmd` as the leader of its own process group (so that the whole
/// group can be killed), its output piped, killed if dropped.
pub(crate) fn spawn_grouped(
    cmd: &mut tokio::process::Command,
    stdin: Stdio,
) -> Result<tokio::process::Child, ToolError> {
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd.spawn().map_err(|e| {
        ToolError::new(
            ToolErrorCode::SpawnFailed,
            format!("cannot run the shell: {e}"),
        )
    })
}

/// A sandbox that could not be made, as the model is told.
pub(super) fn jail_error(e: JailError) -> ToolError {
    let code = match e {
        JailError::Unavailable(_) => ToolErrorCode::Unavailable,
        JailError::NoNetworkNamespace | JailError::Unsupported(_) => ToolErrorCode::Unsupported,
        JailError::DiskLow { .. } => ToolErrorCode::TooLarge,
        JailError::Seccomp(_) | JailError::Io { .. } => ToolErrorCode::SpawnFailed,
    };
    ToolError::new(code, e.to_string())
}

/// Kills the process group when dropped (the call ended, failed, or its
/// future was dropped). Killing an already empty group is harmless.
pub(super) struct GroupGuard {
    pub(super) group: Option<Pid>,
}

impl GroupGuard {
    pub(super) fn kill(&mut self) {
        if let Some(group) = self.group.take() {
            // ESRCH: nobody left. Anything else cannot be acted on here.
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The first [`MAX_EXEC_OUTPUT`] bytes of a stream, and how many there were.
#[derive(Default)]
pub(super) struct Capture {
    kept: Vec<u8>,
    total: u64,
}

impl Capture {
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = MAX_EXEC_OUTPUT.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    pub(super) fn truncated(&self) -> bool {
        self.total > self.kept.len() as u64
    }

    pub(super) fn text(mut self) -> String {
        if self.truncated() {
            trim_partial_char(&mut self.kept);
        }
        String::from_utf8_lossy(&self.kept).into_owned()
    }
}

/// Both streams as they arrived, up to a cap (the command's log, kept
/// only when asked for).
struct Log {
    bytes: Vec<u8>,
    cap: usize,
    /// Each stream's line still open: the log takes whole lines, so a
    /// stderr line never lands inside a stdout one.
    open: [Vec<u8>; 2],
}

/// The longest line the log holds open; a longer one goes in as it is.
const MAX_OPEN_LINE: usize = 64 * 1024;

impl Log {
    fn new(cap: usize) -> Self {
        Self {
            bytes: Vec::new(),
            cap,
            open: [Vec::new(), Vec::new()],
        }
    }

    fn push(log: &mut Option<Log>, stream: Stream, bytes: &[u8]) {
        let Some(log) = log else { return };
        let open = &mut log.open[stream as usize];
        open.extend_from_slice(bytes);
        let whole = match open.iter().rposition(|&b| b == b'\n') {
            Some(end) => end + 1,
            None if open.len() > MAX_OPEN_LINE => open.len(),
            None => return,
        };
        let line: Vec<u8> = open.drain(..whole).collect();
        log.append(&line);
    }

    fn append(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The log, with what each stream left unterminated at its end.
    fn finish(mut self) -> Vec<u8> {
        for stream in [Stream::Out, Stream::Err] {
            let rest = std::mem::take(&mut self.open[stream as usize]);
            self.append(&rest);
        }
        self.bytes
    }
}

/// Reads the next piece of `pipe` into `capture`; closes it at EOF or error.
pub(super) async fn pump<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    match pipe {
        Some(reader) => reader.read(buf).await.ok().filter(|&n| n > 0),
        None => std::future::pending().await,
    }
}

enum End {
    Exited(std::process::ExitStatus),
    TimedOut,
    Aborted,
    DiskLow(JailError),
}

/// Which commands' whole output is handed back beside their result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KeepLog {
    /// Only a command whose output was over what its result holds.
    #[default]
    WhenCut,
    /// Every command's (an environment's runs keep a `log` of each).
    Always,
}

/// Runs `command` with `sh -c` in `root`. With `log_cap`, also keeps both
/// streams as they arrived, line by line, up to that many bytes, and returns them as
/// `keep` says.
#[allow(
    clippy::too_many_arguments,
    reason = "one private entry point; its callers name each part"
)]
pub(super) async fn exec(
    root: &Path,
    command: &str,
    timeout: Duration,
    cancel: &CancellationToken,
    log_cap: Option<usize>,
    keep: KeepLog,
    options: &ShellOptions,
    updates: Updates<'_>,
) -> Result<(Value, Option<Vec<u8>>), ToolError> {
    let mut log = log_cap.map(Log::new);
    let mut deltas = Deltas::new(updates);
    let mut tick = tokio::time::interval(DELTA_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let jail = &options.jail;
    let sh_args = ["-c", command];
    let spec = options.spec(root, &sh_args);
    let (mut cmd, sandbox) = match &options.remote {
        Some(remote) => {
            remote.before().await?;
            let network = jail.policy().effective_network().narrow(spec.network);
            let confined = remote.command(command, &options.env, network)?;
            (confined.command, Some(confined.guard))
        }
        None => {
            let confined = jail.command(&spec).map_err(jail_error)?;
            // Lives until the command's processes are gone (its cgroup).
            (confined.command, Some(confined.guard))
        }
    };
    let mut child = spawn_grouped(&mut cmd, Stdio::null())?;
    // `sh` leads its own group, whose id is its pid.
    let mut group = GroupGuard {
        group: child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    };
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let (mut out, mut err) = (Capture::default(), Capture::default());
    let (mut out_buf, mut err_buf) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let mut deadline = Instant::now() + timeout;
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    // A remote command's disk is the remote host's.
    let watch = options
        .remote
        .is_none()
        .then(|| DiskWatch::start(root, spec.limits))
        .flatten();
    let mut disk = tokio::time::interval_at(Instant::now() + DISK_CHECK, DISK_CHECK);
    disk.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut status = None;
    let end = loop {
        if let Some(status) = status
            && stdout.is_none()
            && stderr.is_none()
        {
            break End::Exited(status);
        }
        tokio::select! {
            read = pump(&mut stdout, &mut out_buf) => match read {
                Some(n) => {
                    out.push(&out_buf[..n]);
                    Log::push(&mut log, Stream::Out, &out_buf[..n]);
                    deltas.push(Stream::Out, &out_buf[..n]);
                }
                None => stdout = None,
            },
            read = pump(&mut stderr, &mut err_buf) => match read {
                Some(n) => {
                    err.push(&err_buf[..n]);
                    Log::push(&mut log, Stream::Err, &err_buf[..n]);
                    deltas.push(Stream::Err, &err_buf[..n]);
                }
                None => stderr = None,
            },
            exited = child.wait(), if status.is_none() => {
                match exited {
                    Ok(exited) => status = Some(exited),
                    Err(e) => {
                        return Err(ToolError::new(ToolErrorCode::IoError, format!("cannot wait for the shell: {e}")));
                    }
                }
                // Background children die with `sh`; then the pipes close.
                group.kill();
                deadline = Instant::now() + DRAIN_GRACE;
            }
            () = tokio::time::sleep_until(deadline) => match status {
                Some(status) => break End::Exited(status),
                None => break End::TimedOut,
            },
            () = &mut cancelled => match status {
                Some(status) => break End::Exited(status),
                None => break End::Aborted,
            },
            _ = tick.tick(), if deltas.waiting() => deltas.flush(),
            _ = disk.tick(), if watch.is_some() && status.is_none() => {
                if let Some(Err(low)) = watch.as_ref().map(DiskWatch::check) {
                    break End::DiskLow(low);
                }
            }
        }
    };
    group.kill();
    // What left the group (or a sandbox killed while bubblewrap was still
    // starting) dies with the rest of the command's cgroup.
    if let Some(sandbox) = &sandbox {
        sandbox.kill_remaining();
    }
    drop((stdout, stderr));
    deltas.finish();
    let outcome = match end {
        End::Exited(status) => {
            let truncated = out.truncated() || err.truncated();
            let log = log
                .filter(|_| truncated || keep == KeepLog::Always)
                .map(Log::finish);
            Ok((
                json!({"exitCode": status.code(), "stdout": out.text(), "stderr": err.text(),
                      "truncated": truncated}),
                log,
            ))
        }
        End::TimedOut | End::Aborted | End::DiskLow(_) => {
            let _ = tokio::time::timeout(REAP_GRACE, child.wait()).await;
            Err(match end {
                End::Aborted => ToolError::aborted("the run was aborted; the command was killed"),
                End::DiskLow(low) => ToolError::new(
                    ToolErrorCode::TooLarge,
                    format!("the command was killed: {low}"),
                ),
                _ => ToolError::new(
                    ToolErrorCode::Timeout,
                    format!(
                        "the command did not finish within {} ms and was killed",
                        timeout.as_millis()
                    ),
                ),
            })
        }
    };
    if let Some(remote) = &options.remote {
        // What the command changed there comes back, whatever its end; a
        // command that ran but whose changes did not come back failed.
        let synced = remote.after().await;
        if let (Ok(_), Err(error)) = (&outcome, synced) {
            return Err(error);
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::{Log, MAX_OPEN_LINE, Stream};

    #[test]
    fn the_log_takes_whole_lines_from_each_stream() {
        let mut log = Some(Log::new(1 << 20));
        Log::push(&mut log, Stream::Out, b"1\n2\n12");
        Log::push(&mut log, Stream::Err, b"warn");
        Log::push(&mut log, Stream::Err, b"ing\n");
        Log::push(&mut log, Stream::Out, b"3\n4");
        Log::push(&mut log, Stream::Err, b"tail");
        let log = log.map(Log::finish).unwrap();
        assert_eq!(String::from_utf8(log).unwrap(), "1\n2\nwarning\n123\n4tail");
    }

    #[test]
    fn a_line_without_end_goes_in_past_the_open_cap_and_the_cap_holds() {
        let mut log = Some(Log::new(MAX_OPEN_LINE + 10));
        Log::push(&mut log, Stream::Out, &vec![b'x'; MAX_OPEN_LINE + 1]);
        assert_eq!(log.as_ref().unwrap().bytes.len(), MAX_OPEN_LINE + 1);
        Log::push(&mut log, Stream::Err, &[b'y'; 100]);
        let log = log.map(Log::finish).unwrap();
        assert_eq!(log.len(), MAX_OPEN_LINE + 10);
    }
}
