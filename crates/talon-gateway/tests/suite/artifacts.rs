//! Artifacts: every run ends with its trajectory, listed, downloadable
//! (with `Range`) by tokens with `artifacts.read`, purged when it
//! expires, and never holding a secret the gateway knows.

use std::time::Duration;

use serde_json::{Value, json};
use talon_mock_model::Script;
use talon_protocol::gateway::Scope;
use talon_testing::redact::{Redactor, redacted};

use super::ws::Transport;
use super::{Options, TestGateway};

/// `runs.wait`'s result of a run of `input`, to its end (its caller
/// asserts the whole result).
async fn run_to_end(g: &TestGateway, input: &str) -> Value {
    let t = Transport::Http;
    let run = t
        .call(g, "runs.create", json!({"input": input}))
        .await
        .unwrap();
    t.call(
        g,
        "runs.wait",
        json!({"runId": run["runId"], "timeoutMs": 20_000}),
    )
    .await
    .unwrap()
}

/// `value` with every trajectory's varying size as `<bytes>`.
pub(super) use talon_testing::redact::trajectory_sizes as sized;

/// An `artifacts.list` result redacted by `redactor`, its artifacts sorted
/// by type, title and placeholder id: artifacts made in one millisecond
/// are listed in the order of their random ids.
fn listing(redactor: &mut Redactor, listed: &Value) -> Value {
    let mut listed = sized(redactor.value(listed));
    let key =
        |a: &Value| ["type", "title", "id"].map(|k| a[k].as_str().unwrap_or_default().to_owned());
    listed["artifacts"].as_array_mut().unwrap().sort_by_key(key);
    listed
}

