//! The contract's cases (`contract/cases.json`) cover the whole method
//! table, and the one list of where a server differs on purpose,
//! `docs/fake-differences.md`, is rendered from their `differs` and the
//! contract's `unmodelled`.
//! Regenerate with `UPDATE_GENERATED=1 cargo nextest run -p talon-protocol contract`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;
use talon_protocol::gateway::Method;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn contract() -> Value {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contract/cases.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn cases() -> Vec<Value> {
    contract()["cases"].as_array().unwrap().clone()
}

/// The servers a case may name in `differs`.
const SERVERS: &[&str] = &["gateway", "rust-fake", "typescript-fake"];

#[test]
fn every_method_of_the_table_has_a_case() {
    let covered: BTreeSet<String> = cases()
        .iter()
        .map(|c| c["method"].as_str().unwrap().to_owned())
        .collect();
    let missing: Vec<&str> = Method::ALL
        .iter()
        .map(|m| m.name())
        .filter(|m| !covered.contains(*m))
        .collect();
    assert_eq!(missing, Vec::<&str>::new());
}

#[test]
fn every_case_is_well_formed() {
    let mut names = BTreeSet::new();
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        assert!(names.insert(name.to_owned()), "{name}: named twice");
        let expect = case["expect"].as_object().unwrap();
        assert_eq!(expect.len(), 1, "{name}");
        assert!(
            expect.contains_key("ok") || expect.contains_key("error"),
            "{name}"
        );
        if let Some(error) = expect.get("error") {
            for key in ["code", "message", "retryable"] {
                assert!(
                    error.get(key).is_some(),
                    "{name}: the whole error, {key} too"
                );
            }
        }
        for server in case["differs"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            assert!(SERVERS.contains(&server.as_str()), "{name}: {server}");
        }
    }
}

fn differences() -> String {
    let mut out = String::from(
        "# Where a server differs on purpose\n\n\
         <!-- Generated from crates/talon-protocol/contract/cases.json by talon-protocol's \
         tests: do not edit. Regenerate with \
         `UPDATE_GENERATED=1 cargo nextest run -p talon-protocol contract`. -->\n\n\
         The real gateway, the Rust fake (`talon-sdk-testing`) and the TypeScript fake \
         (`@talon/sdk-testing`) answer every case of the protocol's contract \
         (`crates/talon-protocol/contract/cases.json`) the same way, with the refusals and caps \
         of one table (`talon_protocol::gateway::{refusals, caps}`). This is every case a server \
         answers otherwise on purpose, and why.\n\n",
    );
    let mut any = false;
    for case in cases() {
        for (server, why) in case["differs"].as_object().into_iter().flatten() {
            any = true;
            let _ = writeln!(
                out,
                "- **{server}**, `{}` ({}): {}",
                case["method"].as_str().unwrap(),
                case["name"].as_str().unwrap(),
                why.as_str().unwrap()
            );
        }
    }
    if !any {
        out.push_str("None: every server answers every case alike.\n");
    }
    out.push_str("\n## What a fake does not model\n\n");
    for item in contract()["unmodelled"].as_array().unwrap() {
        let servers: Vec<&str> = item["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        for server in &servers {
            assert!(SERVERS.contains(server), "{server}");
        }
        let _ = writeln!(
            out,
            "- {} ({}): {}.",
            item["what"].as_str().unwrap(),
            servers.join(", "),
            item["why"].as_str().unwrap()
        );
    }
    out
}

#[test]
fn the_list_of_differences_is_generated() {
    let path = root().join("docs/fake-differences.md");
    let rendered = differences();
    if std::env::var_os("UPDATE_GENERATED").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/fake-differences.md is stale: run \
         UPDATE_GENERATED=1 cargo nextest run -p talon-protocol contract"
    );
}
