//! ARCHITECTURE.md's crate diagram against `cargo metadata`: the drawn
//! edges are exactly the workspace's normal (not dev or build) dependencies
//! between workspace crates, every crate is drawn once, every edge goes to
//! a lower layer, and the document stays a map (at most 300 lines).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ARCHITECTURE.md");
const MARKER: &str = "<!-- crate-graph";
const ARROW: &str = "──►";
const MAX_LINES: usize = 300;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn doc() -> String {
    std::fs::read_to_string(DOC).unwrap()
}

/// The diagram: the fenced block after the marker comment. Each line is
/// `talon-x ──► talon-a, talon-b` (or `──► (none)`); `# layer N: ...`
/// starts a layer. Returns the edges and each crate's layer.
fn drawn(doc: &str) -> (Graph, BTreeMap<String, u32>) {
    let mut lines = doc.lines().skip_while(|l| !l.starts_with(MARKER));
    assert!(
        lines.next().is_some(),
        "no `{MARKER}` marker in ARCHITECTURE.md"
    );
    let fence = lines.next().unwrap_or_default();
    assert!(
        fence.starts_with("```"),
        "the marker is not followed by a fence: {fence:?}"
    );
    let mut graph = Graph::new();
    let mut layers = BTreeMap::new();
    let mut layer = None;
    for line in lines.map(str::trim).take_while(|l| !l.starts_with("```")) {
        if line.is_empty() {
            continue;
        }
        if let Some(heading) = line.strip_prefix("# layer ") {
            let number = heading.split(':').next().unwrap().trim();
            layer = Some(number.parse::<u32>().unwrap());
            continue;
        }
        let (name, deps) = line
            .split_once(ARROW)
            .expect("a diagram line without `──►`");
        let name = name.trim().to_owned();
        let deps: BTreeSet<String> = match deps.trim() {
            "(none)" => BTreeSet::new(),
            deps => deps.split(',').map(|d| d.trim().to_owned()).collect(),
        };
        let layer = layer.expect("a crate drawn before the first `# layer N:` heading");
        assert!(
            layers.insert(name.clone(), layer).is_none(),
            "{name} drawn twice"
        );
        graph.insert(name, deps);
    }
    (graph, layers)
}

/// Every workspace crate and its normal dependencies on workspace crates.
fn workspace() -> Graph {
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
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let normal = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null() && d["path"].is_string())
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .collect();
            (p["name"].as_str().unwrap().to_owned(), normal)
        })
        .collect()
}

#[test]
fn the_crate_diagram_is_the_workspace_graph() {
    let (drawn, _) = drawn(&doc());
    let actual = workspace();
    assert_eq!(
        drawn.keys().collect::<BTreeSet<_>>(),
        actual.keys().collect::<BTreeSet<_>>(),
        "the diagram must draw every workspace crate, and only those"
    );
    assert_eq!(drawn, actual);
}

#[test]
fn every_drawn_edge_goes_to_a_lower_layer() {
    let (drawn, layers) = drawn(&doc());
    let upward: Vec<String> = drawn
        .iter()
        .flat_map(|(from, deps)| deps.iter().map(move |to| (from, to)))
        .filter(|(from, to)| layers.get(*to).is_none_or(|l| *l >= layers[*from]))
        .map(|(from, to)| format!("{from} ──► {to}"))
        .collect();
    assert_eq!(upward, Vec::<String>::new());
}

#[test]
fn the_architecture_document_is_a_map() {
    let lines = doc().lines().count();
    assert!(
        lines <= MAX_LINES,
        "ARCHITECTURE.md has {lines} lines; at most {MAX_LINES}"
    );
}
