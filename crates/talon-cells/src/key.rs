//! Randomness for the store: record nonces and hold names. The store's
//! key is not made here: it comes from the caller ([`crate::StoreKey::derive`]
//! over a secret the host keeps, in Talon the sandbox's snapshot secret),
//! so this crate never reads a secret file of its own.

use crate::CellError;

pub(crate) fn random<const N: usize>() -> Result<[u8; N], CellError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| CellError::storage("no CSPRNG", e))?;
    Ok(bytes)
}
