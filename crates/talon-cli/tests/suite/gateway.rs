//! `talon gateway`: the first start prints the admin token once and
//! serves with it; SIGTERM stops the gateway cleanly; runs survive kills
//! and drains; no secret reaches an event or a log line.

use std::io::{BufRead, BufReader, Read};
use std::process::Command;

use talon_testing::wait;

use talon_testing::redact::Redactor;

use super::{finish, sized, spawn_talon};

pub(super) fn talon(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    finish(spawn_talon(home, args, &[]))
}

/// One call over plain HTTP/1.1 (no client library in this crate's tests).
pub(super) fn post(addr: &str, token: &str, method: &str, body: &str) -> String {
    use std::io::Write as _;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/{method} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn the_gateway_serves_with_its_first_admin_token_and_stops_on_sigterm() {
    let home = tempfile::tempdir().unwrap();
    let mut child = spawn_talon(home.path(), &["gateway", "--listen", "127.0.0.1:0"], &[]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut addr = None;
    let mut line = String::new();
    while addr.is_none() {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the gateway exited"
        );
        if let Some(rest) = line
            .trim()
            .strip_prefix("talon gateway: listening on http://")
        {
            addr = Some(rest.to_owned());
        }
    }
    let addr = addr.unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut admin = String::new();
    stdout.read_line(&mut admin).unwrap();
    let admin = admin.trim().to_owned();
    assert!(admin.starts_with("talon_"), "{admin}");
    let stored = std::fs::read_to_string(home.path().join("state/admin.token")).unwrap();
    assert_eq!(stored.trim(), admin);
    let response = post(&addr, &admin, "agents.list", "{}");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert_eq!(
        body(&response),
        serde_json::json!({"agents": [{"id": "main", "description": "The default agent", "source": "config"}]})
    );
    let refused = post(&addr, "talon_wrong", "agents.list", "{}");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    // A token made by the CLI works against the running gateway.
    let created = talon(
        home.path(),
        &["token", "create", "--scope", "agent.read", "--name", "ci"],
    );
    assert!(created.status.success(), "{created:?}");
    let secret = String::from_utf8(created.stdout).unwrap();
    assert_eq!(secret.lines().count(), 1);
    assert!(post(&addr, secret.trim(), "agents.list", "{}").starts_with("HTTP/1.1 200"));
    let forbidden = post(&addr, secret.trim(), "sessions.list", "{}");
    assert!(forbidden.starts_with("HTTP/1.1 403"), "{forbidden}");
    // A page of another origin is refused, twice: the log says once, at
    // warn, which key admits it.
    for _ in 0..2 {
        let page = {
            use std::io::Write as _;
            let mut stream = std::net::TcpStream::connect(&addr).unwrap();
            write!(
                stream,
                "POST /v1/agents.list HTTP/1.1\r\nHost: {addr}\r\nOrigin: https://app.example.com\r\n\
                 Authorization: Bearer {admin}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
            )
            .unwrap();
            let mut response = String::new();
            stream.read_to_string(&mut response).unwrap();
            response
        };
        assert!(page.starts_with("HTTP/1.1 403"), "{page}");
    }
    // SIGTERM: a clean stop.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(
        !rest.contains(&admin) && !rest.contains(secret.trim()),
        "a secret was logged: {rest}"
    );
    // No provider and no mock: the start says every run will fail.
    assert!(
        rest.lines().next().is_some_and(|l| l.starts_with(
            "talon gateway: no model is configured (models.providers is empty), so every run will fail; \
             add a provider (docs/configuration.md)"
        )),
        "{rest}"
    );
    let warned: Vec<&str> = rest
        .lines()
        .filter(|l| l.contains("gateway.security.allowedOrigins"))
        .collect();
    assert!(
        warned.len() == 1 && warned[0].contains("WARN") && warned[0].contains("app.example.com"),
        "{rest}"
    );
}

/// Starts `talon gateway` on a free port; returns it, its address and its
/// stderr (the admin token, on a first start, is on its stdout).
/// A gateway process, killed when dropped: a test that fails half-way
/// leaves no gateway running (and spinning cells) behind it.
pub(super) struct Gateway(pub(super) std::process::Child);

