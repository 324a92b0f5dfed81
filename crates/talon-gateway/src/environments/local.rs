//! The `local` provider: a workspace on the gateway's own disk.
//!
//! Settings (`environments.create {provider: "local", settings}`):
//!
//! ```json
//! {"source": {"path": "/abs/dir"} | {"git": "/abs/repo", "ref": "main"},
//!  "secrets": {"DEPLOY_TOKEN": {"env": "HOST_VARIABLE"}},
//!  "network": "off" | "host",
//!  "retain": false}
//! ```
//!
//! - **Workspace**: a copy of a directory (`cp -a`), or a checkout of a
//!   ref of a local git repository (`git clone --no-hardlinks`, then the
//!   ref detached), in `<dir>/workspace`. A copy gets a baseline commit,
//!   so both kinds diff against where they started.
//! - **Secrets** by reference: each names a variable of the gateway's
//!   environment, read when a run starts and given to its shell commands;
//!   values are never stored, and are redacted from what the run stores.
//! - **Network**: `off` by default, each shell command in a network
//!   namespace of its own (or not run, saying why, where the OS refuses).
//! - **Artifacts**: after each run, the workspace's changes since the
//!   baseline as a `diff` artifact.
//! - **Release**: `environments.delete` removes the workspace unless
//!   `retain` is true.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use talon_core_tools::{Network, ShellOptions};
use talon_protocol::gateway::{ApiError, EnvironmentCapabilities, ErrorCode};
use talon_tools::BoxFuture;

use super::{Binding, EnvironmentProvider};

/// The provider.
pub(crate) struct Local;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    source: Source,
    #[serde(default)]
    secrets: std::collections::BTreeMap<String, SecretRef>,
    #[serde(default)]
    network: NetworkSetting,
    #[serde(default)]
    retain: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
enum Source {
    Path {
        path: PathBuf,
    },
    Git {
        git: PathBuf,
        #[serde(rename = "ref")]
        reference: String,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretRef {
    env: String,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum NetworkSetting {
    #[default]
    Off,
    Host,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message)
}

fn parse(settings: &Value) -> Result<Settings, ApiError> {
    let parsed: Settings = serde_json::from_value(settings.clone()).map_err(|e| {
        invalid(format!(
            "settings: {e} (expected {{source: {{path}} | {{git, ref}}, secrets?, network?, retain?}})"
        ))
    })?;
    let absolute = |p: &Path| {
        if p.is_absolute() {
            Ok(())
        } else {
            Err(invalid(format!(
                "settings.source: {} is not an absolute path",
                p.display()
            )))
        }
    };
    match &parsed.source {
        Source::Path { path } => absolute(path)?,
        Source::Git { git, reference } => {
            absolute(git)?;
            let well_formed = !reference.is_empty()
                && !reference.starts_with('-')
                && reference.len() <= 256
                && !reference.chars().any(|c| c.is_control() || c == ' ');
            if !well_formed {
                return Err(invalid(format!(
                    "settings.source.ref: {reference:?} is not a ref"
                )));
            }
        }
    }
    for (name, secret) in &parsed.secrets {
        let valid = |s: &str| {
            !s.is_empty()
                && s.len() <= 128
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !s.as_bytes()[0].is_ascii_digit()
        };
        if !valid(name) || !valid(&secret.env) {
            return Err(invalid(format!(
                "settings.secrets.{name}: names and `env` are shell variable names"
            )));
        }
    }
    Ok(parsed)
}

/// Runs `program` with `args`; its stdout, or an error naming `what`
/// with its stderr.
async fn run(program: &str, args: &[&str], what: &str) -> Result<String, ApiError> {
    let output = tokio::process::Command::new(program)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| {
            ApiError::new(
                ErrorCode::Unavailable,
                format!("{what}: cannot run {program}: {e}"),
            )
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stderr: String = stderr.trim().chars().take(500).collect();
    Err(invalid(format!("{what}: {stderr}")))
}

/// Removes what is neither a directory, a regular file nor a symlink
/// (FIFOs, sockets, device nodes `cp -a` recreated) from a copied
/// workspace: a FIFO would hang a reader, a device node would reach the
/// hardware, and git cannot hold either. Symlinks are not followed.
/// Returns the paths removed, relative to `root`.
fn drop_special_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut dropped = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
            } else if !kind.is_file() && !kind.is_symlink() {
                std::fs::remove_file(&path)?;
                dropped.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
            }
        }
    }
    dropped.sort();
    Ok(dropped)
}

fn git<'a>(workspace: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "-C",
        workspace,
        "-c",
        "user.name=talon",
        "-c",
        "user.email=talon@localhost",
        "-c",
        "commit.gpgsign=false",
    ];
    args.extend_from_slice(rest);
    args
}

