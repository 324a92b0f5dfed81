//! Commands of a run in an `ssh` environment: the provider's
//! [`RemoteShell`] as the shell's [`RemoteHost`] (the workspace pushed to
//! the host before each command, the command run there in its sandbox
//! through the local `ssh` client, the changes pulled back after), and the
//! sweep that removes remote workspaces whose lease expired (any node
//! runs it, so a node that dies leaves nothing behind for long).

use std::sync::Arc;
use std::time::Duration;

use talon_environments::ssh::{RemoteShell, Ssh};
use talon_runtime::{Network, RemoteHost};
use talon_tools::{BoxFuture, ToolError, ToolErrorCode};

/// How often a node sweeps expired remote workspaces.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

fn tool_error(error: talon_protocol::gateway::ApiError) -> ToolError {
    ToolError::new(ToolErrorCode::Unavailable, error.message)
}

/// An `ssh` environment's host, for one run's commands.
#[derive(Debug)]
pub(crate) struct SshHost(pub RemoteShell);

impl RemoteHost for SshHost {
    fn before(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async { self.0.push().await.map(|_| ()).map_err(tool_error) })
    }

    fn command(
        &self,
        command: &str,
        env: &[(String, String)],
        network: Network,
    ) -> Result<talon_jail::Confined, ToolError> {
        self.0
            .command(command, env, Some(network))
            .map_err(tool_error)
    }

    fn after(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async { self.0.pull().await.map(|_| ()).map_err(tool_error) })
    }
}

/// An `ssh` environment whose host cannot be used: every command fails
/// saying why (it never runs on the gateway instead).
#[derive(Debug)]
pub(crate) struct Unreachable(pub String);

impl RemoteHost for Unreachable {
    fn before(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async { Err(ToolError::new(ToolErrorCode::Unavailable, self.0.clone())) })
    }

    fn command(
        &self,
        _: &str,
        _: &[(String, String)],
        _: Network,
    ) -> Result<talon_jail::Confined, ToolError> {
        Err(ToolError::new(ToolErrorCode::Unavailable, self.0.clone()))
    }

    fn after(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Sweeps `ssh`'s hosts now and then, until the process ends.
pub(crate) async fn sweep(ssh: Arc<Ssh>) {
    loop {
        tokio::time::sleep(SWEEP_EVERY).await;
        let report = ssh.sweep().await;
        for (host, path) in &report.removed {
            tracing::info!(%host, %path, "an expired remote workspace was removed");
        }
        for (host, error) in &report.failed {
            tracing::warn!(%host, %error, "remote workspaces could not be swept");
        }
    }
}
