//! The Linux sandbox every command a model runs goes through (the shell
//! tool's, and an environment's), and the admin's policy for it
//! ([`Policy`]). Not to be confused with `talon-sandbox`, the
//! WebAssembly sandbox Code Mode's JavaScript runs in: this one confines
//! native processes.
//!
//! # What a sandboxed command gets
//!
//! [`Jail::command`] builds the command as bubblewrap (`bwrap`, Debian's
//! `bubblewrap`) runs it ([`bwrap`] has the filesystem it sees):
//!
//! - its own user, mount, PID, IPC, UTS and cgroup namespaces, and a
//!   network namespace of its own (only a loopback, and with the network
//!   `"allow"` the bridge to its proxy) unless the policy gives it the
//!   host's network; no capabilities; no further user
//!   namespaces (`--disable-userns`); no new privileges (bubblewrap sets
//!   `PR_SET_NO_NEW_PRIVS` to load the filter), so setuid binaries do not
//!   elevate;
//! - a read-only system (`/usr`, an allow-list of `/etc`), its own
//!   `/proc` and `/dev`, a private `/tmp` of bounded size, the workspace
//!   at its own path (writable, or read-only by policy), and nothing else:
//!   the gateway's state directory, home, config and tokens, other
//!   workspaces, `/run` and the host's `/proc` are absent, so the gateway's
//!   environment (`/proc/<pid>/environ`) is out of reach and a command sees
//!   only the variables bound to its run;
//! - a seccomp filter ([`seccomp`]) refusing ptrace, mounts, namespaces,
//!   kernel modules, bpf, keyrings, io_uring, raw sockets and the like;
//! - limits ([`Limits`]): CPU seconds, data bytes, open files and file
//!   size (set by the wrapper shell bubblewrap starts from), processes
//!   (`prlimit`, util-linux, applied inside the user namespace so that the
//!   count is the command's own), an OOM score of 1000 so that the kernel
//!   kills the command before the gateway when memory runs out, and,
//!   where the gateway runs as root (which the kernel exempts from the
//!   process limit), a pids cgroup ([`cgroup`]);
//! - death with its PID namespace: killing bubblewrap (the caller kills
//!   the process group at the end, timeout or cancellation) takes every
//!   process of the command with it, `setsid` or not; where there is a
//!   pids cgroup, [`Guard::kill_remaining`] also kills what a kill landing
//!   while bubblewrap was still starting left behind.
//!
//! # Commands on another host
//!
//! [`remote`] gives the same sandbox for a command another host runs
//! (the `ssh` environment provider's): [`remote::bwrap_arguments`] is the
//! line above, built by the same code, with the network `"allow"` as
//! `"off"` (its proxy is the gateway's), the environment left to the
//! caller, and what only that host can tell (its `/bin` links, its
//! procfs files) left to it; [`seccomp_filters`] are the filter's bytes
//! and the architecture they were compiled for, for the caller to copy
//! there and open on descriptors 3 and 4.
//!
//! # Why bubblewrap, seccompiler and util-linux
//!
//! bubblewrap is the kept tool for unprivileged namespaces and mounts
//! (Flatpak's, and Anthropic's sandbox runtime's): writing the same
//! `clone`/`pivot_root` sequence by hand would be a second, less reviewed
//! copy. Landlock (the Codex approach) confines paths but not PIDs or
//! IPC, and forbids the mounts a namespace sandbox needs, so it would
//! only repeat what the mount namespace already hides. The filter is
//! compiled by `seccompiler` rather than written as BPF. The process limit
//! is set by `prlimit` inside the sandbox because one set before the user
//! namespace exists would count every process of the gateway's user; the
//! others, per process, are set by the wrapper shell (`ulimit`), which
//! also opens the filters' files, so that a command is spawned with no
//! descriptor passed and no `pre_exec` hook (the standard library then
//! uses `posix_spawn` rather than forking the gateway); nothing here needs
//! `unsafe` code in Talon.
//!
//! # Start-up
//!
//! A sandboxed `true` starts and ends in about 8.4 ms here (see
//! `docs/benchmarks.md`): `/etc` is one bind of a copy of the allow-list
//! ([`view`]) rather than one bind per entry (bubblewrap re-reads the
//! mount table after each: 5.9 ms), and the wrapper joins the cgroup
//! through cgroup v1's `tasks` (the RCU grace period a move through
//! `cgroup.procs` waits for: 8.7 ms).
//!
//! # The allow-list
//!
//! With [`Network::Allow`] a command reaches the hosts and ports of the
//! policy's `allowHosts` ([`AllowHost`]) and nothing else: it keeps its
//! private network namespace, and the gateway serves it a filtering HTTP
//! proxy (`proxy.rs`) on a Unix socket of its own, which a bridge inside
//! the namespace (`socat`, started before the command; see `bwrap.rs`)
//! exposes at `127.0.0.1:3128`, where `HTTP_PROXY` and `HTTPS_PROXY`
//! point. The proxy checks each requested host name and port before it
//! resolves anything, resolves names itself (the sandbox has no DNS),
//! and refuses, with a `403` and a warning in the log, what is not
//! listed.
//!
//! The proxy reads one request head per connection with a small parser
//! of its own (`http.rs`) under fixed caps, rather than hyper: it needs
//! only the request line and the header fields of one head, then copies
//! bytes (a tunnel, or a request body) without parsing them, and hyper
//! would want its server and client halves, hyper-util and an upgrade
//! path for `CONNECT` to do as much, with less control over how much of
//! a hostile client it reads.
//!
//! # Modes
//!
//! [`Policy::mode`] `"off"` is the one unsandboxed mode, an admin's
//! explicit choice: commands then run as the gateway's user with its
//! filesystem (a network namespace of their own still cuts the network
//! when the policy says `"off"`; `"allow"` needs the sandbox and is
//! refused there). Where the host cannot make a sandbox
//! (no bubblewrap, no user namespaces; `host.rs` finds out, once per
//! process, by running one), [`Jail::command`] refuses with
//! [`JailError::Unavailable`] naming what is missing, and [`Jail::status`]
//! says so for `/healthz` and `config check`.

