//! Pull requests: a run's changes become a branch on an admin's forge and
//! a pull request opened or updated there, by the gateway, never by the
//! sandboxed run.
//!
//! [`publish`] takes the run's changes as a git-format patch (the one
//! [`crate::snapshot::patch`] makes of the diff against the baseline, with
//! the run's secrets already redacted: what is pushed is what the gateway
//! stored, never a secret), and:
//!
//! 1. clones the forge's base branch into a fresh scratch directory, with
//!    every channel through which a repository or the machine could make
//!    git run something shut ([`crate::git`]'s), `http`/`https` allowed
//!    for the forge's remote only, and the token sent as an HTTP header
//!    from the environment (never on a command line, never in a URL);
//! 2. applies the patch on a branch (`git am`, no hooks), committed as
//!    Talon;
//! 3. pushes the branch (`--force`: the branch is Talon's, holding the
//!    environment's whole change set against the base, replaced on each
//!    update);
//! 4. finds the open pull request for that branch through GitHub's REST
//!    API (which Gitea and Forgejo also serve) and updates it, or opens
//!    one. Calls are retried (at most three tries) on 5xx, 429 and a spent
//!    primary or secondary rate limit, honouring `Retry-After` up to 10 s; a create whose
//!    answer was lost (422 "already exists" on a retry) finds the one it
//!    made.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use talon_protocol::gateway::{ApiError, ErrorCode};

/// An admin's forge (`gateway.environments.forges.<name>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forge {
    /// The REST API's base URL (`https://api.github.com`, or a GitHub
    /// Enterprise, Gitea or Forgejo `.../api/v3`).
    pub api: String,
    /// The repository's git URL pushes go to (`https://...git`).
    pub remote: String,
    /// `owner/repo`.
    pub repository: String,
    /// The admin-named secret holding the token (in
    /// [`crate::EnvironmentPolicy::secrets`]).
    pub token: String,
}

/// What to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestSpec {
    /// The base branch.
    pub base: String,
    /// The branch pushed (Talon's own, e.g. `talon/env_1`).
    pub branch: String,
    /// The title.
    pub title: String,
    /// The description.
    pub body: String,
    /// Opened as a draft.
    pub draft: bool,
}

/// The pull request, opened or updated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// Its web URL.
    pub url: String,
    /// Its number.
    pub number: u64,
    /// `opened` or `updated`.
    pub action: &'static str,
    /// The pushed branch's head commit.
    pub head: String,
}

/// The most API calls one step makes (the first and two retries).
const TRIES: u32 = 3;
/// The longest wait a `Retry-After` gets.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(10);

fn failed(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::Unavailable, message)
}

/// Whether `name` may be a branch Talon pushes: plain, no `..`, no option.
pub fn valid_branch(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.starts_with(['-', '/', '.'])
        && !name.ends_with(['/', '.'])
        && !name.contains("..")
        && !name.contains("//")
        && !name.ends_with(".lock")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

/// Pushes `patch` as `spec.branch` on `forge` and opens or updates its
/// pull request, working in `scratch` (an empty directory the caller
/// removes).
pub async fn publish(
    forge: &Forge,
    token: &str,
    patch: &str,
    spec: &PullRequestSpec,
    scratch: &Path,
) -> Result<Published, ApiError> {
    if !valid_branch(&spec.branch) || !valid_branch(&spec.base) {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!(
                "not a branch Talon pushes: {:?} onto {:?}",
                spec.branch, spec.base
            ),
        ));
    }
    let head = push(forge, token, patch, spec, scratch).await?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .user_agent("talon")
        .build()
        .map_err(|e| failed(format!("the forge's client: {e}")))?;
    let api = Api {
        client: &client,
        base: forge.api.trim_end_matches('/'),
        repository: &forge.repository,
        token,
    };
    let owner = forge.repository.split('/').next().unwrap_or_default();
    let open = api.open_for(&format!("{owner}:{}", spec.branch)).await?;
    let (pull, action) = match open {
        Some(number) => (api.update(number, spec).await?, "updated"),
        None => match api.create(spec).await {
            Ok(pull) => (pull, "opened"),
            Err(error) if error.code == ErrorCode::Conflict => {
                // The create went through and its answer was lost.
                let number = api
                    .open_for(&format!("{owner}:{}", spec.branch))
                    .await?
                    .ok_or(error)?;
                (api.update(number, spec).await?, "opened")
            }
            Err(error) => return Err(error),
        },
    };
    Ok(Published {
        url: pull.html_url,
        number: pull.number,
        action,
        head,
    })
}

