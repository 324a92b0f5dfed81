//! The sandbox policy an admin sets (`agents.defaults.sandbox`, and
//! `agents.list[].sandbox` per agent, in OpenClaw's shape), declared once
//! as typed structs: the config's parse, its defaults and bounds.
//!
//! OpenClaw's keys that map are honoured: `mode` (`"all"`, `"non-main"`,
//! `"off"`), `scope` and `workspaceAccess`. Its Docker keys (`docker`,
//! `browser`, `prune`, `sessionToolsVisibility`) have no meaning for a
//! sandbox without containers: they are accepted and reported by `config
//! check` ([`Policy::ignored_keys`]). Talon's own keys: `network`,
//! `allowHosts` (with `network: "allow"`, see [`AllowHost`]) and
//! `limits`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Limits {
    /// CPU seconds each process may use (`RLIMIT_CPU`).
    #[schemars(range(min = bounds::CPU_SECONDS_MIN, max = bounds::CPU_SECONDS_MAX))]
    pub cpu_seconds: u64,
    /// Bytes of data each process may map (`RLIMIT_DATA`: heap and
    /// private writable mappings; address space reserved but not
    /// writable, as JIT runtimes do, is not counted).
    #[schemars(range(min = bounds::MEMORY_BYTES_MIN))]
    pub memory_bytes: u64,
    /// Processes and threads the command may have at once
    /// (`RLIMIT_NPROC` in the sandbox's user namespace; a pids cgroup
    /// where the gateway runs as root).
    #[schemars(range(min = bounds::PROCESSES_MIN, max = bounds::PROCESSES_MAX))]
    pub processes: u64,
    /// Open files per process (`RLIMIT_NOFILE`).
    #[schemars(range(min = bounds::OPEN_FILES_MIN, max = bounds::OPEN_FILES_MAX))]
    pub open_files: u64,
    /// The largest file a process may write (`RLIMIT_FSIZE`).
    #[schemars(range(min = bounds::FILE_SIZE_BYTES_MIN))]
    pub file_size_bytes: u64,
    /// The size of the command's private `/tmp` (a tmpfs, so memory).
    #[schemars(range(min = bounds::TMP_BYTES_MIN))]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
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
    #[schemars(with = "Vec<String>", length(max = 256))]
    pub allow_hosts: Vec<AllowHost>,
    /// Per-command resource limits.
    pub limits: Limits,
    /// OpenClaw's keys that mean nothing without containers (`docker`,
    /// `browser`, `prune`, ...): kept to be reported, never read.
    #[serde(flatten)]
    #[schemars(skip)]
    pub ignored: BTreeMap<String, Value>,
}

/// Why a sandbox section could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct PolicyError {
    /// The key path (`agents.defaults.sandbox.limits.processes`).
    pub path: String,
    /// What was wrong.
    #[source]
    pub source: serde_json::Error,
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

/// The bounds each limit must keep (the schema's `range`s, checked at
/// parse, since serde does not).
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
    /// Reads a sandbox section (`at` names it in errors); an absent
    /// section is the default policy. `base`, when given, is the policy
    /// this one overrides key by key (`agents.defaults.sandbox` under an
    /// agent's own).
    pub fn from_value(
        value: Option<&Value>,
        base: Option<&Value>,
        at: &str,
    ) -> Result<Policy, PolicyError> {
        let merged = match (base, value) {
            (Some(Value::Object(base)), Some(Value::Object(own))) => {
                let mut merged = base.clone();
                for (key, value) in own {
                    match (merged.get_mut(key), value) {
                        (Some(Value::Object(into)), Value::Object(from)) => {
                            into.extend(from.iter().map(|(k, v)| (k.clone(), v.clone())));
                        }
                        _ => {
                            merged.insert(key.clone(), value.clone());
                        }
                    }
                }
                Value::Object(merged)
            }
            (_, Some(own)) => own.clone(),
            (Some(base), None) => base.clone(),
            (None, None) => return Ok(Policy::default()),
        };
        check_allow_hosts(merged.get("allowHosts"), at)?;
        let policy: Policy = serde_json::from_value(merged).map_err(|source| PolicyError {
            path: at.to_owned(),
            source,
        })?;
        policy.check_bounds(at)?;
        if policy.network == Network::Allow && !policy.sandboxed() {
            return Err(PolicyError {
                path: format!("{at}.network"),
                source: serde::de::Error::custom(
                    "\"allow\" needs the sandbox, and mode is \"off\" (unsandboxed commands get \"off\" or \"host\")",
                ),
            });
        }
        if let Some(key) = policy
            .ignored
            .keys()
            .find(|k| !OPENCLAW_ONLY.contains(&k.as_str()))
        {
            return Err(PolicyError {
                path: format!("{at}.{key}"),
                source: serde::de::Error::custom(format!(
                    "unknown key (Talon reads mode, scope, workspaceAccess, network, allowHosts and limits; OpenClaw's {} are accepted and not read)",
                    OPENCLAW_ONLY.join(", ")
                )),
            });
        }
        Ok(policy)
    }

    fn check_bounds(&self, at: &str) -> Result<(), PolicyError> {
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
                return Err(PolicyError {
                    path: format!("{at}.limits.{key}"),
                    source: serde::de::Error::custom(format!("{value} is out of range ({bound})")),
                });
            }
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

    /// What `config check` reports of this section: OpenClaw keys that
    /// are not read, and OpenClaw values Talon treats differently.
    pub fn ignored_keys(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .ignored
            .keys()
            .map(|key| format!("{key}: OpenClaw's container setting; Talon's sandbox has no containers and does not read it"))
            .collect();
        notes.extend(self.mode_note());
        if self.network == Network::Allow && self.allow_hosts.is_empty() {
            notes.push(
                "network \"allow\" with no allowHosts: commands get no network (as \"off\")"
                    .to_owned(),
            );
        }
        notes
    }

    /// The note on an OpenClaw mode Talon reads differently (`non-main`).
    pub fn mode_note(&self) -> Option<String> {
        (self.mode == Mode::NonMain).then(|| {
            "mode \"non-main\": Talon sandboxes every command (as \"all\"); \"off\" is the only unsandboxed mode"
                .to_owned()
        })
    }
}

/// `allowHosts`, checked entry by entry so that an error names its index
/// (`agents.defaults.sandbox.allowHosts[2]`).
fn check_allow_hosts(value: Option<&Value>, at: &str) -> Result<(), PolicyError> {
    let error = |path: String, message: String| PolicyError {
        path,
        source: serde::de::Error::custom(message),
    };
    let entries = match value {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(entries)) => entries,
        Some(_) => {
            return Err(error(
                format!("{at}.allowHosts"),
                "expected an array of \"host:port\" strings".into(),
            ));
        }
    };
    if entries.len() > MAX_ALLOW_HOSTS {
        return Err(error(
            format!("{at}.allowHosts"),
            format!(
                "{} entries, at most {MAX_ALLOW_HOSTS} (use a wildcard, *.example.com:443)",
                entries.len()
            ),
        ));
    }
    for (i, entry) in entries.iter().enumerate() {
        let path = || format!("{at}.allowHosts[{i}]");
        let Some(entry) = entry.as_str() else {
            return Err(error(path(), "expected a \"host:port\" string".into()));
        };
        entry
            .parse::<AllowHost>()
            .map_err(|why| error(path(), why))?;
    }
    Ok(())
}