impl std::ops::Deref for Gateway {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Gateway {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

pub(super) fn start_gateway(
    home: &std::path::Path,
    extra: &[&str],
) -> (Gateway, String, BufReader<std::process::ChildStderr>) {
    start_gateway_with(home, extra, &[])
}

/// [`start_gateway`] with environment variables.
#[expect(
    clippy::zombie_processes,
    reason = "the child is handed to the caller, who waits for it"
)]
pub(super) fn start_gateway_with(
    home: &std::path::Path,
    extra: &[&str],
    env: &[(&str, &std::path::Path)],
) -> (Gateway, String, BufReader<std::process::ChildStderr>) {
    let mut args = vec!["gateway", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut child = spawn_talon(home, &args, env);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the gateway exited"
        );
        if let Some(rest) = line
            .trim()
            .strip_prefix("talon gateway: listening on http://")
        {
            return (Gateway(child), rest.to_owned(), stderr);
        }
    }
}

/// The JSON body of an HTTP response.
pub(super) fn body(response: &str) -> serde_json::Value {
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

/// Opens a run's SSE stream and reads it until an event of type `until`;
/// returns the ids seen.
pub(super) fn stream_until(addr: &str, token: &str, run_id: &str, until: &str) -> Vec<String> {
    use std::io::Write as _;
    let stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    write!(
        writer,
        "GET /v1/runs/{run_id}/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut ids = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        let line = line.trim();
        if let Some(id) = line.strip_prefix("id: ") {
            ids.push(id.to_owned());
        }
        if line == format!("event: {until}") {
            return ids;
        }
    }
}

/// The events of a run, through `runs.events`.
fn run_events(addr: &str, token: &str, run_id: &str) -> Vec<serde_json::Value> {
    let page = body(&post(
        addr,
        token,
        "runs.events",
        &format!(r#"{{"runId": "{run_id}"}}"#),
    ));
    assert_eq!(page["done"], true, "{page}");
    page["events"].as_array().unwrap().clone()
}

/// Waits until the gateway's store holds a checkpoint of run `run_id`
/// (read from its database beside it, read-only).
fn checkpointed(home: &std::path::Path, run_id: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(home.join("state/talon.db"))
            .read_only(true);
        let db = sqlx::SqlitePool::connect_with(options).await.unwrap();
        wait::until_async(
            &format!("run {run_id}'s checkpoint to be stored"),
            wait::DEADLINE,
            async || {
                sqlx::query_scalar::<_, bool>(
                    "SELECT checkpoint IS NOT NULL FROM runs WHERE id = $1",
                )
                .bind(run_id)
                .fetch_one(&db)
                .await
                .unwrap()
            },
        )
        .await;
        db.close().await;
    });
}

