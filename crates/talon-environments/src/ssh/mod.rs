//! The `ssh` provider: an environment whose commands run on another host
//! an admin names ([`SshHosts`], given to [`Ssh::new`]).
//!
//! Settings (`environments.create {provider: "ssh", settings}`): those of
//! [`super::local`] and the host's name:
//!
//! ```json
//! {"host": "build-1",
//!  "source": {"path": "/srv/projects/app"} | {"git": "app", "ref": "main"},
//!  "secrets": ["DEPLOY_TOKEN"], "network": "off" | "host", "retain": false}
//! ```
//!
//! - **Workspace**: prepared on the gateway exactly as `local` prepares
//!   one (a copy or checkout of the admin's sources, with its baseline),
//!   then uploaded to `<workdir>/<environment id>/workspace` on the host.
//!   The gateway's copy, the *mirror*, is the truth between commands: the
//!   file tools work on it, and the diff is taken from it. For each
//!   command the gateway asks [`Ssh::remote`] for a [`RemoteShell`] and
//!   calls [`RemoteShell::push`] (the mirror to the host, when it
//!   changed), runs [`RemoteShell::command`] as it runs a local command,
//!   then calls [`RemoteShell::pull`] (the host's workspace back into the
//!   mirror). Transfers are tar streams over the SSH connection, bounded,
//!   never following or writing through a link (`transfer`).
//! - **Commands**: `sh -c` in the remote workspace, in bubblewrap when the
//!   host's `sandbox` is `"bubblewrap"` (the default: the environment is
//!   refused where the host has none), on the very bubblewrap line
//!   `talon-jail` gives a local command
//!   (`talon_jail::remote::bwrap_arguments`: the same namespaces,
//!   read-only system, `/etc` allow-list, private `/proc`, `/dev` and
//!   `/tmp`, limits with `prlimit` and `choom`) and under the same seccomp
//!   filter: its two programs (`talon_jail::seccomp_filters`) are written
//!   next to the lease (`seccomp-0.bpf`, `seccomp-1.bpf`) with each
//!   upload, and the remote script opens them on descriptors 3 and 4 for
//!   bubblewrap (`--add-seccomp-fd`). A host whose `uname -m` is not the
//!   gateway's architecture is refused, naming both, rather than run
//!   unfiltered. The network `"allow"` reaches the gateway's filtering
//!   proxy (`talon_jail::Proxy`, the policy's `allowHosts`) through a
//!   socket the command's own connection forwards to the host (`ssh -R`,
//!   `<workdir>/<id>/proxy-*.sock`, removed when the command ends), where
//!   the sandbox's bridge (`socat`, needed there then) meets it; on an
//!   unsandboxed host it runs as `"off"`. What only the host can tell (whether `/bin` and the
//!   like are symlinks, which procfs files its kernel has) the script
//!   decides there (`script::RUN`); it adds nothing else. A remote command
//!   dies with its connection: bubblewrap's `--die-with-parent`, and a
//!   watchdog killing the command's session once the SSH session process
//!   is gone. Only commands run there: model calls, secrets resolution and
//!   the diff stay on the gateway.
//! - **Secrets**: as `local`, given to the command as variables. A value
//!   crosses the connection inside the command line and is exported by the
//!   remote login shell, which at once replaces itself with `sh`, so it
//!   is in no long-lived process's arguments on the host (`env -i` holds
//!   it for the instant before it executes bubblewrap). The host's own
//!   client key (an admin secret too) can never be bound to a run.
//! - **Leases**: `<workdir>/<id>/.talon-lease` holds when the remote
//!   workspace may be removed (seconds since the epoch, by the host's own
//!   clock: now + `leaseSeconds`), renewed by every upload, download and
//!   command (and every third of a lease while one runs). [`Ssh::sweep`],
//!   which any gateway node may run on a timer, removes each remote
//!   workspace whose lease has passed, so that a node that dies leaves
//!   nothing behind for long. A swept workspace of a live environment is
//!   remade by its next push (the mirror is the truth).
//! - **Release**: the remote directory is removed (with `retain`, kept,
//!   and its lease dropped so that no sweep removes it), then the local
//!   one as `local` does.
//!
//! # Why the system OpenSSH client
//!
//! The client is Debian's `ssh` (`openssh-client`), not a Rust SSH crate
//! (`russh`, or `openssh`, itself a wrapper of this binary): it is the
//! most reviewed SSH client there is, its host-key checking
//! (`StrictHostKeyChecking=yes` against a `known_hosts` holding only the
//! pinned key) and key handling are the ones admins already trust and
//! debug with, killing the process is a plain, reliable way to drop a
//! command's connection, and the gateway already runs commands as child
//! processes with streamed, capped output. It runs with `-F /dev/null`,
//! `BatchMode`, `IdentitiesOnly`, no agent, no forwarding but the one
//! remote socket of a command whose network is `"allow"` (which must be
//! made, `ExitOnForwardFailure`), no connection sharing, and the key in a private temporary directory (mode 0700,
//! the key 0600) removed when done: never the gateway user's `~/.ssh`.
//!
//! # Remote requirements
//!
//! A POSIX login shell for the user whose startup files print nothing
//! (a transfer's tar stream is the session's stdout), `/bin/sh`, GNU
//! `tar`, `setsid` (util-linux), `date`, and for the `"bubblewrap"`
//! sandbox `bwrap` that can make user namespaces (checked by running one
//! when the environment is prepared), `/usr/bin/prlimit` and
//! `/usr/bin/choom` (util-linux), and the gateway's architecture (for its
//! seccomp filter). A connection that dies silently (no
//! FIN) is noticed by the client within a minute (`ServerAliveInterval`),
//! by the server as its own `ClientAliveInterval` says.
//!
//! # Limits
//!
//! Each command is three connections (push, which sends nothing but a
//! check when the mirror did not change, the command, pull), and a
//! transfer moves the whole workspace (at most 200,000 entries, 4 GiB):
//! fine for source trees, slow for large build outputs. The remote
//! workspace is writable, as a local environment's is (`workspaceAccess`
//! governs an agent's own workspace). A sweep that read a lease as passed an instant before its
//! owner renewed it would still remove the directory; the next push
//! remakes it.

