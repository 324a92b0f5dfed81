//! The committed schema must match the types. Regenerate with
//! `UPDATE_SCHEMA=1 cargo test -p talon-protocol`.

use std::path::PathBuf;

#[test]
fn committed_schema_matches_types() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/talon-protocol.schema.json");
    let rendered =
        serde_json::to_string_pretty(&talon_protocol::schema::protocol_schema()).unwrap() + "\n";
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &rendered).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "schema/talon-protocol.schema.json is stale: run UPDATE_SCHEMA=1 cargo test -p talon-protocol"
    );
}

/// Regenerates `schema/<name>` from `render` (with `UPDATE_SCHEMA=1`) and
/// compares it with the committed file as parsed JSON, so that formatting
/// and key order never count.
fn check_generated(name: &str, render: fn() -> serde_json::Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(name);
    let rendered = render();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&rendered).unwrap() + "\n",
        )
        .unwrap();
    }
    let committed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|_| "null".into()))
            .unwrap_or(serde_json::Value::Null);
    assert!(
        committed == rendered,
        "schema/{name} is stale: run UPDATE_SCHEMA=1 cargo test -p talon-protocol"
    );
}

#[test]
fn committed_gateway_schema_matches_the_method_table() {
    check_generated(
        "gateway.schema.json",
        talon_protocol::schema::gateway_schema,
    );
}

#[test]
fn committed_openapi_matches_the_method_table() {
    check_generated("openapi.json", talon_protocol::openapi::openapi);
}

/// Every `$ref` in `doc`.
fn refs(doc: &serde_json::Value, out: &mut Vec<String>) {
    match doc {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", serde_json::Value::String(r)) => out.push(r.clone()),
                    _ => refs(value, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_reference_in_the_generated_documents_resolves() {
    for doc in [
        talon_protocol::schema::gateway_schema(),
        talon_protocol::openapi::openapi(),
    ] {
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(found.len() > 50, "{} refs", found.len());
        for r in found {
            let pointer = r.strip_prefix('#').expect("local reference");
            assert!(doc.pointer(pointer).is_some(), "{r} does not resolve");
        }
    }
}
