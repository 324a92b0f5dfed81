//! Renders the JSON Schema of every wire type into one document, and the
//! rewrites every generated document gets ([`simplify_enums`]): a unit
//! enum is `{"type": "string", "enum": [...]}`, its variants' docs listed
//! in its description, because code generators (openapi-python-client,
//! openapi-typescript) read `enum` and trip on a `oneOf` of `const`s.
//!
//! Times on the wire follow one convention ([`TIME_CONVENTION`]): an
//! instant is an integer count of milliseconds since the Unix epoch (UTC)
//! in a field named `…At` (the event envelope's `ts`); a duration is an
//! integer count of milliseconds in a field named `…Ms`.

use schemars::{JsonSchema, SchemaGenerator};
use serde_json::Value;

/// The API-wide rule for times, stated in each document's description.
pub const TIME_CONVENTION: &str = "Times: an instant is an integer count of milliseconds since the Unix \
epoch (UTC), in a field named `…At` (the event envelope's `ts`); a duration is an integer count of \
milliseconds, in a field named `…Ms`.";

/// Rewrites every `oneOf` whose branches are all string `const`s (what
/// schemars makes of a unit enum with documented variants) into a string
/// `enum`; each variant's doc goes into the description as a list item.
pub fn simplify_enums(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(branches)) = map.get("oneOf")
                && let Some(variants) = string_consts(branches)
            {
                let items: Vec<String> = variants
                    .iter()
                    .filter_map(|(name, doc)| {
                        doc.as_ref()
                            .map(|doc| format!("- `{name}`: {}", doc.replace('\n', " ")))
                    })
                    .collect();
                let mut description = map
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if !items.is_empty() {
                    if !description.is_empty() {
                        description.push_str("\n\n");
                    }
                    description.push_str(&items.join("\n"));
                }
                map.remove("oneOf");
                map.insert("type".into(), Value::String("string".into()));
                map.insert(
                    "enum".into(),
                    Value::Array(
                        variants
                            .into_iter()
                            .map(|(name, _)| Value::String(name))
                            .collect(),
                    ),
                );
                if !description.is_empty() {
                    map.insert("description".into(), Value::String(description));
                }
            }
            map.values_mut().for_each(simplify_enums);
        }
        Value::Array(items) => items.iter_mut().for_each(simplify_enums),
        _ => {}
    }
}

/// The `(value, doc)` of each branch when every branch is a string
/// `const` with at most a description beside it.
fn string_consts(branches: &[Value]) -> Option<Vec<(String, Option<String>)>> {
    if branches.is_empty() {
        return None;
    }
    branches
        .iter()
        .map(|branch| {
            let map = branch.as_object()?;
            let name = map.get("const")?.as_str()?.to_owned();
            let only_known = map.iter().all(|(key, value)| match key.as_str() {
                "const" | "description" => true,
                "type" => value == "string",
                _ => false,
            });
            only_known.then(|| {
                let doc = map
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                (name, doc)
            })
        })
        .collect()
}

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
    let mut doc = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Talon protocol",
        "description": TIME_CONVENTION,
        "$defs": defs,
    });
    simplify_enums(&mut doc);
    doc
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
    let mut doc = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Talon gateway protocol",
        "description": TIME_CONVENTION,
        "version": PROTOCOL_VERSION,
        "methods": methods,
        "error": error,
        "event": event,
        "$defs": defs,
    });
    simplify_enums(&mut doc);
    doc
}

/// The event envelope with each type's `data` schema: the envelope and the
/// `{type, data}` union ([`crate::EventData`]) both hold.
pub(crate) fn typed_event(generator: &mut SchemaGenerator) -> serde_json::Value {
    serde_json::json!({"allOf": [
        generator.subschema_for::<crate::Event>(),
        generator.subschema_for::<crate::EventData>(),
    ]})
}
