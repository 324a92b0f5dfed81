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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use sha2::{Digest, Sha256};
use talon_embed::StaticTable;

use crate::index::Document;
use crate::tokenize::for_each_word;

/// Document embeddings kept per embedder; the cache starts over when full.
const MAX_CACHED: usize = 100_000;

/// A static embedding table and the document embeddings it produced.
pub struct Embedder {
    table: StaticTable,
    cache: Mutex<HashMap<[u8; 32], Option<Arc<[f32]>>>>,
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
    /// (`talon models prepare`, or the tests' set-up, puts it there),
    /// loaded once. `None`, after one warning, when it cannot be loaded:
    /// search then ranks lexically.
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

    /// A query's unit vector (`None`: no word the table knows).
    pub fn query(&self, text: &str) -> Option<Vec<f32>> {
        self.table.embed(text)
    }

    /// A query's unit vector, each token weighted by `weight`.
    pub fn query_weighted(&self, text: &str, weight: impl Fn(u32) -> f32) -> Option<Vec<f32>> {
        self.table.embed_weighted(text, weight)
    }

    /// The token ids of a document's embedded text.
    pub(crate) fn document_tokens(&self, doc: &Document<'_>) -> Vec<u32> {
        self.table.tokens_of(&document_text(doc))
    }

    /// A document's unit vector, from the cache when the same text was
    /// embedded before.
    pub fn document(&self, doc: &Document<'_>) -> Option<Arc<[f32]>> {
        let text = document_text(doc);
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
        let vector: Option<Arc<[f32]>> = self.table.embed(&text).map(Arc::from);
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(key, vector.clone());
        vector
    }
}

/// What a document's embedding is made of: its name as words
/// (`slack_post_message` → `slack post message`), its label and its
/// description.
pub(crate) fn document_text(doc: &Document<'_>) -> String {
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

/// Every document's vector, `docs.len() × dim` (zeros for a document with
/// nothing to embed).
pub(crate) fn embed_all(embedder: &Embedder, docs: &[Document<'_>]) -> Vec<f32> {
    let dim = embedder.dim();
    let mut vectors = vec![0.0f32; docs.len() * dim];
    for (doc, out) in docs.iter().zip(vectors.chunks_exact_mut(dim)) {
        if let Some(v) = embedder.document(doc) {
            out.copy_from_slice(&v);
        }
    }
    vectors
}
