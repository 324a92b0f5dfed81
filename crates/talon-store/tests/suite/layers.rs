//! The store's place in the crate graph, read from `cargo metadata`: it
//! keeps suspended cells through `talon-cells` and never reaches the Code
//! Mode engine, the sandbox or the agent loop (they would bring wasmtime,
//! Cranelift and swc into every build of the persistence layer).

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use serde_json::Value;

/// The workspace crates `name` depends on, directly or not, through normal
/// (not dev or build) dependencies.
fn workspace_closure(packages: &[Value], name: &str) -> BTreeSet<String> {
    let deps: HashMap<&str, Vec<&str>> = packages
        .iter()
        .map(|p| {
            let normal = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null() && d["path"].is_string())
                .map(|d| d["name"].as_str().unwrap())
                .collect();
            (p["name"].as_str().unwrap(), normal)
        })
        .collect();
    let mut seen = BTreeSet::new();
    let mut next = vec![name];
    while let Some(crate_name) = next.pop() {
        for dep in deps.get(crate_name).into_iter().flatten() {
            if seen.insert((*dep).to_owned()) {
                next.push(dep);
            }
        }
    }
    seen
}

#[test]
fn the_store_depends_on_the_cells_and_not_on_the_code_mode_engine() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    assert_eq!(
        workspace_closure(packages, "talon-store"),
        BTreeSet::from(["talon-cells", "talon-fs", "talon-protocol"].map(String::from))
    );
    assert_eq!(
        workspace_closure(packages, "talon-cells"),
        BTreeSet::from(["talon-fs", "talon-protocol"].map(String::from))
    );
}