async fn get(g: &TestGateway, token: &str, path: &str, range: Option<&str>) -> reqwest::Response {
    let mut request = g.client.get(g.url(path)).bearer_auth(token);
    if let Some(range) = range {
        request = request.header("range", range);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn a_run_ends_with_its_trajectory_downloadable_by_range() {
    let g = TestGateway::start().await;
    let result = run_to_end(&g, "hello").await;
    // One numbering for the result, the events and the artifact's content.
    let mut redactor = Redactor::new();
    // Completed, with one artifact: its trajectory.
    insta::assert_json_snapshot!("range_result", sized(redactor.value(&result)));
    let artifact = &result["artifacts"][0];
    let id = artifact["id"].as_str().unwrap();
    // Epoch milliseconds, like every time on the wire.
    let created = artifact["createdAt"].as_u64().unwrap();
    assert!(
        created >= result["startedAt"].as_u64().unwrap(),
        "{artifact} {result}"
    );
    assert!(
        artifact["expiresAt"].as_u64().unwrap() > created,
        "{artifact}"
    );
    let size = artifact["sizeBytes"].as_u64().unwrap();
    // Listed by run, got by id, announced in the run's events.
    let t = Transport::Http;
    let listed = t
        .call(&g, "artifacts.list", json!({"runId": result["runId"]}))
        .await
        .unwrap();
    pretty_assertions::assert_eq!(listed, json!({"artifacts": [artifact]}));
    let got = t
        .call(&g, "artifacts.get", json!({"artifactId": id}))
        .await
        .unwrap();
    assert_eq!(got, *artifact);
    // The seed's `artifacts.get(artifactId, { runId })`: its run finds it,
    // another run's id does not, for a download too.
    let of_its_run = t
        .call(
            &g,
            "artifacts.get",
            json!({"artifactId": id, "runId": result["runId"]}),
        )
        .await
        .unwrap();
    assert_eq!(of_its_run, *artifact);
    for method in ["artifacts.get", "artifacts.download"] {
        let other = t
            .call(&g, method, json!({"artifactId": id, "runId": "run_other"}))
            .await
            .unwrap_err();
        assert_eq!(other["code"], "not_found", "{method}: {other}");
    }
    let page = t
        .call(&g, "runs.events", json!({"runId": result["runId"]}))
        .await
        .unwrap();
    insta::assert_json_snapshot!(
        "range_events",
        redactor.transcript(page["events"].as_array().unwrap())
    );
    let filter = talon_store::EventFilter {
        types: vec![talon_protocol::EventType::ArtifactCreated],
        ..talon_store::EventFilter::default()
    };
    let created = g.running.store.after(None, &filter, 100).await.unwrap();
    // Announced once, on the session (not the run, which has ended).
    let announced = serde_json::to_value(&created).unwrap();
    insta::assert_json_snapshot!("range_announced", sized(redactor.value(&announced)));
    assert_eq!(created[0].data, *artifact);
    let download = t
        .call(&g, "artifacts.download", json!({"artifactId": id}))
        .await
        .unwrap();
    let url = format!("/v1/artifacts/{id}/content");
    pretty_assertions::assert_eq!(download, json!({"artifact": artifact, "url": url}));

    // The whole content: the run's events, in order.
    let whole = get(&g, &g.admin, &url, None).await;
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.headers()["content-type"], "application/json");
    assert_eq!(whole.headers()["accept-ranges"], "bytes");
    assert!(whole.headers()["etag"].to_str().unwrap().starts_with('"'));
    let bytes = whole.bytes().await.unwrap();
    assert_eq!(bytes.len() as u64, size);
    let trajectory: Value = serde_json::from_slice(&bytes).unwrap();
    insta::assert_json_snapshot!("range_trajectory", redactor.value(&trajectory));

    // Ranges.
    let first = get(&g, &g.admin, &url, Some("bytes=0-9")).await;
    assert_eq!(first.status(), 206);
    assert_eq!(
        first.headers()["content-range"].to_str().unwrap(),
        format!("bytes 0-9/{size}")
    );
    assert_eq!(first.bytes().await.unwrap(), bytes.slice(0..10));
    let last = get(&g, &g.admin, &url, Some("bytes=-5")).await;
    assert_eq!(last.status(), 206);
    assert_eq!(last.bytes().await.unwrap(), bytes.slice(bytes.len() - 5..));
    let middle = get(
        &g,
        &g.admin,
        &url,
        Some(&format!("bytes=10-{}", size + 100)),
    )
    .await;
    assert_eq!(middle.bytes().await.unwrap(), bytes.slice(10..));
    let outside = get(&g, &g.admin, &url, Some(&format!("bytes={size}-"))).await;
    assert_eq!(outside.status(), 416);
    assert_eq!(
        outside.headers()["content-range"].to_str().unwrap(),
        format!("bytes */{size}")
    );

    // Only with `artifacts.read`; an unknown one is not found.
    let now = g.running.store.now_ms();
    let reader = talon_gateway::tokens::create(
        &g.running.store,
        None,
        vec![Scope::ArtifactsRead],
        None,
        now,
    )
    .await
    .unwrap();
    let runner =
        talon_gateway::tokens::create(&g.running.store, None, vec![Scope::AgentRun], None, now)
            .await
            .unwrap();
    assert_eq!(get(&g, &reader.secret, &url, None).await.status(), 200);
    let refused = get(&g, &runner.secret, &url, None).await;
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    insta::assert_json_snapshot!("range_refused", redacted(&body));
    let missing = get(&g, &g.admin, "/v1/artifacts/art_nope/content", None).await;
    assert_eq!(missing.status(), 404);
    assert_eq!(get(&g, "not-a-token", &url, None).await.status(), 401);
}

#[tokio::test]
async fn expired_artifacts_are_purged_and_not_found() {
    let g = TestGateway::start_opts(Options {
        runs: talon_gateway::RunLimits {
            artifact_max_age: Some(Duration::from_millis(800)),
            ..talon_gateway::RunLimits::default()
        },
        ..Options::default()
    })
    .await;
    let result = run_to_end(&g, "hello").await;
    insta::assert_json_snapshot!("expired_result", sized(redacted(&result)));
    let id = result["artifacts"][0]["id"].clone();
    let t = Transport::Http;
    t.call(&g, "artifacts.get", json!({"artifactId": id}))
        .await
        .unwrap();
    let url = format!("/v1/artifacts/{}/content", id.as_str().unwrap());
    assert_eq!(get(&g, &g.admin, &url, None).await.status(), 200);
    // The gateway's clock moves past the 800 ms age (reads refuse an
    // expired artifact by its expiry time, whether or not it was purged).
    g.time.advance(Duration::from_millis(1500));
    let gone = t
        .call(&g, "artifacts.get", json!({"artifactId": id}))
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("expired_gone", redacted(&gone));
    assert_eq!(get(&g, &g.admin, &url, None).await.status(), 404);
    let listed = t
        .call(&g, "artifacts.list", json!({"runId": result["runId"]}))
        .await
        .unwrap();
    pretty_assertions::assert_eq!(listed, json!({"artifacts": []}));
}

#[tokio::test]
async fn a_trajectory_never_holds_a_key_the_gateway_knows() {
    const KEY: &str = "sk-talon-trajectory-5e2d9c";
    let g = TestGateway::start_opts(Options {
        script: Script {
            api_key: Some(KEY.into()),
            ..Script::texts(&[&format!("the key is {KEY}, said the model")])
        },
        config: json!({
            "models": {"providers": {
                "good": {"baseUrl": "http://unused", "apiKey": KEY, "models": [{"id": "m1"}]}
            }},
            "agents": {"defaults": {"model": {"primary": "good/m1"}}}
        }),
        ..Options::default()
    })
    .await;
    let result = run_to_end(&g, "leak it").await;
    insta::assert_json_snapshot!("key_result", sized(redacted(&result)));
    let url = format!(
        "/v1/artifacts/{}/content",
        result["artifacts"][0]["id"].as_str().unwrap()
    );
    let text = get(&g, &g.admin, &url, None).await.text().await.unwrap();
    assert!(!text.contains(KEY), "{text}");
    assert!(
        text.contains("the key is [redacted], said the model"),
        "{text}"
    );
}

#[tokio::test]
async fn writes_and_edits_leave_file_and_diff_artifacts() {
    use talon_mock_model::{Replay, ScriptedCall, Turn};
    let call = |name: &str, arguments: Value| Turn {
        tool_calls: vec![ScriptedCall {
            name: name.into(),
            arguments,
        }],
        ..Turn::default()
    };
    let g = TestGateway::start_opts(Options {
        script: Script {
            turns: vec![
                call(
                    "write",
                    json!({"path": "notes/a.md", "content": "one\ntwo\n"}),
                ),
                call(
                    "edit",
                    json!({"path": "notes/a.md", "old": "two", "new": "TWO"}),
                ),
                Turn {
                    text: Some("Edited.".into()),
                    ..Turn::default()
                },
            ],
            replay: Replay::PerRun,
            ..Script::default()
        },
        config: json!({"tools": {"approvals": "allow"}}),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let result = run_to_end(&g, "write then edit").await;
    let t = Transport::Http;
    let listed = t
        .call(&g, "artifacts.list", json!({"runId": result["runId"]}))
        .await
        .unwrap();
    let mut redactor = Redactor::new();
    insta::assert_json_snapshot!("edits_result", sized(redactor.value(&result)));
    let content = |title: &'static str, kind: &'static str| {
        let listed = listed.clone();
        let g = &g;
        async move {
            let found: Vec<Value> = listed["artifacts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|a| a["title"] == title && a["type"] == kind)
                .cloned()
                .collect();
            let url = format!("/v1/artifacts/{}/content", found[0]["id"].as_str().unwrap());
            let response = get(g, &g.admin, &url, None).await;
            let mime = response.headers()["content-type"]
                .to_str()
                .unwrap()
                .to_owned();
            (mime, response.text().await.unwrap())
        }
    };
    assert_eq!(
        content("notes/a.md (write)", "diff").await,
        (
            "text/x-diff".to_owned(),
            "--- /dev/null\n+++ b/notes/a.md\n@@ -0,0 +1,2 @@\n+one\n+two\n".to_owned()
        )
    );
    assert_eq!(
        content("notes/a.md (edit)", "diff").await.1,
        "--- a/notes/a.md\n+++ b/notes/a.md\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"
    );
    // The run's own log announces them before its end.
    let events = t
        .call(&g, "runs.events", json!({"runId": result["runId"]}))
        .await
        .unwrap();
    insta::assert_json_snapshot!(
        "edits_events",
        sized(redactor.transcript(events["events"].as_array().unwrap()))
    );
    // The file is one artifact: created by the write, replaced by the
    // edit (artifact.updated in the events above), holding the last.
    assert_eq!(
        content("notes/a.md", "file").await,
        ("text/markdown".to_owned(), "one\nTWO\n".to_owned())
    );
    // Two diffs, the file (its mime type by its extension), the
    // trajectory.
    insta::assert_json_snapshot!("edits_listed", listing(&mut redactor, &listed));
}

#[tokio::test]
async fn shell_output_over_the_cap_is_kept_whole_as_a_redacted_log() {
    use talon_mock_model::{Replay, ScriptedCall, Turn};
    const KEY: &str = "sk-talon-shell-log-77aa1c";
    // 20,000 numbered lines (~130 KB, over the 64 KiB a result holds),
    // the key in the middle of them, on stdout and stderr.
    let command = format!("seq 1 10000; echo 'key {KEY} here' >&2; seq 10001 20000");
    let g = TestGateway::start_opts(Options {
        script: Script {
            api_key: Some(KEY.into()),
            turns: vec![
                Turn {
                    tool_calls: vec![ScriptedCall {
                        name: "exec".into(),
                        arguments: json!({"command": command}),
                    }],
                    ..Turn::default()
                },
                Turn {
                    text: Some("Ran it.".into()),
                    ..Turn::default()
                },
            ],
            replay: Replay::PerRun,
            ..Script::default()
        },
        config: json!({
            "tools": {"approvals": "allow"},
            "models": {"providers": {
                "good": {"baseUrl": "http://unused", "apiKey": KEY, "models": [{"id": "m1"}]}
            }},
            "agents": {"defaults": {"model": {"primary": "good/m1"}}}
        }),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let result = run_to_end(&g, "run it").await;
    let listed = Transport::Http
        .call(&g, "artifacts.list", json!({"runId": result["runId"]}))
        .await
        .unwrap();
    let mut redactor = Redactor::new();
    insta::assert_json_snapshot!("shell_log_result", sized(redactor.value(&result)));
    // One log, its title showing the command, redacted too.
    insta::assert_json_snapshot!("shell_log_listed", listing(&mut redactor, &listed));
    let logs: Vec<&Value> = listed["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["type"] == "log")
        .collect();
    let url = format!("/v1/artifacts/{}/content", logs[0]["id"].as_str().unwrap());
    let text = get(&g, &g.admin, &url, None).await.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 20_001);
    // stdout and stderr are two pipes: where the stderr line lands among
    // stdout's depends on which the reader drains first.
    assert!(lines.contains(&"key [redacted] here"));
    let stdout: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| *l != "key [redacted] here")
        .collect();
    let expected: Vec<String> = (1..=20_000).map(|n| n.to_string()).collect();
    assert_eq!(stdout, expected);
    assert!(!text.contains(KEY));
    // The model's result is cut and names the log.
    let requests = g.mock.requests();
    let tool = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let told: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    // Its stdout: the first 64 KiB of the lines. Its stderr is not this
    // test's concern.
    let all: String = (1..=20_000).map(|n| format!("{n}\n")).collect();
    pretty_assertions::assert_eq!(
        told,
        json!({
            "exitCode": 0,
            "logArtifact": logs[0]["id"],
            "stderr": told["stderr"],
            "stdout": all[..64 * 1024],
            "truncated": true,
        })
    );
}