#[test]
fn a_gateway_killed_mid_run_resumes_what_it_can_and_ends_the_rest() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("talon.json5");
    std::fs::write(
        &config,
        r#"{tools: {approvals: "allow", codeMode: {enabled: true}}}"#,
    )
    .unwrap();
    // The first life: run B's cell calls `write` (not replay-safe), then
    // spins (its exec in flight at the kill); run A completes a turn (a
    // cell that suspends itself), then its model hangs.
    let first_script = home.path().join("first.json");
    std::fs::write(
        &first_script,
        r#"{"turns": [
            {"toolCalls": [{"name": "exec", "arguments": {"code": "try { await tools.call('openclaw:core:write', {path: 'spun.txt', content: 'x'}); } catch (e) {} while (true) {}"}}]},
            {"toolCalls": [{"name": "exec", "arguments": {"code": "text('before'); await yield_control('pause'); return 6 * 7;"}}]},
            {"delayMs": 60000, "text": "never"}
        ]}"#,
    )
    .unwrap();
    let second_script = home.path().join("second.json");
    std::fs::write(
        &second_script,
        r#"{"turns": [
            {"toolCalls": [{"name": "wait", "arguments": {"runId": "$lastTool:/runId"}}]},
            {"text": "resumed: the cell gave 42"},
            {"text": "after the restart"}
        ]}"#,
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    let (mut first, addr, _) = start_gateway(
        home.path(),
        &[
            "--config",
            config_arg,
            "--mock-script",
            first_script.to_str().unwrap(),
        ],
    );
    let mut admin = String::new();
    BufReader::new(first.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let admin = admin.trim().to_owned();
    let create = |input: &str, key: &str| {
        body(&post(
            &addr,
            &admin,
            "runs.create",
            &format!(r#"{{"input": "{input}", "sessionKey": "{key}"}}"#),
        ))["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let spinning = create("spin", "tool");
    stream_until(&addr, &admin, &spinning, "tool.call.started");
    let hanging = create("compute, then hang", "crash");
    let queued = create("then this", "crash");
    // A's cell suspended: its turn is complete (and checkpointed) before
    // the model's next request hangs.
    let seen = stream_until(&addr, &admin, &hanging, "tool.call.completed");
    // (The turn's checkpoint is stored right after that event commits.)
    checkpointed(home.path(), &hanging);
    // SIGKILL mid-run.
    first.kill().unwrap();
    first.wait().unwrap();
    let (mut second, addr, mut stderr) = start_gateway(
        home.path(),
        &[
            "--config",
            config_arg,
            "--mock-script",
            second_script.to_str().unwrap(),
        ],
    );
    let wait = |run_id: &str| {
        body(&post(
            &addr,
            &admin,
            "runs.wait",
            &format!(r#"{{"runId": "{run_id}", "timeoutMs": 30000}}"#),
        ))
    };
    // A resumed from its completed turn: the model was asked again and
    // resumed the suspended cell with `wait` (from the store, after the
    // restart), the session holds the whole conversation once, and every
    // event a subscriber had seen is still first in its log.
    // (A message's id holds its run's id.)
    let mut r = Redactor::new().with(format!("msg_{hanging}"), "msg_<run_1>");
    let result = wait(&hanging);
    insta::assert_json_snapshot!("killed_resumed_result", sized(r.value(&result)));
    let events = run_events(&addr, &admin, &hanging);
    let ids: Vec<&str> = events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids[..seen.len()],
        seen.iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
    // Queued again for the runtime, started after turn 1; the turn before
    // the restart counts in run.completed's turns (3).
    insta::assert_json_snapshot!("killed_resumed_events", super::events(&mut r, &events));
    let session = body(&post(
        &addr,
        &admin,
        "sessions.resolve",
        r#"{"key": "crash"}"#,
    ));
    let messages = body(&post(
        &addr,
        &admin,
        "sessions.messages",
        &format!(r#"{{"sessionId": "{}"}}"#, session["id"].as_str().unwrap()),
    ));
    // Each message once, the cell's answer as it was before the kill.
    // (A tool message's text is the cell's JSON answer, shown parsed.)
    let ours: Vec<serde_json::Value> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["runId"] == hanging.as_str())
        .map(|m| {
            let mut m = m.clone();
            if m["role"] == "tool" {
                m["text"] = serde_json::from_str(m["text"].as_str().unwrap()).unwrap();
            }
            m
        })
        .collect();
    insta::assert_json_snapshot!("killed_messages", r.value(&serde_json::json!(ours)));
    // B made a call that is not replay-safe after its last checkpoint:
    // it ended failed, saying why, with its terminal event.
    let run = body(&post(
        &addr,
        &admin,
        "runs.get",
        &format!(r#"{{"runId": "{spinning}"}}"#),
    ));
    insta::assert_json_snapshot!("killed_interrupted_run", sized(r.value(&run)));
    let events = run_events(&addr, &admin, &spinning);
    insta::assert_json_snapshot!(
        "killed_interrupted_runs_last_event",
        super::events(&mut r, &events[events.len() - 1..])
    );
    // The run queued behind A runs after it.
    insta::assert_json_snapshot!("killed_queued_result", sized(r.value(&wait(&queued))));
    Command::new("kill")
        .args(["-TERM", &second.id().to_string()])
        .status()
        .unwrap();
    assert!(second.wait().unwrap().success());
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    assert!(!log.contains(&admin), "the admin token was logged: {log}");
}

#[derive(Clone, Copy)]
enum Stop {
    /// SIGKILL: the node dies with the run waiting.
    Kill,
    /// SIGTERM: a drain, which leaves the waiting run to the next start
    /// (at once, no grace spent on it) and exits cleanly.
    Term,
}

#[test]
fn an_approval_survives_a_sigkill_and_answering_it_finishes_the_run() {
    approval_survives(Stop::Kill);
}

#[test]
fn an_approval_survives_a_sigterm_drain_and_answering_it_finishes_the_run() {
    approval_survives(Stop::Term);
}

/// A run waits on an approval; the gateway stops (`stop`) and starts
/// again; the same approval is pending, and answering it finishes the run
/// inside its turn, the call made once.
fn approval_survives(stop: Stop) {
    // Each way of stopping has its own snapshots.
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_suffix(match stop {
        Stop::Kill => "kill",
        Stop::Term => "term",
    });
    let _snapshots = settings.bind_to_scope();
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let config = home.path().join("talon.json5");
    std::fs::write(
        &config,
        format!(
            r#"{{agents: {{defaults: {{workspace: "{}"}}}}}}"#,
            workspace.display()
        ),
    )
    .unwrap();
    // Each run writes a file (which needs approval), then answers; both
    // lives serve the same script, by the run's turn.
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"replay": "perRun", "turns": [
            {"toolCalls": [{"name": "write", "arguments": {"path": "kept.txt", "content": "approved after the restart"}}]},
            {"text": "written"}
        ]}"#,
    )
    .unwrap();
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--mock-script",
        script.to_str().unwrap(),
    ];
    let (mut first, addr, _) = start_gateway(home.path(), &args);
    let mut admin = String::new();
    BufReader::new(first.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let admin = admin.trim().to_owned();
    let run = body(&post(
        &addr,
        &admin,
        "runs.create",
        r#"{"input": "keep this", "sessionKey": "durable"}"#,
    ));
    let run_id = run["id"].as_str().unwrap().to_owned();
    let seen = stream_until(&addr, &admin, &run_id, "approval.requested");
    let list = |addr: &str| {
        body(&post(
            addr,
            &admin,
            "approvals.list",
            &format!(r#"{{"runId": "{run_id}"}}"#),
        ))["approvals"]
            .as_array()
            .unwrap()
            .clone()
    };
    let before = list(&addr);
    let mut r = Redactor::new();
    insta::assert_json_snapshot!("approval_pending", r.value(&serde_json::json!(before)));
    match stop {
        Stop::Kill => {
            first.kill().unwrap();
            first.wait().unwrap();
        }
        Stop::Term => {
            Command::new("kill")
                .args(["-TERM", &first.id().to_string()])
                .status()
                .unwrap();
            assert!(first.wait().unwrap().success());
        }
    }
    assert!(!workspace.join("kept.txt").exists());

    let (mut second, addr, _) = start_gateway(home.path(), &args);
    // The same approval, still pending, and the run waits on it again.
    assert_eq!(list(&addr), before);
    let answered = body(&post(
        &addr,
        &admin,
        "approvals.respond",
        &format!(
            r#"{{"approvalId": "{}", "decision": "approve_once"}}"#,
            before[0]["id"].as_str().unwrap()
        ),
    ));
    insta::assert_json_snapshot!("approval_answered", r.value(&answered));
    let result = body(&post(
        &addr,
        &admin,
        "runs.wait",
        &format!(r#"{{"runId": "{run_id}", "timeoutMs": 30000}}"#),
    ));
    insta::assert_json_snapshot!("approval_result", sized(r.value(&result)));
    assert_eq!(
        std::fs::read_to_string(workspace.join("kept.txt")).unwrap(),
        "approved after the restart"
    );
    // Every event seen before the stop is still first in the log; the
    // run resumed inside its turn (its model was not asked the turn
    // again) and made the call once.
    let events = run_events(&addr, &admin, &run_id);
    let ids: Vec<&str> = events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids[..seen.len()],
        seen.iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
    insta::assert_json_snapshot!("approval_events", super::events(&mut r, &events));
    Command::new("kill")
        .args(["-TERM", &second.id().to_string()])
        .status()
        .unwrap();
    assert!(second.wait().unwrap().success());
}

#[test]
fn a_question_survives_a_sigkill_and_its_answer_reaches_the_model() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"replay": "perRun", "turns": [
            {"toolCalls": [{"name": "ask_user", "arguments": {"prompt": "Which region?", "choices": ["eu", "us"]}}]},
            {"text": "deploying"}
        ]}"#,
    )
    .unwrap();
    let args = ["--mock-script", script.to_str().unwrap()];
    let (mut first, addr, _) = start_gateway(home.path(), &args);
    let mut admin = String::new();
    BufReader::new(first.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let admin = admin.trim().to_owned();
    let run = body(&post(
        &addr,
        &admin,
        "runs.create",
        r#"{"input": "deploy", "sessionKey": "asked"}"#,
    ));
    let run_id = run["id"].as_str().unwrap().to_owned();
    stream_until(&addr, &admin, &run_id, "question.requested");
    let list = |addr: &str| {
        body(&post(
            addr,
            &admin,
            "questions.list",
            &format!(r#"{{"runId": "{run_id}"}}"#),
        ))["questions"]
            .as_array()
            .unwrap()
            .clone()
    };
    let before = list(&addr);
    let mut r = Redactor::new();
    insta::assert_json_snapshot!("question_pending", r.value(&serde_json::json!(before)));
    first.kill().unwrap();
    first.wait().unwrap();

    let (mut second, addr, _) = start_gateway(home.path(), &args);
    assert_eq!(list(&addr), before);
    let id = before[0]["id"].as_str().unwrap();
    let answered = body(&post(
        &addr,
        &admin,
        "questions.respond",
        &format!(r#"{{"questionId": "{id}", "answer": "eu"}}"#),
    ));
    insta::assert_json_snapshot!("question_answered", r.value(&answered));
    let result = body(&post(
        &addr,
        &admin,
        "runs.wait",
        &format!(r#"{{"runId": "{run_id}", "timeoutMs": 30000}}"#),
    ));
    insta::assert_json_snapshot!("question_result", sized(r.value(&result)));
    let events = run_events(&addr, &admin, &run_id);
    insta::assert_json_snapshot!("question_events", super::events(&mut r, &events));
    Command::new("kill")
        .args(["-TERM", &second.id().to_string()])
        .status()
        .unwrap();
    assert!(second.wait().unwrap().success());
}

#[test]
fn no_secret_reaches_an_event_a_result_an_error_or_a_log_line() {
    const GOOD: &str = "sk-talon-good-5f1e0c9a7b3d";
    const BAD: &str = "sk-talon-bad-8a2b4c6d0e1f";
    const BOUND: &str = "env-secret-3c7d9e1f5a2b";
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("talon.json5");
    std::fs::write(
        &config,
        format!(
            r#"{{
              models: {{ providers: {{
                good: {{ baseUrl: "http://unused", apiKey: "{GOOD}", models: [{{ id: "mock-model" }}] }},
                bad: {{ baseUrl: "http://unused", apiKey: "{BAD}", models: [{{ id: "mock-model" }}] }},
              }} }},
              agents: {{
                defaults: {{ model: {{ primary: "good/mock-model" }} }},
                list: [{{ id: "main" }}, {{ id: "wrongkey", model: "bad/mock-model" }}],
              }},
              tools: {{ approvals: "allow" }},
              gateway: {{ environments: {{
                sourceRoots: ["{roots}"],
                secrets: {{ BOUND: {{ env: "TALON_TEST_BOUND_SECRET" }} }},
              }} }},
            }}"#,
            roots = home.path().join("sources").display()
        ),
    )
    .unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        format!(
            r#"{{"apiKey": "{GOOD}", "replay": "perRun", "turns": [
                {{"toolCalls": [{{"name": "list", "arguments": {{"path": "."}}}}, {{"name": "exec", "arguments": {{"command": "echo \"bound=$BOUND\""}}}}]}},
                {{"text": "listed"}}
            ]}}"#
        ),
    )
    .unwrap();
    let debug = std::path::Path::new("debug");
    let payload = std::path::Path::new("full-redacted");
    let (mut gateway, addr, mut stderr) = start_gateway_with(
        home.path(),
        &[
            "--config",
            config.to_str().unwrap(),
            "--mock-script",
            script.to_str().unwrap(),
        ],
        &[
            ("TALON_LOG", debug),
            ("TALON_DEBUG_MODEL_PAYLOAD", payload),
            // OpenClaw's spellings of the other switches.
            ("OPENCLAW_DEBUG_MODEL_TRANSPORT", std::path::Path::new("1")),
            ("OPENCLAW_DEBUG_SSE", std::path::Path::new("peek")),
            ("TALON_TEST_BOUND_SECRET", std::path::Path::new(BOUND)),
        ],
    );
    let mut admin = String::new();
    BufReader::new(gateway.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let admin = admin.trim().to_owned();
    let created = talon(
        home.path(),
        &["token", "create", "--scope", "agent.run", "--name", "app"],
    );
    assert!(created.status.success(), "{created:?}");
    let app = String::from_utf8(created.stdout).unwrap().trim().to_owned();
    // Everything the gateway answers, collected.
    let mut answers = String::new();
    let mut call = |token: &str, method: &str, params: &str| {
        let response = post(&addr, token, method, params);
        answers.push_str(&response);
        body(&response)
    };
    let good = call(&admin, "runs.create", r#"{"input": "list the workspace"}"#);
    // A run in an environment whose secret its command prints.
    let source = home.path().join("sources/app");
    std::fs::create_dir_all(&source).unwrap();
    let environment = call(
        &admin,
        "environments.create",
        &format!(
            r#"{{"provider": "local", "settings": {{"source": {{"path": "{}"}}, "network": "host", "secrets": ["BOUND"]}}}}"#,
            source.display()
        ),
    );
    let mut r = Redactor::new().with(home.path().to_str().unwrap(), "<home>");
    insta::assert_json_snapshot!("secrets_environment", r.value(&environment));
    let bound = call(
        &admin,
        "runs.create",
        &format!(
            r#"{{"input": "print it", "sessionKey": "bound", "environmentId": "{}"}}"#,
            environment["id"].as_str().unwrap()
        ),
    );
    let bad = call(
        &admin,
        "runs.create",
        r#"{"input": "list it", "agentId": "wrongkey", "sessionKey": "other"}"#,
    );
    let mut results = Vec::new();
    for run in [&good, &bad, &bound] {
        let id = run["id"].as_str().unwrap();
        results.push(call(
            &admin,
            "runs.wait",
            &format!(r#"{{"runId": "{id}", "timeoutMs": 30000}}"#),
        ));
        call(&admin, "runs.events", &format!(r#"{{"runId": "{id}"}}"#));
        call(&admin, "runs.get", &format!(r#"{{"runId": "{id}"}}"#));
    }
    // The good run completed, the provider refused the wrong key (401),
    // the bound run completed.
    insta::assert_json_snapshot!(
        "secrets_results",
        sized(r.value(&serde_json::json!(results)))
    );
    call(&admin, "models.list", "{}");
    call(&admin, "models.status", "{}");
    call(&admin, "sessions.list", "{}");
    call(&app, "sessions.list", "{}");
    call(&format!("{app}x"), "agents.list", "{}");
    call(&admin, "tools.list", "{}");
    let events = stream_until(&addr, &admin, good["id"].as_str().unwrap(), "run.completed");
    assert!(!events.is_empty());
    Command::new("kill")
        .args(["-TERM", &gateway.id().to_string()])
        .status()
        .unwrap();
    assert!(gateway.wait().unwrap().success());
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    let listed = talon(home.path(), &["token", "list"]);
    let listed = format!(
        "{}{}",
        String::from_utf8_lossy(&listed.stdout),
        String::from_utf8_lossy(&listed.stderr)
    );
    // The scan means something: the log has the model request (redacted)
    // and debug lines, the answers have the runs' events and errors.
    assert!(log.contains("model request (redacted)"), "{log}");
    // The transport's lines (the refused key's 401 among them) and the
    // first stream events, redacted.
    assert!(
        log.contains("talon::model_transport") && log.contains("status=401"),
        "{log}"
    );
    assert!(log.contains("stream event (redacted)"), "{log}");
    assert!(log.lines().count() > 20, "{log}");
    assert!(answers.contains("tool.call.completed") && answers.contains("forbidden"));
    assert!(
        answers.contains("bound=[redacted]"),
        "the bound secret reached the command"
    );
    for secret in [GOOD, BAD, BOUND, admin.as_str(), app.as_str()] {
        for (what, text) in [
            ("an answer", &answers),
            ("the log", &log),
            ("token list", &listed),
        ] {
            assert!(!text.contains(secret), "{secret:.12}… is in {what}");
        }
    }
}

#[test]
fn the_gateway_takes_its_limits_from_the_config() {
    use std::io::Write as _;
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("talon.json5");
    // OpenClaw's own gateway keys load unchanged beside Talon's limits.
    std::fs::write(
        &config,
        "{gateway: {port: 18789, limits: {headerReadTimeoutMs: 300, burst: 2, callsPerSecond: 0.5}}}",
    )
    .unwrap();
    let (mut gateway, addr, _) =
        start_gateway(home.path(), &["--config", config.to_str().unwrap()]);
    let mut admin = String::new();
    BufReader::new(gateway.stdout.take().unwrap())
        .read_line(&mut admin)
        .unwrap();
    let admin = admin.trim().to_owned();
    // A request head that never ends is cut off after 300 ms.
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        .unwrap();
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    slow.read_to_end(&mut answer).unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // A burst of two, then `rate_limited`.
    let statuses: Vec<String> = (0..3)
        .map(|_| post(&addr, &admin, "agents.list", "{}")[..12].to_owned())
        .collect();
    assert_eq!(statuses, ["HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 429"]);
    Command::new("kill")
        .args(["-TERM", &gateway.id().to_string()])
        .status()
        .unwrap();
    assert!(gateway.wait().unwrap().success());
    // A bad limit is a usage error naming its key.
    std::fs::write(&config, "{gateway: {limits: {maxStreams: 0}}}").unwrap();
    let out = talon(
        home.path(),
        &["gateway", "--config", config.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("gateway.limits.maxStreams"),
        "{out:?}"
    );
}
