//! The core tools: `read`, `write`, `edit` (exact replacement), `list`
//! (with an optional glob), `grep`, and the shell `exec`, all inside the
//! agent's workspace directory, run by [`CoreTools`] (a
//! [`ToolExecutor`] the run's `ToolRunner` reaches, never anything else).
//! `write`, `edit` and `exec` require approval by default; [`approval`]
//! holds the approver that answers by policy.
//!
//! They are hardened against hostile input:
//!
//! - Paths are resolved at use by walking components from a descriptor of
//!   the workspace with `openat(O_NOFOLLOW)` ([`path`]): `..` past the
//!   root, absolute paths elsewhere and symlinks (dangling or not, direct
//!   or through a directory) that lead out are refused; symlinks that stay
//!   inside are followed. A `write` through a dangling symlink whose target
//!   is inside creates that target; nothing is ever created outside.
//! - Only regular files are read, written, edited or grepped: opens use
//!   `O_NONBLOCK` (a FIFO never blocks) and the descriptor's `fstat` must
//!   show a regular file. `list` and `grep` never follow symlinks while
//!   walking and skip special files.
//! - `list`'s and `grep`'s `glob` is a path glob (`globset`, matched
//!   against the path from the workspace root): `*` and `?` stay within
//!   one directory, `**` crosses any number, `[a-z]` and `{a,b}` work; an
//!   invalid glob is `invalid_argument`, one over [`MAX_GLOB_BYTES`]
//!   `too_large` ([`search`]).
//! - Reads are bounded windows ([`MAX_READ_BYTES`]), `grep` streams each
//!   file with caps on matches, line text and bytes scanned
//!   ([`MAX_GREP_BYTES`]) and skips binary files; `edit` refuses files
//!   over [`MAX_EDIT_BYTES`] ([`files`]).
//! - The shell runs in its own process group, its output is capped while it
//!   streams, and the whole group is killed when the command ends, times
//!   out, or the run is cancelled or stops waiting ([`shell`]).
//! - A command `exec` leaves running (`background`, `yieldMs`) runs in the
//!   same sandbox, in its own group, its output kept in a bounded ring, the
//!   group killed (`SIGTERM`, then `SIGKILL`) at its TTL, when asked, or
//!   when `sh` exits; live processes are bounded per session and per node
//!   ([`background`]). The `process` tool follows them ([`process`]); a
//!   host that keeps them ([`ProcessHost`], the gateway's task ledger) is
//!   told when one detaches, of its progress, and of its end. Without one,
//!   `background` and `yieldMs` are refused.
//!
//! Every failure is a [`ToolError`] with a stable [`ToolErrorCode`]
//! (`outside_workspace`, `not_regular_file`, `too_large`, `timeout`, ...);
//! the executor hands it to the runner unchanged.
//!
//! # More on each
//!
//! `CoreTools::new(workspace)`, `with_shell(ShellOptions)` (added variables and the network policy)
//! and `definitions()`. `read` returns a window of at most `MAX_READ_BYTES` with `offset`/`limit`;
//! `edit` is an exact, unique replacement; `grep` (`search.rs`) streams files in chunks. The shell
//! (`shell.rs`) runs `sh -c` in its own process group with an environment of `PATH`, `HOME`,
//! `LANG`, `LC_ALL`, `TERM` and `TMPDIR` plus the added variables; with `Network::Off` the command
//! runs in a network namespace of its own (`unshare --net --map-root-user`), or not at all where
//! the OS refuses one. It keeps the first `MAX_EXEC_OUTPUT` of each stream;
//! `CoreTools::exec_logged` also hands the whole output (up to `MAX_LOG_BYTES`) to the host. The
//! group is killed when `sh` exits, at the timeout, when the run's token is cancelled and when the
//! call's future is dropped. `approval` holds `PolicyApprover` (approve or deny every call that
//! needs approval, for runs that cannot ask).
//!
//! Invariants: nothing is read, written or created outside the workspace; no core tool blocks on a
//! special file; no process left in a command's group outlives its call. Deliberately absent:
//! containment of processes that leave the group (`setsid`; needs cgroups) and refusing hard links
//! to outside files (same inode, indistinguishable by path).

