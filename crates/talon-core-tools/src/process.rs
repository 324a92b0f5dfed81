//! The model's side of background processes: `exec`'s `background` and
//! `yieldMs` ([`detach`]) and the `process` tool ([`ProcessTool`],
//! OpenClaw's name and actions: `list`, `poll`, `log`, `write`, `kill`).
//! A run reaches only the processes of its own session; an id is the
//! process's task id (`taskId`, or OpenClaw's `sessionId`: the same value).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use talon_protocol::{ToolDefinition, ToolEffect, ToolSource};
use talon_tools::{
    BoxFuture, CatalogEntry, RunContext, ToolCall, ToolError, ToolErrorCode, ToolExecutor,
};
use tokio::time::Instant;

use crate::MAX_EXEC_OUTPUT;
use crate::background::{self, Background, Proc, ProcessEnd, ProcessStart, Processes};
use crate::shell::{ShellOptions, jail_error};

/// The longest `poll` waits.
pub const MAX_POLL_WAIT: Duration = Duration::from_secs(60);
/// Lines `log` answers when given neither `offset` nor `limit`.
pub const LOG_LINES: usize = 200;
/// The longest `yieldMs`.
pub const MAX_YIELD: Duration = Duration::from_secs(60);

/// The `process` tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "process".into(),
        label: Some("Background processes".into()),
        description: "Follow the shell commands exec left running in the background (exec with background: true, \
            or past its yieldMs): list them; poll one for its output since the last poll and its status \
            (timeout: wait up to that many ms, at most 60000, for it to end); log pages through its kept output \
            by line (offset, limit; the last 200 lines by default); write sends data to its stdin (eof closes it); \
            kill ends it (SIGTERM to its process group, SIGKILL 2 s later). Name one by sessionId (or taskId), \
            the value exec answered."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["list", "poll", "log", "write", "kill"]},
                "sessionId": {"type": "string", "description": "The process (exec's sessionId)"},
                "taskId": {"type": "string", "description": "The same, by its task id"},
                "data": {"type": "string", "description": "write: what to send to its stdin"},
                "eof": {"type": "boolean", "description": "write: close its stdin after"},
                "offset": {"type": "integer", "minimum": 0, "description": "log: the first line (0: the first kept)"},
                "limit": {"type": "integer", "minimum": 1, "description": "log: how many lines"},
                "timeout": {"type": "integer", "minimum": 0, "maximum": 60000, "description": "poll: wait up to this many ms for it to end"}
            },
            "required": ["action"]
        }),
        source: ToolSource::Openclaw,
        owner: "process".into(),
        catalog_mode: Default::default(),
        execution_mode: Default::default(),
        requires_approval: false,
        effect: ToolEffect::Host,
        replay_safe: false,
    }
}

/// The words a model reads for a process's status.
fn status_of(end: Option<&ProcessEnd>) -> &'static str {
    match end {
        None => "running",
        Some(ProcessEnd::Exited(0)) => "completed",
        Some(ProcessEnd::Exited(_) | ProcessEnd::Signalled(_) | ProcessEnd::Failed(_)) => "failed",
        Some(ProcessEnd::Stopped(_)) => "lost",
        Some(ProcessEnd::TimedOut(_)) => "timed_out",
        Some(ProcessEnd::Killed(_)) => "killed",
    }
}

fn exit_code(end: Option<&ProcessEnd>) -> Option<i32> {
    match end {
        Some(ProcessEnd::Exited(code)) => Some(*code),
        _ => None,
    }
}

/// The `process` tool for one session's runs.
#[derive(Debug, Clone)]
pub struct ProcessTool {
    processes: Processes,
    session: String,
}

impl ProcessTool {
    /// The tool over `processes`, seeing `session`'s.
    pub fn new(processes: Processes, session: String) -> Self {
        Self { processes, session }
    }