/// Clones the base, applies the patch on the branch and pushes it; the
/// branch's head.
async fn push(
    forge: &Forge,
    token: &str,
    patch: &str,
    spec: &PullRequestSpec,
    scratch: &Path,
) -> Result<String, ApiError> {
    if !(forge.remote.starts_with("https://") || forge.remote.starts_with("http://")) {
        return Err(failed(format!(
            "the forge's remote {:?} is not an http(s) URL",
            forge.remote
        )));
    }
    let repo = scratch.join("repo");
    let patch_file = scratch.join("changes.patch");
    tokio::fs::write(&patch_file, patch)
        .await
        .map_err(|e| failed(format!("the patch: {e}")))?;
    let header = format!(
        "Authorization: Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"))
    );
    let repo_s = repo.to_string_lossy();
    let remote = Remote {
        header: &header,
        url: &forge.remote,
    };
    remote
        .git(
            &[
                "clone",
                "--quiet",
                "--template=",
                "--no-tags",
                "--single-branch",
                "--branch",
                &spec.base,
                "--",
                &forge.remote,
                &repo_s,
            ],
            "cloning the forge's base branch",
        )
        .await?;
    remote
        .git(
            &["-C", &repo_s, "checkout", "--quiet", "-B", &spec.branch],
            "making the branch",
        )
        .await?;
    remote
        .git(
            &[
                "-C",
                &repo_s,
                "am",
                "--quiet",
                "--no-3way",
                "--",
                &patch_file.to_string_lossy(),
            ],
            "applying the run's changes on the base",
        )
        .await?;
    remote
        .git(
            &[
                "-C",
                &repo_s,
                "push",
                "--quiet",
                "--force",
                "origin",
                &format!("HEAD:refs/heads/{}", spec.branch),
            ],
            "pushing the branch",
        )
        .await?;
    let head = remote
        .git(
            &["-C", &repo_s, "rev-parse", "HEAD"],
            "reading the branch's head",
        )
        .await?;
    Ok(head.trim().to_owned())
}

/// git against the forge's remote: `crate::git`'s shut channels, with
/// http(s) allowed and the token as a header from the environment.
struct Remote<'a> {
    header: &'a str,
    url: &'a str,
}

impl Remote<'_> {
    async fn git(&self, args: &[&str], what: &str) -> Result<String, ApiError> {
        let scheme = if self.url.starts_with("https://") {
            "https"
        } else {
            "http"
        };
        crate::git::git_with(
            args,
            what,
            &[
                ("GIT_ALLOW_PROTOCOL", scheme),
                ("GIT_CONFIG_COUNT", "2"),
                ("GIT_CONFIG_KEY_0", "http.extraHeader"),
                ("GIT_CONFIG_VALUE_0", self.header),
                ("GIT_CONFIG_KEY_1", &format!("protocol.{scheme}.allow")),
                ("GIT_CONFIG_VALUE_1", "always"),
                ("GIT_AUTHOR_NAME", "Talon"),
                ("GIT_AUTHOR_EMAIL", "talon@localhost"),
                ("GIT_COMMITTER_NAME", "Talon"),
                ("GIT_COMMITTER_EMAIL", "talon@localhost"),
            ],
        )
        .await
        // The forge or the admin's settings failed, not the caller.
        .map_err(|e| failed(e.message))
    }
}

#[derive(Debug, Deserialize)]
struct Pull {
    number: u64,
    html_url: String,
}

