//! Background shell processes through the gateway: a model's `exec` with
//! `background` starts a process whose task (`kind: "process"`) follows
//! it to its end and posts its output to the session; `tasks.cancel`, a
//! session's deletion and its TTL kill it; a model starting 1,000 is
//! bounded. Restarts and other nodes: `process_nodes`.
//!
//! The mock model cannot name a process id it has not seen, so the
//! `process` tool's id-taking actions are called here through
//! `tools.invoke` in the process's session, as its run would call them.

use std::time::Duration;

use serde_json::{Value, json};
use talon_mock_model::{Replay, Script, ScriptedCall, Turn};
use talon_testing::wait;

use super::tasks::{the_notice, tool_messages};
use super::ws::Transport;
use super::{Options, TestGateway, tool_turn};

const KEY: &str = "sk-talon-background-91c3e2";

pub(super) async fn call(g: &TestGateway, method: &str, params: Value) -> Value {
    Transport::Http.call(g, method, params).await.unwrap()
}

/// A gateway whose every run takes `turns`, then says "Started.", with
/// `config` merged in; approvals allowed, and a provider whose key is a
/// secret to redact ([`KEY`]).
pub(super) async fn gateway(turns: Vec<Turn>, config: Value) -> TestGateway {
    let mut turns = turns;
    turns.push(Turn {
        text: Some("Started.".into()),
        ..Turn::default()
    });
    let mut merged = json!({
        "tools": {"approvals": "allow", "exec": {}},
        "models": {"providers": {
            "good": {"baseUrl": "http://unused", "apiKey": KEY, "models": [{"id": "m1"}]}
        }},
        "agents": {"defaults": {"model": {"primary": "good/m1"}}}
    });
    if let (Some(into), Some(from)) = (merged.as_object_mut(), config.as_object()) {
        for (k, v) in from {
            into.insert(k.clone(), v.clone());
        }
    }
    let g = TestGateway::start_opts(Options {
        script: Script {
            api_key: Some(KEY.into()),
            turns,
            replay: Replay::PerRun,
            ..Script::default()
        },
        config: merged,
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    g
}

pub(super) fn background(command: &str) -> Turn {
    tool_turn("exec", json!({"command": command, "background": true}))
}

/// Runs "go" to its end: its result.
pub(super) async fn run(g: &TestGateway) -> Value {
    let created = call(g, "runs.create", json!({"input": "go"})).await;
    call(
        g,
        "runs.wait",
        json!({"runId": created["runId"], "timeoutMs": 60_000}),
    )
    .await
}

/// The process tasks of `run`.
pub(super) async fn tasks_of(g: &TestGateway, run: &Value) -> Vec<Value> {
    let listed = call(
        g,
        "tasks.list",
        json!({"runId": run, "kind": "process", "limit": 100}),
    )
    .await;
    listed["tasks"].as_array().unwrap().clone()
}

/// Task `id` once it has ended and its message settled.
pub(super) async fn settled(g: &TestGateway, id: &Value) -> Value {
    wait::until_async("the task to end and settle", wait::DEADLINE, async || {
        let task = call(g, "tasks.get", json!({"taskId": id})).await;
        (task["deliveryStatus"] != "pending" && task["status"] != "running").then_some(task)
    })
    .await
}

/// A gateway (`config` merged in) whose run started one background
/// `sleep` of a fresh [`marker`]: the marker, the gateway, the run's result
/// and the process's task.
async fn one_sleeping(config: Value) -> (String, TestGateway, Value, Value) {
    let m = marker();
    let g = gateway(vec![background(&format!("sleep {m}"))], config).await;
    let result = run(&g).await;
    let task = tasks_of(&g, &result["runId"]).await[0].clone();
    (m, g, result, task)
}

/// Deletes the session of `result`'s run and waits for every `sleep {m}`
/// process to be gone.
async fn delete_its_session(g: &TestGateway, result: &Value, m: &str) {
    call(
        g,
        "sessions.delete",
        json!({"sessionId": result["sessionId"]}),
    )
    .await;
    all_gone(&format!("sleep {m}")).await;
}

/// A sleep length no other command uses, so that its processes are found
/// on the host by their command line.
pub(super) fn marker() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "700.{}{}",
        std::process::id() % 10_000,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// How many live (not zombie) host processes' command lines hold `needle`.
pub(super) fn live(needle: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let running = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            });
            running
                && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
        })
        .count()
}

