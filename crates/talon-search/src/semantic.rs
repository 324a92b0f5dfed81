//! The semantic half of ranking: each document's embedding (name words,
//! label and description through talon-embed's static table) and the
//! query's, compared by cosine.
//!
//! [`Embedder`] is the table plus a cache of document embeddings keyed by
//! the SHA-256 of the embedded text, so a catalog rebuilt with the same
//! tools (a new run, a reconnected MCP server) is never embedded twice.
//! [`Embedder::shared`] is the process's one embedder, loaded from Talon's
//! cache on first use; when the table is not there search ranks lexically
//! and says so once.
//!
//! [`Semantic`] says where an index gets its embeddings. With
//! [`Semantic::Shared`] nothing is loaded or embedded until the index is
//! first searched: a process that builds a catalog and never searches it
//! (most `talon exec` cells) never pays for the 16 MB table.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use sha2::{Digest, Sha256};
use talon_embed::StaticTable;

use crate::index::Document;
use crate::tokenize::for_each_word;

/// Document embeddings kept per embedder; the cache starts over when full.
const MAX_CACHED: usize = 100_000;
/// The largest token weight in a query's embedding.
const IDF_CAP: f32 = 4.0;

/// A document's unit vector (`None`: nothing in it the table knows).
type Vector = Option<Arc<[f32]>>;

