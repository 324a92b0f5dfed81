//! The free space a command's workspace filesystem keeps
//! (`limits.diskReserveBytes`), watched while the command runs.

use std::path::{Path, PathBuf};

use crate::JailError;
use crate::policy::Limits;

/// How much less free space than at its start a command may leave while
/// the workspace's filesystem is under the reserve (a command that cleans
/// up, or the gateway's own writes, do not stop it).
pub const DISK_SLACK_BYTES: u64 = 16 << 20;

/// The free space of a command's workspace filesystem, watched while it
/// runs (`limits.diskReserveBytes`): sandboxed or not, a command must not
/// fill the disk the gateway's state may share. The caller looks every
/// 100 ms or so (a `statvfs`, microseconds: the kernel tells no one when
/// space runs low), so a command writing faster than the reserve per
/// interval (10 GB/s for the default 1 GiB) could pass it.
#[derive(Debug)]
pub struct DiskWatch {
    workspace: PathBuf,
    reserve: u64,
    at_start: u64,
}

impl DiskWatch {
    /// Starts watching `workspace` (`None` when `limits` reserve nothing
    /// or its filesystem cannot be read).
    pub fn start(workspace: &Path, limits: &Limits) -> Option<DiskWatch> {
        if limits.disk_reserve_bytes == 0 {
            return None;
        }
        let at_start = free_bytes(workspace).ok()?;
        Some(DiskWatch {
            workspace: workspace.to_owned(),
            reserve: limits.disk_reserve_bytes,
            at_start,
        })
    }

    /// [`JailError::DiskLow`] when the filesystem is under the reserve and
    /// the command's run has taken more than [`DISK_SLACK_BYTES`] of it
    /// since it started: the command is to be stopped.
    pub fn check(&self) -> Result<(), JailError> {
        let free = free_bytes(&self.workspace)?;
        if free < self.reserve && free.saturating_add(DISK_SLACK_BYTES) < self.at_start {
            return Err(JailError::DiskLow {
                free,
                reserve: self.reserve,
            });
        }
        Ok(())
    }
}

/// Bytes free to an unprivileged user on the filesystem of `path`.
fn free_bytes(path: &Path) -> Result<u64, JailError> {
    let stat = nix::sys::statvfs::statvfs(path).map_err(|e| JailError::Io {
        what: "reading the workspace's free space",
        source: e.into(),
    })?;
    Ok(stat.blocks_available().saturating_mul(stat.fragment_size()))
}
