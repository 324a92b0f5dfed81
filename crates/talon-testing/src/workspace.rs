//! The workspace's crate graph as `cargo metadata` reports it, for tests
//! that hold the crates' layering to what ARCHITECTURE.md draws.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// A crate and the workspace crates it depends on.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// Why the graph could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// `cargo metadata` did not run or failed.
    #[error("cargo metadata: {0}")]
    Cargo(String),
    /// Its output is not the JSON it documents.
    #[error("cargo metadata's output: {0}")]
    Output(#[from] serde_json::Error),
}

/// Every workspace crate and its normal (not dev or build) dependencies
/// on workspace crates (path dependencies), read offline from `cargo
/// metadata` run in `dir` (`$CARGO` when cargo runs the tests, else
/// `cargo`).
pub fn normal_edges(dir: &str) -> Result<Graph, GraphError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(dir)
        .output()
        .map_err(|e| GraphError::Cargo(e.to_string()))?;
    if !out.status.success() {
        return Err(GraphError::Cargo(
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    let metadata: Value = serde_json::from_slice(&out.stdout)?;
    let empty = Vec::new();
    Ok(metadata["packages"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|p| {
            let normal = p["dependencies"]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .filter(|d| d["kind"].is_null() && d["path"].is_string())
                .filter_map(|d| d["name"].as_str().map(str::to_owned))
                .collect();
            (p["name"].as_str().unwrap_or_default().to_owned(), normal)
        })
        .collect())
}

/// The workspace crates `name` reaches through normal dependencies,
/// directly or not.
pub fn closure(graph: &Graph, name: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut next = vec![name.to_owned()];
    while let Some(crate_name) = next.pop() {
        for dep in graph.get(&crate_name).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                next.push(dep.clone());
            }
        }
    }
    seen
}
