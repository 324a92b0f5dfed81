//! Catalog search: a BM25F index written for tool catalogs.
//!
//! Fields: name, id, label, description, parameter names and parameter
//! descriptions (nested to depth 4), each with a weight and its own length
//! normalisation. Exact name or id hits rank first. A document is returned
//! only if it covers enough of the query (by idf weight), so a query about
//! nothing in the catalog gets an empty result rather than filler.

mod index;
pub mod synthetic;
pub mod tokenize;

pub use index::{Document, Hit, SearchIndex};
