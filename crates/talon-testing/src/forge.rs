//! A scripted forge for tests: a real HTTP server on 127.0.0.1 speaking
//! the subset of GitHub's REST API a gateway uses to open pull requests,
//! with a real bare git repository behind it (no mock of git: pushes and
//! fetches go through `git http-backend`).
//!
//! What it owns: one temporary directory per forge (`talon-forge-*` under
//! `$TMPDIR`, removed when the [`Forge`] is dropped) holding the bare
//! repository `git/{owner}/{repo}.git`, seeded with one commit on `main`
//! (a `README.md`; fixed author and dates, so its id is the same on every
//! run); and a thread running the server on a runtime of its own (it
//! serves sync and async tests alike, and stops when the forge is dropped).
//!
//! It serves:
//!
//! - **git smart HTTP** at `/{owner}/{repo}.git` ([`Forge::git_url`]):
//!   `git http-backend` run as a CGI per request (`forge/git_http.rs`). Pushes
//!   (`receive-pack`) need HTTP basic auth with the forge's token as the
//!   password (any user name; GitHub's apps use `x-access-token`), as
//!   fetches do when they send credentials; anything else is refused with
//!   401 and `WWW-Authenticate: Basic`.
//! - **the REST API** under `/api/v3` (GitHub Enterprise's prefix;
//!   [`Forge::api_url`]): `GET /repos/{owner}/{repo}` and the pulls
//!   endpoints (`forge/pulls.rs`), every call needing `Authorization: Bearer
//!   TOKEN` (or `token TOKEN`).
//!
//! Every request is recorded ([`Forge::requests`]; credentials replaced by
//! whether they were the token), and [`Forge::fail_next`] makes the next
//! API calls fail with a scripted [`Failure`] (a 502, a rate limit, ...),
//! to test retries.

mod auth;
mod git_http;
mod pulls;
mod script;

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

pub use pulls::PullRequest;
pub use script::{Failure, RecordedRequest};

/// The REST API's path prefix (GitHub Enterprise Server's).
pub const API_PREFIX: &str = "/api/v3";
/// The branch the bare repository starts with.
pub const DEFAULT_BRANCH: &str = "main";
/// The user name GitHub apps push with (any user name is accepted).
pub const TOKEN_USER: &str = "x-access-token";

/// How large an API request body may be.
const API_BODY_LIMIT: usize = 10 << 20;

/// Failures of the harness.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    /// The owner or repository name is not a plain GitHub name.
    #[error("not a valid owner or repository name: {0:?}")]
    Name(String),
    /// A file system, socket or runtime operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A git command failed.
    #[error("{command} failed: {output}")]
    Git {
        /// The git command.
        command: String,
        /// Its status and output.
        output: String,
    },
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ForgeError {
    let context = context.into();
    move |source| ForgeError::Io { context, source }
}

/// A commit of the bare repository ([`Forge::log`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The full commit id.
    pub sha: String,
    /// The author's name.
    pub author_name: String,
    /// The author's email.
    pub author_email: String,
    /// The first line of the message.
    pub subject: String,
    /// The rest of the message (trimmed).
    pub body: String,
}

/// What the server's handlers share.
struct Shared {
    owner: String,
    repo: String,
    token: String,
    /// `GIT_PROJECT_ROOT`: holds `{owner}/{repo}.git`.
    root: PathBuf,
    git_dir: PathBuf,
    /// `http://127.0.0.1:PORT`.
    base_url: String,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    requests: Vec<RecordedRequest>,
    failures: VecDeque<Failure>,
    pulls: Vec<PullRequest>,
}

impl Shared {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn api_url(&self) -> String {
        format!("{}{API_PREFIX}", self.base_url)
    }

    /// The path prefix of git requests, `/{owner}/{repo}.git/`.
    fn git_prefix(&self) -> String {
        format!("/{}/{}.git/", self.owner, self.repo)
    }
}

/// The forge: a server on 127.0.0.1 and its bare repository. Dropping it
/// stops the server and removes the repository.
pub struct Forge {
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for Forge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forge")
            .field("api_url", &self.api_url())
            .field("git_url", &self.git_url())
            .field("git_dir", &self.shared.git_dir)
            .finish_non_exhaustive()
    }
}