pub mod approval;
mod background;
mod deltas;
mod files;
mod path;
mod process;
mod ring;
mod search;
mod shell;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use talon_protocol::{ToolDefinition, ToolEffect, ToolSource};
use talon_tools::{
    BoxFuture, CatalogEntry, RunContext, ToolCall, ToolError, ToolErrorCode, ToolExecutor,
};

pub use approval::PolicyApprover;
pub use background::{
    Background, KILL_GRACE, ProcessEnd, ProcessHost, ProcessLimits, ProcessStart, Processes,
    TAIL_BYTES,
};
pub use deltas::{DELTA_CHUNK, DELTA_INTERVAL, MAX_DELTA_BYTES, Updates};
pub use process::{
    LOG_LINES, MAX_POLL_WAIT, MAX_YIELD, ProcessTool, definition as process_definition,
};
pub use shell::{KeepLog, RemoteHost, ShellOptions};
pub use talon_jail::{Access, Jail, Network};

/// Most bytes `read` returns in one call (larger files come back as a
/// window with `truncated` and `nextOffset`). Half the runner's default
/// result cap, so a window of text (with its JSON escapes) arrives whole.
pub const MAX_READ_BYTES: usize = 128 * 1024;
/// Largest file `edit` rewrites (it needs the whole file in memory).
pub const MAX_EDIT_BYTES: u64 = 8 * 1024 * 1024;
/// Most bytes one `grep` call scans over all files.
pub const MAX_GREP_BYTES: u64 = 64 * 1024 * 1024;
/// Most files one `grep` call opens.
pub const MAX_GREP_FILES: usize = 10_000;
/// Characters of a matching line `grep` returns.
pub const MAX_GREP_LINE_CHARS: usize = 400;
/// Output kept of a shell command (stdout and stderr each); the rest is
/// read and discarded as it streams.
pub const MAX_EXEC_OUTPUT: usize = 64 * 1024;
/// Most bytes of a command's whole output [`CoreTools::exec_logged`]
/// keeps.
pub const MAX_LOG_BYTES: usize = 16 * 1024 * 1024;
/// Default and longest shell timeout.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// Most matches `grep` and entries `list` return.
pub const MAX_MATCHES: usize = 500;
/// The longest `grep` pattern (each scanned chunk carries a pattern's
/// length of overlap, so the pattern bounds the work per chunk).
pub const MAX_GREP_PATTERN_BYTES: usize = 4 * 1024;
/// The longest `glob` of `list` and `grep` (its automaton, and so the
/// work per path, grows with it).
pub const MAX_GLOB_BYTES: usize = 4 * 1024;
/// Most directory entries one `list` or `grep` walk examines.
pub const MAX_WALK_ENTRIES: usize = 100_000;

fn tool(name: &str, description: &str, parameters: Value, effect: ToolEffect) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        label: None,
        description: description.into(),
        parameters,
        source: ToolSource::Openclaw,
        owner: "core".into(),
        catalog_mode: Default::default(),
        execution_mode: Default::default(),
        requires_approval: effect != ToolEffect::ReadOnly,
        effect,
        replay_safe: effect == ToolEffect::ReadOnly,
    }
}

