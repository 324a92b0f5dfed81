//! Pull requests against a scripted forge (a real HTTP server on
//! 127.0.0.1 speaking GitHub's REST API, a real bare repository behind
//! `git http-backend`): the branch pushed by the gateway, the pull request
//! opened, then updated; retries on a busy forge; a lost answer; refusals.

use std::time::Duration;

use pretty_assertions::assert_eq;
use talon_environments::forge::{Forge, Published, PullRequestSpec, publish};
use talon_environments::snapshot::patch;
use talon_protocol::gateway::ErrorCode;
use talon_testing::forge::{Failure, Forge as ScriptedForge};

fn forge_of(scripted: &ScriptedForge) -> Forge {
    Forge {
        api: scripted.api_url(),
        remote: scripted.git_url(),
        repository: "acme/app".into(),
        token: "FORGE_TOKEN".into(),
    }
}

fn spec(title: &str) -> PullRequestSpec {
    PullRequestSpec {
        base: "main".into(),
        branch: "talon/env_1".into(),
        title: title.into(),
        body: "Made by a run.".into(),
        draft: false,
    }
}

const NEW_FILE: &str = "--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hi\n";
const TWO_LINES: &str = "--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1,2 @@\n+hi\n+again\n";

async fn publish_to(
    scripted: &ScriptedForge,
    token: &str,
    diff: &str,
    title: &str,
) -> Result<Published, talon_protocol::gateway::ApiError> {
    let scratch = tempfile::tempdir().unwrap();
    publish(
        &forge_of(scripted),
        token,
        &patch(diff, title, 0),
        &spec(title),
        scratch.path(),
    )
    .await
}

#[tokio::test]
async fn a_branch_is_pushed_and_its_pull_request_opened_then_updated() {
    let scripted = ScriptedForge::start("acme", "app").unwrap();
    let opened = publish_to(&scripted, scripted.token(), NEW_FILE, "Say hi")
        .await
        .unwrap();
    assert_eq!((opened.number, opened.action), (1, "opened"));
    assert!(opened.url.ends_with("/acme/app/pull/1"), "{}", opened.url);
    assert_eq!(scripted.show("talon/env_1", "hello.txt").unwrap(), "hi\n");
    let log = scripted.log("talon/env_1").unwrap();
    assert_eq!(
        (log[0].subject.as_str(), log[0].author_name.as_str()),
        ("Say hi", "Talon")
    );
    // The environment changed again: the branch is replaced, the same
    // pull request updated.
    let updated = publish_to(&scripted, scripted.token(), TWO_LINES, "Say hi twice")
        .await
        .unwrap();
    assert_eq!((updated.number, updated.action), (1, "updated"));
    assert_ne!(updated.head, opened.head);
    assert_eq!(
        scripted.show("talon/env_1", "hello.txt").unwrap(),
        "hi\nagain\n"
    );
    let pulls = scripted.pulls();
    assert_eq!(
        pulls
            .iter()
            .map(|p| (
                p.number,
                p.title.as_str(),
                p.state.as_str(),
                p.head.as_str(),
                p.base.as_str()
            ))
            .collect::<Vec<_>>(),
        [(1, "Say hi twice", "open", "talon/env_1", "main")]
    );
    // The token travelled as a header, never in a URL.
    assert!(scripted.requests().iter().all(|r| {
        !r.path.contains(scripted.token())
            && !r
                .query
                .as_deref()
                .unwrap_or_default()
                .contains(scripted.token())
    }));
}

#[tokio::test]
async fn a_busy_or_rate_limited_forge_is_retried() {
    let scripted = ScriptedForge::start("acme", "app").unwrap();
    scripted.fail_next(1, Failure::status(502));
    let opened = publish_to(&scripted, scripted.token(), NEW_FILE, "Say hi")
        .await
        .unwrap();
    assert_eq!((opened.number, opened.action), (1, "opened"));
    scripted.fail_next(1, Failure::secondary_rate_limit(Duration::from_secs(1)));
    let updated = publish_to(&scripted, scripted.token(), TWO_LINES, "Again")
        .await
        .unwrap();
    assert_eq!((updated.number, updated.action), (1, "updated"));
    // Three failures in a row are the forge's answer.
    scripted.fail_next(3, Failure::status(503));
    let err = publish_to(&scripted, scripted.token(), NEW_FILE, "Once more")
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            ErrorCode::Unavailable,
            "the forge refused to list pull requests: 503 Service Unavailable"
        )
    );
}

#[tokio::test]
async fn a_wrong_token_and_a_bad_branch_are_refused_clearly() {
    let scripted = ScriptedForge::start("acme", "app").unwrap();
    let err = publish_to(&scripted, "not-the-token", NEW_FILE, "Say hi")
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Unavailable, "{}", err.message);
    assert!(
        err.message.starts_with("cloning the forge's base branch:"),
        "{}",
        err.message
    );
    let scratch = tempfile::tempdir().unwrap();
    let mut bad = spec("x");
    bad.branch = "../main".into();
    let err = publish(
        &forge_of(&scripted),
        scripted.token(),
        &patch(NEW_FILE, "x", 0),
        &bad,
        scratch.path(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            ErrorCode::InvalidRequest,
            "not a branch Talon pushes: \"../main\" onto \"main\""
        )
    );
    assert_eq!(scripted.branches().unwrap(), ["main"]);
}
