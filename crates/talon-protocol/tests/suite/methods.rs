//! The method table's own invariants.

use std::collections::BTreeSet;

use serde_json::json;
use talon_protocol::gateway::{Effect, ErrorCode, Method, Request, Scope, Stability};

#[test]
fn the_table_holds_the_seeds_namespaces_and_nothing_twice() {
    let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "a method is declared twice");
    let expected = [
        "agents.list",
        "agents.get",
        "agents.create",
        "agents.update",
        "sessions.list",
        "sessions.create",
        "sessions.resolve",
        "sessions.update",
        "sessions.send",
        "sessions.messages",
        "sessions.fork",
        "sessions.compact",
        "sessions.abort",
        "sessions.delete",
        "runs.create",
        "runs.list",
        // Talon's: what the runs a caller reads cost.
        "usage.summary",
        "runs.get",
        "runs.events",
        "runs.wait",
        "runs.cancel",
        "runs.delete",
        "tasks.list",
        "tasks.get",
        "tasks.cancel",
        "tasks.notify",
        "tasks.events",
        // Talon's, beside the seed's: runs by the clock.
        "schedules.list",
        "schedules.get",
        "schedules.create",
        "schedules.update",
        "schedules.run",
        "schedules.delete",
        "models.list",
        "models.status",
        "tools.list",
        "tools.invoke",
        "artifacts.list",
        "artifacts.get",
        "artifacts.download",
        "approvals.list",
        "approvals.get",
        "approvals.respond",
        "questions.list",
        "questions.respond",
        "environments.list",
        "environments.create",
        "environments.status",
        "environments.delete",
        "events.subscribe",
        "events.unsubscribe",
        "tokens.ticket",
        "tokens.create",
        "tokens.list",
        "tokens.revoke",
    ];
    assert_eq!(names, expected);
    for &method in Method::ALL {
        assert_eq!(Method::from_name(method.name()), Some(method));
    }
    assert_eq!(Method::from_name("runs.purge"), None);
}

#[test]
fn no_method_is_declared_ahead_of_its_server() {
    let unsupported: Vec<&str> = Method::ALL
        .iter()
        .filter(|m| m.spec().stability == Stability::Unsupported)
        .map(|m| m.name())
        .collect();
    // The seed's future APIs are served now (tasks, since issue 48);
    // a method declared ahead of its server would be listed here.
    assert_eq!(unsupported, Vec::<&str>::new());
    for name in unsupported {
        let spec = Method::from_name(name).unwrap().spec();
        assert!(
            spec.all_errors().contains(&ErrorCode::Unsupported),
            "{name}"
        );
    }
}

#[test]
fn every_state_changing_method_takes_an_optional_idempotency_key() {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    for &method in Method::ALL {
        let spec = method.spec();
        method.params_schema(&mut generator);
        let defs = generator.definitions().clone();
        let params = &defs[spec.params];
        let required: Vec<&str> = params["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        let has_key = params["properties"].get("idempotencyKey").is_some();
        match spec.effect {
            // Optional, as the seed has it (`{ sessionKey, idempotencyKey }`):
            // a call without one is simply not deduplicated.
            Effect::Write => assert!(
                has_key && !required.contains(&"idempotencyKey"),
                "{} changes state but does not take an optional idempotencyKey",
                spec.name
            ),
            Effect::Read => assert!(
                !has_key,
                "{} reads only but takes idempotencyKey",
                spec.name
            ),
        }
    }
}

#[test]
fn scopes_follow_the_seed() {
    let scope = |name: &str| Method::from_name(name).unwrap().spec().scope;
    assert_eq!(scope("runs.create"), Scope::AgentRun);
    assert_eq!(scope("runs.wait"), Scope::SessionRead);
    assert_eq!(scope("sessions.send"), Scope::SessionWrite);
    assert_eq!(scope("approvals.respond"), Scope::ApprovalRespond);
    assert_eq!(scope("tools.invoke"), Scope::ToolsInvoke);
    assert_eq!(scope("artifacts.download"), Scope::ArtifactsRead);
    assert_eq!(scope("environments.create"), Scope::EnvironmentWrite);
    assert_eq!(scope("tasks.cancel"), Scope::TaskWrite);
    assert_eq!(scope("agents.list"), Scope::AgentRead);
    // Every scope the seed lists but `admin` guards some method, and
    // `admin` guards agent changes; `metrics.read` guards `GET /metrics`,
    // no method.
    let used: BTreeSet<Scope> = Method::ALL.iter().map(|m| m.spec().scope).collect();
    let methods: BTreeSet<Scope> = Scope::ALL
        .into_iter()
        .filter(|&s| s != Scope::MetricsRead)
        .collect();
    assert_eq!(used, methods);
}

#[test]
fn requests_decode_strictly_with_stable_codes() {
    let request = Request::decode(
        "runs.create",
        json!({"agentId": "main", "input": "hi", "idempotencyKey": "k1"}),
    )
    .unwrap();
    assert_eq!(request.method(), Method::RunsCreate);
    let missing = Request::decode("runs.create", json!({"agentId": "main"})).unwrap_err();
    assert_eq!(missing.code, ErrorCode::InvalidRequest);
    assert!(missing.message.contains("input"), "{}", missing.message);
    let typo = Request::decode("runs.get", json!({"runID": "r1"})).unwrap_err();
    assert_eq!(typo.code, ErrorCode::InvalidRequest);
    let wrong_type =
        Request::decode("runs.wait", json!({"runId": "r1", "timeoutMs": "soon"})).unwrap_err();
    assert_eq!(wrong_type.code, ErrorCode::InvalidRequest);
    let unknown = Request::decode("runs.purge", json!({})).unwrap_err();
    assert_eq!(unknown.code, ErrorCode::NotFound);
    assert_eq!(
        unknown.details,
        Some(serde_json::from_value(json!({"method": "runs.purge"})).unwrap())
    );
    // No params at all is an empty object.
    assert_eq!(
        Request::decode("agents.list", serde_json::Value::Null)
            .unwrap()
            .method(),
        Method::AgentsList
    );
    assert!(Request::decode("agents.list", json!([1, 2])).is_err());
}
