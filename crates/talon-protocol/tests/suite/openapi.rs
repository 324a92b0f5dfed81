//! The OpenAPI document's conventions, checked over the whole document:
//! string enums as `enum`, one `ErrorResponse`, one time convention, the
//! event payloads as named components, `servers` and `license`.

use serde_json::{Value, json};

fn doc() -> Value {
    talon_protocol::openapi::openapi()
}

/// Every object in `value` with its JSON pointer.
fn objects<'a>(
    value: &'a Value,
    at: String,
    out: &mut Vec<(String, &'a serde_json::Map<String, Value>)>,
) {
    match value {
        Value::Object(map) => {
            out.push((at.clone(), map));
            for (key, child) in map {
                objects(child, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                objects(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn no_enum_is_a_one_of_of_consts() {
    let doc = doc();
    let mut all = Vec::new();
    objects(&doc, String::new(), &mut all);
    for (at, map) in &all {
        if let Some(Value::Array(branches)) = map.get("oneOf") {
            assert!(
                !branches.iter().all(|b| b.get("const").is_some()),
                "{at} is a oneOf of consts"
            );
        }
    }
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["RunResultStatus"]["enum"],
        json!([
            "accepted",
            "completed",
            "failed",
            "cancelled",
            "timed_out",
            "unknown"
        ])
    );
    assert_eq!(schemas["RunResultStatus"]["type"], json!("string"));
    assert!(
        schemas["RunResultStatus"]["description"]
            .as_str()
            .unwrap()
            .contains("- `timed_out`: Exceeded its own time limit.")
    );
}

#[test]
fn every_error_response_is_the_one_error_response() {
    let doc = doc();
    assert_eq!(
        doc["components"]["schemas"]["ErrorResponse"]["properties"],
        json!({"error": {"$ref": "#/components/schemas/ApiError"}})
    );
    let responses = doc["components"]["responses"].as_object().unwrap();
    assert!(responses.len() >= 10, "{} responses", responses.len());
    for (code, response) in responses {
        assert_eq!(
            response["content"],
            json!({"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}),
            "{code}"
        );
    }
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (verb, operation) in item.as_object().unwrap() {
            for (status, response) in operation["responses"].as_object().unwrap() {
                if status.starts_with('4') || status.starts_with('5') {
                    let r = response["$ref"].as_str().unwrap_or_default();
                    assert!(
                        r.starts_with("#/components/responses/"),
                        "{verb} {path} {status}: {response}"
                    );
                }
            }
            if path != "/v1/ws" {
                assert!(operation["responses"].get("200").is_some(), "{verb} {path}");
            }
        }
    }
}

#[test]
fn every_time_is_epoch_milliseconds_and_says_so() {
    let doc = doc();
    assert!(
        doc["info"]["description"]
            .as_str()
            .unwrap()
            .contains(talon_protocol::schema::TIME_CONVENTION)
    );
    let mut all = Vec::new();
    objects(&doc["components"]["schemas"], String::new(), &mut all);
    let mut seen = 0;
    for (at, map) in &all {
        let Some(Value::Object(properties)) = map.get("properties") else {
            continue;
        };
        for (name, property) in properties {
            let instant = name.ends_with("At") || name == "ts";
            let duration = name.ends_with("Ms");
            if !(instant || duration) {
                continue;
            }
            seen += 1;
            let types = match &property["type"] {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                other => panic!("{at}/{name}: type {other}"),
            };
            assert!(
                types.iter().all(|t| *t == "integer" || *t == "null") && types.contains(&"integer"),
                "{at}/{name}: {types:?}"
            );
            let description = property["description"].as_str().unwrap_or_default();
            if instant {
                assert!(
                    description.contains("epoch milliseconds"),
                    "{at}/{name}: {description:?}"
                );
            }
        }
    }
    assert!(seen > 25, "{seen} time fields");
}

#[test]
fn event_payloads_are_named_components_the_event_references() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["TypedEvent"]["allOf"],
        json!([
            {"$ref": "#/components/schemas/Event"},
            {"$ref": "#/components/schemas/EventData"},
        ])
    );
    let branches = schemas["EventData"]["oneOf"].as_array().unwrap();
    let typed: Vec<&Value> = branches
        .iter()
        .map(|b| &b["properties"]["type"]["const"])
        .collect();
    let known: Vec<&Value> = schemas["EventType"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| *t != "unknown")
        .collect();
    assert_eq!(typed, known);
    for branch in branches {
        let data = branch["properties"]["data"]["$ref"].as_str().unwrap();
        let name = data.strip_prefix("#/components/schemas/").unwrap();
        assert!(schemas.get(name).is_some(), "{name}");
    }
    let stream = &doc["paths"]["/v1/runs/{runId}/events"]["get"]["responses"]["200"]["content"];
    assert_eq!(
        stream,
        &json!({"text/event-stream": {"schema": {"$ref": "#/components/schemas/TypedEvent"}}})
    );
}

#[test]
fn the_document_names_its_server_and_license() {
    let doc = doc();
    assert_eq!(
        doc["servers"],
        json!([{"url": "/", "description": "The gateway that serves this document."}])
    );
    assert_eq!(
        doc["info"]["license"],
        json!({"name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0"})
    );
    let public: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, item)| item["get"]["security"] == json!([]))
        .map(|(path, _)| path.as_str())
        .collect();
    assert_eq!(public, ["/", "/docs", "/healthz", "/v1/openapi.json"]);
}

#[test]
fn every_operation_tag_is_a_declared_tag() {
    let doc = doc();
    let declared: std::collections::BTreeSet<&str> = doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut undeclared = std::collections::BTreeSet::new();
    for path in doc["paths"].as_object().unwrap().values() {
        for operation in path.as_object().unwrap().values() {
            for tag in operation["tags"].as_array().into_iter().flatten() {
                let tag = tag.as_str().unwrap();
                if !declared.contains(tag) {
                    undeclared.insert(tag.to_owned());
                }
            }
        }
    }
    assert_eq!(undeclared, std::collections::BTreeSet::new());
}
