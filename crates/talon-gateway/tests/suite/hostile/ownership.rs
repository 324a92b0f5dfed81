//! Ownership, every method and route with two subjects: Alice's and Bob's
//! tokens hold every scope but `admin`. Alice makes one of everything (a
//! session by key, a run with an approval and a question, its artifact,
//! an environment, an OpenAI response); Bob, over HTTP and over a
//! WebSocket, finds none of it: what names Alice's is `not_found` (as if
//! it did not exist), his lists and streams hold only his own, and the
//! session keys he names are his. An unbound token and the admin see
//! Alice's. An agent-bound token sees, runs and reads only its agents.
//! The table is a `match` over every method: a new method fails to
//! compile here until it has a row.

use futures::StreamExt as _;
use serde_json::{Value, json};
use talon_protocol::gateway::Method;
use tokio_tungstenite::tungstenite::Message;

use super::super::env_support::Sources;
use super::super::ws::{Transport, connect, next_frame};
use super::super::{Options, TestGateway, calls_then_say, next_pending, tool_turn};
use super::bound_token as token;

/// What Bob gets for a method that names Alice's resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// `not_found`: it is not his to know of.
    NotFound,
    /// An answer that holds none of Alice's ids.
    NoneOfHers,
    /// What every caller without the scope gets (admin-only methods).
    Forbidden,
    /// What every caller gets (the method is not ownership's).
    Same(&'static str),
}