mod allow;
mod bwrap;
mod cgroup;
mod disk;
mod host;
mod http;
mod policy;
mod proxy;
pub mod remote;
mod seccomp;
mod view;

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use host::{NO_BRIDGE, can_unshare_network, has_bridge, host, kernel_root};

pub use disk::{DISK_SLACK_BYTES, DiskWatch};
pub use policy::{
    AllowHost, Limits, MAX_ALLOW_HOSTS, Mode, Network, OPENCLAW_ONLY, Policy, PolicyError, Scope,
    WorkspaceAccess, bounds,
};
pub use remote::{Proxy, SeccompFilters, seccomp_filters};

/// Why a command could not be sandboxed.
#[derive(Debug, thiserror::Error)]
pub enum JailError {
    /// The host cannot make the sandbox (what is missing is said).
    #[error(
        "the command was not run: this host cannot sandbox it ({0}); install bubblewrap \
         (Debian: apt-get install bubblewrap) on a kernel with unprivileged user namespaces, \
         or set agents.defaults.sandbox.mode to \"off\" to run commands unsandboxed"
    )]
    Unavailable(String),
    /// The unsandboxed mode was asked to cut the network and the host
    /// cannot make a network namespace.
    #[error(
        "the command was not run: its network is off, and this host does not let it make a \
         network namespace (unshare --net --map-root-user failed)"
    )]
    NoNetworkNamespace,
    /// What this host or this policy does not support (said): no filter
    /// for this architecture, no bridge for the network `"allow"`, or
    /// that network without the sandbox.
    #[error("the command was not run: {0}")]
    Unsupported(String),
    /// The filter did not compile.
    #[error("the command was not run: its seccomp filter: {0}")]
    Seccomp(String),
    /// The command took the workspace's filesystem under the free space
    /// the policy keeps (`limits.diskReserveBytes`; see [`DiskWatch`]).
    #[error(
        "its writes left the workspace's filesystem {free} bytes free, under the {reserve} \
         bytes the sandbox keeps free (limits.diskReserveBytes); remove files from the \
         workspace (a command that frees space still runs)"
    )]
    DiskLow {
        /// Bytes free (to an unprivileged user).
        free: u64,
        /// The reserve.
        reserve: u64,
    },
    /// An operating-system call failed while preparing it.
    #[error("the command was not run: {what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Calls `remove` on each entry of `dir` named `talon-jail-<pid>-...`
/// whose process is gone: what a process of this crate left (pids
/// cgroups, its private files) and cannot remove at its exit. Failures
/// are left for the next sweep.
fn sweep_gone(dir: &Path, remove: impl Fn(&Path) -> std::io::Result<()>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("talon-jail-"))
            .and_then(|rest| rest.split('-').next())
            .filter(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = remove(&entry.path());
        }
    }
}

