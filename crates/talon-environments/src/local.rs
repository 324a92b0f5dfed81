//! The `local` provider: a workspace on the gateway's own disk.
//!
//! Settings (`environments.create {provider: "local", settings}`):
//!
//! ```json
//! {"source": {"path": "/srv/projects/app"} | {"git": "app", "ref": "main"},
//!  "secrets": ["DEPLOY_TOKEN"],
//!  "network": "off" | "host",
//!  "retain": false}
//! ```
//!
//! - **Workspace**: a copy of a directory inside one of the admin's
//!   source roots (through directory handles, `talon_fs::tree`: FIFOs,
//!   sockets and devices left out, nothing reached through a link), or a
//!   checkout of a ref of one of the admin's repositories (named, or by
//!   its path; [`super::git`]), in `<dir>/workspace`. The state directory
//!   is never a source. A copy of the files is kept as the baseline in
//!   `<dir>/baseline`.
//! - **Secrets**: names from the admin's `gateway.environments.secrets`;
//!   each value is read when a run starts and given to its shell commands
//!   as the variable of that name; never stored, and redacted from what
//!   the run stores.
//! - **Network**: `off` by default, each shell command in a network
//!   namespace of its own (or not run, saying why, where the OS refuses).
//! - **Artifacts**: after each run, the workspace's changes since the
//!   baseline as a `diff` artifact with `git.diff` ([`super::tree`]), and
//!   for a checkout `git.branch` (read from `.git/HEAD` as data).
//! - **Release**: `environments.delete` removes the workspace unless
//!   `retain` is true.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use talon_jail::Network;
use talon_protocol::event_data::GitBranchData;
use talon_protocol::gateway::{ApiError, EnvironmentCapabilities, ErrorCode};

use crate::tree::{self, Caps};
use crate::{Binding, BoxFuture, Collected, Context, EnvironmentProvider, SecretSource, git};

/// The provider.
#[derive(Debug, Clone, Copy, Default)]
pub struct Local;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    source: Source,
    #[serde(default)]
    secrets: Vec<String>,
    #[serde(default)]
    network: NetworkSetting,
    #[serde(default)]
    retain: bool,
    #[serde(default, rename = "pullRequest")]
    pull_request: Option<PullRequestSetting>,
}

/// `settings.pullRequest`: the run's changes may become a pull request on
/// an admin's forge.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PullRequestSetting {
    forge: String,
    #[serde(default)]
    base: Option<String>,
    #[serde(default)]
    branch: Option<String>,
    #[serde(default)]
    draft: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
enum Source {
    Path {
        path: PathBuf,
    },
    Git {
        git: String,
        #[serde(rename = "ref")]
        reference: String,
    },
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum NetworkSetting {
    #[default]
    Off,
    Host,
}

/// What a checkout started from, kept beside the workspace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Checkout {
    reference: String,
    head: String,
}

/// The largest secret file read.
const SECRET_FILE_CAP: u64 = 64 << 10;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message)
}

fn forbidden(message: impl Into<String>, field: &str) -> ApiError {
    ApiError::new(ErrorCode::Forbidden, message)
        .with_details(talon_protocol::gateway::ErrorDetails::field(field))
}

fn unavailable(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::Unavailable, message)
}