/// Every method's probe as Bob: its params (naming Alice's resources)
/// and what he must get. A method without a row does not compile.
fn probe(method: Method, her: &Value, via: &str) -> (Value, Expect) {
    let settings = her["settings"].clone();
    use Expect::*;
    let run = json!({"runId": her["run"]});
    let session = json!({"sessionId": her["session"]});
    match method {
        Method::AgentsList => (json!({}), NoneOfHers),
        Method::AgentsGet => (json!({"agentId": "main"}), Same("ok")),
        Method::AgentsCreate => (json!({"id": "bobs"}), Forbidden),
        Method::AgentsUpdate => (json!({"agentId": "helper"}), Forbidden),
        Method::SessionsList => (json!({}), NoneOfHers),
        // His own session under the same key: never hers.
        Method::SessionsCreate => (
            json!({"agentId": "main", "key": format!("mine-{via}")}),
            NoneOfHers,
        ),
        Method::SessionsResolve => (json!({"key": "chat"}), NoneOfHers),
        Method::SessionsSend => (
            json!({"sessionId": her["session"], "input": "hi"}),
            NotFound,
        ),
        Method::SessionsMessages => (session, NotFound),
        Method::SessionsFork => (session, NotFound),
        Method::SessionsUpdate => (
            json!({"sessionId": her["session"], "metadata": {"mine": true}}),
            NotFound,
        ),
        Method::SessionsCompact => (session, NotFound),
        Method::SessionsAbort => (session, NotFound),
        Method::SessionsDelete => (session, NotFound),
        Method::RunsCreate => (
            json!({"sessionId": her["session"], "input": "hi"}),
            NotFound,
        ),
        Method::RunsList => (json!({}), NoneOfHers),
        // Names no ids: her runs not being counted is checked on its own.
        Method::UsageSummary => (json!({}), Same("ok")),
        Method::RunsGet => (run, NotFound),
        Method::RunsEvents => (run, NotFound),
        Method::RunsWait => (json!({"runId": her["run"], "timeoutMs": 10}), NotFound),
        Method::RunsCancel => (run, NotFound),
        Method::RunsDelete => (run, NotFound),
        Method::TasksList => (json!({}), NoneOfHers),
        Method::TasksGet => (json!({"taskId": "t"}), Same("not_found")),
        Method::TasksCancel => (json!({"taskId": "t"}), Same("not_found")),
        Method::TasksNotify => (
            json!({"taskId": "t", "notifyPolicy": "silent"}),
            Same("not_found"),
        ),
        Method::TasksEvents => (json!({"taskId": "t"}), Same("not_found")),
        Method::SchedulesList => (json!({}), NoneOfHers),
        Method::SchedulesGet => (json!({"scheduleId": her["schedule"]}), NotFound),
        // His own schedule: never hers.
        Method::SchedulesCreate => (
            json!({"name": "his", "enabled": false, "schedule": {"kind": "every", "everyMs": 3_600_000},
                   "payload": {"kind": "agentTurn", "message": "x"}}),
            NoneOfHers,
        ),
        Method::SchedulesUpdate => (
            json!({"scheduleId": her["schedule"], "enabled": true}),
            NotFound,
        ),
        Method::SchedulesRun => (json!({"scheduleId": her["schedule"]}), NotFound),
        Method::SchedulesDelete => (json!({"scheduleId": her["schedule"]}), NotFound),
        Method::ModelsList => (json!({}), Same("ok")),
        Method::ModelsStatus => (json!({}), Same("ok")),
        Method::ToolsList => (json!({"sessionKey": "alice-only"}), NotFound),
        Method::ToolsInvoke => (
            json!({"tool": "read", "arguments": {"path": "shared.txt"}, "sessionKey": "chat"}),
            NoneOfHers,
        ),
        Method::ArtifactsList => (json!({"runId": her["run"]}), NoneOfHers),
        Method::ArtifactsGet => (json!({"artifactId": her["artifact"]}), NotFound),
        Method::ArtifactsDownload => (json!({"artifactId": her["artifact"]}), NotFound),
        Method::ApprovalsList => (json!({}), NoneOfHers),
        Method::ApprovalsGet => (json!({"approvalId": her["approval"]}), NotFound),
        Method::ApprovalsRespond => (
            json!({"approvalId": her["approval"], "decision": "deny"}),
            NotFound,
        ),
        Method::QuestionsList => (json!({}), NoneOfHers),
        Method::QuestionsRespond => (
            json!({"questionId": her["question"], "answer": "main"}),
            NotFound,
        ),
        Method::EnvironmentsList => (json!({}), NoneOfHers),
        Method::EnvironmentsCreate => (
            json!({"provider": "local", "idempotencyKey": "env-1", "settings": settings}),
            NoneOfHers,
        ),
        Method::EnvironmentsStatus => (json!({"environmentId": her["environment"]}), NotFound),
        Method::EnvironmentsDelete => (json!({"environmentId": her["environment"]}), NotFound),
        // Served on the socket (probed as a stream below); over HTTP an
        // error for everyone.
        Method::EventsSubscribe => (json!({}), Same("transport")),
        Method::EventsUnsubscribe => (json!({"subscriptionId": "sub_x"}), Same("transport")),
        Method::TokensTicket => (json!({"stream": {"run": {"runId": her["run"]}}}), NotFound),
        Method::TokensCreate => (
            json!({"name": "x", "preset": "viewer", "expiresInMs": 60_000}),
            Forbidden,
        ),
        Method::TokensList => (json!({}), Forbidden),
        Method::TokensRevoke => (json!({"tokenId": "tok_0"}), Forbidden),
    }
}

async fn call(
    g: &TestGateway,
    t: &Transport,
    token: &str,
    method: &str,
    p: Value,
) -> Result<Value, Value> {
    match t {
        Transport::Http => {
            let (status, body) = g.call(token, method, p).await;
            if status == 200 {
                Ok(body)
            } else {
                Err(body["error"].clone())
            }
        }
        ws => ws.call(g, method, p).await,
    }
}

/// Alice's resources: a run (with its session, approval, question and
/// trajectory artifact), a second session by key, an environment, a
/// paused schedule.
async fn alices(g: &TestGateway, alice: &str, settings: &Value) -> Value {
    let t = Transport::Http;
    let created = call(
        g,
        &t,
        alice,
        "runs.create",
        json!({"input": "work", "sessionKey": "chat"}),
    )
    .await
    .unwrap();
    let run = created["runId"].clone();
    let alice_ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((
        connect(g, alice).await.unwrap(),
        0,
    ))));
    let approval = next_pending(g, &alice_ws, "approvals", &run).await;
    let other = call(
        g,
        &t,
        alice,
        "sessions.create",
        json!({"agentId": "main", "key": "alice-only"}),
    )
    .await
    .unwrap();
    let environment = call(
        g,
        &t,
        alice,
        "environments.create",
        json!({"provider": "local", "settings": settings}),
    )
    .await
    .unwrap();
    let schedule = call(
        g,
        &t,
        alice,
        "schedules.create",
        json!({"name": "hers", "enabled": false, "schedule": {"kind": "every", "everyMs": 3_600_000},
               "payload": {"kind": "agentTurn", "message": "x"}}),
    )
    .await
    .unwrap();
    json!({
        "settings": settings,
        "schedule": schedule["id"],
        "run": run,
        "session": created["sessionId"],
        "other": other["id"],
        "approval": approval["id"],
        "environment": environment["id"],
    })
}