    fn named(&self, args: &Value) -> Result<Arc<Proc>, ToolError> {
        let id = args
            .get("sessionId")
            .or_else(|| args.get("taskId"))
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("process: name the process with sessionId (or taskId)"))?;
        self.processes
            .find(id)
            .filter(|p| p.session == self.session)
            .ok_or_else(|| {
                ToolError::new(
                    ToolErrorCode::NotFound,
                    format!(
                        "process: no background process {id:?} in this session (process list shows them; \
                         one whose gateway restarted is gone)"
                    ),
                )
            })
    }

    async fn act(&self, args: &Value) -> Result<Value, ToolError> {
        let action = args.get("action").and_then(Value::as_str).unwrap_or("list");
        if action == "list" {
            let processes: Vec<Value> = self
                .processes
                .of_session(&self.session)
                .iter()
                .map(|p| summary(p))
                .collect();
            return Ok(json!({"processes": processes}));
        }
        let proc = self.named(args)?;
        let id = proc.id.get().cloned().unwrap_or_default();
        match action {
            "poll" => {
                let wait = args
                    .get("timeout")
                    .and_then(Value::as_u64)
                    .map_or(Duration::ZERO, Duration::from_millis)
                    .min(MAX_POLL_WAIT);
                let end = proc.ended_by(Instant::now() + wait).await;
                let (output, truncated) = {
                    let mut output = proc.output();
                    let from = output.polled;
                    output.polled = output.total();
                    output.since(from, MAX_EXEC_OUTPUT)
                };
                Ok(
                    json!({"sessionId": id, "taskId": id, "status": status_of(end.as_ref()),
                          "exitCode": exit_code(end.as_ref()), "output": output, "truncated": truncated}),
                )
            }
            "log" => {
                let text = proc.output().text();
                let lines: Vec<&str> = text.lines().collect();
                let offset = args
                    .get("offset")
                    .and_then(Value::as_u64)
                    .map(|o| o as usize);
                let limit = args
                    .get("limit")
                    .and_then(Value::as_u64)
                    .map(|l| l as usize);
                let (start, count) = match (offset, limit) {
                    (None, None) => (lines.len().saturating_sub(LOG_LINES), LOG_LINES),
                    (None, Some(limit)) => (lines.len().saturating_sub(limit), limit),
                    (Some(offset), limit) => (offset.min(lines.len()), limit.unwrap_or(usize::MAX)),
                };
                let page = &lines[start..(start.saturating_add(count)).min(lines.len())];
                let mut output = page.join("\n");
                let truncated = output.len() > MAX_EXEC_OUTPUT;
                if truncated {
                    let mut cut = MAX_EXEC_OUTPUT;
                    while !output.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    output.truncate(cut);
                }
                let dropped = proc.output().dropped();
                Ok(
                    json!({"sessionId": id, "taskId": id, "status": status_of(proc.end().as_ref()),
                          "offset": start, "lines": page.len(), "totalLines": lines.len(),
                          "droppedBytes": dropped, "truncated": truncated, "output": output}),
                )
            }
            "write" => {
                if let Some(end) = proc.end() {
                    return Err(ended(&id, &end));
                }
                let data = args.get("data").and_then(Value::as_str).unwrap_or_default();
                if data.len() > MAX_EXEC_OUTPUT {
                    return Err(ToolError::new(
                        ToolErrorCode::TooLarge,
                        format!("process: write at most {MAX_EXEC_OUTPUT} bytes at a time"),
                    ));
                }
                let eof = args.get("eof").and_then(Value::as_bool).unwrap_or(false);
                let written = background::write(&proc, data.as_bytes(), eof).await?;
                Ok(json!({"sessionId": id, "taskId": id, "written": written, "eof": eof}))
            }
            "kill" => {
                if let Some(end) = proc.end() {
                    return Err(ended(&id, &end));
                }
                proc.kill("killed with process kill");
                let end = proc
                    .ended_by(Instant::now() + background::KILL_GRACE + Duration::from_secs(3))
                    .await;
                Ok(json!({"sessionId": id, "taskId": id, "status": status_of(end.as_ref())}))
            }
            other => Err(invalid(format!(
                "process: action {other:?} is not one of list, poll, log, write, kill"
            ))),
        }
    }
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorCode::InvalidArgument, message)
}

fn ended(id: &str, end: &ProcessEnd) -> ToolError {
    ToolError::new(
        ToolErrorCode::Failed,
        format!(
            "process: {id} has ended ({}); poll or log still read its output",
            status_of(Some(end))
        ),
    )
}