mod client;
mod config;
mod remote;
mod script;
mod transfer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use talon_protocol::gateway::{ApiError, EnvironmentCapabilities, ErrorCode};

pub use config::{RemoteSandbox, SshConfigError, SshHost, SshHosts, SshIdentity};
pub use remote::RemoteShell;
pub use script::quote;
pub use transfer::Counts;

use crate::local::{Local, read_secret};
use crate::{
    Binding, BoxFuture, Collected, Context, EnvironmentPolicy, EnvironmentProvider, SecretSource,
};
use client::Connection;

/// How long a short remote script (release, sweep) may take.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

/// The provider: the admin's hosts, and where each one's client key
/// comes from.
#[derive(Debug, Clone)]
pub struct Ssh {
    hosts: SshHosts,
    identities: BTreeMap<String, SecretSource>,
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// The remote directories removed, as (host, path).
    pub removed: Vec<(String, String)>,
    /// The hosts that could not be swept, and why.
    pub failed: Vec<(String, String)>,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message)
}

fn forbidden(
    message: impl Into<String>,
    details: talon_protocol::gateway::ErrorDetails,
) -> ApiError {
    ApiError::new(ErrorCode::Forbidden, message).with_details(details)
}

/// Settings split into the host's name and what `local` reads.
fn split(settings: &Value) -> Result<(String, Value), ApiError> {
    let Some(object) = settings.as_object() else {
        return Err(invalid(
            "settings: expected {host, source: {path} | {git, ref}, secrets?: [NAME], network?, retain?}",
        ));
    };
    let host = match object.get("host") {
        Some(Value::String(host)) => host.clone(),
        Some(_) => {
            return Err(invalid(
                "settings.host: expected the name of an SSH host (a string)",
            ));
        }
        None => {
            return Err(invalid(
                "settings.host: required: the name of one of this gateway's SSH hosts",
            ));
        }
    };
    if object.contains_key("pullRequest") {
        return Err(invalid(
            "settings.pullRequest: the ssh provider does not open pull requests",
        ));
    }
    let mut rest = object.clone();
    rest.remove("host");
    Ok((host, Value::Object(rest)))
}

/// The environment's id: the name of its directory.
fn id_of(dir: &Path) -> Result<String, ApiError> {
    dir.file_name()
        .and_then(|n| n.to_str())
        .filter(|n| {
            !n.is_empty()
                && !n.starts_with('.')
                && n.len() <= 128
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        })
        .map(str::to_owned)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::Internal,
                format!("{} is not an environment's directory", dir.display()),
            )
        })
}

