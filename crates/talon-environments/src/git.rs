//! The one way the gateway runs git: to clone an admin's repository
//! into a fresh workspace and check out a ref, before any run has the
//! workspace. Every channel through which a repository or the machine can
//! make git run something is shut:
//!
//! - no system, global or XDG config (`GIT_CONFIG_NOSYSTEM`,
//!   `GIT_CONFIG_SYSTEM` and `GIT_CONFIG_GLOBAL` set to `/dev/null`, `HOME`
//!   and `XDG_CONFIG_HOME` pointed at nothing), so no filter, fsmonitor,
//!   hook path, alias, credential helper or pager is defined anywhere but
//!   on the command line;
//! - on the command line: `core.hooksPath=/dev/null`,
//!   `core.fsmonitor=false`, only the `file` protocol;
//! - the clone gets an empty template (`--template=`: no hooks) and its
//!   own fresh config; `.gitattributes` in the content cannot name a
//!   filter that no config defines;
//! - the environment is cleared but for `PATH` and the locale, so nothing
//!   of the gateway's (its provider keys) reaches git or ssh.
//!
//! The repository cloned from is the admin's (configured by path), not a
//! workspace; after a run, the gateway reads the workspace as files
//! ([`super::tree`]) and never runs git in it.

use std::path::Path;

use talon_protocol::gateway::{ApiError, ErrorCode};

/// The command-line config every git invocation gets.
const CONFIG: &[&str] = &[
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "protocol.allow=never",
    "-c",
    "protocol.file.allow=always",
    "-c",
    "credential.helper=",
    "-c",
    "core.pager=cat",
    "-c",
    "advice.detachedHead=false",
];

/// Runs git with `args` (after the shut channels); its stdout, or an error
/// naming `what` with the start of its stderr.
pub(crate) async fn git(args: &[&str], what: &str) -> Result<String, ApiError> {
    git_with(args, what, &[]).await
}

/// [`git`] with `env` set after the shut channels' variables (the forge's
/// push allows its remote's protocol and sends its token this way).
pub(crate) async fn git_with(
    args: &[&str],
    what: &str,
    env: &[(&str, &str)],
) -> Result<String, ApiError> {
    let mut command = tokio::process::Command::new("git");
    command
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .env("LC_ALL", "C")
        .env("HOME", "/nonexistent")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "/bin/false")
        .env("GIT_ALLOW_PROTOCOL", "file")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .envs(env.iter().copied())
        .args(CONFIG)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = command.output().await.map_err(|e| {
        ApiError::new(
            ErrorCode::Unavailable,
            format!("{what}: cannot run git: {e}"),
        )
    })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stderr: String = stderr.trim().chars().take(500).collect();
    Err(ApiError::new(
        ErrorCode::InvalidRequest,
        format!("{what}: {stderr}"),
    ))
}

/// Why a checkout did not happen.
#[derive(Debug)]
pub(crate) enum Checkout {
    /// The ref's files (and the clone's objects) are larger than allowed.
    TooLarge,
    /// Anything else.
    Failed(ApiError),
}

impl From<ApiError> for Checkout {
    fn from(error: ApiError) -> Self {
        Self::Failed(error)
    }
}

/// Clones `repository` into `workspace` (which must not exist) and checks
/// out `reference` detached; the commit it names. With `max_bytes`, the
/// ref's files are counted first (`git ls-tree -r -l`: a blob's full
/// size, however well it compresses) with the clone's objects, and a ref
/// over it is never checked out.
pub(crate) async fn checkout(
    repository: &Path,
    reference: &str,
    workspace: &Path,
    max_bytes: Option<u64>,
) -> Result<String, Checkout> {
    let from = repository.to_string_lossy();
    let into = workspace.to_string_lossy();
    git(
        &[
            "clone",
            "-q",
            "--no-local",
            "--no-hardlinks",
            "--no-checkout",
            "--template=",
            "--",
            &from,
            &into,
        ],
        "cloning the repository",
    )
    .await?;
    // The ref as the clone names it (a local branch, a tag, a commit), or
    // else as the origin's branch.
    let mut commit = None;
    for candidate in [
        reference.to_owned(),
        format!("refs/remotes/origin/{reference}"),
    ] {
        let spec = format!("{candidate}^{{commit}}");
        if let Ok(sha) = git(
            &[
                "-C",
                &into,
                "rev-parse",
                "-q",
                "--verify",
                "--end-of-options",
                &spec,
            ],
            "resolving the ref",
        )
        .await
        {
            commit = Some(sha.trim().to_owned());
            break;
        }
    }
    let Some(commit) = commit else {
        return Err(Checkout::Failed(ApiError::new(
            ErrorCode::InvalidRequest,
            format!(
                "checking out the ref: {:?} names no branch, tag or commit of the repository",
                reference.chars().take(100).collect::<String>()
            ),
        )));
    };
    if let Some(max) = max_bytes {
        let listing = git(
            &[
                "-C",
                &into,
                "ls-tree",
                "-r",
                "-l",
                "--end-of-options",
                &commit,
            ],
            "sizing the ref",
        )
        .await?;
        // `<mode> <type> <object> <size>\t<path>`; a submodule's size is `-`.
        let files: u64 = listing
            .lines()
            .filter_map(|line| {
                line.split('\t')
                    .next()?
                    .split_whitespace()
                    .nth(3)?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        let objects = crate::footprint(workspace);
        if files.saturating_add(objects) > max {
            return Err(Checkout::TooLarge);
        }
    }
    git(
        &["-C", &into, "checkout", "-q", "--detach", &commit],
        "checking out the ref",
    )
    .await?;
    Ok(commit)
}