/// A static embedding table and the document embeddings it produced.
pub struct Embedder {
    table: StaticTable,
    /// Keyed by the SHA-256 of the embedded text.
    cache: Mutex<HashMap<[u8; 32], Vector>>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// An embedder over `table`.
    pub fn new(table: StaticTable) -> Self {
        Self {
            table,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The process's embedder: the table in Talon's cache directory
    /// (`talon models prepare` puts it there), loaded once. `None`, after
    /// one warning, when it cannot be loaded: search then ranks lexically.
    pub fn shared() -> Option<Arc<Self>> {
        static SHARED: OnceLock<Option<Arc<Embedder>>> = OnceLock::new();
        SHARED
            .get_or_init(|| match talon_embed::load_table(None) {
                Ok(table) => Some(Arc::new(Self::new(table))),
                Err(error) => {
                    tracing::warn!(%error, "semantic tool search is off; ranking lexically");
                    None
                }
            })
            .clone()
    }

    /// Width of the vectors.
    pub fn dim(&self) -> usize {
        self.table.dim()
    }

    /// A text's unit vector (its token ids given), from the cache when the
    /// same text was embedded before (`None`: no token the table knows).
    fn document(&self, text: &str, ids: &[u32]) -> Vector {
        let key: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        if let Some(vector) = cached {
            return vector;
        }
        let vector: Vector = self.table.embed_ids(ids, |_| 1.0).map(Arc::from);
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(key, vector.clone());
        vector
    }
}

/// Where an index gets its embeddings.
#[derive(Debug, Clone, Default)]
pub enum Semantic {
    /// None: lexical ranking only.
    #[default]
    Off,
    /// This embedder; documents are embedded when the index is built.
    With(Arc<Embedder>),
    /// [`Embedder::shared`], loaded and the documents embedded on the
    /// index's first search (lexical ranking if it cannot be loaded).
    Shared,
}

/// What a document's embedding is made of: its name as words
/// (`slack_post_message` → `slack post message`), its label and its
/// description.
pub fn document_text(doc: &Document<'_>) -> String {
    let mut text = String::with_capacity(doc.name.len() + doc.description.len() + 16);
    for_each_word(doc.name, |word: &str| {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(word);
    });
    for part in [doc.label.unwrap_or(""), doc.description] {
        if !part.is_empty() {
            text.push_str(". ");
            text.push_str(part);
        }
    }
    text
}

/// The semantic side of an index: the embedder, each document's unit
/// vector and the catalog's token document frequencies.
#[derive(Debug, Clone)]
pub(crate) struct SemanticIndex {
    embedder: Arc<Embedder>,
    /// Unit document vectors, `documents × dim` (zeros for a document with
    /// nothing to embed). They are not centred on the catalog's mean: that
    /// would make every cosine, and so the no-match rule, depend on what
    /// else the catalog holds (measured on the development half: 39 % of
    /// task queries empty at 116 tools, 3 % at 10,000).
    vectors: Vec<f32>,
    /// Per token id of the table, how many documents contain it.
    df: HashMap<u32, u32>,
    documents: usize,
}

impl SemanticIndex {
    /// Embeds `texts` (one per document, [`document_text`]).
    pub(crate) fn new(embedder: Arc<Embedder>, texts: &[String]) -> Self {
        let dim = embedder.dim();
        let mut vectors = vec![0.0f32; texts.len() * dim];
        let mut df = HashMap::new();
        for (text, out) in texts.iter().zip(vectors.chunks_exact_mut(dim)) {
            // One tokenization serves the vector and the frequencies.
            let mut ids = embedder.table.tokens_of(text);
            if let Some(v) = embedder.document(text, &ids) {
                out.copy_from_slice(&v);
            }
            ids.sort_unstable();
            ids.dedup();
            for id in ids {
                *df.entry(id).or_insert(0u32) += 1;
            }
        }
        Self {
            embedder,
            vectors,
            df,
            documents: texts.len(),
        }
    }

    /// Every document's cosine to `query` (`None`: the query has no word
    /// the table knows). The query's tokens are weighted by their idf in
    /// this catalog (capped at [`IDF_CAP`]): a word every tool has says
    /// little about which one is meant.
    pub(crate) fn cosines(&self, query: &str) -> Option<Vec<f32>> {
        let n = self.documents as f32;
        let q = self.embedder.table.embed_weighted(query, |id| {
            let df = self.df.get(&id).copied().unwrap_or(0) as f32;
            ((n + 1.0) / (df + 1.0)).ln().min(IDF_CAP)
        })?;
        Some(
            self.vectors
                .chunks_exact(q.len())
                .map(|v| talon_embed::dot(&q, v))
                .collect(),
        )
    }
}

/// An index's semantic side, built when it is first needed.
#[derive(Debug, Clone, Default)]
pub(crate) struct LazySemantic {
    built: OnceLock<Option<SemanticIndex>>,
    /// The documents' texts, kept until then (shared embedder only).
    texts: Option<Arc<[String]>>,
}

impl LazySemantic {
    pub(crate) fn new(semantic: Semantic, docs: &[Document<'_>]) -> Self {
        let texts = || docs.iter().map(document_text).collect::<Vec<String>>();
        match semantic {
            Semantic::Off => Self::default(),
            Semantic::With(embedder) => Self {
                built: OnceLock::from(Some(SemanticIndex::new(embedder, &texts()))),
                texts: None,
            },
            Semantic::Shared => Self {
                built: OnceLock::new(),
                texts: Some(texts().into()),
            },
        }
    }

    /// The semantic index, built now if it was deferred.
    pub(crate) fn get(&self) -> Option<&SemanticIndex> {
        self.built
            .get_or_init(|| {
                let texts = self.texts.as_ref()?;
                Embedder::shared().map(|embedder| SemanticIndex::new(embedder, texts))
            })
            .as_ref()
    }
}

#[cfg(test)]
mod tests {
    use half::f16;
    use serde_json::json;
    use talon_embed::WordPiece;

    use super::*;
    use crate::index::SearchIndex;

    /// A four-dimensional table with one axis per topic: messaging,
    /// weather, calendars, and tea (which no tool is about).
    fn table() -> StaticTable {
        let topics: [&[&str]; 4] = [
            &[
                "send", "message", "channel", "slack", "tell", "team", "notify",
            ],
            &["weather", "forecast", "get", "rain", "umbrella"],
            &["calendar", "create", "event", "meeting", "book"],
            &["kettle", "tea", "brew"],
        ];
        let mut tokens: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
            .map(String::from)
            .to_vec();
        let mut vectors = vec![f16::ZERO; 4 * 4];
        for (axis, words) in topics.iter().enumerate() {
            for word in *words {
                tokens.push((*word).to_owned());
                let mut row = [f16::ZERO; 4];
                row[axis] = f16::ONE;
                vectors.extend(row);
            }
        }
        StaticTable::new(WordPiece::from_tokens(tokens).unwrap(), 4, vectors).unwrap()
    }

    fn index(semantic: Semantic) -> SearchIndex {
        let schema = json!({"type": "object"});
        let docs = [
            ("slack__send_message", "Send a message to a Slack channel."),
            ("weather__get_forecast", "Weather forecast."),
            ("calendar__create_event", "Create a calendar event."),
        ]
        .map(|(name, description)| Document {
            id: name,
            name,
            label: None,
            description,
            parameters: &schema,
        });
        SearchIndex::build_with(&docs, semantic)
    }

    fn top(index: &SearchIndex, query: &str) -> Vec<usize> {
        index.search(query, 5).iter().map(|h| h.doc).collect()
    }

    #[test]
    fn meaning_finds_tools_that_share_no_word_with_the_query() {
        let hybrid = index(Semantic::With(Arc::new(Embedder::new(table()))));
        let lexical = index(Semantic::Off);
        assert!(hybrid.is_semantic());
        assert!(!lexical.is_semantic());
        // No word of these queries is in the tools' text.
        assert_eq!(top(&hybrid, "tell the team"), vec![0]);
        assert_eq!(top(&hybrid, "umbrella needed?"), vec![1]);
        assert_eq!(top(&hybrid, "book a meeting"), vec![2]);
        assert_eq!(top(&lexical, "tell the team"), Vec::<usize>::new());
        // Nothing is about tea: empty, by both signals.
        assert_eq!(top(&hybrid, "brew tea in the kettle"), Vec::<usize>::new());
        // Words that mean nothing to the table or the catalog.
        assert_eq!(top(&hybrid, "zzz qqq"), Vec::<usize>::new());
        // Exact names stay first, and the lexical side still counts.
        assert_eq!(top(&hybrid, "weather__get_forecast")[0], 1);
        assert_eq!(top(&hybrid, "send a slack message")[0], 0);
    }

    #[test]
    fn document_vectors_are_embedded_once_per_text() {
        let embedder = Arc::new(Embedder::new(table()));
        let first = index(Semantic::With(embedder.clone()));
        let cached = embedder.cache.lock().unwrap().len();
        assert_eq!(cached, 3);
        let second = index(Semantic::With(embedder.clone()));
        assert_eq!(embedder.cache.lock().unwrap().len(), 3);
        assert_eq!(top(&first, "tell the team"), top(&second, "tell the team"));
        assert_eq!(
            document_text(&Document {
                id: "x",
                name: "slack__send_message",
                label: Some("Send"),
                description: "Posts.",
                parameters: &json!({}),
            }),
            "slack send message. Send. Posts."
        );
    }

    #[test]
    fn hostile_queries_are_answered_not_panicked_on() {
        let hybrid = index(Semantic::With(Arc::new(Embedder::new(table()))));
        let long = "tell the team ".repeat(10_000);
        let nul = "\0\u{7}\u{202e}tell\u{feff} team";
        let combining = "t\u{301}\u{301}\u{301}ell team";
        for query in [
            long.as_str(),
            nul,
            combining,
            "",
            "   ",
            "🦀🦀🦀",
            "[CLS] [SEP] [UNK]",
        ] {
            let hits = hybrid.search(query, 5);
            assert!(hits.len() <= 3, "{query:?}");
            assert!(hits.iter().all(|h| h.score.is_finite()), "{query:?}");
        }
        assert_eq!(top(&hybrid, &long), vec![0]);
    }
}
