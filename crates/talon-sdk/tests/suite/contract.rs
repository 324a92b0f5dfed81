//! The protocol's contract (`crates/talon-protocol/contract/cases.json`),
//! run against the real gateway and the Rust fake: every case's call, over
//! HTTP as an admin, after its setup, answers as the case expects. The
//! TypeScript fake runs the same cases (`@talon/sdk-testing`'s
//! `test/contract.test.ts`); talon-protocol's tests fail when a method of
//! the table has no case.

use serde_json::{Map, Value, json};
use talon_mock_model::{Replay, Script, ScriptedCall, Turn};
use talon_sdk_testing::{FakeRun, FakeTask};
use talon_testing::wait;

use super::{Backend, Kind, REPLY, both};

both!(every_case_of_the_contract_holds);

/// The server's name in a case's `differs`.
fn server(kind: Kind) -> &'static str {
    match kind {
        Kind::Fake => "rust-fake",
        Kind::Real => "gateway",
    }
}

fn cases() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../talon-protocol/contract/cases.json"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["cases"].as_array().unwrap().clone()
}

/// `value` with every `"$name"` replaced by what was saved, and every
/// `{"$keys": N}` expanded.
fn fill(value: &Value, saved: &Map<String, Value>) -> Value {
    match value {
        Value::String(s) => match s.strip_prefix('$').and_then(|name| saved.get(name)) {
            Some(found) => found.clone(),
            None => Value::String(within(s, saved)),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, saved)).collect()),
        Value::Object(map) => {
            if let Some(n) = map.get("$keys").and_then(Value::as_u64) {
                return Value::Object((0..n).map(|i| (format!("k{i:02}"), json!(0))).collect());
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), fill(v, saved)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// `text` with every `${name}` in it replaced by what was saved (a
/// string as it is, anything else as JSON).
fn within(text: &str, saved: &Map<String, Value>) -> String {
    let mut out = text.to_owned();
    for (name, value) in saved {
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out = out.replace(&format!("${{{name}}}"), &shown);
    }
    out
}

/// Whether `got` matches `pattern`: an object's listed keys, an array's
/// items one by one, `"$any"` for any value, everything else equal.
fn matches(pattern: &Value, got: &Value) -> bool {
    match (pattern, got) {
        (Value::String(s), _) if s == "$any" => true,
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(k, v)| have.get(k).is_some_and(|h| matches(v, h))),
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| matches(w, h))
        }
        _ => pattern == got,
    }
}

async fn call(
    client: &reqwest::Client,
    backend: &Backend,
    token: &str,
    method: &str,
    params: &Value,
    headers: &Value,
) -> (u16, Value) {
    let mut request = client
        .post(format!("{}/v1/{method}", backend.url))
        .bearer_auth(token);
    for (name, value) in headers.as_object().into_iter().flatten() {
        request = request.header(name.as_str(), value.as_str().unwrap());
    }
    let response = request.json(params).send().await.unwrap();
    let status = response.status().as_u16();
    let body = response.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

/// The backend the contract runs on: the real gateway's model replies
/// [`REPLY`] (every run from the first turn), except a run of a setup step
/// that `spawns`, whose input selects turns that call `sessions_spawn` with
/// those arguments, then reply (the mock's `byInput`); its agents may spawn.
/// The fake plays no queued script (a run replies `ok`); a step that
/// `spawns` is scripted for it when it comes ([`spawning_run`]).
async fn contract_backend(kind: Kind) -> Backend {
    let reply = Turn {
        text: Some(REPLY.into()),
        ..Turn::default()
    };
    let mut by_input = Vec::new();
    for case in cases() {
        for step in case["setup"].as_array().into_iter().flatten() {
            let Some(spawns) = step.get("spawns") else {
                continue;
            };
            let input = step["params"]["input"].as_str().unwrap().to_owned();
            let spawn = Turn {
                tool_calls: vec![ScriptedCall {
                    name: "sessions_spawn".into(),
                    arguments: spawns.clone(),
                }],
                ..Turn::default()
            };
            by_input.push((input, vec![spawn, reply.clone()]));
        }
    }
    let script = Script {
        turns: vec![reply],
        replay: Replay::PerRun,
        by_input,
        ..Script::default()
    };
    Backend::start_with(kind, script, Vec::new(), json!({"subagents": {}})).await
}

/// The fake's script of a run that spawns a sub-agent with `spawns`'
/// arguments (`task`, `label`).
fn spawning_run(spawns: &Value) -> FakeRun {
    let mut task = FakeTask::new(spawns["task"].as_str().unwrap());
    if let Some(label) = spawns["label"].as_str() {
        task = task.label(label);
    }
    FakeRun::reply("ok").spawn(task)
}

async fn every_case_of_the_contract_holds(kind: Kind) {
    let backend = contract_backend(kind).await;
    let client = reqwest::Client::new();
    let mut failures = Vec::new();
    for case in cases() {
        let name = case["name"].as_str().unwrap().to_owned();
        if case["differs"].get(server(kind)).is_some() {
            continue;
        }
        let mut saved = Map::new();
        for step in case["setup"].as_array().into_iter().flatten() {
            let params = fill(&step["params"], &saved);
            let method = step["method"].as_str().unwrap();
            if let (Some(spawns), Some(fake)) = (step.get("spawns"), &backend.fake) {
                fake.script_run(spawning_run(spawns));
            }
            // A step with `until` is called again until each pointer holds
            // its value.
            let until = fill(&step["until"], &saved);
            let (status, body) =
                wait::until_async(&format!("{name}: {step}"), wait::DEADLINE, async || {
                    let (status, body) = call(
                        &client,
                        &backend,
                        &backend.token,
                        method,
                        &params,
                        &Value::Null,
                    )
                    .await;
                    let holds = until
                        .as_object()
                        .into_iter()
                        .flatten()
                        .all(|(pointer, want)| body.pointer(pointer) == Some(want));
                    (status != 200 || holds).then_some((status, body))
                })
                .await;
            assert_eq!(status, 200, "{name}: setup {step}: {body}");
            for (key, pointer) in step["save"].as_object().into_iter().flatten() {
                let value = body.pointer(pointer.as_str().unwrap()).cloned().unwrap();
                saved.insert(key.clone(), value);
            }
        }
        let params = fill(&case["params"], &saved);
        let token = match case.get("as") {
            Some(name) => fill(name, &saved).as_str().unwrap().to_owned(),
            None => backend.token.clone(),
        };
        let method = case["method"].as_str().unwrap();
        let (status, body) =
            call(&client, &backend, &token, method, &params, &case["headers"]).await;
        let expect = fill(&case["expect"], &saved);
        let held = match (expect.get("ok"), expect.get("error")) {
            (Some(ok), _) => status == 200 && matches(ok, &body),
            (_, Some(error)) => status != 200 && body.get("error") == Some(error),
            _ => panic!("{name}: expects neither ok nor error"),
        };
        if !held {
            failures.push(format!("{name}: expected {expect}, got {status} {body}"));
        }
    }
    assert_eq!(failures, Vec::<String>::new(), "{}", server(kind));
}
