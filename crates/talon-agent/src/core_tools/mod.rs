//! The core tools: `read`, `write`, `edit` (exact replacement), `list`
//! (with an optional glob), `grep`, and the shell `exec`, all inside the
//! agent's workspace directory. `write`, `edit` and `exec` require
//! approval by default.
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
//! - Reads are bounded windows ([`MAX_READ_BYTES`]), `grep` streams each
//!   file with caps on matches, line text and bytes scanned
//!   ([`MAX_GREP_BYTES`]) and skips binary files; `edit` refuses files
//!   over [`MAX_EDIT_BYTES`] ([`files`]).
//! - The shell runs in its own process group, its output is capped while it
//!   streams, and the whole group is killed when the command ends, times
//!   out, or the run is aborted or stops waiting ([`shell`]).
//!
//! Errors are strings `"<code>: <message>"` with a stable code from
//! [`codes`].

mod files;
mod path;
mod search;
mod shell;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use talon_protocol::{ToolDefinition, ToolEffect, ToolSource};
use talon_tools::{BoxFuture, CatalogEntry, RunContext, ToolCall, ToolExecutor};

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
/// Default and longest shell timeout.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// Most matches `grep` and entries `list` return.
pub const MAX_MATCHES: usize = 500;
/// The longest `grep` pattern (each scanned chunk carries a pattern's
/// length of overlap, so the pattern bounds the work per chunk).
pub const MAX_GREP_PATTERN_BYTES: usize = 4 * 1024;
/// Most directory entries one `list` or `grep` walk examines.
pub const MAX_WALK_ENTRIES: usize = 100_000;

/// The stable error codes of the core tools (the part of an error before
/// the first `": "`).
pub mod codes {
    /// The path leaves the workspace (`..`, absolute, or a symlink).
    pub const OUTSIDE_WORKSPACE: &str = "outside_workspace";
    /// The path does not exist.
    pub const NOT_FOUND: &str = "not_found";
    /// A FIFO, socket or device where a regular file is needed.
    pub const NOT_REGULAR_FILE: &str = "not_regular_file";
    /// A directory where a regular file is needed.
    pub const IS_A_DIRECTORY: &str = "is_a_directory";
    /// A component on the way is not a directory.
    pub const NOT_A_DIRECTORY: &str = "not_a_directory";
    /// Too many symlinks on the way (a loop or a long chain).
    pub const TOO_MANY_LINKS: &str = "too_many_links";
    /// The path kept changing (symlink swaps) while it was opened.
    pub const PATH_CHANGED: &str = "path_changed";
    /// The file is larger than the tool handles.
    pub const TOO_LARGE: &str = "too_large";
    /// The file is not UTF-8 text.
    pub const NOT_TEXT: &str = "not_text";
    /// `edit`: the text to replace is absent.
    pub const NO_MATCH: &str = "no_match";
    /// `edit`: the text to replace occurs more than once.
    pub const AMBIGUOUS_MATCH: &str = "ambiguous_match";
    /// A missing or malformed argument.
    pub const INVALID_ARGUMENT: &str = "invalid_argument";
    /// The operating system refused access.
    pub const PERMISSION_DENIED: &str = "permission_denied";
    /// Another input/output error.
    pub const IO: &str = "io_error";
    /// The shell command did not finish in time and was killed.
    pub const TIMEOUT: &str = "timeout";
    /// The run was aborted while the command ran; it was killed.
    pub const ABORTED: &str = "aborted";
    /// The shell could not be started.
    pub const SPAWN_FAILED: &str = "spawn_failed";
    /// No core tool of that name.
    pub const UNKNOWN_TOOL: &str = "unknown_tool";
    /// A bug: a worker task failed.
    pub const INTERNAL: &str = "internal";
}

/// A core tool failure: a stable code and a message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// One of [`codes`].
    pub code: &'static str,
    /// What went wrong, for the model.
    pub message: String,
}

impl ToolError {
    /// An error with `code` and `message`.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

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

/// Runs the core tools in one workspace.
#[derive(Debug, Clone)]
pub struct CoreTools {
    root: Arc<PathBuf>,
}

impl CoreTools {
    /// Tools confined to `workspace` (created if missing).
    pub fn new(workspace: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(workspace)?;
        Ok(Self {
            root: Arc::new(workspace.canonicalize()?),
        })
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

    async fn run(&self, ctx: &RunContext, name: &str, args: &Value) -> Result<Value, ToolError> {
        if name == "exec" {
            let command = files::text_arg(name, args, "command")?;
            let timeout = args["timeoutMs"]
                .as_u64()
                .map_or(EXEC_TIMEOUT, Duration::from_millis)
                .min(EXEC_TIMEOUT);
            return shell::exec(&self.root, command, timeout, &ctx.abort).await;
        }
        if !matches!(name, "read" | "write" | "edit" | "list" | "grep") {
            return Err(ToolError::new(
                codes::UNKNOWN_TOOL,
                format!("no core tool {name:?}"),
            ));
        }
        // File work is blocking (but bounded): keep it off the runtime.
        let (root, name, args) = (self.root.clone(), name.to_owned(), args.clone());
        tokio::task::spawn_blocking(move || files::run(&root, &name, &args))
            .await
            .map_err(|e| ToolError::new(codes::INTERNAL, format!("the tool failed: {e}")))?
    }
}

impl ToolExecutor for CoreTools {
    fn execute<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            self.run(ctx, &entry.tool.name, &call.args)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
