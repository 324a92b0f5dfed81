//! Search speed: query latency (p50, p95) at 1,000 and 10,000 tools,
//! lexical and hybrid (query embedding included), over the queries of both
//! judged corpora against the peer corpus padded with the seeded
//! distractors; index build, lexical and hybrid with every tool new to the
//! embedder (and again with its cache warm); loading the embedding table.
//! Results in `docs/benchmarks.md`.
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

use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use talon_embed::StaticTable;
use talon_protocol::ToolDefinition;
use talon_search::{Document, Embedder, SearchIndex, Semantic};
use talon_testing::synthetic::{corpus_tools, distractor_tools};

fn corpus_json(name: &str) -> serde_json::Value {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("judged corpus")).unwrap()
}

/// The peer corpus's tools, and the queries of both corpora (short keyword
/// queries and plainly worded requests; they drive the timing).
fn corpus() -> (Vec<ToolDefinition>, Vec<String>) {
    let peer = corpus_json("ironclaw-relevance.json");
    let talon = corpus_json("talon-corpus.json");
    let tools = corpus_tools(&peer);
    let queries = [&peer, &talon]
        .into_iter()
        .flat_map(|json| json["intents"].as_array().unwrap().iter())
        .map(|i| i["query"].as_str().unwrap().to_owned())
        .collect();
    (tools, queries)
}

/// The static table (distilled into the cache first if need be).
fn table() -> StaticTable {
    let started = Instant::now();
    let table = talon_embed::prepare(None, Default::default())
        .expect("the embedding table (scripts/setup.sh fetches the model)");
    println!("table ready in {:?}", started.elapsed());
    let path = talon_embed::model::table_path(None).unwrap();
    let mut loads: Vec<Duration> = (0..10)
        .map(|_| {
            let t = Instant::now();
            black_box(talon_embed::load_table(None).unwrap());
            t.elapsed()
        })
        .collect();
    loads.sort();
    println!(
        "table load ({} bytes, checksum checked): median {:?}",
        std::fs::metadata(path).unwrap().len(),
        loads[loads.len() / 2]
    );
    table
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
    let table = table();
    let embedder = Arc::new(Embedder::new(table.clone()));
    for size in [1_000, 10_000] {
        let entries = catalog(&tools, size);
        let docs = documents(&entries);
        for (mode, semantic) in [
            ("lexical", Semantic::Off),
            ("hybrid", Semantic::With(embedder.clone())),
        ] {
            let index = SearchIndex::build_with(&docs, semantic);
            let (p50, p95) = percentiles(&index, &queries);
            println!(
                "{mode} query latency at {size} tools: p50 {p50:?}, p95 {p95:?} ({} queries x 200)",
                queries.len()
            );
            c.bench_function(&format!("query_{mode}_{size}"), |b| {
                let mut i = 0;
                b.iter(|| {
                    i = (i + 1) % queries.len();
                    black_box(index.search(&queries[i], 8))
                })
            });
        }
    }
    let mut group = c.benchmark_group("build");
    group.sample_size(20);
    for size in [1_000, 10_000] {
        let entries = catalog(&tools, size);
        let docs = documents(&entries);
        group.bench_function(format!("lexical_{size}"), |b| {
            b.iter(|| black_box(SearchIndex::build(&docs)))
        });
        // Every tool new: a fresh embedder (its table cloned outside the
        // timing), so each document is embedded.
        group.bench_function(format!("hybrid_new_{size}"), |b| {
            b.iter_batched(
                || Arc::new(Embedder::new(table.clone())),
                |fresh| black_box(SearchIndex::build_with(&docs, Semantic::With(fresh))),
                BatchSize::PerIteration,
            )
        });
        // The same catalog again (a new run): embeddings from the cache.
        black_box(SearchIndex::build_with(
            &docs,
            Semantic::With(embedder.clone()),
        ));
        group.bench_function(format!("hybrid_cached_{size}"), |b| {
            b.iter(|| {
                black_box(SearchIndex::build_with(
                    &docs,
                    Semantic::With(embedder.clone()),
                ))
            })
        });
    }
    group.finish();
}

criterion_group!(search, benches);
criterion_main!(search);