/// What `/healthz` and `config check` say of command isolation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `"bubblewrap"` (sandboxed), `"off"` (the admin's unsandboxed
    /// mode) or `"unavailable"` (commands are refused).
    pub mode: &'static str,
    /// The network commands get by default (`"off"`, `"allow"` or
    /// `"host"`; `"allow"` with no hosts listed is `"off"`).
    pub network: Network,
    /// Why commands are refused, when they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How the process limit is enforced: `"rlimit"`, `"cgroup"`, or
    /// `"none"` (root without a pids cgroup).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<&'static str>,
}

/// Whether the workspace is writable in the sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Access {
    /// Writable.
    #[default]
    ReadWrite,
    /// Read-only.
    ReadOnly,
}

/// One command to run.
#[derive(Debug, Clone, Copy)]
pub struct Spec<'a> {
    /// The directory it runs in (an absolute, canonical path), the only
    /// one of the host's it may write.
    pub workspace: &'a Path,
    /// Whether it may write there.
    pub access: Access,
    /// The network it asks for; it gets the narrower of this and the
    /// policy's.
    pub network: Network,
    /// Variables besides `PATH`, `HOME`, `TMPDIR`, `LANG`, `LC_ALL` and
    /// `TERM` (the bound secrets).
    pub env: &'a [(String, String)],
    /// The program (an absolute path inside the sandbox) and its
    /// arguments.
    pub program: &'a str,
    /// Its arguments.
    pub args: &'a [&'a str],
    /// Its limits.
    pub limits: &'a Limits,
}

/// A command ready to spawn, and what must live as long as it runs.
#[derive(Debug)]
pub struct Confined {
    /// The command: the caller adds stdio, a process group and
    /// `kill_on_drop`, and spawns it.
    pub command: tokio::process::Command,
    /// The command's pids cgroup and network proxy, removed and ended
    /// when this is dropped (after the command ended).
    pub guard: Guard,
}

/// Holds what a running command needs: its cgroup, its copy of `/etc`,
/// and with the network `"allow"` its proxy (whose task ends, and socket
/// goes, on drop).
#[derive(Debug, Default)]
pub struct Guard {
    _cgroup: Option<cgroup::Cgroup>,
    _etc: Option<Arc<view::View>>,
    _proxy: Option<proxy::Running>,
}

impl Guard {
    /// Kills whatever of the command is left in its pids cgroup (where
    /// the gateway runs as root and so has one; elsewhere nothing): the
    /// fallback for a sandbox killed so early that its PID namespace
    /// outlived bubblewrap. Call it after killing the command's group.
    pub fn kill_remaining(&self) {
        if let Some(cgroup) = &self._cgroup {
            cgroup.kill();
        }
    }
}

/// What a command sees as `/etc`.
#[derive(Debug, Clone, Copy)]
enum Etc {
    /// The copy of the allow-list (every command).
    Copy,
    /// Nothing (the host's probe, which runs `/bin/true`).
    None,
}

/// The parts every sandboxed command is built from.
struct Prepared<'a> {
    bwrap: &'a Path,
    cgroups: Option<&'a Path>,
    files: &'a view::Files,
}

impl Prepared<'_> {
    fn std_command(
        &self,
        spec: &Spec<'_>,
        proxy: Option<&Path>,
        etc: Etc,
    ) -> Result<(std::process::Command, Guard), JailError> {
        let etc = match etc {
            Etc::Copy => Some(self.files.etc().map_err(|source| JailError::Io {
                what: "copying the allow-listed /etc",
                source,
            })?),
            Etc::None => None,
        };
        let etc_dir = etc
            .as_ref()
            .map(|view| view.dir(spec.network == Network::Host))
            .transpose()
            .map_err(|source| JailError::Io {
                what: "linking the copy of /etc for the host's network",
                source,
            })?;
        let args = bwrap::Args {
            workspace: spec.workspace.as_os_str(),
            writable: spec.access == Access::ReadWrite,
            network: spec.network,
            proxy,
            env: bwrap::Environment::Set(spec.env),
            limits: spec.limits,
            program: spec.program,
            args: spec.args,
        }
        .build(&bwrap::Local {
            etc: etc_dir.as_deref(),
            processes: if kernel_root() {
                bwrap::ProcessLimit::Root
            } else {
                bwrap::ProcessLimit::Rlimit
            },
        });
        let cgroup = match self.cgroups {
            Some(parent) => Some(cgroup::Cgroup::new(parent, spec.limits.processes).map_err(
                |source| JailError::Io {
                    what: "making its pids cgroup",
                    source,
                },
            )?),
            None => None,
        };
        // The wrapper joins the cgroup, sets the limits, opens the
        // filters and becomes bubblewrap: nothing of the command runs
        // outside the cgroup, and no descriptor of the gateway's is passed
        // (so the standard library spawns it without forking the gateway).
        let wrapper = bwrap::wrapper(
            cgroup.as_ref().map(cgroup::Cgroup::join).as_deref(),
            self.files.filters(),
            spec.limits,
        );
        let mut command = std::process::Command::new(&wrapper[0]);
        command
            .args(&wrapper[1..])
            .arg(self.bwrap)
            .args(args)
            .env_clear();
        Ok((
            command,
            Guard {
                _cgroup: cgroup,
                _etc: etc,
                _proxy: None,
            },
        ))
    }
}

