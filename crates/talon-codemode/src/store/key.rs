//! Where the file store's secret comes from: the sandbox's host secret
//! (`talon_sandbox::host_secret`: `<cache dir>/snapshot.key`, outside the
//! state directory), so the store and the snapshots it holds share one
//! secret. The store never uses the secret directly: [`StoreKey::derive`]
//! labels it. With no cache directory the secret is random per process
//! (records then do not survive the process, like snapshots).

use talon_sandbox::SandboxConfig;

use super::StoreError;
use super::record::StoreKey;

pub(crate) fn random<const N: usize>() -> Result<[u8; N], StoreError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Io(format!("no CSPRNG: {e}")))?;
    Ok(bytes)
}

/// The store key derived from the sandbox's host secret.
pub(crate) fn default_key() -> Result<StoreKey, StoreError> {
    let secret = talon_sandbox::host_secret(&SandboxConfig::default())
        .map_err(|e| StoreError::Io(format!("the host secret: {e}")))?;
    Ok(StoreKey::derive(&secret))
}
