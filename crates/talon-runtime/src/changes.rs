//! What the core tools produce beyond their results, reported to the
//! host: for each `write` or `edit` that succeeds, the file's content
//! before (none for a new file) and after; for each shell `exec` whose
//! output was over what its result holds, the command's whole output
//! (both streams as they arrived, up to
//! [`talon_core_tools::MAX_LOG_BYTES`]). The gateway keeps them as `file`,
//! `diff` and `log` artifacts. Files over [`MAX_REPORTED_BYTES`] are not
//! reported; a report never changes the call's outcome, except that a
//! kept log's id is added to the `exec` result as `logArtifact`.

use talon_tools::{BoxFuture, RunContext};

/// The largest file reported (the core `edit` limit).
pub const MAX_REPORTED_BYTES: u64 = talon_core_tools::MAX_EDIT_BYTES;

/// One file a core tool changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The tool (`write` or `edit`).
    pub tool: String,
    /// The call's id.
    pub call_id: String,
    /// The file's real path in the workspace.
    pub path: String,
    /// Its content before the call (`None`: it did not exist).
    pub before: Option<Vec<u8>>,
    /// Its content after.
    pub after: Vec<u8>,
}

/// The whole output of a shell command whose result was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLog {
    /// The call's id.
    pub call_id: String,
    /// The command line.
    pub command: String,
    /// Both streams as they arrived.
    pub output: Vec<u8>,
}

/// Takes what a run's core tools produce.
pub trait ToolOutputs: Send + Sync {
    /// One file change, after the call succeeded.
    fn file_changed<'a>(&'a self, ctx: &'a RunContext, change: FileChange) -> BoxFuture<'a, ()>;

    /// Which commands' whole output it takes (by default only those whose
    /// result was cut).
    fn keep_logs(&self) -> talon_core_tools::KeepLog {
        talon_core_tools::KeepLog::WhenCut
    }

    /// One command's whole output; the id it is kept under, if it is.
    fn command_log<'a>(
        &'a self,
        ctx: &'a RunContext,
        log: CommandLog,
    ) -> BoxFuture<'a, Option<String>>;
}
