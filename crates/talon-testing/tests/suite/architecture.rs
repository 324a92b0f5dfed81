//! ARCHITECTURE.md's crate diagram against `cargo metadata`: the drawn
//! edges are exactly the workspace's normal (not dev or build) dependencies
//! between workspace crates, every crate is drawn once, every edge goes to
//! a lower layer, and the document stays a map (at most 300 lines).

use std::collections::{BTreeMap, BTreeSet};

use talon_testing::workspace::Graph;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ARCHITECTURE.md");
const MARKER: &str = "<!-- crate-graph";
const ARROW: &str = "──►";
const MAX_LINES: usize = 300;

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
    talon_testing::workspace::normal_edges(env!("CARGO_MANIFEST_DIR")).unwrap()
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

/// The `pub` error types (`…Error` structs and enums) the library crates'
/// sources declare, by name, with the files declaring each.
fn error_types() -> BTreeMap<String, BTreeSet<String>> {
    let crates = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(crates)
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines() {
                let line = line.trim_start();
                let Some(rest) = line
                    .strip_prefix("pub enum ")
                    .or_else(|| line.strip_prefix("pub struct "))
                else {
                    continue;
                };
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name.ends_with("Error") {
                    let shown = path.strip_prefix(crates).unwrap_or(&path);
                    found
                        .entry(name)
                        .or_default()
                        .insert(shown.display().to_string());
                }
            }
        }
    }
    found
}

#[test]
fn error_type_names_are_unique_in_the_workspace() {
    let twice: BTreeMap<String, BTreeSet<String>> = error_types()
        .into_iter()
        .filter(|(_, files)| files.len() > 1)
        .collect();
    assert_eq!(twice, BTreeMap::new());
}
