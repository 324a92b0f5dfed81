//! Pull requests from an environment's run, through the gateway, against a
//! scripted forge (a real HTTP server on 127.0.0.1 speaking GitHub's REST
//! API, a real bare repository behind `git http-backend`): the model calls
//! `pull_request`, a person approves it as an `environment` approval, the
//! gateway (never the sandboxed run) pushes the branch and opens the pull
//! request, and the run sees `git.pr` and a `pull_request` artifact.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use talon_gateway::{EnvironmentPolicy, Forge, SecretSource};
use talon_mock_model::Script;
use talon_testing::forge::Forge as ScriptedForge;

use super::env_support::{
    approve_once, artifact_of, call, create_environment, git, run_in, wait_run,
};
use super::ws::Transport;
use super::{Options, TestGateway, calls_then_say, next_pending, stored_events, tool_turn};

/// A scripted forge, and a gateway whose admin allows the repository `app`
/// (a clone of the forge's, in the returned directory) and the forge
/// `github`, its token in a file; its runs' model plays [`script`].
async fn gateway() -> (ScriptedForge, tempfile::TempDir, TestGateway) {
    let forge = ScriptedForge::start("acme", "app").unwrap();
    let sources = tempfile::tempdir().unwrap();
    let repo = sources.path().join("repo");
    git(
        sources.path(),
        &[
            "clone",
            "-q",
            forge.git_dir().to_str().unwrap(),
            repo.to_str().unwrap(),
        ],
    );
    let token = sources.path().join("forge.token");
    std::fs::write(&token, format!("{}\n", forge.token())).unwrap();
    let policy = EnvironmentPolicy {
        source_roots: Vec::new(),
        repositories: BTreeMap::from([("app".to_owned(), repo)]),
        secrets: BTreeMap::from([("FORGE_TOKEN".to_owned(), SecretSource::File(token))]),
        forges: BTreeMap::from([(
            "github".to_owned(),
            Forge {
                api: forge.api_url(),
                remote: forge.git_url(),
                repository: "acme/app".into(),
                token: "FORGE_TOKEN".into(),
            },
        )]),
    };
    let g = TestGateway::start_opts(Options {
        script: script(),
        environments: policy,
        config: json!({"tools": {"approvals": {"mode": "ask", "rules": [{"tool": "exec", "action": "allow"}]}}}),
        ..Options::default()
    })
    .await;
    (forge, sources, g)
}

/// `environments.create` of a checkout of `app`'s `main` whose pull
/// requests go as `pull_request` says.
async fn with_pull_requests(g: &TestGateway, pull_request: Value) -> Result<Value, Value> {
    create_environment(
        g,
        "local",
        json!({"source": {"git": "app", "ref": "main"}, "pullRequest": pull_request}),
    )
    .await
}

fn script() -> Script {
    calls_then_say(
        vec![
            tool_turn("exec", json!({"command": "printf 'hi\\n' > hello.txt"})),
            tool_turn(
                "pull_request",
                json!({"title": "Say hi", "body": "A greeting."}),
            ),
        ],
        "Opened.",
    )
}

#[tokio::test]
async fn an_approved_pull_request_is_pushed_and_opened_by_the_gateway() {
    let (forge, _sources, g) = gateway().await;
    let t = Transport::Http;
    let created = with_pull_requests(&g, json!({"forge": "github", "base": "main"}))
        .await
        .unwrap();
    assert_eq!(created["capabilities"]["pullRequests"], true);
    let id = created["id"].as_str().unwrap().to_owned();
    let run = run_in(&g, &created["id"], "greet").await;
    let approval = next_pending(&g, &t, "approvals", &run["runId"]).await;
    assert_eq!(
        (
            &approval["kind"],
            &approval["environmentAction"],
            &approval["toolName"]
        ),
        (
            &json!("environment"),
            &json!("pull_request"),
            &json!("pull_request")
        )
    );
    // Nothing reached the forge before the approval.
    assert_eq!(forge.branches().unwrap(), ["main"]);
    approve_once(&g, &approval).await;
    let result = wait_run(&g, &run["runId"]).await;
    assert_eq!(result["status"], "completed", "{result}");
    let branch = format!("talon/{id}");
    assert_eq!(forge.show(&branch, "hello.txt").unwrap(), "hi\n");
    let pulls = forge.pulls();
    assert_eq!(
        pulls
            .iter()
            .map(|p| (p.number, p.title.as_str(), p.head.as_str(), p.base.as_str()))
            .collect::<Vec<_>>(),
        [(1, "Say hi", branch.as_str(), "main")]
    );
    let events = stored_events(&g, &t, &run["runId"]).await;
    let pr: Vec<&Value> = events.iter().filter(|e| e["type"] == "git.pr").collect();
    assert_eq!(pr.len(), 1, "{events:?}");
    let url = pr[0]["data"]["url"].as_str().unwrap();
    assert!(url.ends_with("/acme/app/pull/1"), "{url}");
    assert_eq!(
        (
            &pr[0]["data"]["number"],
            &pr[0]["data"]["action"],
            &pr[0]["data"]["title"]
        ),
        (&json!(1), &json!("opened"), &json!("Say hi"))
    );
    let listed = call(&g, "artifacts.list", json!({"runId": run["runId"]}))
        .await
        .unwrap();
    let artifact = artifact_of(&listed, "pull_request");
    let content: Value = serde_json::from_str(&g.artifact_text(&artifact["id"]).await).unwrap();
    assert_eq!(
        (
            &content["url"],
            &content["number"],
            &content["branch"],
            &content["base"],
            &content["action"]
        ),
        (
            &json!(url),
            &json!(1),
            &json!(branch),
            &json!("main"),
            &json!("opened")
        )
    );
    // The token never reached an event, the artifact or the model.
    assert!(
        !serde_json::to_string(&events)
            .unwrap()
            .contains(forge.token())
    );
    assert!(!content.to_string().contains(forge.token()));
    assert!(
        !serde_json::to_string(&g.mock.requests())
            .unwrap()
            .contains(forge.token())
    );
}

#[tokio::test]
async fn a_denied_pull_request_pushes_nothing_and_unknown_forges_are_refused() {
    let (forge, _sources, g) = gateway().await;
    let t = Transport::Http;
    let refused = with_pull_requests(&g, json!({"forge": "gitlab"}))
        .await
        .unwrap_err();
    assert_eq!(
        (&refused["code"], &refused["details"]),
        (
            &json!("forbidden"),
            &json!({"field": "settings.pullRequest.forge"})
        )
    );
    let created = with_pull_requests(&g, json!({"forge": "github"}))
        .await
        .unwrap();
    let run = run_in(&g, &created["id"], "greet").await;
    let approval = next_pending(&g, &t, "approvals", &run["runId"]).await;
    call(
        &g,
        "approvals.respond",
        json!({"approvalId": approval["id"], "decision": "deny", "reason": "not yet"}),
    )
    .await
    .unwrap();
    let result = wait_run(&g, &run["runId"]).await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(forge.branches().unwrap(), ["main"]);
    assert!(forge.pulls().is_empty());
}
