//! Managed environments with the `local` provider: a workspace from an
//! admin's repository or source root, admin-named secrets bound by name
//! and never stored, the network off for shell commands, the workspace's
//! changes as a `diff` artifact with `git.diff` and `git.branch`, and
//! cleanup or retention on delete.

use std::process::Command;

use serde_json::{Value, json};

use super::env_support::{
    DEPLOY_TOKEN_VAR, Sources, approve_once, artifact_of, call, completed_call, create_checkout,
    create_environment, delete_environment, git, read, run_events, run_in, run_to_end_in, wait_run,
    workspace_of,
};
use super::ws::Transport;
use super::{Options, TestGateway, call_then_say, calls_then_say, tool_turn};

const TOKEN: &str = "tok-env-5b9f2e7c1a83";

#[tokio::test]
async fn a_run_in_a_checkout_yields_a_diff_and_never_stores_its_secret() {
    #[allow(
        unsafe_code,
        reason = "the variable is set before the gateway starts any thread that reads the environment; each test is its own process under nextest"
    )]
    // SAFETY: see the reason above.
    unsafe {
        std::env::set_var(DEPLOY_TOKEN_VAR, TOKEN);
    }
    let script = calls_then_say(
        vec![
            tool_turn(
                "exec",
                json!({"command": "echo \"token=$DEPLOY_TOKEN\"; printf %s \"$DEPLOY_TOKEN\" > token.txt; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"}),
            ),
            tool_turn(
                "edit",
                json!({"path": "a.txt", "old": "hello", "new": "hello world"}),
            ),
        ],
        "Done.",
    );
    let sources = Sources::new();
    let repo = sources.repo();
    let g = sources
        .gateway(script, json!({"tools": {"approvals": "allow"}}))
        .await;
    let created = create_environment(
        &g,
        "local",
        json!({"source": {"git": "app", "ref": "main"}, "secrets": ["DEPLOY_TOKEN"]}),
    )
    .await
    .unwrap();
    // The state directory and the admin's sources differ per run.
    let mut redactor = sources.redactor(&g);
    insta::assert_json_snapshot!("checkout_created", redactor.value(&created));
    let id = created["id"].clone();
    let workspace = workspace_of(&created);
    assert_eq!(read(&workspace, "a.txt"), "hello\n");
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

    let (run_id, result) = run_to_end_in(&g, &id, "deploy").await;
    insta::assert_json_snapshot!(
        "checkout_result",
        super::artifacts::sized(redactor.value(&result))
    );
    // The run worked in the environment's workspace, with its secret and
    // without a network; the repository itself is untouched.
    assert_eq!(read(&workspace, "token.txt"), TOKEN);
    assert_eq!(read(&workspace, "a.txt"), "hello world\n");
    assert_eq!(read(&repo, "a.txt"), "hello\n");
    let events = run_events(&g, &run_id).await;
    let mut exec = completed_call(&events).clone();
    // Its place in the log hangs on how many deltas its output came in.
    exec["id"] = json!("<event id>");
    // Its stdout: the secret redacted, the loopback interface only.
    insta::assert_json_snapshot!("checkout_exec", redactor.value(&exec));
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
    let text = g.artifact_text(&diff["id"]).await;
    assert!(text.contains("-hello\n+hello world\n"), "{text}");
    assert!(text.contains("+++ b/token.txt"), "{text}");
    assert!(text.contains("+[redacted]"), "{text}");
    // Its output streamed as deltas while it ran, redacted like its result.
    let streamed: String = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool.call.delta")
        .filter_map(|e| e["data"]["update"]["text"].as_str())
        .collect();
    assert!(streamed.starts_with("token=[redacted]\n"), "{streamed}");
    // The secret is in no event and no artifact.
    assert!(!events.to_string().contains(TOKEN));
    let listed = call(&g, "artifacts.list", json!({"runId": run_id}))
        .await
        .unwrap();
    for artifact in listed["artifacts"].as_array().unwrap() {
        let text = g.artifact_text(&artifact["id"]).await;
        assert!(!text.contains(TOKEN), "{artifact}: {text}");
    }
    // The run's changes as a patch `git am` applies on the checkout's
    // base, and the workspace as a .tar.gz with the secret redacted.
    let patch = g.artifact_text(&artifact_of(&listed, "patch")["id"]).await;
    let clone = tempfile::tempdir().unwrap();
    git(clone.path(), &["clone", "-q", repo.to_str().unwrap(), "c"]);
    let cloned = clone.path().join("c");
    std::fs::write(clone.path().join("run.patch"), &patch).unwrap();
    git(
        &cloned,
        &["am", "-q", clone.path().join("run.patch").to_str().unwrap()],
    );
    assert_eq!(read(&cloned, "a.txt"), "hello world\n");
    assert_eq!(read(&cloned, "token.txt"), "[redacted]");
    let workspace_artifact = artifact_of(&listed, "workspace");
    assert_eq!(workspace_artifact["mimeType"], "application/gzip");
    let tarball = g
        .artifact_content(&workspace_artifact["id"], None)
        .await
        .bytes()
        .await
        .unwrap();
    // Downloadable by range, as any artifact.
    let head = g
        .artifact_content(&workspace_artifact["id"], Some("bytes=0-1"))
        .await;
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
    assert_eq!(read(unpacked.path(), "a.txt"), "hello world\n");
    assert_eq!(read(unpacked.path(), "token.txt"), "[redacted]");
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
    let deleted = delete_environment(&g, &id).await;
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
    let mut redactor = sources.redactor(&g);
    insta::assert_json_snapshot!("copies_created", redactor.value(&created));
    let workspace = workspace_of(&created);
    assert_eq!(read(&workspace, "src/main.rs"), "fn main() {}\n");
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
    let deleted = delete_environment(&g, &created["id"]).await;
    insta::assert_json_snapshot!("copies_deleted", redactor.value(&deleted));
    assert!(workspace.join("src/main.rs").exists());

    // Settings are checked; a ref that does not exist fails the
    // environment, saying why.
    let bad = create_environment(&g, "local", json!({"source": {"path": "relative/dir"}}))
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("copies_bad", redactor.value(&bad));
    let unknown = call(&g, "environments.create", json!({"provider": "cloud"}))
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("copies_unknown", redactor.value(&unknown));
    let failed = create_checkout(&g, "no-such-branch").await.unwrap();
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
        create_environment(&g, "local", json!({"source": {"path": source}})),
    )
    .await
    .expect("a special file never hangs the copy")
    .unwrap();
    let mut redactor = sources.redactor(&g);
    insta::assert_json_snapshot!("special_created", redactor.value(&created));
    let workspace = workspace_of(&created);
    assert_eq!(read(&workspace, "sub/kept.txt"), "kept\n");
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
    let script = call_then_say("exec", json!({"command": "echo one >> turns.txt"}), "Done.");
    let sources = Sources::new();
    let g = sources.gateway(script, json!({})).await;
    let t = Transport::Http;
    let created = create_checkout(&g, "main").await.unwrap();
    // The first run holds the workspace while its command waits for a
    // person; the second, in another session, waits for the workspace.
    let first = run_in(&g, &created["id"], "one").await;
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
    approve_once(&g, &approval).await;
    assert_eq!(wait_run(&g, &first["runId"]).await["status"], "completed");
    // Then the second takes the workspace, and asks for its own command.
    let approval = super::next_pending(&g, &t, "approvals", &second["runId"]).await;
    approve_once(&g, &approval).await;
    assert_eq!(wait_run(&g, &second["runId"]).await["status"], "completed");
    let workspace = workspace_of(&created);
    assert_eq!(read(&workspace, "turns.txt"), "one\none\n");
}
