//! The static table search runs on: one float16 vector per vocabulary
//! token; a text's embedding is the mean of its tokens' vectors,
//! normalised to unit length (0.07 ms for a query, no model at run time).
//!
//! The table's file holds its vocabulary too, so search needs nothing but
//! this one file:
//!
//! ```text
//! 0   magic "TALONEMB"      8  version u32   12 dim u32   16 rows u32
//! 20  vocabulary bytes u32  24 source [32] (what it was distilled from)
//! 56  vocabulary: the tokens in id order, each ending in '\n'
//! ..  vectors: rows × dim float16, little-endian
//! ..  SHA-256 of everything before it [32]
//! ```

use std::path::Path;

use half::f16;
use half::slice::HalfFloatSliceExt as _;
use sha2::{Digest, Sha256};
use talon_fs::Symlinks;

use crate::error::{EmbedError, Result};
use crate::tokenizer::WordPiece;

const MAGIC: &[u8; 8] = b"TALONEMB";
const VERSION: u32 = 1;
const HEADER: usize = 56;
/// The largest table file read (today's is 16 MB).
const MAX_TABLE_BYTES: u64 = 256 << 20;
/// Tokens of a text that count towards its embedding.
pub const MAX_TOKENS: usize = 512;

/// A vocabulary and a vector per token.
#[derive(Clone)]
pub struct StaticTable {
    tokenizer: WordPiece,
    dim: usize,
    vectors: Vec<f16>,
}

impl std::fmt::Debug for StaticTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTable")
            .field("rows", &self.tokenizer.len())
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

impl StaticTable {
    /// A table of `tokenizer.len()` rows of `dim` values.
    pub fn new(tokenizer: WordPiece, dim: usize, vectors: Vec<f16>) -> Result<Self> {
        if dim == 0 || vectors.len() != tokenizer.len() * dim {
            return Err(EmbedError::invalid(format!(
                "{} values for {} tokens of {dim} dimensions",
                vectors.len(),
                tokenizer.len()
            )));
        }
        Ok(Self {
            tokenizer,
            dim,
            vectors,
        })
    }

    /// Width of the vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The tokenizer of its vocabulary.
    pub fn tokenizer(&self) -> &WordPiece {
        &self.tokenizer
    }

    /// The unit-length mean of the vectors of `text`'s tokens (at most
    /// [`MAX_TOKENS`], `[UNK]` skipped); `None` when no token has a
    /// non-zero vector.
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        self.embed_weighted(text, |_| 1.0)
    }

    /// Like [`StaticTable::embed`], each token's vector scaled by
    /// `weight(token id)`.
    pub fn embed_weighted(&self, text: &str, weight: impl Fn(u32) -> f32) -> Option<Vec<f32>> {
        self.embed_ids(&self.tokens_of(text), weight)
    }

    /// Like [`StaticTable::embed_weighted`], over token ids already taken
    /// from [`StaticTable::tokens_of`] (ids outside the table are skipped).
    pub fn embed_ids(&self, ids: &[u32], weight: impl Fn(u32) -> f32) -> Option<Vec<f32>> {
        let mut sum = vec![0.0f32; self.dim];
        let mut row = vec![0.0f32; self.dim];
        let unk = self.tokenizer.unk();
        for &id in ids {
            if id == unk || id as usize >= self.tokenizer.len() {
                continue;
            }
            let w = weight(id);
            let at = id as usize * self.dim;
            self.vectors[at..at + self.dim].convert_to_f32_slice(&mut row);
            for (s, v) in sum.iter_mut().zip(&row) {
                *s += w * v;
            }
        }
        normalize(&mut sum).then_some(sum)
    }

    /// The token ids of `text` (at most [`MAX_TOKENS`]).
    pub fn tokens_of(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, MAX_TOKENS)
    }

    /// Writes the table to `path` through a temporary file and a rename.
    pub fn save(&self, path: &Path, source: &[u8; 32]) -> Result<()> {
        let bytes = self.to_bytes(source)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, &bytes)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                EmbedError::io(path, e)
            })
    }

    /// The file's bytes.
    pub fn to_bytes(&self, source: &[u8; 32]) -> Result<Vec<u8>> {
        let vocab: String = self
            .tokenizer
            .tokens()
            .iter()
            .map(|t| format!("{t}\n"))
            .collect();
        let as_u32 = |n: usize, what: &str| {
            u32::try_from(n).map_err(|_| EmbedError::invalid(format!("{what} too large")))
        };
        let mut out = Vec::with_capacity(HEADER + vocab.len() + self.vectors.len() * 2 + 32);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&as_u32(self.dim, "dim")?.to_le_bytes());
        out.extend_from_slice(&as_u32(self.tokenizer.len(), "rows")?.to_le_bytes());
        out.extend_from_slice(&as_u32(vocab.len(), "vocabulary")?.to_le_bytes());
        out.extend_from_slice(source);
        out.extend_from_slice(vocab.as_bytes());
        for v in &self.vectors {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let digest = Sha256::digest(&out);
        out.extend_from_slice(&digest);
        Ok(out)
    }

    /// Reads a table written by [`StaticTable::save`] and distilled from
    /// `source`.
    pub fn load(path: &Path, source: &[u8; 32]) -> Result<Self> {
        let bytes = talon_fs::read_capped(path, MAX_TABLE_BYTES, Symlinks::Follow)?;
        Self::from_bytes(&bytes, source)
    }

    /// Parses a table file's bytes; checks its checksum, its source and
    /// every length before anything is used.
    pub fn from_bytes(bytes: &[u8], source: &[u8; 32]) -> Result<Self> {
        let bad = |m: &str| EmbedError::invalid(format!("embedding table: {m}"));
        if bytes.len() < HEADER + 32 || &bytes[..8] != MAGIC {
            return Err(bad("not a Talon embedding table"));
        }
        let (body, digest) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body).as_slice() != digest {
            return Err(bad("checksum mismatch (truncated or corrupted)"));
        }
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize
        };
        if word(8) != VERSION as usize {
            return Err(bad(&format!(
                "version {}, this build reads {VERSION}",
                word(8)
            )));
        }
        if &bytes[24..56] != source {
            return Err(bad("distilled from another model"));
        }
        let (dim, rows, vocab_len) = (word(12), word(16), word(20));
        let vectors_len = rows
            .checked_mul(dim)
            .and_then(|n| n.checked_mul(2))
            .ok_or_else(|| bad("size overflows"))?;
        if dim == 0 || HEADER + vocab_len + vectors_len != body.len() {
            return Err(bad("lengths do not add up"));
        }
        let vocab = std::str::from_utf8(&body[HEADER..HEADER + vocab_len])
            .map_err(|_| bad("vocabulary is not UTF-8"))?;
        let tokens: Vec<String> = vocab.split_terminator('\n').map(str::to_owned).collect();
        if tokens.len() != rows {
            return Err(bad("vocabulary and rows differ"));
        }
        let vectors = body[HEADER + vocab_len..]
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]))
            .collect();
        Self::new(WordPiece::from_tokens(tokens)?, dim, vectors)
    }
}

