//! `agents.defaults.sandbox` and `agents.list[].sandbox`: the sandbox of
//! every command an agent's model runs, as given (an agent's own section
//! over the defaults' key by key): the one reading of its keys, which
//! builds the `talon_jail::Policy` the sandbox enforces.

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AgentEntry, AgentsSection, NonEmpty, openclaw};

use talon_jail::{AllowHost, Limits, MAX_ALLOW_HOSTS, OPENCLAW_ONLY, Policy, PolicyError, bounds};
/// The sandbox's modes, declared once, in talon-jail (the words and
/// their meanings as the sandbox reads them).
pub use talon_jail::{
    Mode as SandboxMode, Network as SandboxNetwork, Scope as SandboxScope,
    WorkspaceAccess as SandboxAccess,
};

fn sandbox_openclaw(schema: &mut Schema) {
    openclaw(
        schema,
        &OPENCLAW_ONLY,
        "OpenClaw's container setting; Talon's sandbox has no containers and does not read it.",
    );
}

/// The sandbox of every command the model runs (bubblewrap namespaces, a read-only system, seccomp, limits). An agent's own section applies over `agents.defaults.sandbox`, key by key; a key it does not know refuses the config.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[schemars(extend("x-strict" = true))]
#[schemars(transform = sandbox_openclaw)]
pub struct SandboxSection {
    /// Whether commands run sandboxed: all (default; non-main is treated as all), or off (unsandboxed: the admin's explicit choice).
    pub mode: Option<SandboxMode>,
    /// Which commands share a scratch workspace with workspaceAccess none (default session).
    pub scope: Option<SandboxScope>,
    /// The agent's workspace in the sandbox: rw (default), ro (and write/edit refuse), or none (a scratch workspace).
    pub workspace_access: Option<SandboxAccess>,
    /// Where commands may reach: off (default), allow (only allowHosts, through a filtering proxy; needs socat), or the host's network.
    pub network: Option<SandboxNetwork>,
    /// With network allow, the host:port pairs commands may reach (at most 256): a name (api.example.com:443), a wildcard below a name (*.pypi.org:443), or an IP address only where listed as one; empty is the same as off.
    #[schemars(length(max = MAX_ALLOW_HOSTS))]
    pub allow_hosts: Option<Vec<NonEmpty>>,
    /// Per-command resource limits.
    pub limits: Option<SandboxLimits>,
    /// OpenClaw's; not read.
    #[schemars(skip)]
    pub docker: Option<Value>,
    /// OpenClaw's; not read.
    #[schemars(skip)]
    pub browser: Option<Value>,
    /// OpenClaw's; not read.
    #[schemars(skip)]
    pub prune: Option<Value>,
    /// OpenClaw's; not read.
    #[schemars(skip)]
    pub session_tools_visibility: Option<Value>,
    /// OpenClaw's; not read.
    #[schemars(skip)]
    pub workspace_root: Option<Value>,
}

impl SandboxSection {
    /// This section over `base`, key by key (and `limits` key by key).
    pub fn over(&self, base: &SandboxSection) -> SandboxSection {
        let limits = match (&self.limits, &base.limits) {
            (Some(own), Some(base)) => Some(SandboxLimits {
                cpu_seconds: own.cpu_seconds.or(base.cpu_seconds),
                memory_bytes: own.memory_bytes.or(base.memory_bytes),
                processes: own.processes.or(base.processes),
                open_files: own.open_files.or(base.open_files),
                file_size_bytes: own.file_size_bytes.or(base.file_size_bytes),
                tmp_bytes: own.tmp_bytes.or(base.tmp_bytes),
                disk_reserve_bytes: own.disk_reserve_bytes.or(base.disk_reserve_bytes),
            }),
            (own, base) => own.clone().or_else(|| base.clone()),
        };
        let pick = |own: &Option<Value>, base: &Option<Value>| own.clone().or_else(|| base.clone());
        SandboxSection {
            mode: self.mode.or(base.mode),
            scope: self.scope.or(base.scope),
            workspace_access: self.workspace_access.or(base.workspace_access),
            network: self.network.or(base.network),
            allow_hosts: self
                .allow_hosts
                .clone()
                .or_else(|| base.allow_hosts.clone()),
            limits,
            docker: pick(&self.docker, &base.docker),
            browser: pick(&self.browser, &base.browser),
            prune: pick(&self.prune, &base.prune),
            session_tools_visibility: pick(
                &self.session_tools_visibility,
                &base.session_tools_visibility,
            ),
            workspace_root: pick(&self.workspace_root, &base.workspace_root),
        }
    }