impl EnvironmentProvider for Local {
    fn id(&self) -> &'static str {
        "local"
    }

    fn capabilities(&self) -> EnvironmentCapabilities {
        EnvironmentCapabilities {
            checkout: Some(true),
            sandbox: Some(false),
            network_policy: Some(true),
            secrets: Some(true),
            artifacts: Some(true),
            logs: Some(true),
            pull_requests: Some(false),
            long_running: Some(true),
        }
    }

    fn check(&self, settings: &Value) -> Result<(), ApiError> {
        parse(settings).map(|_| ())
    }

    fn prepare<'a>(
        &'a self,
        settings: &'a Value,
        dir: &'a Path,
    ) -> BoxFuture<'a, Result<PathBuf, ApiError>> {
        Box::pin(async move {
            let settings = parse(settings)?;
            let workspace = dir.join("workspace");
            tokio::fs::create_dir_all(dir).await.map_err(|e| {
                ApiError::new(ErrorCode::Unavailable, format!("{}: {e}", dir.display()))
            })?;
            let target = workspace.to_string_lossy().into_owned();
            match &settings.source {
                Source::Path { path } => {
                    if !path.is_dir() {
                        return Err(invalid(format!(
                            "settings.source.path: {} is not a directory",
                            path.display()
                        )));
                    }
                    let from = format!("{}/.", path.display());
                    tokio::fs::create_dir_all(&workspace).await.map_err(|e| {
                        ApiError::new(ErrorCode::Unavailable, format!("{target}: {e}"))
                    })?;
                    run("cp", &["-a", "--", &from, &target], "copying the source").await?;
                    let root = workspace.clone();
                    let dropped = tokio::task::spawn_blocking(move || drop_special_files(&root))
                        .await
                        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
                        .map_err(|e| {
                            ApiError::new(ErrorCode::Unavailable, format!("{target}: {e}"))
                        })?;
                    if !dropped.is_empty() {
                        tracing::warn!(
                            workspace = %target,
                            skipped = ?dropped,
                            "the source's special files (FIFOs, sockets, devices) are not part of a workspace"
                        );
                    }
                    if !workspace.join(".git").exists() {
                        run("git", &git(&target, &["init", "-q"]), "git init").await?;
                    }
                    run("git", &git(&target, &["add", "-A"]), "git add").await?;
                    run(
                        "git",
                        &git(
                            &target,
                            &["commit", "-q", "--allow-empty", "-m", "talon: baseline"],
                        ),
                        "the baseline commit",
                    )
                    .await?;
                }
                Source::Git {
                    git: repo,
                    reference,
                } => {
                    let repo = repo.to_string_lossy().into_owned();
                    run(
                        "git",
                        &["clone", "-q", "--no-hardlinks", "--", &repo, &target],
                        "cloning the repository",
                    )
                    .await?;
                    run(
                        "git",
                        &git(&target, &["checkout", "-q", "--detach", reference.as_str()]),
                        "checking out the ref",
                    )
                    .await?;
                }
            }
            Ok(workspace)
        })
    }

    fn bind(&self, settings: &Value) -> Result<Binding, ApiError> {
        let settings = parse(settings)?;
        let mut binding = Binding {
            shell: ShellOptions {
                env: Vec::new(),
                network: match settings.network {
                    NetworkSetting::Off => Network::Off,
                    NetworkSetting::Host => Network::Host,
                },
            },
            secrets: Vec::new(),
        };
        for (name, secret) in &settings.secrets {
            let value = std::env::var(&secret.env).map_err(|_| {
                ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!(
                        "secret {name}: the gateway's environment has no variable {}",
                        secret.env
                    ),
                )
            })?;
            if !value.is_empty() {
                binding.secrets.push(value.clone());
            }
            binding.shell.env.push((name.clone(), value));
        }
        Ok(binding)
    }

    fn collect<'a>(
        &'a self,
        workspace: &'a Path,
    ) -> BoxFuture<'a, Result<Option<String>, ApiError>> {
        Box::pin(async move {
            let target = workspace.to_string_lossy().into_owned();
            run("git", &git(&target, &["add", "-A"]), "git add").await?;
            let diff = run(
                "git",
                &git(
                    &target,
                    &["diff", "--cached", "--no-color", "--no-ext-diff", "HEAD"],
                ),
                "git diff",
            )
            .await?;
            Ok((!diff.is_empty()).then_some(diff))
        })
    }

    fn release<'a>(
        &'a self,
        settings: &'a Value,
        dir: &'a Path,
    ) -> BoxFuture<'a, Result<String, ApiError>> {
        Box::pin(async move {
            let retain = parse(settings).map(|s| s.retain).unwrap_or(false);
            if retain {
                return Ok(format!(
                    "the workspace was kept at {}",
                    dir.join("workspace").display()
                ));
            }
            match tokio::fs::remove_dir_all(dir).await {
                Ok(()) => Ok("the workspace was removed".into()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Ok("the workspace was already gone".into())
                }
                Err(e) => Err(ApiError::new(
                    ErrorCode::Unavailable,
                    format!("the workspace could not be removed: {e}"),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_are_checked() {
        let ok = [
            json!({"source": {"path": "/tmp/x"}}),
            json!({"source": {"git": "/srv/repo", "ref": "main"}, "network": "host", "retain": true,
                   "secrets": {"DEPLOY_TOKEN": {"env": "HOST_TOKEN"}}}),
        ];
        for settings in ok {
            Local.check(&settings).unwrap();
        }
        let bad = [
            (json!({}), "settings: "),
            (
                json!({"source": {"path": "relative"}}),
                "settings.source: relative is not an absolute path",
            ),
            (
                json!({"source": {"git": "/r", "ref": "--upload-pack=x"}}),
                "settings.source.ref: ",
            ),
            (
                json!({"source": {"path": "/x"}, "secrets": {"A B": {"env": "X"}}}),
                "settings.secrets.A B: ",
            ),
            (
                json!({"source": {"path": "/x"}, "network": "maybe"}),
                "settings: ",
            ),
            (json!({"source": {"path": "/x"}, "extra": 1}), "settings: "),
        ];
        for (settings, message) in bad {
            let error = Local.check(&settings).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidRequest);
            assert!(
                error.message.starts_with(message),
                "{settings}: {}",
                error.message
            );
        }
    }
}
