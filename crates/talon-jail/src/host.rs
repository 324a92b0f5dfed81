//! What this host offers the sandbox, found once per process: bubblewrap
//! (probed by running one sandbox of the real kind), where pids cgroups go,
//! the compiled filters and the copy of `/etc` ([`Host`]); whether the
//! kernel counts this process as root; whether the bridge of the network
//! `"allow"` is installed; and whether the unsandboxed mode can cut the
//! network with a namespace of its own.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use crate::{Access, Etc, Limits, Network, Prepared, Spec, bwrap, cgroup, seccomp, view};

/// Whether this process is root to the kernel's process limit: user 0
/// here, mapped to user 0 outside (a user namespace's root that is an
/// ordinary user outside, as in a rootless container, is not exempt from
/// `RLIMIT_NPROC` and cannot make cgroups).
pub(crate) fn kernel_root() -> bool {
    static ROOT: OnceLock<bool> = OnceLock::new();
    *ROOT.get_or_init(|| {
        nix::unistd::Uid::effective().is_root()
            && std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|map| {
                map.lines().any(|line| {
                    let mut fields = line.split_whitespace();
                    fields.next() == Some("0") && fields.next() == Some("0")
                })
            })
    })
}

/// What the host offers, found once per process.
#[derive(Debug)]
pub(crate) struct Host {
    /// bubblewrap, or why there is none that works.
    pub(crate) bwrap: Result<PathBuf, String>,
    /// Where pids cgroups go (root only).
    pub(crate) cgroups: Option<PathBuf>,
    /// The compiled filters in their files, and the copy of `/etc`.
    pub(crate) files: Result<view::Files, String>,
}

/// The host's offer, found on first use.
pub(crate) fn host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(|| {
        let files = seccomp::programs()
            .map(|[a, b]| [seccomp::bytes(&a), seccomp::bytes(&b)])
            .map_err(|e| format!("its seccomp filter did not compile: {e}"))
            .and_then(|filters| {
                view::Files::new(&filters)
                    .map_err(|e| format!("its files (seccomp filters, a copy of /etc): {e}"))
            });
        let cgroups = cgroup::parent();
        // The first copy of /etc is made while the probe runs.
        let bwrap = std::thread::scope(|scope| {
            if let Ok(files) = &files {
                scope.spawn(|| {
                    if let Err(error) = files.etc() {
                        tracing::warn!(%error, "the allow-listed /etc could not be copied");
                    }
                });
            }
            probe(files.as_ref().ok(), cgroups.as_deref())
        });
        Host {
            bwrap,
            cgroups,
            files,
        }
    })
}

/// Finds bubblewrap and runs one sandbox of the real kind (`true`), so
/// that a host that refuses user namespaces is found before a command.
fn probe(files: Option<&view::Files>, cgroups: Option<&Path>) -> Result<PathBuf, String> {
    let bwrap = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or("bubblewrap (bwrap) is not installed")?;
    if !Path::new(bwrap::PRLIMIT).is_file() {
        return Err(format!("{} (util-linux) is missing", bwrap::PRLIMIT));
    }
    let files = files.ok_or("its files could not be made")?;
    let dir = std::env::temp_dir();
    let spec = Prepared {
        bwrap: &bwrap,
        cgroups,
        files,
    };
    let mut command = spec
        .std_command(
            &Spec {
                workspace: &dir,
                access: Access::ReadOnly,
                network: Network::Off,
                env: &[],
                program: "/bin/true",
                args: &[],
                limits: &Limits::default(),
            },
            None,
            Etc::None,
        )
        .map_err(|e| e.to_string())?;
    let output = command
        .0
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {}: {e}", bwrap.display()))?;
    if output.status.success() {
        Ok(bwrap)
    } else {
        let said = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        Err(format!(
            "bubblewrap could not make a sandbox ({}): {said}",
            output.status
        ))
    }
}

/// Why the network `"allow"` cannot be given.
pub(crate) const NO_BRIDGE: &str = "its network is \"allow\", whose bridge to the proxy is socat, and \
     /usr/bin/socat is missing (Debian: apt-get install socat)";

/// Whether the bridge of the network `"allow"` is installed.
pub(crate) fn has_bridge() -> bool {
    Path::new(bwrap::SOCAT).is_file()
}

/// Whether this host lets an unprivileged process make a network
/// namespace (checked once).
pub(crate) fn can_unshare_network() -> bool {
    static CAN: OnceLock<bool> = OnceLock::new();
    *CAN.get_or_init(|| {
        std::process::Command::new("unshare")
            .args(["--net", "--map-root-user", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    })
}