/// Scales `v` to unit length; `false` when it is zero (or not finite).
pub fn normalize(v: &mut [f32]) -> bool {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !norm.is_finite() || norm <= f32::MIN_POSITIVE {
        return false;
    }
    v.iter_mut().for_each(|x| *x /= norm);
    true
}

/// The dot product of two vectors (their cosine, when both are unit).
/// Eight running sums, so that the compiler can keep them in one SIMD
/// register.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    sums.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> StaticTable {
        let tokens = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "send", "mail", "weather",
        ];
        let tokenizer =
            WordPiece::from_tokens(tokens.iter().map(|t| (*t).to_owned()).collect()).unwrap();
        let rows: [[f32; 2]; 7] = [
            [0.0, 0.0],
            [9.0, 9.0],
            [0.0, 0.0],
            [0.0, 0.0],
            [1.0, 0.0],
            [1.0, 0.2],
            [0.0, 1.0],
        ];
        let vectors = rows.iter().flatten().map(|v| f16::from_f32(*v)).collect();
        StaticTable::new(tokenizer, 2, vectors).unwrap()
    }

    #[test]
    fn embeds_the_normalised_mean_of_known_tokens() {
        let t = table();
        let v = t.embed("Send MAIL, xyz").unwrap();
        let n = (2.0f32 * 2.0 + 0.2 * 0.2).sqrt();
        assert!(
            (v[0] - 2.0 / n).abs() < 1e-3 && (v[1] - 0.2 / n).abs() < 1e-3,
            "{v:?}"
        );
        assert_eq!(t.embed("xyz qqq"), None, "only unknown words");
        assert_eq!(t.embed(""), None);
        assert!(dot(&t.embed("weather").unwrap(), &v) < 0.2);
    }

    #[test]
    fn dot_handles_any_length() {
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let expected: f32 = a.iter().map(|x| x * x).sum();
        assert_eq!(dot(&a, &a), expected);
        assert_eq!(dot(&[], &[]), 0.0);
    }

    #[test]
    fn round_trips_through_its_file_format() {
        let t = table();
        let source = [7u8; 32];
        let bytes = t.to_bytes(&source).unwrap();
        let back = StaticTable::from_bytes(&bytes, &source).unwrap();
        assert_eq!(back.tokenizer().tokens(), t.tokenizer().tokens());
        assert_eq!(back.vectors, t.vectors);
        assert_eq!(back.dim(), 2);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("table.bin");
        t.save(&path, &source).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert_eq!(
            StaticTable::load(&path, &source).unwrap().vectors,
            t.vectors
        );
    }

    #[test]
    fn refuses_damaged_or_foreign_files() {
        let source = [7u8; 32];
        let bytes = table().to_bytes(&source).unwrap();
        let error = |b: &[u8], s: &[u8; 32]| StaticTable::from_bytes(b, s).unwrap_err().to_string();
        assert!(error(&bytes, &[8u8; 32]).contains("another model"));
        let mut flipped = bytes.clone();
        flipped[HEADER + 3] ^= 1;
        assert!(error(&flipped, &source).contains("checksum"));
        assert!(error(&bytes[..bytes.len() - 1], &source).contains("checksum"));
        assert!(error(b"short", &source).contains("not a Talon"));
        // A consistent checksum over inconsistent lengths.
        let mut forged = bytes[..bytes.len() - 32].to_vec();
        forged[16] = 200;
        let digest = Sha256::digest(&forged);
        forged.extend_from_slice(&digest);
        assert!(error(&forged, &source).contains("lengths"));
    }
}
