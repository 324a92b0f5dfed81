//! The sandbox's error type, and the one mapping from it to the protocol's
//! `CodeModeErrorCode`.

use talon_protocol::CodeModeErrorCode;

/// A JavaScript exception that escaped guest code, read without running any
/// guest code (no getters, no `toString`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestError {
    /// The error's `name` (`TypeError`, `SyntaxError`, ...), or `Error` for
    /// thrown non-error values.
    pub name: String,
    /// The error's `message`, or a rendering of a thrown non-error value.
    pub message: String,
    /// The guest stack trace, when the thrown value carried one.
    pub stack: Option<String>,
    /// The error's own string `code` property, if any (host errors that
    /// reach the guest carry one, such as `nested_tool_failed`).
    pub code: Option<String>,
}

impl std::fmt::Display for GuestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.message.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}: {}", self.name, self.message)
        }
    }
}

/// Everything that can go wrong in the sandbox.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The module could not be obtained, compiled or instantiated.
    #[error("QuickJS-WASI runtime unavailable: {0}")]
    RuntimeUnavailable(String),
    /// As [`SandboxError::RuntimeUnavailable`], because of another failure
    /// (wasmtime's, a thread's spawn, the random source's, a prelude's),
    /// which is the source.
    #[error("QuickJS-WASI runtime unavailable: {}{source}", lead(context))]
    RuntimeFailed {
        /// What was being done (`compile`, `linking`, ...).
        context: String,
        /// The failure.
        source: ErrorSource,
    },
    /// The cell awaits a promise that nothing can settle.
    #[error("the cell is awaiting a promise that nothing will settle")]
    Stalled,
    /// The wall-clock deadline passed.
    #[error("the cell exceeded its time limit of {0} ms")]
    Timeout(u64),
    /// The guest ran out of its memory allowance.
    #[error("the cell exceeded its memory limit")]
    MemoryLimit,
    /// The guest wrote more output than allowed.
    #[error("the cell exceeded its output limit of {0} bytes")]
    OutputLimit(usize),
    /// Guest code threw and nothing caught it.
    #[error("{0}")]
    Guest(GuestError),
    /// The code does not parse.
    #[error("{0}")]
    Syntax(GuestError),
    /// Guest code tried to load a module.
    #[error("module access denied: {0}")]
    ModuleAccessDenied(String),
    /// A value could not cross the bridge (cycle, accessor, proxy, BigInt...).
    #[error("value cannot cross the sandbox bridge: {0}")]
    Unconvertible(String),
    /// A value crossing the bridge is too deep or too large.
    #[error("value too large for the sandbox bridge: {0}")]
    ValueTooLarge(String),
    /// A snapshot is larger than allowed.
    #[error("snapshot of {size} bytes exceeds the limit of {limit} bytes")]
    SnapshotTooLarge {
        /// Size of the snapshot (or of its decompressed body).
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// A snapshot is truncated, corrupted, of another version or for another
    /// module or base image.
    #[error("snapshot rejected: {0}")]
    SnapshotInvalid(String),
    /// As [`SandboxError::SnapshotInvalid`], because of another failure (a
    /// body that does not decompress, calls that do not decode, a restore
    /// that failed), which is the source.
    #[error("snapshot rejected: {}{source}", lead(context))]
    SnapshotRejected {
        /// What did not decode (empty when the source says it all).
        context: String,
        /// The failure.
        source: ErrorSource,
    },
    /// The VM was stopped mid-mutation (hard deadline, trap) and is discarded.
    #[error("the VM was discarded after a hard stop and cannot be used again")]
    Poisoned,
    /// Too many asynchronous host calls are pending.
    #[error("too many pending host calls (limit {0})")]
    TooManyPending(usize),
    /// The call was aborted by the host.
    #[error("aborted")]
    Aborted,
    /// The worker pool is shut down.
    #[error("the sandbox pool is shut down")]
    PoolClosed,
    /// An internal invariant broke: a trap the limits do not explain, or
    /// guest memory that does not hold what the ABI promises.
    #[error("internal sandbox error: {0}")]
    Internal(String),
    /// As [`SandboxError::Internal`], because of another failure (guest
    /// memory that cannot be written, a value that does not encode), which
    /// is the source.
    #[error("internal sandbox error: {}{source}", lead(context))]
    InternalFailed {
        /// What was being done (empty when the source says it all).
        context: String,
        /// The failure.
        source: ErrorSource,
    },
    /// WebAssembly trapped. The VM classifies this (deadline, memory, stack)
    /// and discards itself; it never reaches callers unclassified.
    #[error("the guest trapped: {message}")]
    Trap {
        /// The trap code, when wasmtime reported one.
        trap: Option<wasmtime::Trap>,
        /// The full error text.
        message: String,
    },
    /// Internal marker: the last ABI call raised a guest exception that the
    /// caller must read with `qjs_get_exception`. Never escapes the crate.
    #[error("a guest exception is pending")]
    PendingException,
}