/// Every id of Alice's that `value` names.
fn hers_in(value: &Value, her: &Value) -> Vec<String> {
    let text = value.to_string();
    her.as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "settings")
        .map(|(_, v)| v)
        .filter_map(Value::as_str)
        .filter(|id| text.contains(id))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_token_finds_nothing_of_another_subjects_on_any_method_or_route() {
    let sources = Sources::new();
    let source = sources.root("src");
    std::fs::write(source.join("a.txt"), "hello").unwrap();
    let g = TestGateway::start_opts(Options {
        environments: sources.policy.clone(),
        script: calls_then_say(
            vec![
                tool_turn("write", json!({"path": "note.txt", "content": "x"})),
                tool_turn(
                    "ask_user",
                    json!({"prompt": "Which branch?", "choices": ["main", "dev"]}),
                ),
            ],
            "Done.",
        ),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    std::fs::write(g.dir.path().join("workspace/shared.txt"), "hi").unwrap();
    let alice = token(&g, "alice", json!({"subject": "alice"})).await;
    let bob = token(&g, "bob", json!({"subject": "bob"})).await;
    let unbound = token(&g, "unbound", json!({})).await;
    let settings = json!({"source": {"path": source}});
    let mut her = alices(&g, &alice, &settings).await;

    // Bob cannot answer her approval; she does, and her run asks a question.
    let http = Transport::Http;
    let (p, _) = probe(Method::ApprovalsRespond, &her, "http");
    assert_eq!(
        call(&g, &http, &bob, "approvals.respond", p)
            .await
            .unwrap_err()["code"],
        "not_found"
    );
    call(
        &g,
        &http,
        &alice,
        "approvals.respond",
        json!({"approvalId": her["approval"], "decision": "approve_once"}),
    )
    .await
    .unwrap();
    let alice_ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((
        connect(&g, &alice).await.unwrap(),
        0,
    ))));
    let question = next_pending(&g, &alice_ws, "questions", &her["run"]).await;
    her["question"] = question["id"].clone();
    let (p, _) = probe(Method::QuestionsRespond, &her, "http");
    assert_eq!(
        call(&g, &http, &bob, "questions.respond", p)
            .await
            .unwrap_err()["code"],
        "not_found"
    );
    call(
        &g,
        &http,
        &alice,
        "questions.respond",
        json!({"questionId": her["question"], "answer": "main"}),
    )
    .await
    .unwrap();
    let done = call(
        &g,
        &http,
        &alice,
        "runs.wait",
        json!({"runId": her["run"], "timeoutMs": 20_000}),
    )
    .await
    .unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    her["artifact"] = done["artifacts"][0]["id"].clone();
    assert!(her["artifact"].is_string(), "{done}");

    // Every method, over HTTP and over Bob's socket.
    let bob_ws = Transport::Ws(Box::new(tokio::sync::Mutex::new((
        connect(&g, &bob).await.unwrap(),
        0,
    ))));
    for (via, t) in [("http", &http), ("ws", &bob_ws)] {
        for method in Method::ALL {
            let (params, expect) = probe(*method, &her, via);
            if matches!(method, Method::EventsSubscribe | Method::EventsUnsubscribe) && via == "ws"
            {
                continue; // The socket's own: probed as a stream below.
            }
            let got = call(&g, t, &bob, method.name(), params.clone()).await;
            let what = format!("{via} {} {params}: {got:?}", method.name());
            match expect {
                Expect::NotFound => assert_eq!(got.unwrap_err()["code"], "not_found", "{what}"),
                Expect::NoneOfHers => {
                    let answer = got.expect(&what);
                    assert_eq!(hers_in(&answer, &her), Vec::<String>::new(), "{what}");
                }
                Expect::Forbidden => assert_eq!(got.unwrap_err()["code"], "forbidden", "{what}"),
                Expect::Same("ok") => assert!(got.is_ok(), "{what}"),
                Expect::Same(code @ ("unsupported" | "not_found")) => {
                    assert_eq!(got.unwrap_err()["code"], code, "{what}")
                }
                Expect::Same(_) => {
                    assert_eq!(got.unwrap_err()["code"], "invalid_request", "{what}")
                }
            }
        }
    }
    // What her runs cost is hers: each counts exactly the runs it lists
    // (his own, made by the probes above, and never hers).
    for token in [&alice, &bob] {
        let usage = call(&g, &http, token, "usage.summary", json!({})).await;
        let listed = call(&g, &http, token, "runs.list", json!({"limit": 100})).await;
        let listed = listed.unwrap()["runs"].as_array().unwrap().len();
        assert_eq!(usage.unwrap()["runs"], json!(listed), "{token}");
    }

    // The keys he named are his: hers still name her sessions.
    let hers = call(
        &g,
        &http,
        &alice,
        "sessions.resolve",
        json!({"key": "alice-only"}),
    )
    .await
    .unwrap();
    assert_eq!(hers["id"], her["other"]);
    let his = call(
        &g,
        &http,
        &bob,
        "sessions.resolve",
        json!({"key": "alice-only"}),
    )
    .await
    .unwrap();
    assert_ne!(his["id"], her["other"]);
    assert_eq!(his["subject"], "bob");
    // A cursor naming her run is no cursor of his.
    let cursor = call(&g, &http, &bob, "runs.list", json!({"cursor": her["run"]}))
        .await
        .unwrap_err();
    assert_eq!(cursor["code"], "invalid_request", "{cursor}");

    // Routes outside the table.
    let get = |token: &str, path: String| {
        let request = g.client.get(g.url(&path)).bearer_auth(token);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            if status >= 500 {
                panic!("{path}: {}", response.text().await.unwrap());
            }
            status
        }
    };
    let run = her["run"].as_str().unwrap();
    let artifact = her["artifact"].as_str().unwrap();
    let response = format!("resp_{run}");
    for (path, theirs) in [
        (format!("/v1/runs/{run}/events"), 200),
        (format!("/v1/artifacts/{artifact}/content"), 200),
        (format!("/v1/responses/{response}"), 200),
    ] {
        assert_eq!(get(&bob, path.clone()).await, 404, "bob {path}");
        assert_eq!(get(&unbound, path.clone()).await, theirs, "unbound {path}");
        assert_eq!(get(&g.admin, path.clone()).await, theirs, "admin {path}");
    }
    let continued = g
        .client
        .post(g.url("/v1/responses"))
        .bearer_auth(&bob)
        .json(&json!({"model": "main", "input": "go on", "previous_response_id": response}))
        .send()
        .await
        .unwrap();
    assert_eq!(continued.status(), 404);
    let cancelled = g
        .client
        .post(g.url(&format!("/v1/responses/{response}/cancel")))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 404);

    // His streams, from the log's start, hold his events only.
    let mine = call(
        &g,
        &http,
        &bob,
        "runs.create",
        json!({"input": "mine", "sessionKey": "chat"}),
    )
    .await
    .unwrap();
    let seen = socket_until(&g, &bob, &mine["runId"]).await;
    assert_eq!(hers_in(&json!(seen), &her), Vec::<String>::new());
    let sse = sse_until(&g, &bob, &mine["runId"]).await;
    assert_eq!(hers_in(&json!(sse), &her), Vec::<String>::new());
    assert!(sse.iter().all(|e| e["subject"] == "bob"), "{sse:?}");
    // The unbound token's and the admin's streams hold hers.
    for token in [&unbound, &g.admin] {
        let theirs = sse_until(&g, token, &her["run"]).await;
        assert_eq!(theirs.last().unwrap()["subject"], "alice");
    }
    // Nor can a ticket of his open her run's stream.
    let (status, _) = g
        .call(
            &bob,
            "tokens.ticket",
            json!({"stream": {"run": {"runId": her["run"]}}}),
        )
        .await;
    assert_eq!(status, 404);
}

