//! Search speed: index build at 10,000 tools, query latency (p50, p95) at
//! 1,000 and 10,000 tools, over the judged corpus padded with the seeded
//! distractors. Results in `docs/benchmarks.md`.
//!
//! `cargo bench -p talon-tools --bench search`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary; criterion's macros generate undocumented items"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use talon_protocol::{ToolDefinition, ToolSource};
use talon_tools::search::synthetic::distractor_tools;
use talon_tools::{Catalog, CatalogBuilder, RunScope, ToolPolicy};

/// The judged corpus's tools and queries (the queries drive the timing).
fn corpus() -> (Vec<ToolDefinition>, Vec<String>) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/ironclaw-relevance.json"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("judged corpus")).unwrap();
    let tools = json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap().to_owned();
            let owner = name.split_once("__").map_or("core", |(o, _)| o).to_owned();
            ToolDefinition {
                name,
                label: None,
                description: t["description"].as_str().unwrap_or("").to_owned(),
                parameters: t["parameters"].clone(),
                source: ToolSource::Plugin,
                owner,
                catalog_mode: Default::default(),
                execution_mode: Default::default(),
                requires_approval: false,
                effect: Default::default(),
                replay_safe: false,
            }
        })
        .collect();
    let queries = json["intents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["query"].as_str().unwrap().to_owned())
        .collect();
    (tools, queries)
}

fn catalog(tools: &[ToolDefinition], size: usize) -> Catalog {
    let mut all = tools.to_vec();
    all.extend(distractor_tools(
        size.saturating_sub(all.len()),
        0x5eed_7a10,
    ));
    CatalogBuilder::new(RunScope::default())
        .declared(all)
        .build(&ToolPolicy::new())
        .unwrap()
}

fn percentiles(catalog: &Catalog, queries: &[String]) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(queries.len() * 200);
    for _ in 0..200 {
        for q in queries {
            let t = Instant::now();
            black_box(catalog.search(q, 8));
            times.push(t.elapsed());
        }
    }
    times.sort();
    (times[times.len() / 2], times[times.len() * 95 / 100])
}

fn benches(c: &mut Criterion) {
    let (tools, queries) = corpus();
    for size in [1_000, 10_000] {
        let catalog = catalog(&tools, size);
        let (p50, p95) = percentiles(&catalog, &queries);
        println!(
            "query latency at {size} tools: p50 {p50:?}, p95 {p95:?} ({} queries x 200)",
            queries.len()
        );
        c.bench_function(&format!("query_{size}"), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(catalog.search(&queries[i], 8))
            })
        });
    }
    let mut all = tools.clone();
    all.extend(distractor_tools(10_000 - tools.len(), 0x5eed_7a10));
    let mut group = c.benchmark_group("build");
    group.sample_size(20);
    // The tools are moved in, as a gateway does; cloning the input is setup.
    group.bench_function("build_10000", |b| {
        b.iter_batched(
            || all.clone(),
            |tools| {
                black_box(
                    CatalogBuilder::new(RunScope::default())
                        .declared(tools)
                        .build(&ToolPolicy::new())
                        .unwrap(),
                )
            },
            BatchSize::LargeInput,
        )
    });
    let catalog = CatalogBuilder::new(RunScope::default())
        .declared(all.clone())
        .build(&ToolPolicy::new())
        .unwrap();
    let docs: Vec<talon_tools::search::Document<'_>> =
        catalog.entries().iter().map(|e| e.document()).collect();
    group.bench_function("index_only_10000", |b| {
        b.iter(|| black_box(talon_tools::search::SearchIndex::build(&docs)))
    });
    group.finish();
}

criterion_group!(search, benches);
criterion_main!(search);
