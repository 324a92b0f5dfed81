//! Hybrid search takes any query without panicking: hits are within the
//! catalog, scores are finite, and a query is answered the same way twice.
#![no_main]

use std::sync::{Arc, OnceLock};

use half::f16;
use libfuzzer_sys::fuzz_target;
use talon_embed::{StaticTable, WordPiece};
use talon_search::{Document, Embedder, SearchIndex, Semantic};

fn index() -> &'static SearchIndex {
    static INDEX: OnceLock<SearchIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        let words = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "send", "message", "slack", "issue", "create",
            "weather", "##s", "é", "🦀",
        ];
        let tokens: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        let dim = 3;
        let vectors: Vec<f16> = (0..tokens.len() * dim)
            .map(|i| f16::from_f32(((i * 7919) % 13) as f32 / 13.0 - 0.4))
            .collect();
        let table =
            StaticTable::new(WordPiece::from_tokens(tokens).unwrap(), dim, vectors).unwrap();
        let schema =
            serde_json::json!({"type": "object", "properties": {"channel": {"type": "string"}}});
        let docs = [
            ("slack__send_message", "Send a message to a Slack channel."),
            ("github__create_issue", "Create an issue."),
            ("weather__forecast", "Weather forecast ☔."),
        ]
        .map(|(name, description)| Document {
            id: name,
            name,
            label: None,
            description,
            parameters: &schema,
        });
        SearchIndex::build_with(&docs, Semantic::With(Arc::new(Embedder::new(table))))
    })
}

fuzz_target!(|data: &[u8]| {
    let query = String::from_utf8_lossy(data);
    let index = index();
    let hits = index.search(&query, 8);
    assert!(hits.len() <= 3);
    assert!(hits.iter().all(|h| h.doc < 3 && h.score.is_finite()));
    assert_eq!(hits, index.search(&query, 8));
});
