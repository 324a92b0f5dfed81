//! Background shell processes: the mechanics behind `exec`'s `background`
//! and `yieldMs` and behind the `process` tool ([`process`](crate::process)).
//!
//! A background command is started exactly as a foreground one is (the
//! same `talon-jail` [`Spec`](talon_jail::Spec), limits and network, its
//! sandbox guard held as long as it runs, `sh -c` leading its own process
//! group), but a pump task of its own owns it: it reads both pipes into a
//! bounded ring ([`ProcessLimits::retained_bytes`]), waits for `sh`, and
//! kills the group when `sh` exits (its children die with it, as in the
//! foreground), when its TTL passes (read on the host's [`Clock`], so tests
//! move it), or when asked ([`Processes::kill`]): `SIGTERM` to the group,
//! then `SIGKILL` after [`KILL_GRACE`].
//!
//! [`Processes`] is one node's registry: it bounds live processes per
//! session and per node (a clear refusal past either), keeps ended ones
//! for `poll`/`log` until there are too many, and kills them all when the
//! node drops it. What a process means to the rest of the host (a task in
//! a ledger, its progress and end) is the host's: [`ProcessHost`], told
//! when a process detaches, every second at most while its output grows,
//! and once when it ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use talon_protocol::clock::Clock;
use talon_tools::{BoxFuture, ToolError, ToolErrorCode};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::ring::Output;
use crate::shell::{CHUNK, DRAIN_GRACE, GroupGuard, pump};

/// How long a killed group has between `SIGTERM` and `SIGKILL`.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// Bytes of output tail `exec` answers a detached command with, and a
/// task's progress line holds.
pub const TAIL_BYTES: usize = 2 * 1024;
/// How often a running process's TTL is checked against the clock.
const TTL_CHECK: Duration = Duration::from_millis(200);
/// How often, at most, the host hears of a process's output.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The bounds of one node's background processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessLimits {
    /// Live processes one session may have.
    pub per_session: usize,
    /// Live processes the node runs.
    pub per_node: usize,
    /// Output kept per process (both streams, the latest bytes).
    pub retained_bytes: usize,
    /// How long a process may run before it is killed (`timed_out`).
    pub ttl: Duration,
    /// Ended processes kept for `poll` and `log` (the oldest go first).
    pub ended_kept: usize,
}

impl Default for ProcessLimits {
    fn default() -> Self {
        Self {
            per_session: 8,
            per_node: 64,
            retained_bytes: 1 << 20,
            ttl: Duration::from_secs(1800),
            ended_kept: 64,
        }
    }
}

/// How a background process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessEnd {
    /// `sh` exited with this code.
    Exited(i32),
    /// `sh` was killed by this signal (not by Talon).
    Signalled(i32),
    /// Killed as asked; why (`process kill`, `tasks.cancel`, ...).
    Killed(String),
    /// Killed at its TTL.
    TimedOut(Duration),
    /// Waiting for it failed.
    Failed(String),
    /// Killed because its node is stopping; why.
    Stopped(String),
}

/// What a host is told of a process as it detaches.
#[derive(Debug, Clone, Copy)]
pub struct ProcessStart<'a> {
    /// The command line.
    pub command: &'a str,
    /// The session it belongs to.
    pub session: &'a str,
    /// `sh`'s (or its sandbox's) process id.
    pub pid: Option<u32>,
    /// Its output so far.
    pub tail: &'a str,
}

/// The host's side of background processes (the gateway's task ledger).
pub trait ProcessHost: Send + Sync + std::fmt::Debug {
    /// A process is detaching: records it and answers its id (a task id),
    /// or refuses (the process is then killed).
    fn open<'a>(&'a self, start: ProcessStart<'a>) -> BoxFuture<'a, Result<String, ToolError>>;
    /// Its output's latest tail (at most once a second).
    fn progress<'a>(&'a self, id: &'a str, tail: &'a str) -> BoxFuture<'a, ()>;
    /// It ended, with this tail.
    fn ended<'a>(&'a self, id: &'a str, end: &'a ProcessEnd, tail: &'a str) -> BoxFuture<'a, ()>;
}

/// What a run's shell needs to detach commands: the node's registry, the
/// host that records them, the run's session and the clock TTLs run on.
#[derive(Debug, Clone)]
pub struct Background {
    /// The node's processes.
    pub processes: Processes,
    /// Who records them.
    pub host: Arc<dyn ProcessHost>,
    /// The session the run belongs to: a run sees its session's processes.
    pub session: String,
    /// The clock a TTL is measured on.
    pub clock: Clock,
    /// The `yieldMs` of an `exec` call that names neither it nor
    /// `background` (`tools.exec.backgroundMs`; none: the foreground).
    pub default_yield: Option<Duration>,
    /// Secret values redacted from what the host is told (the command,
    /// its output's tail).
    pub redact: Vec<String>,
}

