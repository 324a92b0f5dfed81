//! The judged corpora and how a ranking is measured on them: shared by
//! the quality gate (`quality.rs`) and the reports and calibrations that
//! only print (`benches/quality.rs`, which includes this file).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use talon_protocol::ToolDefinition;
use talon_search::{Document, Embedder, SearchIndex, Semantic};
use talon_testing::relevance::{Corpus, Metrics, Split, evaluate};

/// The catalog size the targets are set at.
pub const TOTAL: usize = 1000;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

pub fn peer() -> Corpus {
    Corpus::load(&data("ironclaw-relevance.json"))
}

pub fn talon() -> Corpus {
    Corpus::load(&data("talon-corpus.json"))
}

/// The embedder over the cached table (distilled here if need be).
pub fn embedder() -> Arc<Embedder> {
    static EMBEDDER: OnceLock<Arc<Embedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let table = talon_embed::prepare(None, Default::default()).unwrap_or_else(|e| {
                panic!("the embedding table is required (scripts/setup.sh fetches the model): {e}")
            });
            Arc::new(Embedder::new(table))
        })
        .clone()
}

/// The catalog ids tools get (`<source>:<owner>:<name>`).
pub fn ids(tools: &[ToolDefinition]) -> Vec<String> {
    tools
        .iter()
        .map(|t| format!("{}:{}:{}", t.source.as_str(), t.owner, t.name))
        .collect()
}

pub fn index(tools: &[ToolDefinition], embedder: Option<Arc<Embedder>>) -> SearchIndex {
    let ids = ids(tools);
    let docs: Vec<Document<'_>> = tools
        .iter()
        .zip(&ids)
        .map(|(t, id)| Document {
            id,
            name: &t.name,
            label: t.label.as_deref(),
            description: &t.description,
            parameters: &t.parameters,
        })
        .collect();
    let semantic = match embedder {
        Some(e) => Semantic::With(e),
        None => Semantic::Off,
    };
    SearchIndex::build_with(&docs, semantic)
}

/// The figures of `corpus`'s intents in `split`, at `total` tools.
pub fn measure(
    corpus: &Corpus,
    split: Option<Split>,
    total: usize,
    embedder: Option<Arc<Embedder>>,
) -> Metrics {
    let tools = corpus.padded(total);
    let index = index(&tools, embedder);
    evaluate(corpus.intents(split), |query| {
        index
            .search(query, 10)
            .iter()
            .map(|h| tools[h.doc].name.clone())
            .collect()
    })
}