impl Drop for Forge {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Forge {
    /// Creates the bare repository `{owner}/{repo}` (one commit on
    /// `main`) and starts serving it on a free port of 127.0.0.1 with a
    /// fresh token. Blocking (~50 ms of git); callable from sync and async
    /// tests: the server runs on a thread and runtime of its own.
    pub fn start(owner: &str, repo: &str) -> Result<Forge, ForgeError> {
        for name in [owner, repo] {
            let plain = !name.is_empty()
                && !name.starts_with('.')
                && !name.ends_with(".git")
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !plain {
                return Err(ForgeError::Name(name.to_owned()));
            }
        }
        let dir = tempfile::Builder::new()
            .prefix("talon-forge-")
            .tempdir()
            .map_err(io_error("creating the forge directory"))?;
        let root = dir.path().join("git");
        let git_dir = root.join(owner).join(format!("{repo}.git"));
        std::fs::create_dir_all(&git_dir).map_err(io_error("creating the bare repository"))?;
        seed(&git_dir, repo)?;

        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(io_error("binding the forge's port"))?;
        listener
            .set_nonblocking(true)
            .map_err(io_error("configuring the forge's socket"))?;
        let addr = listener
            .local_addr()
            .map_err(io_error("reading the forge's address"))?;
        let shared = Arc::new(Shared {
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            token: new_token(),
            root,
            git_dir,
            base_url: format!("http://{addr}"),
            inner: Mutex::default(),
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("talon-forge")
            .enable_all()
            .build()
            .map_err(io_error("building the forge's runtime"))?;
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let thread = std::thread::Builder::new()
            .name("talon-forge".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(error) => {
                            tracing::error!(%error, "the forge could not listen");
                            return;
                        }
                    };
                    // Not a graceful shutdown: clients' idle keep-alive
                    // connections would hold it open.
                    tokio::select! {
                        served = axum::serve(listener, app) => {
                            if let Err(error) = served {
                                tracing::error!(%error, "the forge stopped serving");
                            }
                        }
                        _ = stop => {}
                    }
                });
                // Dropping the runtime here ends every connection and kills
                // any `git http-backend` still running (kill_on_drop).
                drop(runtime);
            })
            .map_err(io_error("spawning the forge's thread"))?;
        tracing::debug!(%addr, owner, repo, "test forge serving");
        Ok(Forge {
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
            _dir: dir,
        })
    }

    /// `http://127.0.0.1:PORT/api/v3`: the REST API's base URL.
    pub fn api_url(&self) -> String {
        self.shared.api_url()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.shared.base_url
    }

    /// `http://127.0.0.1:PORT/{owner}/{repo}.git`: the git remote (no
    /// credentials).
    pub fn git_url(&self) -> String {
        format!(
            "{}/{}/{}.git",
            self.shared.base_url, self.shared.owner, self.shared.repo
        )
    }

    /// [`Forge::git_url`] with `x-access-token:TOKEN@` in it.
    pub fn git_url_with_token(&self) -> String {
        format!(
            "http://{TOKEN_USER}:{}@{}/{}/{}.git",
            self.shared.token,
            self.shared.base_url.trim_start_matches("http://"),
            self.shared.owner,
            self.shared.repo
        )
    }

    /// The token API calls and pushes need (`ghs_` and 36 characters).
    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// The repository's owner.
    pub fn owner(&self) -> &str {
        &self.shared.owner
    }

    /// The repository's name.
    pub fn repo(&self) -> &str {
        &self.shared.repo
    }

    /// The bare repository's directory.
    pub fn git_dir(&self) -> &Path {
        &self.shared.git_dir
    }

    /// Every request received so far, in order of completion.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.inner().requests.clone()
    }

    /// The REST API calls received so far (not git's requests).
    pub fn api_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(RecordedRequest::is_api)
            .collect()
    }

    /// Forgets the requests recorded so far.
    pub fn clear_requests(&self) {
        self.shared.inner().requests.clear();
    }

    /// Makes the next `count` API calls fail with `failure` (after the
    /// failures already queued). Git's requests are not affected.
    pub fn fail_next(&self, count: usize, failure: Failure) {
        let mut inner = self.shared.inner();
        inner.failures.extend(std::iter::repeat_n(failure, count));
    }

    /// The pull requests, in order of creation.
    pub fn pulls(&self) -> Vec<PullRequest> {
        self.shared.inner().pulls.clone()
    }

    /// Runs git in the bare repository and returns its stdout.
    pub fn git(&self, args: &[&str]) -> Result<String, ForgeError> {
        git(&self.shared.git_dir, args, None)
    }

    /// The branches, sorted.
    pub fn branches(&self) -> Result<Vec<String>, ForgeError> {
        let out = self.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads/"])?;
        let mut branches: Vec<String> = out.lines().map(str::to_owned).collect();
        branches.sort();
        Ok(branches)
    }

    /// The commits of `branch`, newest first.
    pub fn log(&self, branch: &str) -> Result<Vec<Commit>, ForgeError> {
        let out = self.git(&[
            "log",
            "--format=%H%x1f%an%x1f%ae%x1f%s%x1f%b%x1e",
            &format!("refs/heads/{branch}"),
            "--",
        ])?;
        Ok(out
            .split('\u{1e}')
            .filter(|record| !record.trim().is_empty())
            .map(|record| {
                let mut fields = record.trim_start_matches('\n').split('\u{1f}');
                let mut next = || fields.next().unwrap_or_default().to_owned();
                Commit {
                    sha: next(),
                    author_name: next(),
                    author_email: next(),
                    subject: next(),
                    body: next().trim().to_owned(),
                }
            })
            .collect())
    }

    /// The contents of `path` on `branch` (an error when either is
    /// missing).
    pub fn show(&self, branch: &str, path: &str) -> Result<String, ForgeError> {
        self.git(&["show", &format!("refs/heads/{branch}:{path}")])
    }
}