/// What `list` shows of a process.
fn summary(proc: &Proc) -> Value {
    let id = proc.id.get().cloned().unwrap_or_default();
    let end = proc.end();
    let command: String = proc.command.chars().take(200).collect();
    json!({"sessionId": id, "taskId": id, "status": status_of(end.as_ref()),
           "exitCode": exit_code(end.as_ref()), "pid": proc.pid, "command": command})
}

impl ToolExecutor for ProcessTool {
    fn execute<'a>(
        &'a self,
        _ctx: &'a RunContext,
        _entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.act(&call.args))
    }
}

/// How `exec` was asked to leave a command running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detach {
    /// At once (`background: true`).
    Now,
    /// After this long in the foreground (`yieldMs`).
    After(Duration),
}

impl Detach {
    /// What `args` ask for, if anything, the host's default yield
    /// (`tools.exec.backgroundMs`) applying to a call that names neither.
    pub(crate) fn of(args: &Value, shell: &ShellOptions) -> Option<Self> {
        match args.get("background").and_then(Value::as_bool) {
            Some(true) => return Some(Self::Now),
            Some(false) => return None,
            None => {}
        }
        args.get("yieldMs")
            .and_then(Value::as_u64)
            .map(Duration::from_millis)
            .or_else(|| shell.background.as_ref().and_then(|b| b.default_yield))
            .map(|wait| Self::After(wait.min(MAX_YIELD)))
    }
}

/// Runs `command` as a background process: answered as a foreground
/// command when it ends within its `yieldMs`, else (and at once with
/// `background`) `{status: "running", sessionId, taskId, pid, tail}`.
pub(crate) async fn detach(
    root: &Path,
    command: &str,
    how: Detach,
    options: &ShellOptions,
    cancel: &talon_tools::CancellationToken,
) -> Result<Value, ToolError> {
    let Some(background) = &options.background else {
        return Err(ToolError::new(
            ToolErrorCode::Unsupported,
            "exec: background and yieldMs need a host that keeps background processes \
             (the gateway, with a tools.exec section); run the command without them",
        ));
    };
    if options.remote.is_some() {
        return Err(ToolError::new(
            ToolErrorCode::Unsupported,
            "exec: an ssh environment's commands run in the foreground only; run it without background or yieldMs",
        ));
    }
    let Background {
        processes,
        host,
        session,
        clock,
        redact,
        ..
    } = background;
    let sh_args = ["-c", command];
    let confined = options
        .jail
        .command(&options.spec(root, &sh_args))
        .map_err(jail_error)?;
    let proc = processes.start(
        session,
        command,
        confined.command,
        confined.guard,
        clock.clone(),
    )?;
    if let Detach::After(wait) = how {
        let deadline = Instant::now() + wait;
        let end = tokio::select! {
            end = proc.ended_by(deadline) => end,
            () = cancel.cancelled() => {
                proc.kill("the run was aborted");
                processes.forget(&proc);
                return Err(ToolError::aborted("the run was aborted; the command was killed"));
            }
        };
        if let Some(end) = end {
            processes.forget(&proc);
            let mut output = proc.output();
            let (out, err) = (
                std::mem::take(&mut output.out),
                std::mem::take(&mut output.err),
            );
            let truncated = out.truncated() || err.truncated();
            return Ok(
                json!({"exitCode": exit_code(Some(&end)), "stdout": out.text(),
                             "stderr": err.text(), "truncated": truncated}),
            );
        }
    }
    let tail = proc.output().tail();
    let redactor = talon_tools::redact::Redactor::new(redact);
    let opened = host
        .open(ProcessStart {
            command: &redactor.text(command),
            session,
            pid: proc.pid,
            tail: &redactor.text(&tail),
        })
        .await;
    let id = match opened {
        Ok(id) => id,
        Err(error) => {
            proc.kill("its task could not be recorded");
            processes.forget(&proc);
            return Err(error);
        }
    };
    let _ = proc.id.set(id.clone());
    tokio::spawn(background::report(
        proc.clone(),
        host.clone(),
        id.clone(),
        redactor,
    ));
    Ok(json!({"status": "running", "sessionId": id, "taskId": id, "pid": proc.pid, "tail": tail}))
}
