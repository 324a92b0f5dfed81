//! The sandbox policy an admin sets (`agents.defaults.sandbox`, and
//! `agents.list[].sandbox` per agent, in OpenClaw's shape): its words
//! (the enums, which talon-config's typed section re-exports), its limit
//! bounds ([`bounds`]), and [`Policy`], what the sandbox enforces, with
//! [`Policy::check`] for what a type cannot say. talon-config's
//! `SandboxSection` reads the keys and builds the policy; this crate
//! reads no config.
//!
//! OpenClaw's keys that map are honoured: `mode` (`"all"`, `"non-main"`,
//! `"off"`), `scope` and `workspaceAccess`. Its Docker keys
//! ([`OPENCLAW_ONLY`]) have no meaning for a sandbox without containers:
//! the config accepts them and `config check` reports them. Talon's own
//! keys: `network`, `allowHosts` (with `network: "allow"`, see
//! [`AllowHost`]) and `limits`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::allow::AllowHost;

/// Whether commands run sandboxed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Every command sandboxed (Talon's default).
    #[default]
    All,
    /// OpenClaw's "sandbox sessions other than the main one". Talon has
    /// no unsandboxed main session: it sandboxes every command, as `all`
    /// (and `config check` says so).
    NonMain,
    /// No sandbox: commands run as the gateway's own user with its whole
    /// filesystem in reach. Only an admin's explicit choice; `/healthz`
    /// and `config check` report it.
    Off,
}

/// Which sandboxes share a scratch workspace (`workspaceAccess: "none"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// One scratch workspace per session (OpenClaw's default).
    #[default]
    Session,
    /// One per agent.
    Agent,
    /// One for every agent and session.
    Shared,
}

/// What a sandboxed command sees of the agent's workspace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkspaceAccess {
    /// The workspace, writable (Talon's default: commands build and test
    /// in it).
    #[default]
    Rw,
    /// The workspace, read-only; the `write` and `edit` tools refuse.
    Ro,
    /// Not the workspace: a scratch workspace of the sandbox's own, one
    /// per [`Scope`], under the state directory (the file tools work in
    /// it too).
    None,
}

/// Where a sandboxed command may reach, narrowest first (a caller may
/// narrow the policy's, never widen it).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// Nowhere: a network namespace of its own with only a loopback
    /// (the default).
    #[default]
    Off,
    /// The hosts and ports of the policy's `allowHosts` only, through a
    /// filtering proxy the gateway serves for each command: the command
    /// keeps a network namespace of its own, with only a loopback, where
    /// the proxy is reached at `127.0.0.1:3128` (`HTTP_PROXY` and
    /// `HTTPS_PROXY` say so). With no hosts listed it is `Off`.
    Allow,
    /// The host's network, as the gateway has it (its ports and abstract
    /// Unix sockets included). Only where the admin allows it.
    Host,
}

impl Network {
    /// The narrower of two settings (a caller may narrow the admin's
    /// policy, never widen it).
    pub fn narrow(self, asked: Network) -> Network {
        self.min(asked)
    }

    /// The config's word for it (`"off"`, `"allow"`, `"host"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Off => "off",
            Network::Allow => "allow",
            Network::Host => "host",
        }
    }
}

/// The limits' bounds, declared once: the schema's ranges (here and in
/// talon-config's `SandboxLimits`) and the check at parse read them.
pub mod bounds {
    /// `cpuSeconds`, at least.
    pub const CPU_SECONDS_MIN: u64 = 1;
    /// `cpuSeconds`, at most.
    pub const CPU_SECONDS_MAX: u64 = 86_400;
    /// `memoryBytes`, at least.
    pub const MEMORY_BYTES_MIN: u64 = 16 << 20;
    /// `processes`, at least.
    pub const PROCESSES_MIN: u64 = 8;
    /// `processes`, at most.
    pub const PROCESSES_MAX: u64 = 65_536;
    /// `openFiles`, at least.
    pub const OPEN_FILES_MIN: u64 = 16;
    /// `openFiles`, at most.
    pub const OPEN_FILES_MAX: u64 = 1_048_576;
    /// `fileSizeBytes`, at least.
    pub const FILE_SIZE_BYTES_MIN: u64 = 1 << 20;
    /// `tmpBytes`, at least.
    pub const TMP_BYTES_MIN: u64 = 1 << 20;
}

/// Limits on each command's processes, applied with `setrlimit` inside
/// the sandbox (and, where the gateway runs as root, which the kernel
/// exempts from the process limit, a pids cgroup).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU seconds each process may use (`RLIMIT_CPU`).
    pub cpu_seconds: u64,
    /// Bytes of data each process may map (`RLIMIT_DATA`: heap and
    /// private writable mappings; address space reserved but not
    /// writable, as JIT runtimes do, is not counted).
    pub memory_bytes: u64,
    /// Processes and threads the command may have at once
    /// (`RLIMIT_NPROC` in the sandbox's user namespace; a pids cgroup
    /// where the gateway runs as root).
    pub processes: u64,
    /// Open files per process (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// The largest file a process may write (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// The size of the command's private `/tmp` (a tmpfs, so memory).
    pub tmp_bytes: u64,
    /// The free space the workspace's filesystem keeps: a command whose
    /// writes leave less is stopped (checked every 100 ms; a command that
    /// frees space runs on), so that a command filling the disk never
    /// leaves the gateway's state without room. `0`: not checked.
    pub disk_reserve_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu_seconds: 300,
            memory_bytes: 4 << 30,
            processes: 256,
            open_files: 1024,
            file_size_bytes: 1 << 30,
            tmp_bytes: 512 << 20,
            disk_reserve_bytes: 1 << 30,
        }
    }
}

