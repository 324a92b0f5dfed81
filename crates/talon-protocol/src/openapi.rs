//! The OpenAPI 3.1 document of the gateway's HTTP form, generated from the
//! method table and committed as `schema/openapi.json` (the gateway serves
//! it at `GET /v1/openapi.json`): every method as `POST /v1/<method>` with
//! its params as the JSON body and its result as the JSON response, every
//! error code as a response whose body is the one `ErrorResponse` schema,
//! and the event streams, WebSocket, artifact content, health and
//! documentation routes. Each event type's payload is a named schema;
//! `TypedEvent` (the envelope with its payload by type) references them
//! and is what each Server-Sent Event's `data:` holds. Unit enums are
//! string `enum`s ([`crate::schema::simplify_enums`]); times follow
//! [`crate::schema::TIME_CONVENTION`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::gateway::{ApiError, Effect, ErrorCode, Method, PROTOCOL_VERSION, Stability};

/// The document.
pub fn openapi() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    let mut generator = settings.into_generator();
    let mut paths = serde_json::Map::new();
    for &method in Method::ALL {
        let spec = method.spec();
        let mut responses = serde_json::Map::new();
        responses.insert(
            "200".into(),
            json!({
                "description": "The result.",
                "content": {"application/json": {"schema": method.result_schema(&mut generator)}},
            }),
        );
        let mut errors = spec.all_errors();
        if spec.effect == Effect::Write && !errors.contains(&ErrorCode::QuotaExceeded) {
            // A write is refused once the store holds its quota.
            errors.push(ErrorCode::QuotaExceeded);
        }
        for code in errors {
            responses.insert(code.http_status().to_string(), error_ref(code));
        }
        let namespace = spec.name.split('.').next().unwrap_or(spec.name);
        let doc = spec.doc.trim();
        paths.insert(
            format!("/v1/{}", spec.name),
            json!({"post": {
                "operationId": spec.name,
                "summary": summary_of(doc),
                "description": doc,
                "tags": [namespace],
                "deprecated": false,
                "x-talon-scope": spec.scope,
                "x-talon-effect": spec.effect,
                "x-talon-stability": spec.stability,
                "requestBody": {
                    "required": true,
                    "content": {"application/json": {"schema": method.params_schema(&mut generator)}},
                },
                "responses": responses,
            }}),
        );
        if spec.stability == Stability::Unsupported {
            paths[&format!("/v1/{}", spec.name)]["post"]["description"] = json!(format!(
                "{doc}\n\nDeclared by the protocol, not implemented: always `unsupported`."
            ));
        }
    }
    let error = generator.subschema_for::<ApiError>();
    let typed_event = crate::schema::typed_event(&mut generator);
    let after = json!({"name": "after", "in": "query", "required": false,
        "description": "Resume after this event id (or send `Last-Event-ID`).",
        "schema": {"type": "string"}});
    let sse = |description: &str| {
        json!({
            "description": format!("{description} Each Server-Sent Event's `data:` is one `TypedEvent` as JSON, its `event:` the type, its `id:` the event id."),
            "content": {"text/event-stream": {
                "schema": {"$ref": "#/components/schemas/TypedEvent"},
            }},
        })
    };
    paths.insert(
        "/v1/runs/{runId}/events".into(),
        json!({"get": {
            "operationId": "runs.events.stream",
            "summary": "A run's events as Server-Sent Events (`id:` the event id, `event:` its type, `data:` the envelope); ends after the run's terminal event.",
            "tags": ["runs"],
            "x-talon-scope": "session.read",
            "parameters": [
                {"name": "runId", "in": "path", "required": true, "schema": {"type": "string"}},
                after,
            ],
            "responses": {
                "200": sse("The stream."),
                "401": {"$ref": "#/components/responses/unauthenticated"},
                "403": {"$ref": "#/components/responses/forbidden"},
                "404": {"$ref": "#/components/responses/not_found"},
                "410": {"$ref": "#/components/responses/cursor_expired"},
            },
        }}),
    );
    paths.insert(
        "/v1/events".into(),
        json!({"get": {
            "operationId": "events.stream",
            "summary": "Every event the token may see, as Server-Sent Events.",
            "tags": ["events"],
            "x-talon-scope": "session.read",
            "parameters": [
                after,
                {"name": "sessionKey", "in": "query", "required": false, "schema": {"type": "string"}},
                {"name": "agentId", "in": "query", "required": false, "schema": {"type": "string"}},
                {"name": "types", "in": "query", "required": false,
                 "description": "Comma-separated event types.", "schema": {"type": "string"}},
            ],
            "responses": {
                "200": sse("The stream."),
                "401": {"$ref": "#/components/responses/unauthenticated"},
                "403": {"$ref": "#/components/responses/forbidden"},
                "410": {"$ref": "#/components/responses/cursor_expired"},
            },
        }}),
    );
    paths.insert(
        "/v1/ws".into(),
        json!({"get": {
            "operationId": "ws",
            "summary": "A WebSocket carrying the same calls as frames: `{type: \"req\", id, method, params}` answered by `{type: \"res\", id, ok, result | error}`; after `events.subscribe`, `{type: \"event\", event}` frames.",
            "tags": ["events"],
            "responses": {"101": {"description": "Switching protocols."},
                          "401": {"$ref": "#/components/responses/unauthenticated"}},
        }}),
    );
    paths.insert(
        "/v1/artifacts/{artifactId}/content".into(),
        json!({"get": {
            "operationId": "artifacts.content",
            "summary": "An artifact's bytes, with its content type; Range requests are honoured.",
            "tags": ["artifacts"],
            "x-talon-scope": "artifacts.read",
            "parameters": [{"name": "artifactId", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": {
                "200": {"description": "The bytes.", "content": {"*/*": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}},
                "206": {"description": "The requested range."},
                "404": {"$ref": "#/components/responses/not_found"},
            },
        }}),
    );
    paths.insert(
        "/v1/openapi.json".into(),
        json!({"get": {"operationId": "openapi", "summary": "This document; no token needed.", "security": [],
            "tags": ["documents"],
            "responses": {"200": {"description": "The document.", "content": {"application/json": {"schema": {"type": "object"}}}},
                          "403": error_ref(ErrorCode::Forbidden)}}}),
    );
    paths.insert(
        "/docs".into(),
        json!({"get": {"operationId": "docs", "summary": "This document as a readable API reference (HTML); no token needed.", "security": [],
            "tags": ["documents"],
            "responses": {"200": {"description": "The reference page.", "content": {"text/html": {"schema": {"type": "string"}}}},
                          "403": error_ref(ErrorCode::Forbidden)}}}),
    );
    paths.insert(
        "/".into(),
        json!({"get": {"operationId": "index", "summary": "Where to start: an HTML page linking to `/docs` for a browser, a JSON index of the gateway's routes for any other client; no token needed.", "security": [],
            "responses": {"200": {"description": "The index.", "content": {
                "text/html": {"schema": {"type": "string"}},
                "application/json": {"schema": {"$ref": "#/components/schemas/GatewayIndex"}},
            }}, "403": error_ref(ErrorCode::Forbidden)}, "tags": ["documents"]}}),
    );
    paths.insert(
        "/healthz".into(),
        json!({"get": {"operationId": "healthz", "summary": "200 once the gateway is ready; no token needed.", "security": [],
            "tags": ["documents"],
            "responses": {"200": {"description": "Ready: `ok`.", "content": {"text/plain": {"schema": {"type": "string"}}}},
                          "403": error_ref(ErrorCode::Forbidden),
                          "503": error_ref(ErrorCode::Unavailable)}}}),
    );
    // The routes beside the methods: their summary in full as the
    // description, its first sentence as the summary.
    for operation in paths
        .values_mut()
        .filter_map(|p| p.as_object_mut())
        .flat_map(|p| p.values_mut())
    {
        if operation.get("description").is_none()
            && let Some(summary) = operation
                .get("summary")
                .and_then(Value::as_str)
                .map(str::to_owned)
        {
            operation["summary"] = json!(summary_of(&summary));
            operation["description"] = json!(summary);
        }
    }
    // One response per error code that some operation names.
    let mut used = Vec::new();
    collect_error_refs(&Value::Object(paths.clone()), &mut used);
    let mut responses = serde_json::Map::new();
    for code in ErrorCode::ALL {
        if !used.contains(&code.as_str().to_owned()) {
            continue;
        }
        responses.insert(
            code.as_str().into(),
            json!({
                "description": format!("`{}` (HTTP {}{})", code.as_str(), code.http_status(),
                    if code.retryable() { ", retryable" } else { "" }),
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
            }),
        );
    }
    generator.subschema_for::<GatewayIndex>();
    let mut schemas = generator.take_definitions(true);
    schemas.insert(
        "ErrorResponse".into(),
        json!({
            "description": "Every error's body: the error, under `error`. The HTTP status is the code's.",
            "type": "object",
            "required": ["error"],
            "properties": {"error": error},
        }),
    );
    schemas.insert(
        "TypedEvent".into(),
        json!({
            "description": "An event with its payload by type: the envelope (`Event`) and the `{type, data}` union (`EventData`), whose branches name each type's payload schema.",
            "allOf": typed_event["allOf"],
        }),
    );
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Talon gateway",
            "version": PROTOCOL_VERSION.to_string(),
            "description": format!(
                "Every method is `POST /v1/<method>` with its params as the JSON body and \
                 `Authorization: Bearer <token>`. Errors are `ErrorResponse` with the code's HTTP status.\n\n{}\n\n\
                 Generated from talon-protocol's method table; do not edit.",
                crate::schema::TIME_CONVENTION
            ),
            "license": {"name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0"},
        },
        "tags": tags(),
        "servers": [{"url": "/", "description": "The gateway that serves this document."}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": responses,
            "schemas": schemas,
        },
    });
    crate::schema::simplify_enums(&mut doc);
    doc
}