/// The events `/v1/events?after=0` sends `token`, up to the first of
/// `run`'s.
async fn sse_until(g: &TestGateway, token: &str, run: &Value) -> Vec<Value> {
    let response = g
        .client
        .get(g.url("/v1/events?after=0"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let (mut text, mut seen) = (String::new(), Vec::new());
    loop {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), body.next())
            .await
            .expect("the stream stalled")
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            for line in frame.lines() {
                if let Some(data) = line.strip_prefix("data: ") {
                    let event: Value = serde_json::from_str(data).unwrap();
                    let last = event["runId"] == *run;
                    seen.push(event);
                    if last {
                        return seen;
                    }
                }
            }
        }
    }
}

/// The events a socket of `token` subscribed from the log's start gets,
/// up to the first of `run`'s.
async fn socket_until(g: &TestGateway, token: &str, run: &Value) -> Vec<Value> {
    use futures::SinkExt as _;
    let mut socket = connect(g, token).await.unwrap();
    let subscribe =
        json!({"type": "req", "id": 1, "method": "events.subscribe", "params": {"after": "0"}});
    socket
        .send(Message::Text(subscribe.to_string().into()))
        .await
        .unwrap();
    let answer = next_frame(&mut socket).await;
    assert_eq!(answer["ok"], true, "{answer}");
    let mut seen = Vec::new();
    loop {
        let frame = next_frame(&mut socket).await;
        let last = frame["event"]["runId"] == *run;
        seen.push(frame["event"].clone());
        if last {
            return seen;
        }
    }
}

