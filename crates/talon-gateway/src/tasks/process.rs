//! Background shell processes as tasks (`kind: "process"`): the ledger's
//! side of `talon_core_tools`' background processes. A command `exec`
//! leaves running becomes a `running` task recording the node that runs
//! it ([`RunProcesses::open`]); its output's tail (redacted, bounded,
//! at most once a second) is the task's `progressSummary`; its end moves
//! the task to `succeeded` (exit 0), `failed` (another code or a signal),
//! `timed_out` (its TTL), `cancelled` (killed: `process kill`,
//! `tasks.cancel`, its session deleted) or `lost` (its node stopped), and
//! posts by the task's policy (`tools.exec.notifyOnExit`).
//!
//! A process dies with its node. The node renews a lease on the tasks of
//! the processes it still runs every sweep (one whose end could not be
//! written is not renewed, so it cannot stay `running`); a node marks its own still-`running` process tasks
//! `lost` as it starts, and any node marks those whose lease passed
//! ([`Ledger::police_processes`]). Each sweep also kills a local process
//! whose task ended elsewhere (another node's `tasks.cancel`) or whose
//! session is gone.

use std::sync::Arc;
use std::time::Duration;

use talon_protocol::gateway::Run;
use talon_protocol::gateway::bounded::TaskId;
use talon_protocol::gateway::refuse;
use talon_protocol::gateway::tasks::{DeliveryStatus, NotifyPolicy, Task, TaskKind, TaskStatus};
use talon_runtime::{Background, HostTools, ProcessEnd, ProcessHost, ProcessStart};
use talon_store::TaskOwner;
use talon_tools::{BoxFuture, ToolError, ToolErrorCode};

use super::Ledger;
use crate::runs::new_id;

/// How long a node's word for its processes lasts: renewed every sweep
/// (half a second); a node silent this long is taken for dead.
pub(crate) const PROCESS_LEASE: Duration = Duration::from_secs(15);
/// How long a process task may go without a node taking it (its node
/// died between recording it and taking it) before it is `lost`.
const UNHELD_GRACE: Duration = Duration::from_secs(60);
/// The longest command line a task records.
const MAX_COMMAND_BYTES: usize = 1024;
/// The longest label (the command's start).
const LABEL_CHARS: usize = 60;

