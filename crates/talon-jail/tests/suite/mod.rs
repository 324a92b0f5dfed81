//! The suites, and one helper that runs a shell command in a sandbox.

mod hostile;
mod network;
mod policy;

use std::path::Path;
use std::process::Stdio;

use talon_jail::{Access, Jail, Limits, Network, Policy, Spec};

/// What a command printed and how it ended.
#[derive(Debug)]
pub struct Ran {
    pub stdout: String,
    pub stderr: String,
}

/// Runs `script` with `sh -c` in `workspace` under `policy`.
pub async fn run_in(policy: Policy, workspace: &Path, network: Network, script: &str) -> Ran {
    let limits = policy.limits;
    run_with(&Jail::new(policy), workspace, network, &limits, script).await
}

pub async fn run_with(
    jail: &Jail,
    workspace: &Path,
    network: Network,
    limits: &Limits,
    script: &str,
) -> Ran {
    let confined = jail
        .command(&Spec {
            workspace,
            access: Access::ReadWrite,
            network,
            env: &[("BOUND".into(), "only-this".into())],
            program: "/bin/sh",
            args: &["-c", script],
            limits,
        })
        .unwrap();
    let mut command = confined.command;
    command.stdin(Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
        .await
        .expect("the command ends")
        .unwrap();
    drop(confined.guard);
    Ran {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A workspace (canonical path) in a fresh temporary directory.
pub fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("workspace");
    std::fs::create_dir(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    (dir, ws)
}
