//! Shared setup of the managed-environment tests (`environments`, `ssh`,
//! `pull_requests`, `hostile::environments`): an admin's sources and git,
//! and the calls that create an environment, run in it, answer its
//! approvals and read what its runs left.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use talon_gateway::{EnvironmentPolicy, SecretSource};
use talon_mock_model::Script;
use talon_testing::redact::Redactor;

use super::ws::Transport;
use super::{Options, TestGateway};

/// The process variable the admin's secret `DEPLOY_TOKEN` is read from.
pub const DEPLOY_TOKEN_VAR: &str = "TALON_TEST_DEPLOY_TOKEN";

/// What an admin allows, outside the gateway's state directory: the
/// source root `roots`, the repository `app` (at `repo`, `main` has
/// `a.txt` = "hello") and the secret `DEPLOY_TOKEN`.
pub struct Sources {
    pub dir: tempfile::TempDir,
    pub policy: EnvironmentPolicy,
}

impl Sources {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let roots = dir.path().join("roots");
        std::fs::create_dir_all(&roots).unwrap();
        let repo = dir.path().join("repo");
        repository(&repo);
        let policy = EnvironmentPolicy {
            source_roots: vec![roots],
            repositories: BTreeMap::from([("app".to_owned(), repo)]),
            secrets: BTreeMap::from([(
                "DEPLOY_TOKEN".to_owned(),
                SecretSource::Env(DEPLOY_TOKEN_VAR.to_owned()),
            )]),
            forges: BTreeMap::new(),
        };
        Self { dir, policy }
    }

    /// A directory inside the source root.
    pub fn root(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join("roots").join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    pub fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    /// A gateway whose environments take these sources, its runs' model
    /// playing `script`, its config `config`.
    pub async fn gateway(&self, script: Script, config: Value) -> TestGateway {
        TestGateway::start_opts(Options {
            script,
            config,
            environments: self.policy.clone(),
            ..Options::default()
        })
        .await
    }

    /// A redactor of the paths that differ per run: `g`'s state directory
    /// and these sources.
    pub fn redactor(&self, g: &TestGateway) -> Redactor {
        Redactor::new()
            .with(g.dir.path().to_str().unwrap(), "<state>")
            .with(self.dir.path().to_str().unwrap(), "<sources>")
    }
}

pub fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A repository whose `main` has `a.txt` = "hello".
pub fn repository(at: &Path) {
    std::fs::create_dir_all(at).unwrap();
    git(at, &["init", "-q", "-b", "main"]);
    std::fs::write(at.join("a.txt"), "hello\n").unwrap();
    git(at, &["add", "-A"]);
    git(at, &["commit", "-q", "-m", "first"]);
}

pub async fn call(g: &TestGateway, method: &str, params: Value) -> Result<Value, Value> {
    Transport::Http.call(g, method, params).await
}

/// `environments.create` of `provider` with `settings`.
pub async fn create_environment(
    g: &TestGateway,
    provider: &str,
    settings: Value,
) -> Result<Value, Value> {
    call(
        g,
        "environments.create",
        json!({"provider": provider, "settings": settings}),
    )
    .await
}

/// `environments.create` of a `local` checkout of the repository `app` at
/// `reference`.
pub async fn create_checkout(g: &TestGateway, reference: &str) -> Result<Value, Value> {
    create_environment(
        g,
        "local",
        json!({"source": {"git": "app", "ref": reference}}),
    )
    .await
}

/// `environments.delete` of the environment `id`: the answer.
pub async fn delete_environment(g: &TestGateway, id: &Value) -> Value {
    call(g, "environments.delete", json!({"environmentId": id}))
        .await
        .unwrap()
}

/// The text of the file `name` in `dir`.
pub fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

/// The workspace directory of an environment as the gateway described it.
pub fn workspace_of(environment: &Value) -> PathBuf {
    PathBuf::from(environment["workspace"].as_str().unwrap())
}

/// `runs.create` of `input` in the environment `id`: the created run.
pub async fn run_in(g: &TestGateway, id: &Value, input: &str) -> Value {
    call(
        g,
        "runs.create",
        json!({"input": input, "environmentId": id}),
    )
    .await
    .unwrap()
}

/// `runs.wait` for the run `run_id` (30 s at most: an ssh host is
/// slower): its result.
pub async fn wait_run(g: &TestGateway, run_id: &Value) -> Value {
    call(
        g,
        "runs.wait",
        json!({"runId": run_id, "timeoutMs": 30_000}),
    )
    .await
    .unwrap()
}

/// A run of `input` in the environment `id`, waited for: its id and its
/// result (its caller asserts the whole result).
pub async fn run_to_end_in(g: &TestGateway, id: &Value, input: &str) -> (Value, Value) {
    let run = run_in(g, id, input).await;
    let result = wait_run(g, &run["runId"]).await;
    (run["runId"].clone(), result)
}

/// `approvals.respond` approving `approval` once.
pub async fn approve_once(g: &TestGateway, approval: &Value) {
    call(
        g,
        "approvals.respond",
        json!({"approvalId": approval["id"], "decision": "approve_once"}),
    )
    .await
    .unwrap();
}

/// The run `run_id`'s `runs.events` page (the first).
pub async fn run_events(g: &TestGateway, run_id: &Value) -> Value {
    call(g, "runs.events", json!({"runId": run_id}))
        .await
        .unwrap()
}

/// The first `tool.call.completed` event of a `runs.events` page.
pub fn completed_call(page: &Value) -> &Value {
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "tool.call.completed")
        .unwrap_or_else(|| panic!("no completed call: {page}"))
}

/// The first artifact of type `kind` of an `artifacts.list` result.
pub fn artifact_of(listed: &Value, kind: &str) -> Value {
    listed["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["type"] == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} artifact: {listed}"))
}
