//! The forge harness: real git pushes over HTTP into its bare repository
//! (with the token, and refused without it), and its pulls API as a
//! gateway calls it: create (201), duplicate (422), list by head, get,
//! patch, bad credentials (401) and injected failures.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use talon_testing::forge::{Failure, Forge};

/// Runs the real git client in `dir`, hermetic: no system or global
/// config, no credential helper, no prompts.
fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_ASKPASS")
        .env_remove("SSH_ASKPASS")
        .env("GIT_AUTHOR_NAME", "Tester")
        .env("GIT_AUTHOR_EMAIL", "tester@example.test")
        .env("GIT_COMMITTER_NAME", "Tester")
        .env("GIT_COMMITTER_EMAIL", "tester@example.test")
        .output()
        .unwrap()
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "{}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Clones the forge's repository (anonymously) into `dir/clone`.
fn clone(forge: &Forge, dir: &Path) -> std::path::PathBuf {
    ok(git(dir, &["clone", "--quiet", &forge.git_url(), "clone"]));
    dir.join("clone")
}

/// Commits `file` with `content` on `branch` (created from the current
/// commit if new) in `clone`, and pushes it with the token.
fn push_commit(forge: &Forge, clone: &Path, branch: &str, file: &str, content: &str) {
    ok(git(clone, &["checkout", "--quiet", "-B", branch]));
    std::fs::write(clone.join(file), content).unwrap();
    ok(git(clone, &["add", file]));
    ok(git(
        clone,
        &["commit", "--quiet", "-m", &format!("Add {file}")],
    ));
    ok(git(
        clone,
        &["push", "--quiet", &forge.git_url_with_token(), branch],
    ));
}

#[test]
fn a_push_with_the_token_creates_a_branch() {
    let forge = Forge::start("acme", "widgets").unwrap();
    assert_eq!(forge.branches().unwrap(), ["main"]);
    let seed = forge.log("main").unwrap();
    assert_eq!(seed.len(), 1);
    assert_eq!(
        (seed[0].subject.as_str(), seed[0].author_name.as_str()),
        ("Initial commit", "Forge")
    );
    // Fixed author and dates: the seed commit is the same on every run.
    assert_eq!(
        seed[0].sha,
        Forge::start("acme", "widgets")
            .unwrap()
            .log("main")
            .unwrap()[0]
            .sha
    );
    assert!(
        forge
            .show("main", "README.md")
            .unwrap()
            .starts_with("# widgets\n")
    );

    let dir = tempfile::tempdir().unwrap();
    let clone = clone(&forge, dir.path());
    assert!(clone.join("README.md").is_file());
    push_commit(&forge, &clone, "talon/feature", "hello.txt", "hello\n");

    assert_eq!(forge.branches().unwrap(), ["main", "talon/feature"]);
    let log = forge.log("talon/feature").unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].subject, "Add hello.txt");
    assert_eq!(log[0].author_email, "tester@example.test");
    assert_eq!(log[0].sha, ok(git(&clone, &["rev-parse", "HEAD"])).trim());
    assert_eq!(log[1], seed[0]);
    assert_eq!(forge.show("talon/feature", "hello.txt").unwrap(), "hello\n");
    assert!(forge.show("main", "hello.txt").is_err());

    // git asked without credentials first, was challenged, and pushed with
    // the token (recorded without it).
    let requests = forge.requests();
    let pushes: Vec<_> = requests
        .iter()
        .filter(|r| r.path == "/acme/widgets.git/git-receive-pack")
        .collect();
    assert_eq!(pushes.len(), 1, "{requests:#?}");
    assert_eq!(pushes[0].method, "POST");
    assert_eq!(pushes[0].status, 200);
    assert_eq!(
        pushes[0].header("authorization"),
        Some("Basic x-access-token:[token]")
    );
    assert!(!pushes[0].body.is_empty());
    assert!(requests.iter().any(|r| {
        r.query.as_deref() == Some("service=git-receive-pack")
            && r.status == 401
            && r.header("authorization").is_none()
    }));
    let token = forge.token().to_owned();
    assert!(token.starts_with("ghs_") && token.len() == 40, "{token}");
    assert!(
        requests
            .iter()
            .all(|r| r.headers.iter().all(|(_, v)| !v.contains(&token))),
        "the token is never recorded"
    );

    // A push larger than git's post buffer (1 MiB) is sent chunked, with
    // no Content-Length (after a small probe request): the CGI reads it to
    // the end. Incompressible (xorshift) so the pack stays that large.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let big: String = (0..3 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'!' + (state % 90) as u8)
        })
        .collect();
    push_commit(&forge, &clone, "talon/big", "big.txt", &big);
    assert_eq!(forge.show("talon/big", "big.txt").unwrap(), big);
    let big_push = forge
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/acme/widgets.git/git-receive-pack")
        .unwrap();
    assert_eq!(big_push.header("content-length"), None);
    assert!(big_push.body.len() > 2 << 20, "{}", big_push.body.len());
}

