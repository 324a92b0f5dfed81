//! Catalog build speed at 10,000 tools: name checks, ids, policy, sort and
//! the search index (built on first use: here by `warm_search`), with the tools moved in as a gateway does. The input
//! is the judged search corpus (kept with the index, in talon-search)
//! padded with the seeded distractors, as in the search benchmark. Results
//! in `docs/benchmarks.md`.
//!
//! `cargo bench -p talon-tools --bench catalog`
//!
//! Query latency and the index build alone are measured in talon-search:
//! `cargo bench -p talon-search --bench search`.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary; criterion's macros generate undocumented items"
)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use talon_protocol::ToolDefinition;
use talon_testing::synthetic::{corpus_tools, distractor_tools};
use talon_tools::{CatalogBuilder, RunScope, ToolPolicy};

/// The judged corpus's tools, as plugin tools owned by their name's prefix.
fn corpus() -> Vec<ToolDefinition> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../talon-search/tests/data/ironclaw-relevance.json"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("judged corpus")).unwrap();
    corpus_tools(&json)
}

fn benches(c: &mut Criterion) {
    let mut all = corpus();
    all.extend(distractor_tools(10_000 - all.len(), 0x5eed_7a10));
    let mut group = c.benchmark_group("build");
    group.sample_size(20);
    // The tools are moved in, as a gateway does; cloning the input is setup.
    group.bench_function("build_10000", |b| {
        b.iter_batched(
            || all.clone(),
            |tools| {
                let catalog = CatalogBuilder::new(RunScope::default())
                    .declared(tools)
                    .build(&ToolPolicy::new())
                    .unwrap();
                // The index is built on first use; a searching run warms
                // it while its model's first turn is pending.
                black_box(catalog.warm_search());
                black_box(catalog)
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(catalog, benches);
criterion_main!(catalog);