/// The core tool definitions.
pub fn definitions() -> Vec<ToolDefinition> {
    let path = json!({"type": "string", "description": "A path relative to the workspace"});
    vec![
        tool(
            "read",
            "Read a text file of the workspace (at most 128 KiB per call; page with offset).",
            json!({"type": "object", "properties": {"path": path,
                    "offset": {"type": "number", "description": "Byte offset to start at (default 0)"},
                    "limit": {"type": "number", "description": "Most bytes to return (default and most 131072)"}},
                    "required": ["path"]}),
            ToolEffect::ReadOnly,
        ),
        tool(
            "write",
            "Create or overwrite a file of the workspace with the given content.",
            json!({"type": "object", "properties": {"path": path, "content": {"type": "string", "description": "The whole new content"}},
                    "required": ["path", "content"]}),
            ToolEffect::Writes,
        ),
        tool(
            "edit",
            "Replace one exact occurrence of a text in a workspace file (of at most 8 MiB).",
            json!({"type": "object", "properties": {"path": path,
                    "old": {"type": "string", "description": "The exact text to replace (must occur once)"},
                    "new": {"type": "string", "description": "The replacement"}}, "required": ["path", "old", "new"]}),
            ToolEffect::Writes,
        ),
        tool(
            "list",
            "List files of the workspace, optionally matching a glob such as src/**/*.rs.",
            json!({"type": "object", "properties": {"path": {"type": "string", "description": "A directory (default: the workspace)"},
                    "glob": {"type": "string", "description": "Keep paths matching this glob"}}}),
            ToolEffect::ReadOnly,
        ),
        tool(
            "grep",
            "Find lines containing a text in workspace files (binary files are skipped).",
            json!({"type": "object", "properties": {"pattern": {"type": "string", "description": "The text to find"},
                    "path": {"type": "string", "description": "A file or directory (default: the workspace)"},
                    "glob": {"type": "string", "description": "Only files matching this glob"}}, "required": ["pattern"]}),
            ToolEffect::ReadOnly,
        ),
        tool(
            "exec",
            "Run a shell command in the workspace directory.",
            json!({"type": "object", "properties": {"command": {"type": "string", "description": "The command line (sh -c)"},
                    "timeoutMs": {"type": "number", "description": "Time limit (default and most 60000)"}}, "required": ["command"]}),
            ToolEffect::Host,
        ),
    ]
}

/// `exec` as a host that keeps background processes offers it: with
/// OpenClaw's `background` and `yieldMs`, and what a detached command
/// answers.
fn background_exec() -> ToolDefinition {
    tool(
        "exec",
        "Run a shell command in the workspace directory. With background: true it is left running at once, \
         with yieldMs after that many ms in the foreground (if it has not ended by then); a command left running \
         answers {status: \"running\", sessionId, taskId (the same id), pid, tail (its last output)} and is followed \
         with the process tool; its end is posted to this session. Background commands are bounded per session \
         and per gateway.",
        json!({"type": "object", "properties": {"command": {"type": "string", "description": "The command line (sh -c)"},
                "timeoutMs": {"type": "number", "description": "Time limit of a foreground command (default and most 60000)"},
                "background": {"type": "boolean", "description": "Leave it running in the background at once"},
                "yieldMs": {"type": "number", "description": "Run in the foreground up to this many ms (at most 60000), then leave it running"}},
                "required": ["command"]}),
        ToolEffect::Host,
    )
}

/// Runs the core tools in one workspace.
#[derive(Debug, Clone)]
pub struct CoreTools {
    root: Arc<PathBuf>,
    shell: Arc<ShellOptions>,
}

impl CoreTools {
    /// Tools confined to `workspace` (created if missing).
    pub fn new(workspace: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(workspace)?;
        Ok(Self {
            root: Arc::new(workspace.canonicalize()?),
            shell: Arc::new(ShellOptions::default()),
        })
    }

    /// The same tools, their shell run with `shell`.
    pub fn with_shell(mut self, shell: ShellOptions) -> Self {
        self.shell = Arc::new(shell);
        self
    }

