//! Suspended cells as Code Mode keeps them: the stores of `talon-cells`,
//! and the key they are sealed with by default, derived from the
//! sandbox's host secret (`<cache dir>/snapshot.key`, outside the state
//! directory), so the store and the snapshots it holds share one secret.
//! With no cache directory the secret is random per process (records then
//! do not survive the process, like snapshots).

pub use talon_cells::{
    CellError, CellHeader, CellScope, FileStore, HEADER_CAP, MemoryStore, NestedError,
    NestedResult, PendingNestedCall, SnapshotStore, StoreKey, StoreLimits, SuspendedCell,
    decode_record, reseal_record, seal_record,
};
use talon_sandbox::SandboxConfig;

/// The key records are sealed with by default: [`StoreKey::derive`] over
/// the sandbox's host secret.
pub fn default_store_key() -> Result<StoreKey, CellError> {
    let secret = talon_sandbox::host_secret(&SandboxConfig::default())
        .map_err(|e| CellError::storage("the host secret", e))?;
    Ok(StoreKey::derive(&secret))
}

/// A [`FileStore`] on `dir` sealed with [`default_store_key`]: what the
/// CLI and the agent loop open.
pub fn open_file_store(
    dir: impl Into<std::path::PathBuf>,
    limits: StoreLimits,
) -> Result<FileStore, CellError> {
    FileStore::open(dir, limits, default_store_key()?)
}

/// Runs a store operation on a blocking thread. The stores are
/// synchronous (a file write, or a database store that waits for its own
/// thread), and a caller on the async runtime must not block it: on a
/// runtime with one thread, the blocked thread could be the one a
/// database write in progress needs, and the store would wait for that
/// write's lock until it gave up.
pub(crate) async fn off_thread<T: Send + 'static>(
    store: &std::sync::Arc<dyn SnapshotStore>,
    op: impl FnOnce(&dyn SnapshotStore) -> Result<T, CellError> + Send + 'static,
) -> Result<T, CellError> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || op(store.as_ref()))
        .await
        .unwrap_or_else(|e| Err(CellError::Io(format!("the store's thread failed: {e}"))))
}
