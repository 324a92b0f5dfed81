//! Managed environments with the `local` provider: a workspace from an
//! admin's repository or source root, admin-named secrets bound by name
//! and never stored, the network off for shell commands, the workspace's
//! changes as a `diff` artifact with `git.diff` and `git.branch`, and
//! cleanup or retention on delete.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use talon_gateway::{EnvironmentPolicy, SecretSource};

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, Turn};
use talon_testing::redact::Redactor;

use super::ws::Transport;
use super::{Options, TestGateway, tool_turn};

const TOKEN: &str = "tok-env-5b9f2e7c1a83";
const TOKEN_VAR: &str = "TALON_TEST_DEPLOY_TOKEN";

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
                SecretSource::Env(TOKEN_VAR.to_owned()),
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

#[tokio::test]
async fn a_run_in_a_checkout_yields_a_diff_and_never_stores_its_secret() {
    #[allow(
        unsafe_code,
        reason = "the variable is set before the gateway starts any thread that reads the environment; each test is its own process under nextest"
    )]
    // SAFETY: see the reason above.
    unsafe {
        std::env::set_var(TOKEN_VAR, TOKEN);
    }
    let script = Script {
        turns: vec![
            tool_turn(
                "exec",
                json!({"command": "echo \"token=$DEPLOY_TOKEN\"; printf %s \"$DEPLOY_TOKEN\" > token.txt; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"}),
            ),
            tool_turn(
                "edit",
                json!({"path": "a.txt", "old": "hello", "new": "hello world"}),
            ),
            Turn {
                text: Some("Done.".into()),
                ..Turn::default()
            },
        ],
        replay: Replay::PerRun,
        ..Script::default()
    };
    let sources = Sources::new();
    let repo = sources.repo();
    let g = TestGateway::start_opts(Options {
        script,
        config: json!({"tools": {"approvals": "allow"}}),
        environments: sources.policy.clone(),
        ..Options::default()
    })
    .await;
    let created = call(
        &g,
        "environments.create",
        json!({"provider": "local", "settings": {
            "source": {"git": "app", "ref": "main"},
            "secrets": ["DEPLOY_TOKEN"]
        }}),
    )
    .await
    .unwrap();
    // The state directory and the admin's sources differ per run.
    let mut redactor = Redactor::new()
        .with(g.dir.path().to_str().unwrap(), "<state>")
        .with(sources.dir.path().to_str().unwrap(), "<sources>");
    insta::assert_json_snapshot!("checkout_created", redactor.value(&created));
    let id = created["id"].clone();
    let workspace = std::path::PathBuf::from(created["workspace"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(workspace.join("a.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        call(&g, "environments.status", json!({"environmentId": id}))
            .await
            .unwrap(),
        created
    );
    assert_eq!(
        call(&g, "environments.list", json!({})).await.unwrap(),
        json!({"environments": [created]})
    );

    let run = call(
        &g,
        "runs.create",
        json!({"input": "deploy", "environmentId": id}),
    )
    .await
    .unwrap();
    let result = call(
        &g,
        "runs.wait",
        json!({"runId": run["runId"], "timeoutMs": 20_000}),
    )
    .await
    .unwrap();
    insta::assert_json_snapshot!(
        "checkout_result",
        super::artifacts::sized(redactor.value(&result))
    );
    // The run worked in the environment's workspace, with its secret and
    // without a network; the repository itself is untouched.
    assert_eq!(
        std::fs::read_to_string(workspace.join("token.txt")).unwrap(),
        TOKEN
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("a.txt")).unwrap(),
        "hello world\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("a.txt")).unwrap(),
        "hello\n"
    );
    let events = call(&g, "runs.events", json!({"runId": run["runId"]}))
        .await
        .unwrap();
    let exec = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "tool.call.completed")
        .unwrap();
    // Its stdout: the secret redacted, the loopback interface only.
    insta::assert_json_snapshot!("checkout_exec", redactor.value(exec));
    // The workspace's changes, as a diff artifact (its title in the
    // result's snapshot).
    let artifacts = result["artifacts"].as_array().unwrap();
    // The environment's diff (after the edit's own file and diff).
    let diff = artifacts
        .iter()
        .find(|a| {
            a["type"] == "diff"
                && a["title"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Workspace of environment"))
        })
        .unwrap_or_else(|| panic!("{result}"));
    let content = |artifact: &Value| {
        let url = format!("/v1/artifacts/{}/content", artifact["id"].as_str().unwrap());
        let g = &g;
        async move {
            g.client
                .get(g.url(&url))
                .bearer_auth(&g.admin)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let text = content(diff).await;
    assert!(text.contains("-hello\n+hello world\n"), "{text}");
    assert!(text.contains("+++ b/token.txt"), "{text}");
    assert!(text.contains("+[redacted]"), "{text}");
    // The secret is in no event and no artifact.
    assert!(!events.to_string().contains(TOKEN));
    let listed = call(&g, "artifacts.list", json!({"runId": run["runId"]}))
        .await
        .unwrap();
    for artifact in listed["artifacts"].as_array().unwrap() {
        let text = content(artifact).await;
        assert!(!text.contains(TOKEN), "{artifact}: {text}");
    }
    // The run's changes as a patch `git am` applies on the checkout's
    // base, and the workspace as a .tar.gz with the secret redacted.
    let of_type = |kind: &str| {
        listed["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["type"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} artifact: {listed}"))
    };
    let patch = content(&of_type("patch")).await;
    let clone = tempfile::tempdir().unwrap();
    git(clone.path(), &["clone", "-q", repo.to_str().unwrap(), "c"]);
    let cloned = clone.path().join("c");
    std::fs::write(clone.path().join("run.patch"), &patch).unwrap();
    git(
        &cloned,
        &["am", "-q", clone.path().join("run.patch").to_str().unwrap()],
    );
    assert_eq!(
        std::fs::read_to_string(cloned.join("a.txt")).unwrap(),
        "hello world\n"
    );
    assert_eq!(
        std::fs::read_to_string(cloned.join("token.txt")).unwrap(),
        "[redacted]"
    );
    let workspace_artifact = of_type("workspace");
    assert_eq!(workspace_artifact["mimeType"], "application/gzip");
    let url = format!(
        "/v1/artifacts/{}/content",
        workspace_artifact["id"].as_str().unwrap()
    );
    let tarball = g
        .client
        .get(g.url(&url))
        .bearer_auth(&g.admin)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    // Downloadable by range, as any artifact.
    let head = g
        .client
        .get(g.url(&url))
        .bearer_auth(&g.admin)
        .header("range", "bytes=0-1")
        .send()
        .await
        .unwrap();
    assert_eq!(head.status().as_u16(), 206);
    assert_eq!(head.bytes().await.unwrap().as_ref(), &tarball[..2]);
    let unpacked = tempfile::tempdir().unwrap();
    std::fs::write(unpacked.path().join("w.tar.gz"), &tarball).unwrap();
    let status = Command::new("tar")
        .args(["-xzf", "w.tar.gz"])
        .current_dir(unpacked.path())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(unpacked.path().join("a.txt")).unwrap(),
        "hello world\n"
    );
    assert_eq!(
        std::fs::read_to_string(unpacked.path().join("token.txt")).unwrap(),
        "[redacted]"
    );
    let stored = g
        .running
        .store
        .after(None, &talon_store::EventFilter::default(), 10_000)
        .await
        .unwrap();
    assert!(!serde_json::to_string(&stored).unwrap().contains(TOKEN));
    // Announced on the session: the checkout's branch and the diff.
    let head = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "main"])
            .current_dir(&repo)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let announced: Vec<Value> = stored
        .iter()
        .filter(|e| {
            serde_json::to_value(e.kind)
                .unwrap()
                .as_str()
                .unwrap()
                .starts_with("git.")
        })
        .map(|e| json!({"type": e.kind, "runId": e.run_id, "data": e.data}))
        .collect();
    assert_eq!(
        announced,
        vec![
            json!({"type": "git.branch", "runId": null,
                   "data": {"branch": "main", "head": head.trim(), "action": "observed"}}),
            json!({"type": "git.diff", "runId": null,
                   "data": {"files": ["a.txt", "token.txt"], "additions": 2, "deletions": 1,
                            "artifactId": diff["id"]}}),
        ]
    );

    // Deleting removes the workspace; the environment takes no more runs.
    let deleted = call(&g, "environments.delete", json!({"environmentId": id}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("checkout_deleted", redactor.value(&deleted));
    assert!(!workspace.exists());
    let refused = call(
        &g,
        "runs.create",
        json!({"input": "again", "environmentId": id}),
    )
    .await
    .unwrap_err();
    insta::assert_json_snapshot!("checkout_refused", redactor.value(&refused));
}

#[tokio::test]
async fn copies_retention_and_bad_settings() {
    let sources = Sources::new();
    let g = TestGateway::start_opts(Options {
        environments: sources.policy.clone(),
        ..Options::default()
    })
    .await;
    let source = sources.root("source");
    std::fs::create_dir_all(source.join("src")).unwrap();
    std::fs::write(source.join("src/main.rs"), "fn main() {}\n").unwrap();
    let created = call(
        &g,
        "environments.create",
        json!({"provider": "local", "idempotencyKey": "copy-1",
               "settings": {"source": {"path": source}, "network": "host", "retain": true}}),
    )
    .await
    .unwrap();
    // The state directory and the admin's sources differ per run.
    let mut redactor = Redactor::new()
        .with(g.dir.path().to_str().unwrap(), "<state>")
        .with(sources.dir.path().to_str().unwrap(), "<sources>");
    insta::assert_json_snapshot!("copies_created", redactor.value(&created));
    let workspace = std::path::PathBuf::from(created["workspace"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(workspace.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    // The same key: the same environment; other settings: a conflict.
    let again = call(
        &g,
        "environments.create",
        json!({"provider": "local", "idempotencyKey": "copy-1",
               "settings": {"source": {"path": source}, "network": "host", "retain": true}}),
    )
    .await
    .unwrap();
    assert_eq!(again, created);
    let other = call(
        &g,
        "environments.create",
        json!({"provider": "local", "idempotencyKey": "copy-1", "settings": {"source": {"path": source}}}),
    )
    .await
    .unwrap_err();
    insta::assert_json_snapshot!("copies_other", redactor.value(&other));
    // Retained on delete.
    let deleted = call(
        &g,
        "environments.delete",
        json!({"environmentId": created["id"]}),
    )
    .await
    .unwrap();
    insta::assert_json_snapshot!("copies_deleted", redactor.value(&deleted));
    assert!(workspace.join("src/main.rs").exists());

    // Settings are checked; a ref that does not exist fails the
    // environment, saying why.
    let bad = call(
        &g,
        "environments.create",
        json!({"provider": "local", "settings": {"source": {"path": "relative/dir"}}}),
    )
    .await
    .unwrap_err();
    insta::assert_json_snapshot!("copies_bad", redactor.value(&bad));
    let unknown = call(&g, "environments.create", json!({"provider": "cloud"}))
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("copies_unknown", redactor.value(&unknown));
    let failed = call(
        &g,
        "environments.create",
        json!({"provider": "local", "settings": {"source": {"git": "app", "ref": "no-such-branch"}}}),
    )
    .await
    .unwrap();
    insta::assert_json_snapshot!("copies_failed", redactor.value(&failed));
    let refused = call(
        &g,
        "runs.create",
        json!({"input": "x", "environmentId": failed["id"]}),
    )
    .await
    .unwrap_err();
    insta::assert_json_snapshot!("copies_refused", redactor.value(&refused));
    let missing = call(
        &g,
        "environments.status",
        json!({"environmentId": "env_nope"}),
    )
    .await
    .unwrap_err();
    insta::assert_json_snapshot!("copies_missing", redactor.value(&missing));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copied_source_keeps_files_and_links_and_drops_special_files() {
    let sources = Sources::new();
    let g = TestGateway::start_opts(Options {
        environments: sources.policy.clone(),
        ..Options::default()
    })
    .await;
    let source = sources.root("special");
    std::fs::create_dir_all(source.join("sub")).unwrap();
    std::fs::write(source.join("sub/kept.txt"), "kept\n").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", source.join("outside")).unwrap();
    // A FIFO (a reader of it would hang) and a socket, at two depths.
    let status = Command::new("mkfifo")
        .arg(source.join("sub/pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let _socket = std::os::unix::net::UnixListener::bind(source.join("agent.sock")).unwrap();
    let created = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        call(
            &g,
            "environments.create",
            json!({"provider": "local", "settings": {"source": {"path": source}}}),
        ),
    )
    .await
    .expect("a special file never hangs the copy")
    .unwrap();
    let mut redactor = Redactor::new()
        .with(g.dir.path().to_str().unwrap(), "<state>")
        .with(sources.dir.path().to_str().unwrap(), "<sources>");
    insta::assert_json_snapshot!("special_created", redactor.value(&created));
    let workspace = Path::new(created["workspace"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(workspace.join("sub/kept.txt")).unwrap(),
        "kept\n"
    );
    let link = std::fs::symlink_metadata(workspace.join("outside")).unwrap();
    assert!(
        link.file_type().is_symlink(),
        "a link stays a link, not a copy of its target"
    );
    for gone in ["sub/pipe", "agent.sock"] {
        assert!(
            std::fs::symlink_metadata(workspace.join(gone)).is_err(),
            "{gone} was dropped"
        );
    }
}

#[tokio::test]
async fn runs_in_one_environment_take_its_workspace_in_turn() {
    let script = Script {
        turns: vec![
            tool_turn("exec", json!({"command": "echo one >> turns.txt"})),
            Turn {
                text: Some("Done.".into()),
                ..Turn::default()
            },
        ],
        replay: Replay::PerRun,
        ..Script::default()
    };
    let sources = Sources::new();
    let g = TestGateway::start_opts(Options {
        script,
        environments: sources.policy.clone(),
        ..Options::default()
    })
    .await;
    let t = Transport::Http;
    let created = call(
        &g,
        "environments.create",
        json!({"provider": "local", "settings": {"source": {"git": "app", "ref": "main"}}}),
    )
    .await
    .unwrap();
    // The first run holds the workspace while its command waits for a
    // person; the second, in another session, waits for the workspace.
    let first = call(
        &g,
        "runs.create",
        json!({"input": "one", "environmentId": created["id"]}),
    )
    .await
    .unwrap();
    let approval = super::next_pending(&g, &t, "approvals", &first["runId"]).await;
    let second = call(
        &g,
        "runs.create",
        json!({"input": "two", "environmentId": created["id"], "sessionKey": "other"}),
    )
    .await
    .unwrap();
    let events = super::stored_events(&g, &t, &second["runId"]).await;
    let kinds: Vec<(&Value, &Value)> = events.iter().map(|e| (&e["type"], &e["data"])).collect();
    assert_eq!(
        kinds,
        [
            (&json!("run.created"), &json!({"input": "two"})),
            (&json!("run.queued"), &json!({"reason": "environment"}))
        ]
    );
    let status = call(&g, "runs.get", json!({"runId": second["runId"]}))
        .await
        .unwrap();
    assert_eq!(status["status"], "queued");
    call(
        &g,
        "approvals.respond",
        json!({"approvalId": approval["id"], "decision": "approve_once"}),
    )
    .await
    .unwrap();
    let done = |run: &Value| {
        let run_id = run["runId"].clone();
        let g = &g;
        async move {
            call(
                g,
                "runs.wait",
                json!({"runId": run_id, "timeoutMs": 20_000}),
            )
            .await
            .unwrap()
        }
    };
    assert_eq!(done(&first).await["status"], "completed");
    // Then the second takes the workspace, and asks for its own command.
    let approval = super::next_pending(&g, &t, "approvals", &second["runId"]).await;
    call(
        &g,
        "approvals.respond",
        json!({"approvalId": approval["id"], "decision": "approve_once"}),
    )
    .await
    .unwrap();
    assert_eq!(done(&second).await["status"], "completed");
    let workspace = std::path::PathBuf::from(created["workspace"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(workspace.join("turns.txt")).unwrap(),
        "one\none\n"
    );
}
