//! Search speed: index build at 10,000 tools, query latency (p50, p95) at
//! 1,000 and 10,000 tools, over the judged corpus padded with the seeded
//! distractors. Results in `docs/benchmarks.md`.
//!
//! `cargo bench -p talon-search --bench search`
//!
//! The catalog build around the index (name checks, ids, policy, sort) is
//! measured in talon-tools: `cargo bench -p talon-tools --bench catalog`.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary; criterion's macros generate undocumented items"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use talon_protocol::ToolDefinition;
use talon_search::{Document, SearchIndex};
use talon_testing::synthetic::{corpus_tools, distractor_tools};

/// The judged corpus's tools and queries (the queries drive the timing).
fn corpus() -> (Vec<ToolDefinition>, Vec<String>) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/ironclaw-relevance.json"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("judged corpus")).unwrap();
    let tools = corpus_tools(&json);
    let queries = json["intents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["query"].as_str().unwrap().to_owned())
        .collect();
    (tools, queries)
}

/// The corpus padded with distractors to `size` tools, with the ids a
/// catalog gives them (`<source>:<owner>:<tool-name>`), sorted by id as a
/// catalog keeps them.
fn catalog(tools: &[ToolDefinition], size: usize) -> Vec<(String, ToolDefinition)> {
    let mut all = tools.to_vec();
    all.extend(distractor_tools(
        size.saturating_sub(all.len()),
        0x5eed_7a10,
    ));
    let mut entries: Vec<(String, ToolDefinition)> = all
        .into_iter()
        .map(|t| (format!("{}:{}:{}", t.source.as_str(), t.owner, t.name), t))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

/// What the index reads of each entry, as the catalog gives it.
fn documents(entries: &[(String, ToolDefinition)]) -> Vec<Document<'_>> {
    entries
        .iter()
        .map(|(id, t)| Document {
            id,
            name: &t.name,
            label: t.label.as_deref(),
            description: &t.description,
            parameters: &t.parameters,
        })
        .collect()
}

fn percentiles(index: &SearchIndex, queries: &[String]) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(queries.len() * 200);
    for _ in 0..200 {
        for q in queries {
            let t = Instant::now();
            black_box(index.search(q, 8));
            times.push(t.elapsed());
        }
    }
    times.sort();
    (times[times.len() / 2], times[times.len() * 95 / 100])
}

fn benches(c: &mut Criterion) {
    let (tools, queries) = corpus();
    for size in [1_000, 10_000] {
        let entries = catalog(&tools, size);
        let index = SearchIndex::build(&documents(&entries));
        let (p50, p95) = percentiles(&index, &queries);
        println!(
            "query latency at {size} tools: p50 {p50:?}, p95 {p95:?} ({} queries x 200)",
            queries.len()
        );
        c.bench_function(&format!("query_{size}"), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(index.search(&queries[i], 8))
            })
        });
    }
    let entries = catalog(&tools, 10_000);
    let docs = documents(&entries);
    let mut group = c.benchmark_group("build");
    group.sample_size(20);
    group.bench_function("index_only_10000", |b| {
        b.iter(|| black_box(SearchIndex::build(&docs)))
    });
    group.finish();
}

criterion_group!(search, benches);
criterion_main!(search);