/// What a process has written and how it stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    pub bytes: u64,
    pub end: Option<ProcessEnd>,
}

/// One background process.
pub(crate) struct Proc {
    pub session: String,
    pub command: String,
    pub pid: Option<u32>,
    /// Its id once detached (the host's task id).
    pub id: OnceLock<String>,
    pub output: Mutex<Output>,
    pub seen: watch::Sender<Seen>,
    pub stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// A kill asked for: the end it is reported with.
    kill: watch::Sender<Option<ProcessEnd>>,
    /// When it ended (for pruning the oldest).
    order: u64,
}

impl Proc {
    pub fn output(&self) -> MutexGuard<'_, Output> {
        self.output.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn end(&self) -> Option<ProcessEnd> {
        self.seen.borrow().end.clone()
    }

    /// Asks its pump to kill the group, saying why (once; later asks
    /// change nothing).
    pub fn kill(&self, why: &str) {
        self.end_with(ProcessEnd::Killed(why.to_owned()));
    }

    fn end_with(&self, end: ProcessEnd) {
        self.kill.send_if_modified(|asked| {
            if asked.is_some() {
                return false;
            }
            *asked = Some(end);
            true
        });
    }

    /// Waits until it ended, at most until `deadline`.
    pub async fn ended_by(&self, deadline: Instant) -> Option<ProcessEnd> {
        let mut seen = self.seen.subscribe();
        let _ = tokio::time::timeout_at(deadline, seen.wait_for(|s| s.end.is_some())).await;
        self.end()
    }
}

/// One node's background processes.
#[derive(Clone)]
pub struct Processes {
    inner: Arc<Registry>,
}

struct Registry {
    limits: ProcessLimits,
    procs: Mutex<HashMap<u64, Arc<Proc>>>,
    next: AtomicU64,
}

impl Drop for Registry {
    fn drop(&mut self) {
        // The node is going: nothing it started outlives it.
        for proc in self
            .procs
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            proc.end_with(ProcessEnd::Stopped("its gateway stopped".into()));
        }
    }
}

impl std::fmt::Debug for Processes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processes")
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

impl Processes {
    /// An empty registry bounded by `limits`.
    pub fn new(limits: ProcessLimits) -> Self {
        Self {
            inner: Arc::new(Registry {
                limits,
                procs: Mutex::default(),
                next: AtomicU64::new(1),
            }),
        }
    }

    /// Its bounds.
    pub fn limits(&self) -> ProcessLimits {
        self.inner.limits
    }

    fn procs(&self) -> MutexGuard<'_, HashMap<u64, Arc<Proc>>> {
        self.inner
            .procs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How many processes are live (on the node, and in `session`).
    pub fn live(&self, session: Option<&str>) -> usize {
        self.procs()
            .values()
            .filter(|p| p.end().is_none() && session.is_none_or(|s| p.session == s))
            .count()
    }

    /// Kills the process of task `id` (if this node runs it and it has
    /// not ended); whether it did.
    pub fn kill(&self, id: &str, why: &str) -> bool {
        match self.find(id) {
            Some(proc) if proc.end().is_none() => {
                proc.kill(why);
                true
            }
            _ => false,
        }
    }

    /// Kills every process: the node is stopping (each ends
    /// [`ProcessEnd::Stopped`]).
    pub fn stop_all(&self, why: &str) {
        for proc in self.procs().values() {
            proc.end_with(ProcessEnd::Stopped(why.to_owned()));
        }
    }

    /// Kills every live process of `session`.
    pub fn kill_session(&self, session: &str, why: &str) {
        for proc in self.procs().values().filter(|p| p.session == session) {
            proc.kill(why);
        }
    }

    /// The ids of the live detached processes (what a node vouches for).
    pub fn live_ids(&self) -> Vec<String> {
        self.procs()
            .values()
            .filter(|p| p.end().is_none())
            .filter_map(|p| p.id.get().cloned())
            .collect()
    }

    /// The detached process with id `id`.
    pub(crate) fn find(&self, id: &str) -> Option<Arc<Proc>> {
        self.procs()
            .values()
            .find(|p| p.id.get().is_some_and(|i| i == id))
            .cloned()
    }

