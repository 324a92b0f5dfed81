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
