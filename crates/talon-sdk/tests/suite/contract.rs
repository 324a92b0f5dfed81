//! The protocol's contract (`crates/talon-protocol/contract/cases.json`),
//! run against the real gateway and the Rust fake: every case's call, over
//! HTTP as an admin, after its setup, answers as the case expects. The
//! TypeScript fake runs the same cases (`@talon/sdk-testing`'s
//! `test/contract.test.ts`); talon-protocol's tests fail when a method of
//! the table has no case.

use serde_json::{Map, Value, json};

use super::{Backend, Kind, Scenario, both};

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
            None => value.clone(),
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

/// Whether `got` matches `pattern`: an object's listed keys, `"$any"`
/// for any value, everything else equal.
fn matches(pattern: &Value, got: &Value) -> bool {
    match (pattern, got) {
        (Value::String(s), _) if s == "$any" => true,
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(k, v)| have.get(k).is_some_and(|h| matches(v, h))),
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

async fn every_case_of_the_contract_holds(kind: Kind) {
    let backend = Backend::start(kind, Scenario::Reply).await;
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
            let (status, body) = call(
                &client,
                &backend,
                &backend.token,
                method,
                &params,
                &Value::Null,
            )
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