/// GitHub's REST API for one repository.
struct Api<'a> {
    client: &'a reqwest::Client,
    base: &'a str,
    repository: &'a str,
    token: &'a str,
}

impl Api<'_> {
    /// Sends a request, retrying what a forge answers when it is busy.
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), ApiError> {
        let url = format!("{}/repos/{}{path}", self.base, self.repository);
        let mut tries = 0;
        loop {
            tries += 1;
            let mut request = self
                .client
                .request(method.clone(), &url)
                .bearer_auth(self.token)
                .header("accept", "application/vnd.github+json")
                .header("x-github-api-version", "2022-11-28");
            if let Some(body) = body {
                request = request.json(body);
            }
            let answer = request
                .send()
                .await
                .map_err(|e| failed(format!("the forge did not answer {method} {path}: {e}")))?;
            let status = answer.status().as_u16();
            let spent = answer
                .headers()
                .get("x-ratelimit-remaining")
                .is_some_and(|v| v.as_bytes() == b"0");
            let retry_after = answer.headers().get("retry-after").is_some();
            let wait = answer
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(
                    Duration::from_millis(500 * u64::from(tries)),
                    Duration::from_secs,
                )
                .min(MAX_RETRY_WAIT);
            let value: Value = answer.json().await.unwrap_or(Value::Null);
            // A spent primary limit, or a secondary one (403 with
            // `Retry-After`), as GitHub answers them.
            let busy = status >= 500 || status == 429 || (status == 403 && (spent || retry_after));
            if busy && tries < TRIES {
                tokio::time::sleep(wait).await;
                continue;
            }
            return Ok((status, value));
        }
    }

    fn refused(what: &str, status: u16, value: &Value) -> ApiError {
        let said = value["message"].as_str().unwrap_or("no message");
        let detail: Vec<&str> = value["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["message"].as_str())
            .collect();
        let code = match status {
            401 | 403 => ErrorCode::Forbidden,
            422 if detail.iter().any(|d| d.contains("already exists")) => ErrorCode::Conflict,
            400..=499 => ErrorCode::InvalidRequest,
            _ => ErrorCode::Unavailable,
        };
        let detail = if detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", detail.join("; "))
        };
        ApiError::new(
            code,
            format!("the forge refused to {what}: {status} {said}{detail}"),
        )
    }

    /// The open pull request whose head is `head` (`owner:branch`).
    async fn open_for(&self, head: &str) -> Result<Option<u64>, ApiError> {
        let head: String = url::form_urlencoded::byte_serialize(head.as_bytes()).collect();
        let path = format!("/pulls?state=open&head={head}");
        let (status, value) = self.send(reqwest::Method::GET, &path, None).await?;
        if status != 200 {
            return Err(Self::refused("list pull requests", status, &value));
        }
        Ok(value
            .as_array()
            .and_then(|list| list.first())
            .and_then(|p| p["number"].as_u64()))
    }

    async fn create(&self, spec: &PullRequestSpec) -> Result<Pull, ApiError> {
        let body = json!({"title": spec.title, "head": spec.branch, "base": spec.base,
                          "body": spec.body, "draft": spec.draft});
        let (status, value) = self
            .send(reqwest::Method::POST, "/pulls", Some(&body))
            .await?;
        if status != 201 {
            return Err(Self::refused("open the pull request", status, &value));
        }
        serde_json::from_value(value).map_err(|e| failed(format!("the forge's pull request: {e}")))
    }

    async fn update(&self, number: u64, spec: &PullRequestSpec) -> Result<Pull, ApiError> {
        let body = json!({"title": spec.title, "body": spec.body});
        let path = format!("/pulls/{number}");
        let (status, value) = self
            .send(reqwest::Method::PATCH, &path, Some(&body))
            .await?;
        if status != 200 {
            return Err(Self::refused("update the pull request", status, &value));
        }
        serde_json::from_value(value).map_err(|e| failed(format!("the forge's pull request: {e}")))
    }
}