fn parse(settings: &Value) -> Result<Settings, ApiError> {
    if settings.get("secrets").is_some_and(Value::is_object) {
        return Err(invalid(
            "settings.secrets: secrets are named by the gateway's admin (gateway.environments.secrets); give their names, e.g. [\"DEPLOY_TOKEN\"]",
        ));
    }
    let parsed: Settings = serde_json::from_value(settings.clone()).map_err(|e| {
        invalid(format!(
            "settings: {e} (expected {{source: {{path}} | {{git, ref}}, secrets?: [NAME], network?, retain?, pullRequest?: {{forge, base?, branch?, draft?}}}})"
        ))
    })?;
    if let Source::Git { reference, .. } = &parsed.source {
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
    if parsed.secrets.len() > 64 {
        return Err(invalid("settings.secrets: at most 64"));
    }
    Ok(parsed)
}

/// The directory a path source names, if the admin allows it: real (links
/// resolved), a directory, inside a source root, and neither inside nor
/// around the state directory. Returned as the source root (resolved) and
/// the path below it, so that the copy opens it through directory handles
/// from the root down, never by re-resolving the checked path.
fn allowed_path(path: &Path, context: Context<'_>) -> Result<(PathBuf, PathBuf), ApiError> {
    if context.policy.source_roots.is_empty() {
        return Err(forbidden(
            "settings.source.path: this gateway has no source roots, so no directory can become a workspace; an admin lists them in gateway.environments.sourceRoots",
            "settings.source.path",
        ));
    }
    if !path.is_absolute() {
        return Err(invalid(format!(
            "settings.source.path: {} is not an absolute path",
            path.display()
        )));
    }
    let refused = || {
        forbidden(
            format!(
                "settings.source.path: {} is not inside a source root of this gateway (gateway.environments.sourceRoots)",
                path.display()
            ),
            "settings.source.path",
        )
    };
    let real = std::fs::canonicalize(path).map_err(|_| refused())?;
    let Some(root) = context
        .policy
        .source_roots
        .iter()
        .filter_map(|root| std::fs::canonicalize(root).ok())
        .find(|root| real.starts_with(root))
    else {
        return Err(refused());
    };
    if let Ok(state) = std::fs::canonicalize(context.state_dir)
        && (real.starts_with(&state) || state.starts_with(&real))
    {
        return Err(forbidden(
            "settings.source.path: the gateway's state directory (or a directory holding it) cannot become a workspace",
            "settings.source.path",
        ));
    }
    if !real.is_dir() {
        return Err(invalid(format!(
            "settings.source.path: {} is not a directory",
            path.display()
        )));
    }
    let below = real.strip_prefix(&root).unwrap_or(Path::new("")).to_owned();
    Ok((root, below))
}

/// What one workspace copied from a source may hold.
const COPY_CAPS: talon_fs::tree::Caps = talon_fs::tree::Caps {
    entries: 1_000_000,
    bytes: 16 << 30,
    depth: 256,
};

/// The repository a git source names (by name, or by the path an admin
/// configured).
fn allowed_repository(name: &str, context: Context<'_>) -> Result<PathBuf, ApiError> {
    let repositories = &context.policy.repositories;
    if let Some(path) = repositories.get(name) {
        return Ok(path.clone());
    }
    if let Some(path) = repositories.values().find(|p| p.as_os_str() == name) {
        return Ok(path.clone());
    }
    let mut known: Vec<&str> = repositories.keys().map(String::as_str).collect();
    known.truncate(20);
    Err(forbidden(
        format!(
            "settings.source.git: {:?} is not a repository of this gateway (gateway.environments.repositories: {known:?})",
            name.chars().take(100).collect::<String>()
        ),
        "settings.source.git",
    ))
}

/// The forge `pull` names (which the admin must have) and the branch it
/// pushes (`talon/<environment>` unless named), both checked.
fn check_pull_request(
    pull: &PullRequestSetting,
    environment_id: &str,
    context: Context<'_>,
) -> Result<(crate::forge::Forge, String), ApiError> {
    let Some(forge) = context.policy.forges.get(&pull.forge) else {
        let known: Vec<&str> = context
            .policy
            .forges
            .keys()
            .map(String::as_str)
            .take(20)
            .collect();
        return Err(forbidden(
            format!(
                "settings.pullRequest.forge: {:?} is not a forge of this gateway (gateway.environments.forges: {known:?})",
                pull.forge.chars().take(100).collect::<String>()
            ),
            "settings.pullRequest.forge",
        ));
    };
    let branch = pull
        .branch
        .clone()
        .unwrap_or_else(|| format!("talon/{environment_id}"));
    for (field, name) in [("branch", Some(&branch)), ("base", pull.base.as_ref())] {
        if let Some(name) = name
            && !crate::forge::valid_branch(name)
        {
            return Err(invalid(format!(
                "settings.pullRequest.{field}: {:?} is not a branch name Talon pushes to or from",
                name.chars().take(100).collect::<String>()
            )));
        }
    }
    Ok((forge.clone(), branch))
}

/// Every secret named is one the admin allows.
fn check_secrets(names: &[String], context: Context<'_>) -> Result<(), ApiError> {
    for name in names {
        if !context.policy.secrets.contains_key(name) {
            let shown: String = name.chars().take(64).collect();
            return Err(forbidden(
                format!(
                    "settings.secrets: {shown:?} is not a secret this gateway's admin allows (gateway.environments.secrets)"
                ),
                "settings.secrets",
            ));
        }
    }
    Ok(())
}

pub(crate) fn read_secret(name: &str, source: &SecretSource) -> Result<String, ApiError> {
    match source {
        SecretSource::Env(variable) => std::env::var(variable).map_err(|_| {
            unavailable(format!(
                "secret {name}: the gateway's environment has no variable {variable} (the admin's configuration names it)"
            ))
        }),
        SecretSource::File(path) => {
            let text = talon_fs::read_capped_to_string(path, SECRET_FILE_CAP, talon_fs::Symlinks::Follow)
                .map_err(|e| unavailable(format!("secret {name}: {e}")))?;
            Ok(text.strip_suffix('\n').unwrap_or(&text).to_owned())
        }
    }
}

/// Copies `below` the source root `root` into `workspace` through
/// directory handles (`talon_fs::tree`): a writer inside the root who
/// swaps a checked directory for a link meanwhile makes that part fail or
/// be skipped, never copied from elsewhere. Special files (FIFOs, sockets,
/// devices) are left out.
async fn copy_source(
    root: PathBuf,
    below: PathBuf,
    workspace: &Path,
    room: Option<u64>,
) -> Result<(), ApiError> {
    let to = workspace.to_path_buf();
    // The workspace and its baseline each take the copy's bytes: at most
    // half the room each (holes included: a sparse file counts whole).
    let half = room.map(|r| r / 2);
    let caps = talon_fs::tree::Caps {
        bytes: half.map_or(COPY_CAPS.bytes, |h| h.min(COPY_CAPS.bytes)),
        ..COPY_CAPS
    };
    let copied = tokio::task::spawn_blocking(move || {
        let from = talon_fs::tree::open_dir_under(&root, &below)?;
        talon_fs::tree::copy_tree(&from, &to, caps)
    })
    .await
    .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
    .map_err(|e| match e {
        talon_fs::tree::TreeError::TooLarge { what: "bytes", cap }
            if half.is_some_and(|h| h <= cap) =>
        {
            over_quota(room.unwrap_or_default())
        }
        talon_fs::tree::TreeError::Io { .. } => unavailable(format!("copying the source: {e}")),
        other => invalid(format!("copying the source: {other}")),
    })?;
    if !copied.skipped.is_empty() {
        tracing::warn!(
            workspace = %workspace.display(),
            skipped = ?copied.skipped,
            "parts of the source are not in the workspace: special files (FIFOs, sockets, devices) and entries that changed while it was copied"
        );
    }
    Ok(())
}

/// A source or checkout that does not fit in what is left of the
/// store's quota (its workspace and baseline together).
fn over_quota(room: u64) -> ApiError {
    ApiError::new(
        ErrorCode::QuotaExceeded,
        format!(
            "the source does not fit in the store's quota: a workspace and its baseline may take {room} bytes more (gateway.limits.maxStoredBytes)"
        ),
    )
    .with_details(talon_protocol::gateway::ErrorDetails {room_bytes: Some(room), ..Default::default() })
}

/// Where a checkout's start is kept.
fn checkout_file(dir: &Path) -> PathBuf {
    dir.join("checkout.json")
}

/// The branch a workspace's `.git/HEAD` names now, read as data (never
/// following a link, at most 4 KiB), against where the checkout started.
fn branch_of(dir: &Path) -> Option<GitBranchData> {
    let started: Checkout = serde_json::from_slice(
        &talon_fs::read_capped(&checkout_file(dir), 4096, talon_fs::Symlinks::Refuse).ok()?,
    )
    .ok()?;
    let head = talon_fs::read_capped_to_string(
        &dir.join("workspace/.git/HEAD"),
        4096,
        talon_fs::Symlinks::Refuse,
    )
    .ok()
    .map(|t| t.trim().to_owned())
    .unwrap_or_default();
    let printable = |s: &str| s.chars().all(|c| !c.is_control()) && s.len() <= 256;
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(branch) if printable(branch) => GitBranchData {
            branch: branch.to_owned(),
            head: None,
            action: "switched".into(),
        },
        _ if head == started.head => GitBranchData {
            branch: started.reference,
            head: Some(started.head),
            action: "observed".into(),
        },
        _ if head.len() == 40 && head.bytes().all(|b| b.is_ascii_hexdigit()) => GitBranchData {
            branch: "HEAD".into(),
            head: Some(head),
            action: "switched".into(),
        },
        _ => GitBranchData {
            branch: started.reference,
            head: None,
            action: "observed".into(),
        },
    })
}

