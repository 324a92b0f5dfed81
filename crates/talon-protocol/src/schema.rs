//! Renders the JSON Schema of every wire type into one document.

use schemars::{JsonSchema, SchemaGenerator};

/// The JSON Schema document committed as `schema/talon-protocol.schema.json`.
pub fn protocol_schema() -> serde_json::Value {
    let mut generator = SchemaGenerator::default();
    let mut defs = serde_json::Map::new();
    let mut add = |name: &str, schema: schemars::Schema| {
        defs.insert(name.to_owned(), schema.to_value());
    };
    add(
        "CodeModeResult",
        crate::CodeModeResult::json_schema(&mut generator),
    );
    add("Event", crate::Event::json_schema(&mut generator));
    add(
        "ConsoleOutput",
        crate::ConsoleOutput::json_schema(&mut generator),
    );
    add(
        "CodeModeErrorCode",
        crate::CodeModeErrorCode::json_schema(&mut generator),
    );
    add(
        "CodeModeOutput",
        crate::CodeModeOutput::json_schema(&mut generator),
    );
    add(
        "OutputStream",
        crate::OutputStream::json_schema(&mut generator),
    );
    add(
        "ToolErrorCode",
        crate::ToolErrorCode::json_schema(&mut generator),
    );
    for (name, schema) in generator.take_definitions(true) {
        defs.entry(name).or_insert(schema);
    }
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Talon protocol",
        "$defs": defs,
    })
}

/// The gateway protocol's JSON Schema, committed as
/// `schema/gateway.schema.json`: the method table (name, scope, effect,
/// stability, error codes, params and result schemas), the error shape,
/// the event envelope and every type they use under `$defs`. Schemas
/// describe what a server accepts (serde's deserialize contract: a field
/// with a default is optional).
pub fn gateway_schema() -> serde_json::Value {
    use crate::gateway::{ApiError, Method, PROTOCOL_VERSION};
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let methods: Vec<serde_json::Value> = Method::ALL
        .iter()
        .map(|&method| {
            let spec = method.spec();
            serde_json::json!({
                "name": spec.name,
                "description": spec.doc.trim(),
                "scope": spec.scope,
                "effect": spec.effect,
                "stability": spec.stability,
                "errors": spec.all_errors(),
                "params": method.params_schema(&mut generator),
                "result": method.result_schema(&mut generator),
            })
        })
        .collect();
    let error = generator.subschema_for::<ApiError>();
    let event = typed_event(&mut generator);
    let defs = generator.take_definitions(true);
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Talon gateway protocol",
        "version": PROTOCOL_VERSION,
        "methods": methods,
        "error": error,
        "event": event,
        "$defs": defs,
    })
}

/// The event envelope with each type's `data` schema: the envelope and the
/// `{type, data}` union ([`crate::EventData`]) both hold.
pub(crate) fn typed_event(generator: &mut SchemaGenerator) -> serde_json::Value {
    serde_json::json!({"allOf": [
        generator.subschema_for::<crate::Event>(),
        generator.subschema_for::<crate::EventData>(),
    ]})
}
