//! Search over tool catalogs: a BM25F index written for them.
//!
//! Fields: name, id, label, description, parameter names and parameter
//! descriptions (nested to depth 4), each with a weight and its own length
//! normalisation. Exact name or id hits rank first. A document is returned
//! only if it covers enough of the query (by idf weight), so a query about
//! nothing in the catalog gets an empty result rather than filler.
//!
//! The crate knows documents, not tools: the caller (`talon-tools`' catalog)
//! decides what is indexed, in which order, and what a hit refers to.
//! Building and searching have no failure cases, so there is no error type.

mod index;
pub mod tokenize;

pub use index::{Document, Hit, SearchIndex};