/// The failure under a `…Failed` or `…Rejected` variant.
pub type ErrorSource = Box<dyn std::error::Error + Send + Sync>;

/// `context: `, or nothing.
fn lead(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!("{context}: ")
    }
}

impl SandboxError {
    pub(crate) fn runtime(msg: impl Into<String>) -> Self {
        Self::RuntimeUnavailable(msg.into())
    }

    /// [`SandboxError::RuntimeFailed`].
    pub(crate) fn runtime_failed(
        context: impl Into<String>,
        source: impl Into<ErrorSource>,
    ) -> Self {
        Self::RuntimeFailed {
            context: context.into(),
            source: source.into(),
        }
    }

    pub(crate) fn corrupt(msg: impl Into<String>) -> Self {
        Self::Internal(msg.into())
    }

    /// [`SandboxError::InternalFailed`].
    pub(crate) fn internal_failed(
        context: impl Into<String>,
        source: impl Into<ErrorSource>,
    ) -> Self {
        Self::InternalFailed {
            context: context.into(),
            source: source.into(),
        }
    }

    /// [`SandboxError::SnapshotRejected`].
    pub(crate) fn snapshot_rejected(
        context: impl Into<String>,
        source: impl Into<ErrorSource>,
    ) -> Self {
        Self::SnapshotRejected {
            context: context.into(),
            source: source.into(),
        }
    }

    /// The protocol error code for this error: the single place where
    /// sandbox failures become `CodeModeErrorCode`s. Uncaught guest
    /// exceptions have no code: they are the cell's own failure.
    pub fn code(&self) -> Option<CodeModeErrorCode> {
        Some(match self {
            Self::RuntimeUnavailable(_) | Self::RuntimeFailed { .. } | Self::PoolClosed => {
                CodeModeErrorCode::RuntimeUnavailable
            }
            Self::Timeout(_) | Self::Stalled => CodeModeErrorCode::Timeout,
            Self::MemoryLimit => CodeModeErrorCode::MemoryLimitExceeded,
            Self::OutputLimit(_) | Self::ValueTooLarge(_) => CodeModeErrorCode::OutputLimitExceeded,
            Self::Syntax(_) => CodeModeErrorCode::InvalidInput,
            Self::Guest(_) => return None,
            Self::ModuleAccessDenied(_) => CodeModeErrorCode::ModuleAccessDenied,
            Self::Unconvertible(_) => CodeModeErrorCode::InvalidInput,
            Self::SnapshotTooLarge { .. } => CodeModeErrorCode::SnapshotLimitExceeded,
            Self::SnapshotInvalid(_) | Self::SnapshotRejected { .. } => {
                CodeModeErrorCode::SnapshotRestoreFailed
            }
            Self::TooManyPending(_) => CodeModeErrorCode::TooManyPendingToolCalls,
            Self::Aborted => CodeModeErrorCode::Aborted,
            Self::Poisoned
            | Self::Internal(_)
            | Self::InternalFailed { .. }
            | Self::Trap { .. }
            | Self::PendingException => CodeModeErrorCode::InternalError,
        })
    }
}

impl From<wasmtime::Error> for SandboxError {
    fn from(error: wasmtime::Error) -> Self {
        // Traps are classified by the VM, which knows its deadline and limits.
        Self::Trap {
            trap: error.downcast_ref::<wasmtime::Trap>().copied(),
            message: format!("{error:#}"),
        }
    }
}

/// The sandbox's result type.
pub type Result<T, E = SandboxError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_from_another_error_keeps_it_and_reads_as_before() {
        let spawn = std::io::Error::other("no threads left");
        let error = SandboxError::runtime_failed("spawning a VM worker", spawn);
        assert_eq!(
            error.to_string(),
            "QuickJS-WASI runtime unavailable: spawning a VM worker: no threads left"
        );
        assert_eq!(error.code(), Some(CodeModeErrorCode::RuntimeUnavailable));
        let source = std::error::Error::source(&error).unwrap();
        assert!(source.downcast_ref::<std::io::Error>().is_some());

        let restore = SandboxError::snapshot_rejected("", SandboxError::Poisoned);
        assert_eq!(
            restore.to_string(),
            "snapshot rejected: the VM was discarded after a hard stop and cannot be used again"
        );
        assert_eq!(
            restore.code(),
            Some(CodeModeErrorCode::SnapshotRestoreFailed)
        );
        let inner = std::error::Error::source(&restore).unwrap();
        assert!(matches!(
            inner.downcast_ref::<SandboxError>(),
            Some(SandboxError::Poisoned)
        ));
    }
}