/// The sandbox policy of one agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Whether commands run sandboxed (default `"all"`).
    pub mode: Mode,
    /// Which sandboxes share a scratch workspace (with
    /// `workspaceAccess: "none"`).
    pub scope: Scope,
    /// What commands see of the agent's workspace (default `"rw"`).
    pub workspace_access: WorkspaceAccess,
    /// Where commands may reach (default `"off"`).
    pub network: Network,
    /// With `network: "allow"`, the hosts and ports commands may reach
    /// (`"api.example.com:443"`, `"*.pypi.org:443"`), at most
    /// [`MAX_ALLOW_HOSTS`].
    pub allow_hosts: Vec<AllowHost>,
    /// Per-command resource limits.
    pub limits: Limits,
}

/// Why a policy cannot be enforced; [`PolicyError::key`] names the key
/// under the sandbox section that holds it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A limit outside [`bounds`].
    #[error("{value} is out of range ({bound})")]
    OutOfRange {
        /// The limit's key (`processes`).
        key: &'static str,
        /// The value given.
        value: u64,
        /// The range it must keep, in words.
        bound: String,
    },
    /// An `allowHosts` entry that is not a host and port.
    #[error("{reason}")]
    Host {
        /// The entry's index in `allowHosts`.
        index: usize,
        /// Why it is not one (from [`AllowHost`]'s parse).
        reason: String,
    },
    /// More `allowHosts` entries than [`MAX_ALLOW_HOSTS`].
    #[error("{0} entries, at most {MAX_ALLOW_HOSTS} (use a wildcard, *.example.com:443)")]
    TooManyHosts(usize),
    /// `network: "allow"` with `mode: "off"`: the filtering proxy needs
    /// the sandbox's network namespace.
    #[error(
        "\"allow\" needs the sandbox, and mode is \"off\" (unsandboxed commands get \"off\" or \"host\")"
    )]
    AllowUnsandboxed,
}

impl PolicyError {
    /// The key under the sandbox section (`limits.processes`,
    /// `allowHosts[2]`, `network`).
    pub fn key(&self) -> String {
        match self {
            PolicyError::Host { index, .. } => format!("allowHosts[{index}]"),
            PolicyError::OutOfRange { key, .. } => format!("limits.{key}"),
            PolicyError::TooManyHosts(_) => "allowHosts".to_owned(),
            PolicyError::AllowUnsandboxed => "network".to_owned(),
        }
    }
}

/// OpenClaw's sandbox keys that configure its containers: accepted, not
/// read, reported by `config check`.
pub const OPENCLAW_ONLY: [&str; 5] = [
    "docker",
    "browser",
    "prune",
    "sessionToolsVisibility",
    "workspaceRoot",
];

/// The most entries `allowHosts` may have.
pub const MAX_ALLOW_HOSTS: usize = 256;

/// The bounds each limit must keep (the config schema's `range`s, which
/// `config check` applies first; kept here for a policy built in code).
const BOUNDS: [(&str, u64, u64); 6] = [
    (
        "cpuSeconds",
        bounds::CPU_SECONDS_MIN,
        bounds::CPU_SECONDS_MAX,
    ),
    ("memoryBytes", bounds::MEMORY_BYTES_MIN, u64::MAX),
    ("processes", bounds::PROCESSES_MIN, bounds::PROCESSES_MAX),
    ("openFiles", bounds::OPEN_FILES_MIN, bounds::OPEN_FILES_MAX),
    ("fileSizeBytes", bounds::FILE_SIZE_BYTES_MIN, u64::MAX),
    ("tmpBytes", bounds::TMP_BYTES_MIN, u64::MAX),
];

impl Policy {
    /// What the types cannot say: every limit within [`bounds`], at most
    /// [`MAX_ALLOW_HOSTS`] hosts, and `network: "allow"` only sandboxed.
    pub fn check(&self) -> Result<(), PolicyError> {
        let l = &self.limits;
        let values = [
            l.cpu_seconds,
            l.memory_bytes,
            l.processes,
            l.open_files,
            l.file_size_bytes,
            l.tmp_bytes,
        ];
        for ((key, min, max), value) in BOUNDS.iter().zip(values) {
            if value < *min || value > *max {
                let bound = if *max == u64::MAX {
                    format!("at least {min}")
                } else {
                    format!("from {min} to {max}")
                };
                return Err(PolicyError::OutOfRange { key, value, bound });
            }
        }
        if self.allow_hosts.len() > MAX_ALLOW_HOSTS {
            return Err(PolicyError::TooManyHosts(self.allow_hosts.len()));
        }
        if self.network == Network::Allow && !self.sandboxed() {
            return Err(PolicyError::AllowUnsandboxed);
        }
        Ok(())
    }

    /// The network commands get at most: the policy's, except that
    /// `"allow"` with no hosts listed is `"off"`.
    pub fn effective_network(&self) -> Network {
        match self.network {
            Network::Allow if self.allow_hosts.is_empty() => Network::Off,
            network => network,
        }
    }

    /// Whether `host` on `port` is in `allowHosts`.
    pub(crate) fn allows(&self, host: &crate::allow::Host, port: u16) -> bool {
        self.allow_hosts
            .iter()
            .any(|entry| entry.matches(host, port))
    }

    /// Whether commands run sandboxed.
    pub fn sandboxed(&self) -> bool {
        self.mode != Mode::Off
    }
}