/// Initializes the bare repository and commits `README.md` to `main` with
/// plumbing (no work tree), with a fixed author and dates.
fn seed(git_dir: &Path, repo: &str) -> Result<(), ForgeError> {
    git(
        git_dir,
        &[
            "init",
            "--quiet",
            "--bare",
            "--initial-branch",
            DEFAULT_BRANCH,
            ".",
        ],
        None,
    )?;
    git(git_dir, &["config", "http.receivepack", "true"], None)?;
    let blob = git(
        git_dir,
        &["hash-object", "-w", "--stdin"],
        Some(format!("# {repo}\n\nSeeded by talon-testing's forge.\n").as_bytes()),
    )?;
    let tree = git(
        git_dir,
        &["mktree"],
        Some(format!("100644 blob {}\tREADME.md\n", blob.trim()).as_bytes()),
    )?;
    let commit = git(
        git_dir,
        &["commit-tree", tree.trim(), "-m", "Initial commit"],
        None,
    )?;
    git(
        git_dir,
        &[
            "update-ref",
            &format!("refs/heads/{DEFAULT_BRANCH}"),
            commit.trim(),
        ],
        None,
    )?;
    Ok(())
}

/// Runs git in `git_dir` (hermetic: no system or global config, a fixed
/// identity and date) and returns its stdout.
fn git(git_dir: &Path, args: &[&str], input: Option<&[u8]>) -> Result<String, ForgeError> {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(git_dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Forge")
        .env("GIT_AUTHOR_EMAIL", "forge@forge.test")
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_NAME", "Forge")
        .env("GIT_COMMITTER_EMAIL", "forge@forge.test")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let name = format!("git {}", args.join(" "));
    let mut child = command
        .spawn()
        .map_err(io_error(format!("running {name}")))?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(input)
            .map_err(io_error(format!("writing to {name}")))?;
    }
    let output = child
        .wait_with_output()
        .map_err(io_error(format!("running {name}")))?;
    if !output.status.success() {
        return Err(ForgeError::Git {
            command: name,
            output: format!(
                "{}; {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A fresh token, shaped like a GitHub installation token.
fn new_token() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut token = String::from("ghs_");
    let mut bits = 0u64;
    for i in 0..36u64 {
        if i % 8 == 0 {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(i);
            hasher.write_u128(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_nanos(),
            );
            bits = hasher.finish();
        }
        let index = usize::try_from(bits % ALPHABET.len() as u64).unwrap_or(0);
        token.push(char::from(ALPHABET[index]));
        bits /= ALPHABET.len() as u64;
    }
    token
}

/// Every request: dispatched to git or the API, then recorded.
async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let (response, body) = if path.starts_with(&shared.git_prefix()) {
        git_http::serve(&shared, &parts, body).await
    } else if path == API_PREFIX || path.starts_with(&format!("{API_PREFIX}/")) {
        match axum::body::to_bytes(body, API_BODY_LIMIT).await {
            Ok(bytes) => {
                let response = pulls::api(&shared, &parts, &path[API_PREFIX.len()..], &bytes).await;
                (response, bytes.to_vec())
            }
            Err(_) => (
                pulls::error(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large"),
                Vec::new(),
            ),
        }
    } else {
        (
            (StatusCode::NOT_FOUND, Body::from("Not Found")).into_response(),
            Vec::new(),
        )
    };
    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path,
        query: parts.uri.query().map(str::to_owned),
        headers: auth::recorded_headers(&parts.headers, &shared.token),
        body,
        status: response.status().as_u16(),
    };
    shared.inner().requests.push(recorded);
    response
}
