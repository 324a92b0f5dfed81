//! The store's place in the crate graph, read from `cargo metadata`: it
//! keeps suspended cells through `talon-cells` and never reaches the Code
//! Mode engine, the sandbox or the agent loop (they would bring wasmtime,
//! Cranelift and swc into every build of the persistence layer).

use std::collections::BTreeSet;

use talon_testing::workspace::{closure, normal_edges};

#[test]
fn the_store_depends_on_the_cells_and_not_on_the_code_mode_engine() {
    let graph = normal_edges(env!("CARGO_MANIFEST_DIR")).unwrap();
    assert_eq!(
        closure(&graph, "talon-store"),
        BTreeSet::from(["talon-cells", "talon-fs", "talon-protocol"].map(String::from))
    );
    assert_eq!(
        closure(&graph, "talon-cells"),
        BTreeSet::from(["talon-fs", "talon-protocol"].map(String::from))
    );
}