/// A reference to the response of error `code`.
fn error_ref(code: ErrorCode) -> Value {
    json!({"$ref": format!("#/components/responses/{}", code.as_str())})
}

/// The codes of every `#/components/responses/<code>` reference in `value`.
fn collect_error_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(code) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/responses/"))
            {
                out.push(code.to_owned());
            }
            map.values().for_each(|v| collect_error_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_error_refs(v, out)),
        _ => {}
    }
}

/// An operation's summary: its doc's first sentence (or line).
fn summary_of(doc: &str) -> String {
    let first = doc.lines().next().unwrap_or_default().trim();
    match first.find(". ") {
        Some(end) => first[..=end].trim().to_owned(),
        None => first.trim_end_matches(':').to_owned(),
    }
}

/// Each tag (a method namespace, and the documents) with what it holds.
fn tags() -> Value {
    let tags: Vec<Value> = TAGS
        .iter()
        .map(|(name, description)| json!({"name": name, "description": description}))
        .collect();
    Value::Array(tags)
}

/// The tags, in the reference's order.
const TAGS: &[(&str, &str)] = &[
    (
        "runs",
        "Start a run of an agent, wait for its result, read or stream its events, cancel it.",
    ),
    (
        "usage",
        "What runs cost: tokens and cost by day, agent and model.",
    ),
    (
        "sessions",
        "Conversations: their messages, and runs started by sending to one.",
    ),
    (
        "agents",
        "The agents a run can use: from the config file, or created through the API.",
    ),
    (
        "approvals",
        "Tool calls and environments waiting for a person's decision.",
    ),
    (
        "questions",
        "Questions an agent asked, waiting for an answer.",
    ),
    (
        "artifacts",
        "Files, patches and logs runs produced, and their content.",
    ),
    (
        "tools",
        "The ToolSpace an agent sees, and direct tool calls.",
    ),
    ("models", "The models and providers the gateway can reach."),
    ("environments", "Where runs execute."),
    ("tasks", "Background tasks and their events."),
    (
        "schedules",
        "Runs of an agent the clock starts: at a time, every interval, or by cron.",
    ),
    (
        "events",
        "Every event a token may see: Server-Sent Events, WebSocket, subscriptions.",
    ),
    ("tokens", "Tokens and short-lived stream tickets."),
    (
        "documents",
        "This document, its readable reference, the index and the readiness probe; no token needed.",
    ),
];

/// What `GET /` answers a client that asks for JSON: where the gateway's
/// documents are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayIndex {
    /// Always `talon-gateway`.
    pub name: String,
    /// The protocol's version.
    pub version: String,
    /// The API reference's path (HTML, no token needed).
    pub docs: String,
    /// The OpenAPI document's path (no token needed).
    pub openapi: String,
    /// The readiness probe's path (no token needed).
    pub health: String,
}

impl GatewayIndex {
    /// This gateway's index.
    pub fn current() -> Self {
        Self {
            name: "talon-gateway".into(),
            version: PROTOCOL_VERSION.to_string(),
            docs: "/docs".into(),
            openapi: "/v1/openapi.json".into(),
            health: "/healthz".into(),
        }
    }
}
