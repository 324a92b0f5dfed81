//! Search over tool catalogs: a BM25F index written for them, fused with
//! the cosine of static sentence embeddings (talon-embed's table) when the
//! table is there.
//!
//! Fields: name, id, label, description, parameter names and parameter
//! descriptions (nested to depth 4), each with a weight and its own length
//! normalisation. Exact name or id hits rank first. A query gets an empty
//! result only when nothing is plausibly about it by both signals (no
//! document covers enough of its idf-weighted words and none is close in
//! meaning), so a query about nothing in the catalog gets no filler and a
//! long, plainly worded request is not lost.
//!
//! The crate knows documents, not tools: the caller (`talon-tools`' catalog)
//! decides what is indexed, in which order, and what a hit refers to.
//! Building and searching have no failure cases, so there is no error type.

mod index;
mod semantic;
pub mod tokenize;

pub use index::{Document, Hit, Ranking, SearchIndex, Signals};
pub use semantic::{Embedder, Semantic, document_text};
