//! A pids cgroup per command, where the gateway runs as root.
//!
//! The kernel never applies `RLIMIT_NPROC` to processes whose real user
//! is root, and a sandbox started by root keeps that user (its user
//! namespace maps root to root), so a fork bomb would meet no limit.
//! Root can make cgroups: each command gets a child of the gateway's own
//! pids cgroup (cgroup v1's `pids` hierarchy, or the unified v2 one when
//! its `pids` controller is enabled for children) with `pids.max` set,
//! and joins it before bubblewrap starts (the wrapper shell of `bwrap.rs`
//! moves itself, then `exec`s bubblewrap), so every process
//! of the command is counted. The cgroup is removed when the command's
//! [`Cgroup`] is dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where this process's child pids cgroups go, if it can make them.
pub(crate) fn parent() -> Option<PathBuf> {
    if !crate::kernel_root() {
        return None;
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let writable = |dir: PathBuf| {
        let probe = dir.join(format!("talon-probe-{}", std::process::id()));
        std::fs::create_dir(&probe).ok()?;
        let fits = probe.join("pids.max").exists() && probe.join("cgroup.procs").exists();
        let _ = std::fs::remove_dir(&probe);
        fits.then(|| {
            sweep(&dir);
            dir
        })
    };
    // v1: "N:pids:/path"; v2: "0::/path" with pids delegated to children.
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            return writable(Path::new("/sys/fs/cgroup/pids").join(path));
        }
    }
    for line in own.lines() {
        if let Some(path) = line.strip_prefix("0::") {
            let dir = Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
            let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
            if enabled.split_whitespace().any(|c| c == "pids") {
                return writable(dir);
            }
        }
    }
    None
}

/// Removes the empty cgroups of processes that are gone (`talon-jail-<pid>-<n>`:
/// a process that exited before its last removal retry left them).
fn sweep(parent: &Path) {
    // Only an empty cgroup can be removed; a live one stays.
    crate::sweep_gone(parent, |path| std::fs::remove_dir(path));
}

/// One command's pids cgroup; removed on drop.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// A new cgroup under `parent` allowing `processes` at once.
    pub(crate) fn new(parent: &Path, processes: u64) -> std::io::Result<Cgroup> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = parent.join(format!(
            "talon-jail-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)?;
        let cgroup = Cgroup { dir };
        std::fs::write(cgroup.dir.join("pids.max"), processes.to_string())?;
        Ok(cgroup)
    }

    /// Kills every process in the cgroup: v2's `cgroup.kill`, else
    /// `SIGKILL` to each member, a few passes to catch those forked
    /// meanwhile (`pids.max` bounds them). What a caller falls back on
    /// when a sandbox's PID namespace did not end with bubblewrap (killed
    /// before its inner process took `--die-with-parent`).
    pub(crate) fn kill(&self) {
        if std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok() {
            return;
        }
        for _ in 0..4 {
            let Ok(members) = std::fs::read_to_string(self.dir.join("cgroup.procs")) else {
                return;
            };
            let pids: Vec<i32> = members
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                // ESRCH: gone meanwhile.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }

    /// The file a process writes to, to join: cgroup v1's `tasks`, where
    /// a thread writing `0` moves itself without the RCU grace period
    /// (7 to 11 ms) a move through `cgroup.procs` waits for, or v2's
    /// `cgroup.procs`, which has no such path.
    pub(crate) fn join(&self) -> PathBuf {
        let tasks = self.dir.join("tasks");
        if tasks.exists() {
            tasks
        } else {
            self.dir.join("cgroup.procs")
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The command's processes are gone or going (its PID namespace
        // was torn down); a cgroup is removable once the last has exited.
        let dir = std::mem::take(&mut self.dir);
        if std::fs::remove_dir(&dir).is_ok() {
            return;
        }
        std::thread::spawn(move || {
            for _ in 0..100 {
                std::thread::sleep(Duration::from_millis(20));
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    return;
                }
            }
            tracing::warn!(dir = %dir.display(), "a command's pids cgroup could not be removed");
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    #[test]
    fn the_sweep_removes_only_the_empty_cgroups_of_processes_that_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let own = format!("talon-jail-{}-0", std::process::id());
        for name in [
            "talon-jail-999999999-0",
            own.as_str(),
            "talon-jail-999999999-1",
            "other",
        ] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        // A gone process's cgroup that still holds something stays.
        std::fs::write(dir.path().join("talon-jail-999999999-1/held"), "").unwrap();
        super::sweep(dir.path());
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["other", own.as_str(), "talon-jail-999999999-1"]);
    }
}