    /// The definitions of these tools: [`definitions`], with `exec`'s
    /// `background` and `yieldMs` where its shell keeps background
    /// processes.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let mut all = definitions();
        if self.shell.background.is_some() {
            for definition in &mut all {
                if definition.name == "exec" {
                    *definition = background_exec();
                }
            }
        }
        all
    }

    /// The workspace.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real absolute path `path` names inside the workspace (following
    /// symlinks that stay inside; the last component need not exist), or
    /// why not. The tools themselves resolve again at use, through
    /// descriptors, so a path checked here can still be refused later.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        path::resolve(&self.root, path)
    }

    /// Runs a shell `exec` call as `execute` does and also keeps the
    /// command's whole output (both streams as they arrived, up to
    /// [`MAX_LOG_BYTES`]): returned when it was over what the result
    /// holds, so a host can keep it.
    pub async fn exec_logged(
        &self,
        ctx: &RunContext,
        call_id: &str,
        args: &Value,
        keep: KeepLog,
    ) -> Result<(Value, Option<Vec<u8>>), ToolError> {
        let command = files::text_arg("exec", args, "command")?;
        if let Some(how) = process::Detach::of(args, &self.shell) {
            let value = process::detach(&self.root, command, how, &self.shell, &ctx.cancel).await?;
            return Ok((value, None));
        }
        let timeout = args["timeoutMs"]
            .as_u64()
            .map_or(EXEC_TIMEOUT, Duration::from_millis)
            .min(EXEC_TIMEOUT);
        shell::exec(
            &self.root,
            command,
            timeout,
            &ctx.cancel,
            Some(MAX_LOG_BYTES),
            keep,
            &self.shell,
            Updates {
                sink: ctx.updates.as_ref(),
                call_id,
            },
        )
        .await
    }

    /// The whole content of the regular file `path` names and its real
    /// path in the workspace, when it exists and holds at most `max`
    /// bytes; `Ok(None)` when it does not exist. Opened as `read` opens
    /// it (nothing outside the workspace, no special files).
    pub async fn snapshot(
        &self,
        path: &str,
        max: u64,
    ) -> Result<Option<(String, Vec<u8>)>, ToolError> {
        let (root, path) = (self.root.clone(), path.to_owned());
        tokio::task::spawn_blocking(move || files::snapshot(&root, &path, max))
            .await
            .map_err(|e| ToolError::new(ToolErrorCode::Internal, format!("the read failed: {e}")))?
    }

    async fn run(
        &self,
        ctx: &RunContext,
        call_id: &str,
        name: &str,
        args: &Value,
    ) -> Result<Value, ToolError> {
        if name == "exec" {
            let command = files::text_arg(name, args, "command")?;
            if let Some(how) = process::Detach::of(args, &self.shell) {
                return process::detach(&self.root, command, how, &self.shell, &ctx.cancel).await;
            }
            let timeout = args["timeoutMs"]
                .as_u64()
                .map_or(EXEC_TIMEOUT, Duration::from_millis)
                .min(EXEC_TIMEOUT);
            return shell::exec(
                &self.root,
                command,
                timeout,
                &ctx.cancel,
                None,
                KeepLog::WhenCut,
                &self.shell,
                Updates {
                    sink: ctx.updates.as_ref(),
                    call_id,
                },
            )
            .await
            .map(|(value, _)| value);
        }
        if matches!(name, "write" | "edit") && self.shell.access == Access::ReadOnly {
            return Err(ToolError::new(
                ToolErrorCode::PermissionDenied,
                "the workspace is read-only for this agent (agents.defaults.sandbox.workspaceAccess is \"ro\")",
            ));
        }
        if !matches!(name, "read" | "write" | "edit" | "list" | "grep") {
            return Err(ToolError::new(
                ToolErrorCode::UnknownTool,
                format!("no core tool {name:?}"),
            ));
        }
        // File work is blocking (but bounded): keep it off the runtime.
        let (root, name, args) = (self.root.clone(), name.to_owned(), args.clone());
        tokio::task::spawn_blocking(move || files::run(&root, &name, &args))
            .await
            .map_err(|e| ToolError::new(ToolErrorCode::Internal, format!("the tool failed: {e}")))?
    }
}

impl ToolExecutor for CoreTools {
    fn execute<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.run(ctx, &call.call_id, &entry.tool.name, &call.args))
    }
}