/// The sandbox of one agent's commands: its policy and the host's means.
#[derive(Debug, Clone, Default)]
pub struct Jail {
    policy: Arc<Policy>,
}

impl Jail {
    /// A jail applying `policy`.
    pub fn new(policy: Policy) -> Jail {
        Jail {
            policy: Arc::new(policy),
        }
    }

    /// Its policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// What this host does with commands under this policy (probes the
    /// host on first use, once per process).
    pub fn status(&self) -> Status {
        let network = self.policy.effective_network();
        if !self.policy.sandboxed() {
            return Status {
                mode: "off",
                network,
                reason: None,
                processes: None,
            };
        }
        let host = host();
        match &host.bwrap {
            Ok(_) if network == Network::Allow && !has_bridge() => Status {
                mode: "unavailable",
                network,
                reason: Some(NO_BRIDGE.to_owned()),
                processes: None,
            },
            Ok(_) => Status {
                mode: "bubblewrap",
                network,
                reason: None,
                processes: Some(match (&host.cgroups, kernel_root()) {
                    (Some(_), _) => "cgroup",
                    (None, false) => "rlimit",
                    (None, true) => "none",
                }),
            },
            Err(reason) => Status {
                mode: "unavailable",
                network,
                reason: Some(reason.clone()),
                processes: None,
            },
        }
    }

    /// `program args` as the policy runs it in `spec.workspace`: in the
    /// sandbox, or, in the admin's unsandboxed mode, directly (in a
    /// network namespace of its own when the network is off).
    ///
    /// With the network `"allow"` this starts the command's proxy on the
    /// current tokio runtime (so it must be called inside one); the
    /// proxy lives as long as the returned [`Guard`].
    pub fn command(&self, spec: &Spec<'_>) -> Result<Confined, JailError> {
        let network = self.policy.effective_network().narrow(spec.network);
        let spec = Spec { network, ..*spec };
        if !self.policy.sandboxed() {
            return unsandboxed(&spec);
        }
        let host = host();
        let bwrap = host
            .bwrap
            .as_ref()
            .map_err(|e| JailError::Unavailable(e.clone()))?;
        let files = host
            .files
            .as_ref()
            .map_err(|e| JailError::Unavailable(e.clone()))?;
        let prepared = Prepared {
            bwrap,
            cgroups: host.cgroups.as_deref(),
            files,
        };
        let proxy = match network {
            Network::Allow if !has_bridge() => {
                return Err(JailError::Unsupported(NO_BRIDGE.to_owned()));
            }
            Network::Allow => Some(proxy::Running::start(Arc::clone(&self.policy))?),
            Network::Off | Network::Host => None,
        };
        let socket = proxy.as_ref().map(proxy::Running::socket);
        let (command, mut guard) = prepared.std_command(&spec, socket.as_deref(), Etc::Copy)?;
        guard._proxy = proxy;
        let mut command = tokio::process::Command::from(command);
        command.current_dir("/");
        Ok(Confined { command, guard })
    }
}

/// The admin's unsandboxed mode: the command as the gateway's user.
fn unsandboxed(spec: &Spec<'_>) -> Result<Confined, JailError> {
    let mut command = match spec.network {
        Network::Host => tokio::process::Command::new(spec.program),
        Network::Allow => {
            return Err(JailError::Unsupported(
                "its network is \"allow\", whose proxy needs the sandbox, and the \
                 sandbox's mode is \"off\""
                    .to_owned(),
            ));
        }
        Network::Off => {
            if !can_unshare_network() {
                return Err(JailError::NoNetworkNamespace);
            }
            let mut command = tokio::process::Command::new("unshare");
            command.args(["--net", "--map-root-user", "--", spec.program]);
            command
        }
    };
    command
        .args(spec.args)
        .current_dir(spec.workspace)
        .env_clear();
    for key in ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR"] {
        if let Ok(value) = std::env::var(key) {
            command.env(key, value);
        }
    }
    command.envs(spec.env.iter().map(|(k, v)| (k, v)));
    Ok(Confined {
        command,
        guard: Guard::default(),
    })
}
