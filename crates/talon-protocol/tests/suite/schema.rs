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