impl Ssh {
    /// The provider for `hosts`, each one's `identity.secret` resolved
    /// through the admin's `policy.secrets` (read when a connection is
    /// made, never stored). Refuses hosts out of shape.
    pub fn new(hosts: SshHosts, policy: &EnvironmentPolicy) -> Result<Ssh, SshConfigError> {
        let mut identities = BTreeMap::new();
        for (name, host) in &hosts {
            host.validate(name, policy)?;
            if let Some(source) = policy.secrets.get(&host.identity.secret) {
                identities.insert(host.identity.secret.clone(), source.clone());
            }
        }
        Ok(Ssh { hosts, identities })
    }

    /// The admin's hosts.
    pub fn hosts(&self) -> &SshHosts {
        &self.hosts
    }

    /// The host `name`, or `forbidden` naming those there are.
    fn host(&self, name: &str) -> Result<&SshHost, ApiError> {
        self.hosts.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.hosts.keys().map(String::as_str).take(20).collect();
            forbidden(
                format!(
                    "settings.host: {:?} is not an SSH host of this gateway (its admin names them: {known:?})",
                    name.chars().take(64).collect::<String>()
                ),
                talon_protocol::gateway::ErrorDetails {
                    field: Some("settings.host".to_owned()),
                    hosts: known.iter().map(|h| (*h).to_owned()).collect(),
                    ..Default::default()
                },
            )
        })
    }

    /// A connection to `name` (its client key read now).
    fn connect(&self, name: &str) -> Result<Connection, ApiError> {
        let host = self.host(name)?;
        let secret = &host.identity.secret;
        let source = self.identities.get(secret).ok_or_else(|| {
            ApiError::new(
                ErrorCode::Unavailable,
                format!("ssh host {name:?}: its identity secret {secret:?} is not configured"),
            )
        })?;
        let key = read_secret(secret, source)?;
        Connection::open(name, host, &key)
    }

    /// `<workdir>/<id>` on `host`.
    fn root(host: &SshHost, dir: &Path) -> Result<String, ApiError> {
        Ok(format!("{}/{}", host.workdir, id_of(dir)?))
    }

    /// Refuses binding a host's client key to a run.
    fn check_secrets(&self, local: &Value) -> Result<(), ApiError> {
        let named = local.get("secrets").and_then(Value::as_array);
        for name in named.into_iter().flatten().filter_map(Value::as_str) {
            if let Some((host, _)) = self.hosts.iter().find(|(_, h)| h.identity.secret == name) {
                return Err(forbidden(
                    format!(
                        "settings.secrets: {name:?} is the client key of SSH host {host:?}; it cannot be bound to a run"
                    ),
                    talon_protocol::gateway::ErrorDetails::field("settings.secrets"),
                ));
            }
        }
        Ok(())
    }

    /// What runs an environment's commands on its host: `settings` as
    /// given to `environments.create`, `dir` the environment's directory
    /// (as given to `prepare`). Reads the client key now; the
    /// [`RemoteShell`] holds it (in a private temporary file) until
    /// dropped.
    pub fn remote(&self, settings: &Value, dir: &Path) -> Result<RemoteShell, ApiError> {
        let (name, _) = split(settings)?;
        let connection = self.connect(&name)?;
        let root = Self::root(connection.host(), dir)?;
        Ok(RemoteShell::new(connection, dir, root))
    }

    /// Removes, on every host, the remote workspaces whose lease has
    /// passed (by that host's clock). Safe to run from any gateway node,
    /// at any time: a live environment's lease is renewed by its every
    /// transfer and command, and while a command runs.
    pub async fn sweep(&self) -> SweepReport {
        let mut report = SweepReport::default();
        for (name, host) in &self.hosts {
            let swept = async {
                let connection = self.connect(name)?;
                let line = script::remote_line(&[], script::SWEEP, &[&host.workdir]);
                let finished = connection
                    .run("sweeping expired workspaces", &line, SCRIPT_TIMEOUT)
                    .await?;
                if !finished.status.success() {
                    return Err(connection.failure(
                        "sweeping expired workspaces",
                        finished.status,
                        &finished.stderr,
                    ));
                }
                Ok::<_, ApiError>(finished.stdout)
            };
            match swept.await {
                Ok(stdout) => report.removed.extend(
                    stdout
                        .lines()
                        .filter(|l| !l.is_empty())
                        .map(|id| (name.clone(), format!("{}/{id}", host.workdir))),
                ),
                Err(e) => report.failed.push((name.clone(), e.message)),
            }
        }
        for (host, path) in &report.removed {
            tracing::info!(host = %host, path = %path, "swept a remote workspace whose lease had passed");
        }
        report
    }

    /// Removes (or with `retain` keeps, dropping its lease) the remote
    /// directory; what became of it.
    async fn release_remote(&self, name: &str, dir: &Path, retain: bool) -> String {
        let outcome = async {
            let connection = self.connect(name)?;
            let root = Self::root(connection.host(), dir)?;
            let line = script::remote_line(
                &[],
                script::RELEASE,
                &[&root, if retain { "retain" } else { "remove" }],
            );
            let finished = connection
                .run("releasing the remote workspace", &line, SCRIPT_TIMEOUT)
                .await?;
            if !finished.status.success() {
                return Err(connection.failure(
                    "releasing the remote workspace",
                    finished.status,
                    &finished.stderr,
                ));
            }
            Ok::<_, ApiError>(root)
        };
        match (outcome.await, retain) {
            (Ok(root), false) => format!("the remote workspace {name}:{root} was removed"),
            (Ok(root), true) => format!("the remote workspace was kept at {name}:{root}"),
            (Err(e), _) => format!(
                "the remote workspace could not be released ({}); a sweep removes it once its lease passes",
                e.message
            ),
        }
    }
}