pub(super) async fn all_gone(needle: &str) {
    wait::until_async(
        &format!("every `{needle}` process to be gone"),
        wait::DEADLINE,
        async || live(needle) == 0,
    )
    .await;
}

#[tokio::test]
async fn a_background_command_is_a_process_task_that_ends_with_it_and_posts_its_output() {
    let command = format!("echo key {KEY}; sleep 0.5; echo done");
    let g = gateway(
        vec![
            background(&command),
            tool_turn("process", json!({"action": "list"})),
        ],
        json!({}),
    )
    .await;
    let result = run(&g).await;
    assert_eq!(result["status"], "completed", "{result}");
    let tasks = tasks_of(&g, &result["runId"]).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = settled(&g, &tasks[0]["id"]).await;
    let redacted = "echo key [redacted]; sleep 0.5; echo done";
    assert_eq!(
        (
            &task["kind"],
            &task["status"],
            &task["exitCode"],
            &task["command"],
            &task["label"],
            &task["result"],
            &task["sessionId"],
            &task["notifyPolicy"],
            &task["deliveryStatus"],
        ),
        (
            &json!("process"),
            &json!("succeeded"),
            &json!(0),
            &json!(redacted),
            &json!(format!("exec {}", &redacted[..60.min(redacted.len())])),
            &json!("key [redacted]\ndone\n"),
            &result["sessionId"],
            &json!("done_only"),
            &json!("delivered"),
        ),
        "{task}"
    );
    // The model was answered at once, with the task's id under both names.
    let told = tool_messages(&g);
    let started: Value = serde_json::from_str(
        told.iter()
            .find(|t| t.contains("\"running\""))
            .expect("exec's answer"),
    )
    .unwrap();
    assert_eq!(
        (
            &started["status"],
            &started["sessionId"],
            &started["taskId"]
        ),
        (&json!("running"), &task["id"], &task["id"]),
        "{started}"
    );
    // `process list` showed it.
    assert!(
        told.iter()
            .any(|t| t.contains("\"processes\"") && t.contains(task["id"].as_str().unwrap())),
        "{told:#?}"
    );
    // Its end was posted to the session, once, redacted.
    assert_eq!(
        the_notice(&g, &result["sessionId"]).await,
        json!(format!(
            "Background task done: {} (task {}).\n\nkey [redacted]\ndone\n",
            task["label"].as_str().unwrap(),
            task["id"].as_str().unwrap()
        ))
    );
    // Every change was a `task.updated`.
    let events = call(&g, "tasks.events", json!({"taskId": task["id"]})).await;
    let statuses: Vec<&Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "task.updated")
        .map(|e| &e["data"]["status"])
        .collect();
    assert_eq!(statuses.first(), Some(&&json!("running")), "{events}");
    assert!(statuses.contains(&&json!("succeeded")), "{events}");
}

#[tokio::test]
async fn tasks_cancel_kills_a_process_and_cancelling_it_again_is_a_conflict() {
    let (m, g, _, task) = one_sleeping(json!({})).await;
    assert_eq!(task["status"], "running", "{task}");
    assert!(live(&format!("sleep {m}")) > 0);
    let cancelled = call(&g, "tasks.cancel", json!({"taskId": task["id"]})).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    all_gone(&format!("sleep {m}")).await;
    let again = Transport::Http
        .call(&g, "tasks.cancel", json!({"taskId": task["id"]}))
        .await
        .unwrap_err();
    assert_eq!(
        (&again["code"], &again["message"]),
        (
            &json!("conflict"),
            &json!(format!(
                "task \"{}\" has ended (cancelled)",
                task["id"].as_str().unwrap()
            ))
        )
    );
}

