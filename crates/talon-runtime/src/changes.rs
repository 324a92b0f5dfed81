//! Files the core tools change, reported to the host: for each `write` or
//! `edit` that succeeds, the file's content before (none for a new file)
//! and after, so a host can keep them (the gateway makes `file` and
//! `diff` artifacts). Files over [`MAX_REPORTED_BYTES`] are not reported;
//! a report never changes the call's outcome.

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

/// Takes the files a run's core tools change.
pub trait FileChanges: Send + Sync {
    /// One change, after the call succeeded.
    fn changed<'a>(&'a self, ctx: &'a RunContext, change: FileChange) -> BoxFuture<'a, ()>;
}