    /// The policy the sandbox enforces: the keys this section sets over
    /// the defaults, checked by [`Policy::check`] (its error's
    /// [`PolicyError::key`] is under this section).
    pub fn policy(&self) -> Result<Policy, PolicyError> {
        let defaults = Limits::default();
        let limits = self.limits.clone().unwrap_or_default();
        let policy = Policy {
            mode: self.mode.unwrap_or_default(),
            scope: self.scope.unwrap_or_default(),
            workspace_access: self.workspace_access.unwrap_or_default(),
            network: self.network.unwrap_or_default(),
            allow_hosts: self
                .allow_hosts
                .iter()
                .flatten()
                .enumerate()
                .map(|(index, entry)| {
                    entry
                        .0
                        .parse::<AllowHost>()
                        .map_err(|reason| PolicyError::Host { index, reason })
                })
                .collect::<Result<_, _>>()?,
            limits: Limits {
                cpu_seconds: limits.cpu_seconds.unwrap_or(defaults.cpu_seconds),
                memory_bytes: limits.memory_bytes.unwrap_or(defaults.memory_bytes),
                processes: limits.processes.unwrap_or(defaults.processes),
                open_files: limits.open_files.unwrap_or(defaults.open_files),
                file_size_bytes: limits.file_size_bytes.unwrap_or(defaults.file_size_bytes),
                tmp_bytes: limits.tmp_bytes.unwrap_or(defaults.tmp_bytes),
                disk_reserve_bytes: limits
                    .disk_reserve_bytes
                    .unwrap_or(defaults.disk_reserve_bytes),
            },
        };
        policy.check()?;
        Ok(policy)
    }
}

/// Per-command resource limits (a key it does not know refuses the config).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[schemars(extend("x-strict" = true))]
pub struct SandboxLimits {
    /// CPU seconds per process (default 300).
    #[schemars(range(min = bounds::CPU_SECONDS_MIN, max = bounds::CPU_SECONDS_MAX))]
    pub cpu_seconds: Option<u64>,
    /// Data bytes per process (default 4 GiB).
    #[schemars(range(min = bounds::MEMORY_BYTES_MIN))]
    pub memory_bytes: Option<u64>,
    /// Processes and threads at once (default 256).
    #[schemars(range(min = bounds::PROCESSES_MIN, max = bounds::PROCESSES_MAX))]
    pub processes: Option<u64>,
    /// Open files per process (default 1024).
    #[schemars(range(min = bounds::OPEN_FILES_MIN, max = bounds::OPEN_FILES_MAX))]
    pub open_files: Option<u64>,
    /// The largest file written (default 1 GiB).
    #[schemars(range(min = bounds::FILE_SIZE_BYTES_MIN))]
    pub file_size_bytes: Option<u64>,
    /// The private /tmp's size (default 512 MiB).
    #[schemars(range(min = bounds::TMP_BYTES_MIN))]
    pub tmp_bytes: Option<u64>,
    /// The free space the workspace's filesystem keeps: a command whose writes leave less is stopped (default 1 GiB; 0: not checked).
    pub disk_reserve_bytes: Option<u64>,
}

impl AgentsSection {
    /// `agents.defaults.sandbox`, or the default section when it is absent.
    pub fn default_sandbox(&self) -> SandboxSection {
        self.defaults.common.sandbox.clone().unwrap_or_default()
    }

    /// Each agent that sets a sandbox of its own: its index in the list,
    /// its entry, its own section, and that section over the defaults'
    /// (what its commands run in).
    pub fn own_sandboxes(
        &self,
    ) -> impl Iterator<Item = (usize, &AgentEntry, &SandboxSection, SandboxSection)> {
        let base = self.default_sandbox();
        self.list.iter().enumerate().filter_map(move |(i, agent)| {
            let own = agent.common.sandbox.as_ref()?;
            Some((i, agent, own, own.over(&base)))
        })
    }
}