#[tokio::test]
async fn deleting_the_session_kills_its_processes() {
    let (m, g, result, task) = one_sleeping(json!({})).await;
    delete_its_session(&g, &result, &m).await;
    let ended = settled(&g, &task["id"]).await;
    assert_eq!(
        (
            &ended["status"],
            &ended["error"]["message"],
            &ended["deliveryStatus"]
        ),
        (
            &json!("cancelled"),
            &json!("the process was killed: its session was deleted"),
            &json!("parent_missing")
        ),
        "{ended}"
    );
}

#[tokio::test]
async fn a_process_past_its_ttl_is_killed_and_timed_out() {
    let (m, g, _, task) =
        one_sleeping(json!({"tools": {"approvals": "allow", "exec": {"timeoutSec": 60}}})).await;
    g.time.advance(Duration::from_secs(61));
    let ended = settled(&g, &task["id"]).await;
    assert_eq!(
        (
            &ended["status"],
            &ended["error"]["code"],
            &ended["error"]["message"]
        ),
        (
            &json!("timed_out"),
            &json!("timeout"),
            &json!("the process ran past its 60 s limit and was killed")
        ),
        "{ended}"
    );
    all_gone(&format!("sleep {m}")).await;
}

#[tokio::test]
async fn a_model_starting_1000_background_processes_gets_its_bound_and_a_clear_error() {
    let m = marker();
    // Five turns of 200 parallel calls (a reply's tool calls are
    // numbered below 256 on the wire).
    let turn = || Turn {
        tool_calls: (0..200)
            .map(|_| ScriptedCall {
                name: "exec".into(),
                arguments: json!({"command": format!("sleep {m}"), "background": true}),
            })
            .collect(),
        ..Turn::default()
    };
    let g = gateway(
        (0..5).map(|_| turn()).collect(),
        json!({"tools": {"approvals": "allow", "exec": {"maxPerSession": 4}}}),
    )
    .await;
    let result = run(&g).await;
    assert_eq!(result["status"], "completed", "{result}");
    let tasks = tasks_of(&g, &result["runId"]).await;
    assert_eq!(tasks.len(), 4);
    assert!(live(&format!("sleep {m}")) > 0);
    let told = tool_messages(&g);
    assert!(
        told.iter().any(|t| t.contains(
            "exec: this session has 4 background processes running, the most it may have (tools.exec.maxPerSession)"
        )),
        "{told:#?}"
    );
    // The session's end is theirs.
    delete_its_session(&g, &result, &m).await;
    for task in &tasks {
        assert_eq!(settled(&g, &task["id"]).await["status"], "cancelled");
    }
}

#[tokio::test]
async fn without_a_tools_exec_section_background_is_refused_and_process_not_offered() {
    let g = gateway(
        vec![background("echo never")],
        json!({"tools": {"approvals": "allow"}}),
    )
    .await;
    let result = run(&g).await;
    assert_eq!(result["status"], "completed", "{result}");
    let told = tool_messages(&g);
    assert!(
        told.iter().any(|t| t.contains(
            "exec: background and yieldMs need a host that keeps background processes (the gateway, with a tools.exec section)"
        )),
        "{told:#?}"
    );
    let offered: Vec<String> = g.mock.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert!(offered.contains(&"exec".to_owned()), "{offered:?}");
    assert!(!offered.contains(&"process".to_owned()), "{offered:?}");
    assert!(tasks_of(&g, &result["runId"]).await.is_empty());
}