/// The policy of a new process task (`tools.exec.notifyOnExit`, default
/// true: `done_only`).
fn policy(ledger: &Ledger) -> NotifyPolicy {
    let notify = ledger
        .engine()
        .host()
        .config()
        .document()
        .ok()
        .and_then(|d| {
            d.tools
                .settings
                .exec
                .as_ref()
                .and_then(|e| e.notify_on_exit)
        });
    match notify {
        Some(false) => NotifyPolicy::Silent,
        _ => NotifyPolicy::DoneOnly,
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn bounded(text: &str, max: usize) -> String {
    let mut cut = text.len().min(max);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_owned()
}

/// The ledger's side of one run's background processes.
#[derive(Debug)]
pub(crate) struct RunProcesses {
    ledger: Ledger,
    run: Run,
}

/// What a run of `run` gets for background processes: the `process` tool
/// and where its `exec` detaches to. Only where the config has a
/// `tools.exec` section (as sub-agents need theirs: OpenClaw offers both
/// by default, Talon where an admin asked); a run without a session gets
/// neither.
pub(crate) fn for_run(ledger: &Ledger, run: &Run) -> Option<(HostTools, Background)> {
    let exec = ledger
        .engine()
        .host()
        .config()
        .document()
        .ok()?
        .tools
        .settings
        .exec
        .clone()?;
    let session = run.session_id.as_ref()?.to_string();
    let processes = ledger.engine().processes().clone();
    let tool = HostTools {
        owner: "process",
        definitions: vec![talon_runtime::process_definition()],
        executor: Arc::new(talon_runtime::ProcessTool::new(
            processes.clone(),
            session.clone(),
        )),
    };
    let background = Background {
        processes,
        host: Arc::new(RunProcesses {
            ledger: ledger.clone(),
            run: run.clone(),
        }),
        session,
        clock: ledger.engine().store().clock().clone(),
        default_yield: exec.background_ms.map(Duration::from_millis),
        redact: Vec::new(),
    };
    Some((tool, background))
}

impl RunProcesses {
    async fn open_task(&self, start: ProcessStart<'_>) -> Result<String, ToolError> {
        let unavailable =
            |e: talon_store::StoreError| ToolError::new(ToolErrorCode::Unavailable, e.to_string());
        let engine = self.ledger.engine();
        let store = engine.store();
        let now = store.now_ms();
        let id = TaskId::new(
            new_id("task").map_err(|e| ToolError::new(ToolErrorCode::Unavailable, e.message))?,
        );
        let command = bounded(start.command, MAX_COMMAND_BYTES);
        let label: String = start.command.chars().take(LABEL_CHARS).collect();
        let policy = policy(&self.ledger);
        let task = Task {
            status: TaskStatus::Running,
            notify_policy: policy,
            label: Some(format!("exec {label}")),
            agent_id: Some(self.run.agent_id.clone()),
            session_id: self.run.session_id.clone(),
            session_key: self.run.session_key.clone(),
            run_id: Some(self.run.id.clone()),
            subject: self.run.subject.clone(),
            command: Some(command),
            progress_summary: (!start.tail.is_empty()).then(|| start.tail.to_owned()),
            delivery_status: if policy == NotifyPolicy::Silent {
                DeliveryStatus::NotApplicable
            } else {
                DeliveryStatus::Pending
            },
            started_at: Some(now),
            ..Task::queued(id.clone(), TaskKind::Process, now)
        };
        let owner = TaskOwner {
            subject: self.run.subject.as_ref().map(|s| s.as_str()),
            agent_id: Some(self.run.agent_id.as_str()),
            token_id: None,
        };
        self.ledger
            .create(&task, owner)
            .await
            .map_err(unavailable)?;
        store
            .hold_task(&id, engine.node(), now + PROCESS_LEASE.as_millis() as u64)
            .await
            .map_err(unavailable)?;
        Ok(id.to_string())
    }

    /// Applies `change` to task `id` as it now is, reading it again when
    /// another change lands first; nothing once it has ended.
    async fn change(&self, id: &str, change: impl Fn(Task) -> Task) -> Option<Task> {
        let store = self.ledger.engine().store();
        for _ in 0..8 {
            let read = store
                .task(&TaskId::new(id), &talon_store::Owner::default())
                .await
                .ok()
                .flatten()?;
            if read.status.is_terminal() {
                return None;
            }
            if let Ok(Some(stored)) = self.ledger.moved(change(read.clone()), &read).await {
                return Some(stored);
            }
        }
        None
    }
}

/// The task `task` becomes when its process ended `end` with `tail`.
fn ended(task: Task, end: &ProcessEnd, tail: &str, now: u64) -> Task {
    let (status, error, exit_code) = match end {
        ProcessEnd::Exited(0) => (TaskStatus::Succeeded, None, Some(0)),
        ProcessEnd::Exited(code) => (
            TaskStatus::Failed,
            Some(refuse::process_failed(&format!("exited with code {code}"))),
            Some(*code),
        ),
        ProcessEnd::Signalled(signal) => (
            TaskStatus::Failed,
            Some(refuse::process_failed(&format!(
                "was killed by signal {signal}"
            ))),
            None,
        ),
        ProcessEnd::Failed(why) => (TaskStatus::Failed, Some(refuse::process_failed(why)), None),
        ProcessEnd::TimedOut(ttl) => (
            TaskStatus::TimedOut,
            Some(refuse::process_timed_out(ttl.as_secs())),
            None,
        ),
        ProcessEnd::Killed(why) => (
            TaskStatus::Cancelled,
            Some(refuse::process_failed(&format!("was {why}"))),
            None,
        ),
        ProcessEnd::Stopped(why) => (TaskStatus::Lost, Some(refuse::task_lost(why)), None),
    };
    Task {
        status,
        error,
        exit_code,
        ended_at: Some(now),
        result: Some(tail.to_owned()),
        progress_summary: (!tail.is_empty()).then(|| tail.to_owned()),
        ..task
    }
}

impl ProcessHost for RunProcesses {
    fn open<'a>(&'a self, start: ProcessStart<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(self.open_task(start))
    }

    fn progress<'a>(&'a self, id: &'a str, tail: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.change(id, |task| Task {
                progress_summary: Some(tail.to_owned()),
                ..task
            })
            .await;
        })
    }

    fn ended<'a>(&'a self, id: &'a str, end: &'a ProcessEnd, tail: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let now = self.ledger.engine().store().now_ms();
            if let Some(stored) = self.change(id, |task| ended(task, end, tail, now)).await {
                self.ledger.deliver(stored).await;
            }
        })
    }
}

impl Ledger {
    /// Marks `lost` every process task of a dead node (its lease passed)
    /// and, with `restarted`, every one this node held before it
    /// restarted; renews this node's lease on its own; kills a local
    /// process whose task ended elsewhere or whose session is gone.
    pub(crate) async fn police_processes(&self, restarted: bool) {
        let engine = self.engine();
        let store = engine.store();
        let now = store.now_ms();
        let _ = store
            .renew_task_leases(
                engine.node(),
                &engine.processes().live_ids(),
                now + PROCESS_LEASE.as_millis() as u64,
            )
            .await;
        let own = restarted.then(|| engine.node());
        let unheld = now.saturating_sub(UNHELD_GRACE.as_millis() as u64);
        if let Ok(orphans) = store
            .orphaned_process_tasks(TaskKind::Process, now, own, unheld)
            .await
        {
            // Read after the orphans: a process detached meanwhile is
            // among this node's.
            let mine = engine.processes().live_ids();
            for task in orphans {
                if mine.contains(&task.id.to_string()) {
                    continue;
                }
                let why = if restarted {
                    "its gateway restarted or stopped answering (a background process dies with its node)"
                } else {
                    "its gateway stopped answering (a background process dies with its node)"
                };
                self.lose(task, why).await;
            }
        }
        let mine = engine.processes().live_ids();
        for id in mine {
            let task = store
                .task(&TaskId::new(id.clone()), &talon_store::Owner::default())
                .await;
            let Ok(Some(task)) = task else { continue };
            if task.status.is_terminal() {
                engine.processes().kill(&id, "killed: its task ended");
                continue;
            }
            if let Some(session) = &task.session_id
                && let Ok(None) = store.session(session).await
            {
                engine
                    .processes()
                    .kill(&id, "killed: its session was deleted");
            }
        }
    }
}
