//! The sandbox each agent's commands run in (`agents.defaults.sandbox`,
//! `agents.list[].sandbox`), read once per config, and what it decides
//! for a run: the jail, whether the workspace is writable, and, with
//! `workspaceAccess: "none"`, which scratch workspace stands in for the
//! agent's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use talon_config::Config;
use talon_config::model::SandboxSection;
use talon_core_tools::{Access, Jail};
use talon_jail::{Scope, WorkspaceAccess};
use talon_tools::RunScope;

use crate::RuntimeError;

/// Every agent's jail, from one config.
#[derive(Debug, Clone, Default)]
pub struct Jails {
    defaults: Jail,
    agents: HashMap<String, Jail>,
}

impl Jails {
    /// Reads the sandbox sections of `config` (their errors name the
    /// key): an agent's own over `agents.defaults.sandbox` key by key,
    /// each made a `talon_jail::Policy` by its typed section.
    pub fn from_config(config: &Config) -> Result<Jails, RuntimeError> {
        let document = config.document().map_err(RuntimeError::config)?;
        let read = |section: &SandboxSection, at: &str| {
            section
                .policy()
                .map_err(|e| RuntimeError::Config(format!("config key {at}.{}: {e}", e.key())))
        };
        let defaults = Jail::new(read(
            &document.agents.default_sandbox(),
            "agents.defaults.sandbox",
        )?);
        let mut agents = HashMap::new();
        for (i, agent, _, merged) in document.agents.own_sandboxes() {
            let Some(id) = agent.id.as_ref() else {
                continue;
            };
            let policy = read(&merged, &format!("agents.list[{i}].sandbox"))?;
            agents.insert(id.clone(), Jail::new(policy));
        }
        Ok(Jails { defaults, agents })
    }

    /// The jail of `agent`'s commands.
    pub fn of(&self, agent: &str) -> &Jail {
        self.agents.get(agent).unwrap_or(&self.defaults)
    }

    /// The default agents' jail (what `/healthz` reports).
    pub fn defaults(&self) -> &Jail {
        &self.defaults
    }
}

/// Where a run's core tools and commands work, and whether commands may
/// write there, by its jail's policy: the agent's `workspace` (writable or
/// read-only), or a scratch workspace of the sandbox's own under
/// `<state dir>/sandboxes/`, one per session, agent or for all
/// (`scope`). The unsandboxed mode always gives the agent's workspace.
pub(crate) fn workspace_for(
    jail: &Jail,
    workspace: PathBuf,
    scope: &RunScope,
    state_dir: &Path,
) -> (PathBuf, Access) {
    let policy = jail.policy();
    if !policy.sandboxed() {
        return (workspace, Access::ReadWrite);
    }
    match policy.workspace_access {
        WorkspaceAccess::Rw => (workspace, Access::ReadWrite),
        WorkspaceAccess::Ro => (workspace, Access::ReadOnly),
        WorkspaceAccess::None => {
            let key = match policy.scope {
                Scope::Session => format!("session-{}", safe(scope.session_id.as_str())),
                Scope::Agent => format!("agent-{}", safe(scope.agent_id.as_str())),
                Scope::Shared => "shared".to_owned(),
            };
            (state_dir.join("sandboxes").join(key), Access::ReadWrite)
        }
    }
}

/// An id as one path component: its characters outside `[A-Za-z0-9_-]`
/// are spelled as their hex, so distinct ids stay distinct.
fn safe(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' => (b as char).to_string(),
            other => format!("_{other:02x}"),
        })
        .collect()
}