/// A token bound to agents sees, runs and reads only theirs.
#[tokio::test]
async fn an_agent_bound_token_sees_and_runs_only_its_agents() {
    let g = TestGateway::start().await;
    let http = Transport::Http;
    call(
        &g,
        &http,
        &g.admin,
        "agents.create",
        json!({"id": "helper"}),
    )
    .await
    .unwrap();
    let main_run = call(&g, &http, &g.admin, "runs.create", json!({"input": "hi"}))
        .await
        .unwrap();
    let helper_only = token(&g, "helper-only", json!({"agents": ["helper"]})).await;
    let agents = call(&g, &http, &helper_only, "agents.list", json!({}))
        .await
        .unwrap();
    let ids: Vec<&Value> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["id"])
        .collect();
    assert_eq!(ids, [&json!("helper")]);
    for (method, params) in [
        ("agents.get", json!({"agentId": "main"})),
        ("runs.create", json!({"input": "hi"})),
        ("runs.create", json!({"input": "hi", "agentId": "main"})),
        ("runs.get", json!({"runId": main_run["runId"]})),
        ("tools.list", json!({"agentId": "main"})),
        ("sessions.create", json!({"agentId": "main"})),
    ] {
        let refused = call(&g, &http, &helper_only, method, params.clone()).await;
        assert_eq!(
            refused.unwrap_err()["code"],
            "not_found",
            "{method} {params}"
        );
    }
    let listed = call(&g, &http, &helper_only, "runs.list", json!({}))
        .await
        .unwrap();
    assert_eq!(listed["runs"], json!([]));
    let mine = call(
        &g,
        &http,
        &helper_only,
        "runs.create",
        json!({"input": "hi", "agentId": "helper"}),
    )
    .await
    .unwrap();
    let got = call(
        &g,
        &http,
        &helper_only,
        "runs.get",
        json!({"runId": mine["runId"]}),
    )
    .await
    .unwrap();
    assert_eq!(got["agentId"], "helper", "{got}");
    // The OpenAI surface's models are the agents it may run.
    let models: Value = g
        .client
        .get(g.url("/v1/models"))
        .bearer_auth(&helper_only)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&Value> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["id"])
        .collect();
    assert_eq!(ids, [&json!("talon/helper")], "{models}");
}