impl EnvironmentProvider for Ssh {
    fn id(&self) -> &'static str {
        "ssh"
    }

    fn capabilities(&self, _context: Context<'_>) -> EnvironmentCapabilities {
        let sandboxed = self
            .hosts
            .values()
            .all(|h| h.sandbox == RemoteSandbox::Bubblewrap);
        EnvironmentCapabilities {
            checkout: Some(true),
            sandbox: Some(sandboxed),
            network_policy: Some(sandboxed),
            secrets: Some(true),
            artifacts: Some(true),
            logs: Some(true),
            pull_requests: Some(false),
            long_running: Some(true),
        }
    }

    fn check(&self, settings: &Value, context: Context<'_>) -> Result<(), ApiError> {
        let (name, local) = split(settings)?;
        self.host(&name)?;
        self.check_secrets(&local)?;
        Local.check(&local, context)
    }

    fn prepare<'a>(
        &'a self,
        settings: &'a Value,
        dir: &'a Path,
        context: Context<'a>,
    ) -> BoxFuture<'a, Result<PathBuf, ApiError>> {
        Box::pin(async move {
            let (name, local) = split(settings)?;
            self.host(&name)?;
            self.check_secrets(&local)?;
            id_of(dir)?;
            let workspace = Local.prepare(&local, dir, context).await?;
            let shell = self.remote(settings, dir)?;
            let made = async {
                shell.push().await?;
                shell.probe().await
            };
            if let Err(e) = made.await {
                self.release_remote(&name, dir, false).await;
                return Err(e);
            }
            Ok(workspace)
        })
    }

    fn bind(&self, settings: &Value, context: Context<'_>) -> Result<Binding, ApiError> {
        let (name, local) = split(settings)?;
        self.host(&name)?;
        self.check_secrets(&local)?;
        Local.bind(&local, context)
    }

    fn collect<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<Collected, ApiError>> {
        Local.collect(dir)
    }

    fn release<'a>(
        &'a self,
        settings: &'a Value,
        dir: &'a Path,
    ) -> BoxFuture<'a, Result<String, ApiError>> {
        Box::pin(async move {
            let (remote, local) = match split(settings) {
                Ok((name, local)) => {
                    let retain = local.get("retain").and_then(Value::as_bool) == Some(true);
                    (Some(self.release_remote(&name, dir, retain).await), local)
                }
                Err(_) => (None, settings.clone()),
            };
            let here = Local.release(&local, dir).await?;
            Ok(match remote {
                Some(remote) => format!("{remote}; {here} (the gateway's copy)"),
                None => here,
            })
        })
    }
}