    /// The detached processes of `session`, oldest first.
    pub(crate) fn of_session(&self, session: &str) -> Vec<Arc<Proc>> {
        let mut procs: Vec<(u64, Arc<Proc>)> = self
            .procs()
            .iter()
            .filter(|(_, p)| p.session == session && p.id.get().is_some())
            .map(|(k, p)| (*k, p.clone()))
            .collect();
        procs.sort_by_key(|(k, _)| *k);
        procs.into_iter().map(|(_, p)| p).collect()
    }

    /// Starts `cmd` (already confined, its group its own) for `session`
    /// if the bounds allow, its pump owning it, `guard` held until it
    /// ends. The check and the insert are one step, so parallel calls
    /// cannot both pass a bound.
    pub(crate) fn start(
        &self,
        session: &str,
        command: &str,
        mut cmd: tokio::process::Command,
        guard: talon_jail::Guard,
        clock: Clock,
    ) -> Result<Arc<Proc>, ToolError> {
        let limits = self.inner.limits;
        let mut procs = self.procs();
        let live = procs.values().filter(|p| p.end().is_none());
        let (node, mine) = live.fold((0, 0), |(n, s), p| {
            (n + 1, s + usize::from(p.session == session))
        });
        if mine >= limits.per_session {
            return Err(refused(format!(
                "exec: this session has {mine} background processes running, the most it may have \
                 (tools.exec.maxPerSession); kill one with process (action kill) or wait for one to end"
            )));
        }
        if node >= limits.per_node {
            return Err(refused(format!(
                "exec: {node} background processes are running on this gateway, the most it runs \
                 (tools.exec.maxPerNode); try again when one has ended"
            )));
        }
        let mut child = crate::shell::spawn_grouped(&mut cmd, std::process::Stdio::piped())?;
        let key = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let (kill, asked) = watch::channel(None);
        let proc = Arc::new(Proc {
            session: session.to_owned(),
            command: command.to_owned(),
            pid: child.id(),
            id: OnceLock::new(),
            output: Mutex::new(Output::new(limits.retained_bytes)),
            seen: watch::Sender::new(Seen::default()),
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
            kill,
            order: key,
        });
        prune(&mut procs, limits.ended_kept);
        procs.insert(key, proc.clone());
        drop(procs);
        let pumped = proc.clone();
        // Its TTL runs from now, not from when the pump first runs.
        let deadline = clock
            .now_ms()
            .saturating_add(u64::try_from(limits.ttl.as_millis()).unwrap_or(u64::MAX));
        tokio::spawn(async move {
            let end = run(&pumped, child, asked, (limits.ttl, deadline), clock, &guard).await;
            drop(guard);
            pumped.seen.send_modify(|s| s.end = Some(end));
        });
        Ok(proc)
    }

    /// Forgets a process that never detached (it ended within its
    /// `yieldMs`, or its host refused it).
    pub(crate) fn forget(&self, proc: &Proc) {
        self.procs().remove(&proc.order);
    }
}

/// Drops the oldest ended processes past `kept`.
fn prune(procs: &mut HashMap<u64, Arc<Proc>>, kept: usize) {
    let mut ended: Vec<u64> = procs
        .iter()
        .filter(|(_, p)| p.end().is_some())
        .map(|(k, _)| *k)
        .collect();
    if ended.len() < kept {
        return;
    }
    ended.sort_unstable();
    for key in &ended[..=ended.len() - kept] {
        procs.remove(key);
    }
}

fn refused(message: String) -> ToolError {
    ToolError::new(ToolErrorCode::PermissionDenied, message)
}