#[tokio::test]
async fn a_process_reports_its_output_tail_as_progress_at_most_once_a_second() {
    // Two and a half seconds of a line every 50 ms.
    let g = gateway(
        vec![background(
            "for i in $(seq 1 50); do echo line $i; sleep 0.05; done",
        )],
        json!({}),
    )
    .await;
    let result = run(&g).await;
    let task = tasks_of(&g, &result["runId"]).await[0].clone();
    let ended = settled(&g, &task["id"]).await;
    assert_eq!(ended["status"], "succeeded", "{ended}");
    let events = call(&g, "tasks.events", json!({"taskId": task["id"]})).await;
    let progress: Vec<&Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "task.updated" && e["data"]["status"] == "running")
        .map(|e| &e["data"]["progressSummary"])
        .collect();
    // Its start, then a report a second at most while it ran: about three
    // in 2.5 s, never one per line.
    assert!(
        (2..=5).contains(&progress.len()),
        "{} running updates: {progress:?}",
        progress.len()
    );
    assert!(
        progress[1..]
            .iter()
            .all(|p| p.as_str().unwrap().contains("line ")),
        "{progress:?}"
    );
    assert!(
        ended["progressSummary"]
            .as_str()
            .unwrap()
            .ends_with("line 50\n")
    );
}

/// The `process` tool's id-taking actions through the gateway: a caller
/// (`tools.invoke`, in the process's session, as its run would) writes to
/// the process, polls and pages its output, and kills it; the task ends
/// `cancelled`, and another session's caller finds no such process.
#[tokio::test]
async fn the_process_tool_writes_polls_pages_and_kills_a_process_of_its_session() {
    let g = gateway(
        vec![background("while read line; do echo got:$line; done")],
        json!({}),
    )
    .await;
    let result = run(&g).await;
    let task = tasks_of(&g, &result["runId"]).await.remove(0);
    let session = call(&g, "sessions.list", json!({})).await["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == result["sessionId"])
        .unwrap()["key"]
        .clone();
    let process = async |arguments: Value, key: &Value| {
        call(
            &g,
            "tools.invoke",
            json!({"tool": "process", "arguments": arguments, "sessionKey": key}),
        )
        .await["result"]
            .clone()
    };
    let id = task["id"].clone();
    let written = process(
        json!({"action": "write", "taskId": id, "data": "hello\nworld\n"}),
        &session,
    )
    .await;
    assert_eq!(
        (&written["written"], &written["taskId"]),
        (&json!(12), &id),
        "{written}"
    );
    let polled = wait::until_async("the echo to come back", wait::DEADLINE, async || {
        let polled = process(
            json!({"action": "poll", "taskId": id, "timeout": 1000}),
            &session,
        )
        .await;
        polled["output"]
            .as_str()
            .is_some_and(|o| o.contains("got:world"))
            .then_some(polled)
    })
    .await;
    assert_eq!(polled["status"], "running", "{polled}");
    let page = process(
        json!({"action": "log", "sessionId": id, "offset": 1, "limit": 1}),
        &session,
    )
    .await;
    assert_eq!(
        (&page["output"], &page["lines"], &page["totalLines"]),
        (&json!("got:world"), &json!(1), &json!(2)),
        "{page}"
    );
    let stranger = Transport::Http
        .call(
            &g,
            "tools.invoke",
            json!({"tool": "process", "arguments": {"action": "poll", "taskId": id}, "sessionKey": "someone-else"}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (
            &stranger["code"],
            &stranger["details"]["toolError"],
            &stranger["message"]
        ),
        (
            &json!("not_found"),
            &json!("not_found"),
            &json!(format!(
                "process: no background process {id} in this session (process list shows them; one whose gateway restarted is gone)"
            ))
        ),
        "{stranger}"
    );
    let killed = process(json!({"action": "kill", "taskId": id}), &session).await;
    assert_eq!(killed["taskId"], id, "{killed}");
    let ended = settled(&g, &id).await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
}
