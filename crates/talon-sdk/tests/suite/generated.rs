//! The committed low-level client must be what the method table
//! generates. Regenerate with
//! `UPDATE_GENERATED=1 cargo nextest run -p talon-sdk generated`.

use std::path::PathBuf;

#[test]
fn generated_client_matches_the_method_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/generated.rs");
    let rendered = talon_protocol::codegen::rust_client();
    if std::env::var_os("UPDATE_GENERATED").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "src/generated.rs is stale: run UPDATE_GENERATED=1 cargo nextest run -p talon-sdk generated"
    );
}