impl EnvironmentProvider for Local {
    fn id(&self) -> &'static str {
        "local"
    }

    fn capabilities(&self, context: Context<'_>) -> EnvironmentCapabilities {
        EnvironmentCapabilities {
            checkout: Some(true),
            sandbox: Some(context.sandboxed),
            network_policy: Some(true),
            secrets: Some(true),
            artifacts: Some(true),
            logs: Some(true),
            pull_requests: Some(!context.policy.forges.is_empty()),
            long_running: Some(true),
        }
    }

    fn check(&self, settings: &Value, context: Context<'_>) -> Result<(), ApiError> {
        let settings = parse(settings)?;
        match &settings.source {
            Source::Path { path } => {
                allowed_path(path, context)?;
            }
            Source::Git { git, .. } => {
                allowed_repository(git, context)?;
            }
        }
        check_secrets(&settings.secrets, context)?;
        if let Some(pull) = &settings.pull_request {
            check_pull_request(pull, "env", context)?;
        }
        Ok(())
    }

    fn pull_request(
        &self,
        settings: &Value,
        environment_id: &str,
        context: Context<'_>,
    ) -> Result<Option<crate::PullRequestTarget>, ApiError> {
        let settings = parse(settings)?;
        let Some(pull) = settings.pull_request else {
            return Ok(None);
        };
        let (forge, branch) = check_pull_request(&pull, environment_id, context)?;
        let source = context.policy.secrets.get(&forge.token).ok_or_else(|| {
            unavailable(format!(
                "the forge's token names the secret {:?}, which gateway.environments.secrets does not have",
                forge.token
            ))
        })?;
        let token = read_secret(&forge.token, source)?;
        Ok(Some(crate::PullRequestTarget {
            token,
            base: pull.base.unwrap_or_else(|| "main".to_owned()),
            branch,
            draft: pull.draft,
            forge,
        }))
    }

    fn prepare<'a>(
        &'a self,
        settings: &'a Value,
        dir: &'a Path,
        context: Context<'a>,
    ) -> BoxFuture<'a, Result<PathBuf, ApiError>> {
        Box::pin(async move {
            let settings = parse(settings)?;
            let workspace = dir.join("workspace");
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|e| unavailable(format!("{}: {e}", dir.display())))?;
            match &settings.source {
                Source::Path { path } => {
                    let (root, below) = allowed_path(path, context)?;
                    copy_source(root, below, &workspace, context.room).await?;
                }
                Source::Git {
                    git: name,
                    reference,
                } => {
                    let repository = allowed_repository(name, context)?;
                    let half = context.room.map(|r| r / 2);
                    let head = git::checkout(&repository, reference, &workspace, half)
                        .await
                        .map_err(|e| match e {
                            git::Checkout::TooLarge => over_quota(context.room.unwrap_or_default()),
                            git::Checkout::Failed(error) => error,
                        })?;
                    let started = Checkout {
                        reference: reference.clone(),
                        head,
                    };
                    let text = serde_json::to_vec(&started)
                        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
                    tokio::fs::write(checkout_file(dir), text)
                        .await
                        .map_err(|e| unavailable(format!("{}: {e}", dir.display())))?;
                }
            }
            let (from, to) = (workspace.clone(), tree::baseline_of(dir));
            tokio::task::spawn_blocking(move || tree::snapshot(&from, &to, Caps::default()))
                .await
                .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
                .map_err(|e| invalid(format!("the workspace's baseline: {e}")))?;
            Ok(workspace)
        })
    }

    fn bind(&self, settings: &Value, context: Context<'_>) -> Result<Binding, ApiError> {
        let settings = parse(settings)?;
        check_secrets(&settings.secrets, context)?;
        let mut binding = Binding {
            env: Vec::new(),
            network: Some(match settings.network {
                NetworkSetting::Off => Network::Off,
                NetworkSetting::Host => Network::Host,
            }),
            secrets: Vec::new(),
        };
        for name in &settings.secrets {
            let Some(source) = context.policy.secrets.get(name) else {
                continue;
            };
            let value = read_secret(name, source)?;
            if !value.is_empty() {
                binding.secrets.push(value.clone());
            }
            binding.env.push((name.clone(), value));
        }
        Ok(binding)
    }

    fn collect<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<Collected, ApiError>> {
        Box::pin(async move {
            let dir = dir.to_path_buf();
            tokio::task::spawn_blocking(move || {
                let diff = tree::diff(
                    &tree::baseline_of(&dir),
                    &dir.join("workspace"),
                    Caps::default(),
                )
                .map_err(|e| unavailable(format!("the workspace's changes: {e}")))?;
                let (diff, summary) = match diff {
                    Some((text, summary)) => (Some(text), Some(summary)),
                    None => (None, None),
                };
                Ok(Collected {
                    diff,
                    summary,
                    branch: branch_of(&dir),
                })
            })
            .await
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
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
                Err(e) => Err(unavailable(format!(
                    "the workspace could not be removed: {e}"
                ))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EnvironmentPolicy;
    use serde_json::json;

    #[test]
    fn settings_are_checked_against_the_admins_policy() {
        let state = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("app")).unwrap();
        let policy = EnvironmentPolicy {
            source_roots: vec![root.path().to_path_buf()],
            repositories: [("app".to_owned(), PathBuf::from("/srv/git/app"))].into(),
            secrets: [(
                "DEPLOY_TOKEN".to_owned(),
                SecretSource::Env("HOST_TOKEN".into()),
            )]
            .into(),
            forges: Default::default(),
        };
        let context = Context {
            room: None,
            policy: &policy,
            state_dir: state.path(),
            sandboxed: true,
        };
        let app = root.path().join("app").display().to_string();
        for settings in [
            json!({"source": {"path": app}}),
            json!({"source": {"git": "app", "ref": "main"}, "network": "host", "retain": true,
                   "secrets": ["DEPLOY_TOKEN"]}),
            json!({"source": {"git": "/srv/git/app", "ref": "v1"}}),
        ] {
            Local.check(&settings, context).unwrap();
        }
        let escape = format!("{app}/../../../etc");
        for (settings, code, message) in [
            (json!({}), ErrorCode::InvalidRequest, "settings: "),
            (
                json!({"source": {"path": "relative"}}),
                ErrorCode::InvalidRequest,
                "settings.source.path: relative is not an absolute path",
            ),
            (
                json!({"source": {"path": "/etc"}}),
                ErrorCode::Forbidden,
                "settings.source.path: /etc is not inside a source root",
            ),
            (
                json!({"source": {"path": escape}}),
                ErrorCode::Forbidden,
                "settings.source.path: ",
            ),
            (
                json!({"source": {"git": "/tmp/other", "ref": "main"}}),
                ErrorCode::Forbidden,
                "settings.source.git: \"/tmp/other\" is not a repository",
            ),
            (
                json!({"source": {"git": "app", "ref": "--upload-pack=x"}}),
                ErrorCode::InvalidRequest,
                "settings.source.ref: ",
            ),
            (
                json!({"source": {"path": app}, "secrets": ["OPENAI_API_KEY"]}),
                ErrorCode::Forbidden,
                "settings.secrets: \"OPENAI_API_KEY\" is not a secret",
            ),
            (
                json!({"source": {"path": app}, "secrets": {"X": {"env": "OPENAI_API_KEY"}}}),
                ErrorCode::InvalidRequest,
                "settings.secrets: secrets are named by the gateway's admin",
            ),
            (
                json!({"source": {"path": app}, "network": "maybe"}),
                ErrorCode::InvalidRequest,
                "settings: ",
            ),
            (
                json!({"source": {"path": app}, "extra": 1}),
                ErrorCode::InvalidRequest,
                "settings: ",
            ),
        ] {
            let error = Local.check(&settings, context).unwrap_err();
            assert_eq!(error.code, code, "{settings}: {}", error.message);
            assert!(
                error.message.starts_with(message),
                "{settings}: {}",
                error.message
            );
        }
        // No roots: no path source at all.
        let none = EnvironmentPolicy::default();
        let error = Local
            .check(
                &json!({"source": {"path": app}}),
                Context {
                    room: None,
                    policy: &none,
                    state_dir: state.path(),
                    sandboxed: true,
                },
            )
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::Forbidden);
        assert!(
            error.message.contains("no source roots"),
            "{}",
            error.message
        );
        // The state directory is never a source, even under a root.
        let wide = EnvironmentPolicy {
            source_roots: vec![PathBuf::from("/")],
            ..EnvironmentPolicy::default()
        };
        let error = Local
            .check(
                &json!({"source": {"path": state.path()}}),
                Context {
                    room: None,
                    policy: &wide,
                    state_dir: state.path(),
                    sandboxed: true,
                },
            )
            .unwrap_err();
        assert!(
            error.message.contains("state directory"),
            "{}",
            error.message
        );
    }
}