/// Pumps `child`'s output into `proc` until it ends and its pipes close
/// (or a grace passes), killing the group as [`Processes`] says.
async fn run(
    proc: &Proc,
    mut child: tokio::process::Child,
    mut asked: watch::Receiver<Option<ProcessEnd>>,
    (ttl, deadline): (Duration, u64),
    clock: Clock,
    sandbox: &talon_jail::Guard,
) -> ProcessEnd {
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let mut guard = GroupGuard { group };
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let (mut out_buf, mut err_buf) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let mut ttl_tick = tokio::time::interval(TTL_CHECK);
    ttl_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Why Talon killed it, and when `SIGKILL` follows `SIGTERM`.
    let mut killed: Option<(ProcessEnd, Instant)> = None;
    let mut status = None;
    let mut drain = None;
    let push = |bytes: &[u8], err: bool| {
        let total = {
            let mut output = proc.output();
            output.push(bytes);
            if err {
                output.err.push(bytes);
            } else {
                output.out.push(bytes);
            }
            output.total()
        };
        proc.seen.send_modify(|s| s.bytes = total);
    };
    loop {
        if status.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        let far = Instant::now() + Duration::from_secs(3600);
        tokio::select! {
            read = pump(&mut stdout, &mut out_buf) => match read {
                Some(n) => push(&out_buf[..n], false),
                None => stdout = None,
            },
            read = pump(&mut stderr, &mut err_buf) => match read {
                Some(n) => push(&err_buf[..n], true),
                None => stderr = None,
            },
            exited = child.wait(), if status.is_none() => {
                status = Some(exited);
                // Its children die with `sh`, as in the foreground.
                guard.kill();
                drain = Some(Instant::now() + DRAIN_GRACE);
            }
            () = tokio::time::sleep_until(drain.unwrap_or(far)), if drain.is_some() => break,
            _ = ttl_tick.tick(), if status.is_none() && killed.is_none() => {
                if clock.now_ms() >= deadline {
                    terminate(group);
                    killed = Some((ProcessEnd::TimedOut(ttl), Instant::now() + KILL_GRACE));
                }
            }
            Ok(()) = asked.changed(), if status.is_none() && killed.is_none() => {
                if let Some(end) = asked.borrow_and_update().clone() {
                    terminate(group);
                    killed = Some((end, Instant::now() + KILL_GRACE));
                }
            }
            () = tokio::time::sleep_until(killed.as_ref().map_or(far, |k| k.1)), if killed.is_some() && status.is_none() && guard.group.is_some() => {
                // The grace is over: `SIGKILL` (once: the guard lets go
                // of the group), and to what is left in its cgroup.
                guard.kill();
                sandbox.kill_remaining();
            }
        }
    }
    guard.kill();
    // Nothing of it outlives it, even a sandbox killed as it started.
    sandbox.kill_remaining();
    match (killed, status) {
        (Some((end, _)), _) => end,
        (None, Some(Ok(status))) => {
            use std::os::unix::process::ExitStatusExt as _;
            match (status.code(), status.signal()) {
                (Some(code), _) => ProcessEnd::Exited(code),
                (None, Some(signal)) => ProcessEnd::Signalled(signal),
                (None, None) => ProcessEnd::Failed("it ended without a code".into()),
            }
        }
        (None, Some(Err(e))) => ProcessEnd::Failed(format!("cannot wait for the shell: {e}")),
        (None, None) => ProcessEnd::Failed("its output ended before it did".into()),
    }
}

/// `SIGTERM` to the group.
fn terminate(group: Option<Pid>) {
    if let Some(group) = group {
        let _ = killpg(group, Signal::SIGTERM);
    }
}

/// Tells `host` of `proc` (detached as `id`) as it goes: its tail at most
/// once a second while its output grows, then its end.
pub(crate) async fn report(
    proc: Arc<Proc>,
    host: Arc<dyn ProcessHost>,
    id: String,
    redact: talon_tools::redact::Redactor,
) {
    let mut seen = proc.seen.subscribe();
    let mut told = seen.borrow().bytes;
    let mut next = Instant::now() + PROGRESS_EVERY;
    loop {
        let now = seen.borrow_and_update().clone();
        if let Some(end) = now.end {
            let tail = redact.text(&proc.output().tail());
            host.ended(&id, &end, &tail).await;
            return;
        }
        if now.bytes != told && Instant::now() >= next {
            told = now.bytes;
            next = Instant::now() + PROGRESS_EVERY;
            let tail = redact.text(&proc.output().tail());
            host.progress(&id, &tail).await;
            continue;
        }
        tokio::select! {
            changed = seen.changed() => if changed.is_err() { return },
            () = tokio::time::sleep_until(next), if now.bytes != told => {}
        }
    }
}

/// Writes `data` to `proc`'s stdin, closing it after with `eof`.
pub(crate) async fn write(proc: &Proc, data: &[u8], eof: bool) -> Result<usize, ToolError> {
    let mut stdin = proc.stdin.lock().await;
    let Some(pipe) = stdin.as_mut() else {
        return Err(ToolError::new(
            ToolErrorCode::Failed,
            "process: its stdin was closed (an earlier write's eof)",
        ));
    };
    let written = tokio::time::timeout(Duration::from_secs(5), pipe.write_all(data)).await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            *stdin = None;
            return Err(ToolError::new(
                ToolErrorCode::Failed,
                format!("process: cannot write to its stdin: {e}"),
            ));
        }
        Err(_) => {
            return Err(ToolError::new(
                ToolErrorCode::Timeout,
                "process: it did not read its stdin within 5 s",
            ));
        }
    }
    if eof {
        *stdin = None;
    }
    Ok(data.len())
}
