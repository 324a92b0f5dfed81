//! The OpenAPI 3.1 document of the gateway's HTTP form, generated from the
//! method table and committed as `schema/openapi.json` (the gateway serves
//! it at `GET /v1/openapi.json`): every method as `POST /v1/<method>` with
//! its params as the JSON body and its result as the JSON response, every
//! error code as a response in the one error shape, and the event streams,
//! WebSocket, artifact content and health routes.

use serde_json::{Value, json};

use crate::gateway::{ApiError, ErrorCode, Method, PROTOCOL_VERSION, Stability};

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
        for code in spec.all_errors() {
            responses.insert(
                code.http_status().to_string(),
                json!({"$ref": format!("#/components/responses/{}", code.as_str())}),
            );
        }
        let namespace = spec.name.split('.').next().unwrap_or(spec.name);
        paths.insert(
            format!("/v1/{}", spec.name),
            json!({"post": {
                "operationId": spec.name,
                "summary": spec.doc.trim(),
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
            paths[&format!("/v1/{}", spec.name)]["post"]["description"] =
                json!("Declared by the protocol, not implemented: always `unsupported`.");
        }
    }
    let error = generator.subschema_for::<ApiError>();
    let event = crate::schema::typed_event(&mut generator);
    let after = json!({"name": "after", "in": "query", "required": false,
        "description": "Resume after this event id (or send `Last-Event-ID`).",
        "schema": {"type": "string"}});
    let sse = |description: &str| {
        json!({
            "description": description,
            "content": {"text/event-stream": {
                "schema": {"type": "string"},
                "x-talon-event": event,
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
        json!({"get": {"operationId": "openapi", "summary": "This document.", "security": [],
            "responses": {"200": {"description": "The document.", "content": {"application/json": {}}}}}}),
    );
    paths.insert(
        "/healthz".into(),
        json!({"get": {"operationId": "healthz", "summary": "200 once the gateway is ready; no token needed.", "security": [],
            "responses": {"200": {"description": "Ready."}, "503": {"description": "Not ready."}}}}),
    );
    let mut responses = serde_json::Map::new();
    for code in ErrorCode::ALL {
        responses.insert(
            code.as_str().into(),
            json!({
                "description": format!("`{}` (HTTP {}{})", code.as_str(), code.http_status(),
                    if code.retryable() { ", retryable" } else { "" }),
                "content": {"application/json": {"schema": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": error},
                }}},
            }),
        );
    }
    let schemas = generator.take_definitions(true);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Talon gateway",
            "version": PROTOCOL_VERSION.to_string(),
            "description": "Generated from talon-protocol's method table; do not edit.",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": responses,
            "schemas": schemas,
        },
    })
}