#[test]
fn a_push_without_the_token_is_refused() {
    let forge = Forge::start("acme", "widgets").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let clone = clone(&forge, dir.path());
    ok(git(&clone, &["checkout", "--quiet", "-b", "sneaky"]));
    std::fs::write(clone.join("x.txt"), "x\n").unwrap();
    ok(git(&clone, &["add", "x.txt"]));
    ok(git(&clone, &["commit", "--quiet", "-m", "x"]));

    // No credentials: challenged, and git may not prompt.
    let output = git(&clone, &["push", &forge.git_url(), "sneaky"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("could not read Username"), "{stderr}");

    // A wrong token.
    let wrong = forge
        .git_url_with_token()
        .replace(forge.token(), "ghs_wrong");
    let output = git(&clone, &["push", &wrong, "sneaky"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Authentication failed"), "{stderr}");

    assert_eq!(forge.branches().unwrap(), ["main"]);
    let requests = forge.requests();
    assert!(
        requests
            .iter()
            .filter(|r| r.query.as_deref() == Some("service=git-receive-pack"))
            .all(|r| r.status == 401),
        "{requests:#?}"
    );
    assert!(requests.iter().any(|r| {
        r.header("authorization") == Some("Basic x-access-token:[wrong]") && r.status == 401
    }));
    assert!(
        requests
            .iter()
            .all(|r| r.path != "/acme/widgets.git/git-receive-pack")
    );
}

/// Calls the forge's API as a gateway would; returns status, headers and
/// JSON body.
async fn call(
    forge: &Forge,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, HeaderMap, Value) {
    let client = reqwest::Client::new();
    let mut request = client
        .request(method, format!("{}{path}", forge.api_url()))
        .header("accept", "application/vnd.github+json")
        .header("x-github-api-version", "2022-11-28")
        .header("user-agent", "talon-testing");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.json::<Value>().await.unwrap();
    (status, headers, body)
}

#[tokio::test]
async fn the_pulls_api_creates_refuses_duplicates_lists_and_patches() {
    use reqwest::Method;
    let forge = Forge::start("acme", "widgets").unwrap();
    let token = forge.token().to_owned();
    let token = Some(token.as_str());
    let dir = tempfile::tempdir().unwrap();
    let clone = clone(&forge, dir.path());
    push_commit(&forge, &clone, "talon/run-1", "a.txt", "a\n");
    let head_sha = forge.log("talon/run-1").unwrap()[0].sha.clone();
    let main_sha = forge.log("main").unwrap()[0].sha.clone();
    let pulls = "/repos/acme/widgets/pulls";
    let create = json!({
        "title": "Run 1",
        "head": "acme:talon/run-1",
        "base": "main",
        "body": "What the run did.",
        "draft": true,
    });

    let (status, headers, created) =
        call(&forge, Method::POST, pulls, token, Some(create.clone())).await;
    let url = format!("{}/repos/acme/widgets/pulls/1", forge.api_url());
    let expected = json!({
        "url": url,
        "html_url": format!("{}/acme/widgets/pull/1", forge.url()),
        "number": 1,
        "state": "open",
        "title": "Run 1",
        "body": "What the run did.",
        "draft": true,
        "merged": false,
        "head": { "label": "acme:talon/run-1", "ref": "talon/run-1", "sha": head_sha },
        "base": { "label": "acme:main", "ref": "main", "sha": main_sha },
    });
    assert_eq!((status, &created), (201, &expected));
    assert_eq!(headers["location"], url.as_str());
    assert_eq!(headers["content-type"], "application/json; charset=utf-8");

    // The same head again (as a bare branch name): GitHub's 422.
    let again = json!({ "title": "Again", "head": "talon/run-1", "base": "main" });
    let (status, _, body) = call(&forge, Method::POST, pulls, token, Some(again)).await;
    assert_eq!(
        (status, body),
        (
            422,
            json!({
                "message": "Validation Failed",
                "errors": [{
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": "A pull request already exists for acme:talon/run-1.",
                }],
                "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
                "status": "422",
            })
        )
    );
    // A head branch that was never pushed.
    let missing = json!({ "title": "Nope", "head": "acme:nope", "base": "main" });
    let (status, _, body) = call(&forge, Method::POST, pulls, token, Some(missing)).await;
    assert_eq!(status, 422);
    assert_eq!(
        body["errors"],
        json!([{ "resource": "PullRequest", "field": "head", "code": "invalid" }])
    );
    // A head with nothing the base lacks.
    ok(git(
        &clone,
        &["push", "--quiet", &forge.git_url_with_token(), "main:same"],
    ));
    let same = json!({ "title": "Same", "head": "same", "base": "main" });
    let (status, _, body) = call(&forge, Method::POST, pulls, token, Some(same)).await;
    assert_eq!(status, 422);
    assert_eq!(
        body["errors"][0]["message"],
        "No commits between main and same"
    );
    // A field missing.
    let (status, _, body) = call(
        &forge,
        Method::POST,
        pulls,
        token,
        Some(json!({ "head": "talon/run-1" })),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["errors"],
        json!([
            { "resource": "PullRequest", "field": "title", "code": "missing_field" },
            { "resource": "PullRequest", "field": "base", "code": "missing_field" },
        ])
    );

    // Listing by head; another head lists nothing.
    let list = format!("{pulls}?head=acme%3Atalon%2Frun-1&state=open");
    let (status, _, listed) = call(&forge, Method::GET, &list, token, None).await;
    assert_eq!((status, listed), (200, json!([expected])));
    let other = format!("{pulls}?head=acme:talon/run-2");
    let (status, _, listed) = call(&forge, Method::GET, &other, token, None).await;
    assert_eq!((status, listed), (200, json!([])));

    // A new commit on the head moves the pull request's head.
    push_commit(&forge, &clone, "talon/run-1", "b.txt", "b\n");
    let new_sha = forge.log("talon/run-1").unwrap()[0].sha.clone();
    let (status, _, got) = call(&forge, Method::GET, &format!("{pulls}/1"), token, None).await;
    let mut moved = expected.clone();
    moved["head"]["sha"] = json!(new_sha);
    assert_eq!((status, got), (200, moved.clone()));
    let (status, _, body) = call(&forge, Method::GET, &format!("{pulls}/2"), token, None).await;
    assert_eq!((status, body["message"].as_str()), (404, Some("Not Found")));

    // Patching the title, body and state.
    let patch = json!({ "title": "Run 1 (done)", "body": null, "state": "closed" });
    let (status, _, patched) = call(
        &forge,
        Method::PATCH,
        &format!("{pulls}/1"),
        token,
        Some(patch),
    )
    .await;
    let mut closed = moved.clone();
    closed["title"] = json!("Run 1 (done)");
    closed["body"] = Value::Null;
    closed["state"] = json!("closed");
    assert_eq!((status, patched), (200, closed.clone()));
    let (_, _, open) = call(&forge, Method::GET, &list, token, None).await;
    assert_eq!(open, json!([]));
    let all = format!("{pulls}?head=acme:talon/run-1&state=all");
    let (_, _, listed) = call(&forge, Method::GET, &all, token, None).await;
    assert_eq!(listed, json!([closed]));
    // Closed, the head is free for a new pull request.
    let (status, _, second) = call(&forge, Method::POST, pulls, token, Some(create)).await;
    assert_eq!((status, &second["number"]), (201, &json!(2)));
    assert_eq!(forge.pulls().len(), 2);
    assert_eq!(forge.pulls()[0].state, "closed");

    // The create was recorded as sent, its token redacted.
    let first = forge
        .api_requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(first.path, "/api/v3/repos/acme/widgets/pulls");
    assert_eq!(first.status, 201);
    assert_eq!(first.header("authorization"), Some("Bearer [token]"));
    assert_eq!(first.header("accept"), Some("application/vnd.github+json"));
    assert_eq!(first.header("x-github-api-version"), Some("2022-11-28"));
    assert_eq!(first.json().unwrap()["title"], "Run 1");
}

#[tokio::test]
async fn bad_credentials_are_refused() {
    use reqwest::Method;
    let forge = Forge::start("acme", "widgets").unwrap();
    let bad = json!({
        "message": "Bad credentials",
        "documentation_url": "https://docs.github.com/rest",
        "status": "401",
    });
    let path = "/repos/acme/widgets/pulls";
    let (status, _, body) = call(&forge, Method::GET, path, None, None).await;
    assert_eq!((status, body), (401, bad.clone()));
    let (status, _, body) = call(&forge, Method::GET, path, Some("ghs_wrong"), None).await;
    assert_eq!((status, body), (401, bad));
    let (status, _, _) = call(&forge, Method::GET, path, Some(forge.token()), None).await;
    assert_eq!(status, 200);
    // GitHub's older `token` scheme is accepted too.
    let response = reqwest::Client::new()
        .get(format!("{}/repos/acme/widgets", forge.api_url()))
        .header("authorization", format!("token {}", forge.token()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap()["default_branch"],
        "main"
    );
    // Another repository is not found.
    let (status, _, _) = call(
        &forge,
        Method::GET,
        "/repos/acme/other/pulls",
        Some(forge.token()),
        None,
    )
    .await;
    assert_eq!(status, 404);

    let recorded: Vec<_> = forge
        .api_requests()
        .iter()
        .map(|r| (r.header("authorization").map(str::to_owned), r.status))
        .collect();
    assert_eq!(
        recorded,
        [
            (None, 401),
            (Some("Bearer [wrong]".to_owned()), 401),
            (Some("Bearer [token]".to_owned()), 200),
            (Some("token [token]".to_owned()), 200),
            (Some("Bearer [token]".to_owned()), 404),
        ]
    );
}

#[tokio::test]
async fn injected_failures_are_answered_then_the_api_recovers() {
    use reqwest::Method;
    let forge = Forge::start("acme", "widgets").unwrap();
    let token = Some(forge.token());
    let dir = tempfile::tempdir().unwrap();
    let clone = clone(&forge, dir.path());
    push_commit(&forge, &clone, "talon/run-1", "a.txt", "a\n");
    let path = "/repos/acme/widgets/pulls";
    let create = json!({ "title": "Run 1", "head": "acme:talon/run-1", "base": "main" });

    forge.fail_next(2, Failure::status(502));
    for _ in 0..2 {
        let (status, _, body) = call(&forge, Method::POST, path, token, Some(create.clone())).await;
        assert_eq!((status, body), (502, json!({ "message": "Bad Gateway" })));
    }
    assert!(forge.pulls().is_empty(), "a failed call has no effect");

    forge.fail_next(1, Failure::rate_limited(Duration::from_secs(60)));
    let (status, headers, body) = call(&forge, Method::GET, path, token, None).await;
    assert_eq!(status, 403);
    assert_eq!(headers["x-ratelimit-remaining"], "0");
    let reset: u64 = headers["x-ratelimit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(reset > 1_700_000_000, "{reset}");
    assert_eq!(
        body["message"],
        "API rate limit exceeded for installation ID 1."
    );

    forge.fail_next(1, Failure::secondary_rate_limit(Duration::from_secs(3)));
    let (status, headers, _) = call(&forge, Method::GET, path, token, None).await;
    assert_eq!(
        (status, &headers["retry-after"]),
        (403, &"3".parse().unwrap())
    );

    // A response lost after the call took effect: the retry finds the pull
    // request already there.
    forge.fail_next(1, Failure::status(502).after_applying());
    let (status, _, _) = call(&forge, Method::POST, path, token, Some(create.clone())).await;
    assert_eq!(status, 502);
    assert_eq!(forge.pulls().len(), 1);
    let (status, _, body) = call(&forge, Method::POST, path, token, Some(create)).await;
    assert_eq!(status, 422);
    assert_eq!(
        body["errors"][0]["message"],
        "A pull request already exists for acme:talon/run-1."
    );
    let (status, headers, listed) = call(&forge, Method::GET, path, token, None).await;
    assert_eq!((status, listed.as_array().map(Vec::len)), (200, Some(1)));
    assert_eq!(headers["x-ratelimit-remaining"], "4999");

    let statuses: Vec<u16> = forge.api_requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [502, 502, 403, 403, 502, 422, 200]);
}
