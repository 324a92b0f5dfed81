//! all-MiniLM-L6-v2's encoder: a BERT of 6 layers, 384 hidden units, 12
//! attention heads and 1,536 intermediate units, read from the model's
//! `model.safetensors` (float32, tensor names without a `bert.` prefix),
//! with sentence-transformers' mean pooling over the tokens.
//!
//! It runs once per vocabulary token when the static table is distilled
//! ([`crate::distill`]) and in the tests that hold the table to the full
//! model; search itself never runs it. Inputs are never padded: each
//! sequence attends only to itself.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};
use talon_fs::Symlinks;

use crate::error::{EmbedError, Result};

/// Width of the hidden state (and of the encoder's sentence vectors).
pub const HIDDEN: usize = 384;
const HEADS: usize = 12;
const HEAD: usize = HIDDEN / HEADS;
const INTERMEDIATE: usize = 1536;
const LAYERS: usize = 6;
const MAX_POSITIONS: usize = 512;
const LAYER_NORM_EPS: f32 = 1e-12;
/// The largest model file read (today's is 90.9 MB).
const MAX_MODEL_BYTES: u64 = 512 << 20;

/// `y = x Wᵀ + b`, with `W` stored `[out, in]` as PyTorch does.
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct LayerNorm {
    gain: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The encoder's weights.
pub struct Bert {
    words: Vec<f32>,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    vocab: usize,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert")
            .field("vocab", &self.vocab)
            .field("layers", &self.layers.len())
            .finish_non_exhaustive()
    }
}

impl Bert {
    /// Reads the weights from a `model.safetensors` file.
    pub fn load(path: &Path) -> Result<Self> {
        let bytes = talon_fs::read_capped(path, MAX_MODEL_BYTES, Symlinks::Follow)?;
        Self::from_safetensors(&bytes)
    }

    /// Reads the weights from the bytes of a `model.safetensors` file.
    /// Every tensor must be float32 with the shape this architecture has.
    pub fn from_safetensors(bytes: &[u8]) -> Result<Self> {
        let file = SafeTensors::deserialize(bytes).map_err(|source| EmbedError::Safetensors {
            tensor: None,
            source,
        })?;
        let tensor = |name: &str, shape: &[usize]| -> Result<Vec<f32>> {
            let view = file
                .tensor(name)
                .map_err(|source| EmbedError::Safetensors {
                    tensor: Some(name.to_owned()),
                    source,
                })?;
            if view.dtype() != Dtype::F32 || view.shape() != shape {
                return Err(EmbedError::invalid(format!(
                    "model.safetensors: {name} is {:?} {:?}, expected F32 {shape:?}",
                    view.dtype(),
                    view.shape()
                )));
            }
            Ok(view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect())
        };
        let words_shape = file
            .tensor("embeddings.word_embeddings.weight")
            .map(|t| t.shape().to_vec())
            .map_err(|source| EmbedError::Safetensors {
                tensor: None,
                source,
            })?;
        let vocab = match words_shape.as_slice() {
            [vocab, HIDDEN] if *vocab > 0 => *vocab,
            other => {
                return Err(EmbedError::invalid(format!(
                    "model.safetensors: word embeddings of shape {other:?}"
                )));
            }
        };
        let linear = |name: &str, outputs: usize, inputs: usize| -> Result<Linear> {
            Ok(Linear {
                weight: tensor(&format!("{name}.weight"), &[outputs, inputs])?,
                bias: tensor(&format!("{name}.bias"), &[outputs])?,
                inputs,
                outputs,
            })
        };
        let norm = |name: &str| -> Result<LayerNorm> {
            Ok(LayerNorm {
                gain: tensor(&format!("{name}.weight"), &[HIDDEN])?,
                bias: tensor(&format!("{name}.bias"), &[HIDDEN])?,
            })
        };
        let layers = (0..LAYERS)
            .map(|i| {
                let p = format!("encoder.layer.{i}");
                Ok(Layer {
                    query: linear(&format!("{p}.attention.self.query"), HIDDEN, HIDDEN)?,
                    key: linear(&format!("{p}.attention.self.key"), HIDDEN, HIDDEN)?,
                    value: linear(&format!("{p}.attention.self.value"), HIDDEN, HIDDEN)?,
                    attention_out: linear(&format!("{p}.attention.output.dense"), HIDDEN, HIDDEN)?,
                    attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                    intermediate: linear(&format!("{p}.intermediate.dense"), INTERMEDIATE, HIDDEN)?,
                    output: linear(&format!("{p}.output.dense"), HIDDEN, INTERMEDIATE)?,
                    output_norm: norm(&format!("{p}.output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            words: tensor("embeddings.word_embeddings.weight", &[vocab, HIDDEN])?,
            positions: tensor(
                "embeddings.position_embeddings.weight",
                &[MAX_POSITIONS, HIDDEN],
            )?,
            token_type: tensor("embeddings.token_type_embeddings.weight", &[2, HIDDEN])?,
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            vocab,
        })
    }

    /// How many token ids the model knows.
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// The mean of the last hidden states of each sequence (token ids,
    /// special tokens included, at most 512 each): one `HIDDEN`-wide
    /// vector per sequence, not normalised.
    pub fn pooled(&self, sequences: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let mut spans = Vec::with_capacity(sequences.len());
        let mut rows = 0;
        for seq in sequences {
            if seq.is_empty() || seq.len() > MAX_POSITIONS {
                return Err(EmbedError::invalid(format!(
                    "a sequence of {} tokens (1..={MAX_POSITIONS})",
                    seq.len()
                )));
            }
            if let Some(bad) = seq.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(EmbedError::invalid(format!("token id {bad} out of range")));
            }
            spans.push((rows, seq.len()));
            rows += seq.len();
        }
        let mut x = vec![0.0f32; rows * HIDDEN];
        for (seq, &(start, _)) in sequences.iter().zip(&spans) {
            for (pos, &id) in seq.iter().enumerate() {
                let row = &mut x[(start + pos) * HIDDEN..(start + pos + 1) * HIDDEN];
                let word = &self.words[id as usize * HIDDEN..(id as usize + 1) * HIDDEN];
                let position = &self.positions[pos * HIDDEN..(pos + 1) * HIDDEN];
                for (i, out) in row.iter_mut().enumerate() {
                    *out = word[i] + position[i] + self.token_type[i];
                }
            }
        }
        self.embedding_norm.apply(&mut x);
        let mut scratch = Scratch::default();
        for layer in &self.layers {
            layer.apply(&mut x, &spans, &mut scratch);
        }
        Ok(spans
            .iter()
            .map(|&(start, len)| {
                let mut mean = vec![0.0f32; HIDDEN];
                for row in x[start * HIDDEN..(start + len) * HIDDEN].chunks_exact(HIDDEN) {
                    for (m, v) in mean.iter_mut().zip(row) {
                        *m += v;
                    }
                }
                let n = len as f32;
                mean.iter_mut().for_each(|m| *m /= n);
                mean
            })
            .collect())
    }
}

/// Buffers reused across layers.
#[derive(Default)]
struct Scratch {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    context: Vec<f32>,
    projected: Vec<f32>,
    wide: Vec<f32>,
    scores: Vec<f32>,
}

impl Layer {
    fn apply(&self, x: &mut [f32], spans: &[(usize, usize)], s: &mut Scratch) {
        let rows = x.len() / HIDDEN;
        self.query.apply(x, rows, &mut s.q);
        self.key.apply(x, rows, &mut s.k);
        self.value.apply(x, rows, &mut s.v);
        s.context.clear();
        s.context.resize(rows * HIDDEN, 0.0);
        let scale = 1.0 / (HEAD as f32).sqrt();
        for &(start, len) in spans {
            for head in 0..HEADS {
                let at = |row: usize| (start + row) * HIDDEN + head * HEAD;
                for i in 0..len {
                    let q = &s.q[at(i)..at(i) + HEAD];
                    s.scores.clear();
                    s.scores
                        .extend((0..len).map(|j| dot(q, &s.k[at(j)..at(j) + HEAD]) * scale));
                    softmax(&mut s.scores);
                    let out = &mut s.context[at(i)..at(i) + HEAD];
                    for (j, p) in s.scores.iter().enumerate() {
                        for (o, v) in out.iter_mut().zip(&s.v[at(j)..at(j) + HEAD]) {
                            *o += p * v;
                        }
                    }
                }
            }
        }
        self.attention_out.apply(&s.context, rows, &mut s.projected);
        add(x, &s.projected);
        self.attention_norm.apply(x);
        self.intermediate.apply(x, rows, &mut s.wide);
        s.wide.iter_mut().for_each(|v| *v = gelu(*v));
        self.output.apply(&s.wide, rows, &mut s.projected);
        add(x, &s.projected);
        self.output_norm.apply(x);
    }
}

impl Linear {
    /// `out = x Wᵀ + b` for `rows` rows of `x`.
    fn apply(&self, x: &[f32], rows: usize, out: &mut Vec<f32>) {
        out.clear();
        for _ in 0..rows {
            out.extend_from_slice(&self.bias);
        }
        matmul_transposed(x, &self.weight, out, rows, self.inputs, self.outputs);
    }
}

impl LayerNorm {
    fn apply(&self, x: &mut [f32]) {
        for row in x.chunks_exact_mut(HIDDEN) {
            let n = HIDDEN as f32;
            let mean = row.iter().sum::<f32>() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let inv = 1.0 / (var + LAYER_NORM_EPS).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gain).zip(&self.bias) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

/// `c += a · bᵀ`, where `a` is `m × k`, `b` is `n × k` and `c` is `m × n`,
/// all row-major.
pub(crate) fn matmul_transposed(a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    assert!(
        a.len() >= m * k && b.len() >= n * k && c.len() >= m * n,
        "matrix shapes"
    );
    let (k_i, n_i) = (k as isize, n as isize);
    #[allow(
        unsafe_code,
        reason = "matrixmultiply's sgemm takes raw pointers and strides; the assert above \
                  proves every index it touches is inside the three slices"
    )]
    // SAFETY: `a` is m×k with strides (k, 1), `b` is read as k×n with
    // strides (1, k) (that is, `b` transposed), `c` is m×n with strides
    // (n, 1); the assert bounds all three, and `c` does not alias them.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k_i,
            1,
            b.as_ptr(),
            1,
            k_i,
            1.0,
            c.as_mut_ptr(),
            n_i,
            1,
        );
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

fn softmax(v: &mut [f32]) {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for x in v.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    v.iter_mut().for_each(|x| *x /= sum);
}

/// BERT's exact GELU, `x Φ(x)`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7),
/// computed in f64.
fn erf(x: f32) -> f32 {
    let x = f64::from(x);
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let y = 1.0 - poly * (-x * x).exp();
    (if x < 0.0 { -y } else { y }) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, expected) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-1.0, -0.842_700_8),
            (2.0, 0.995_322_3),
        ] {
            assert!((erf(x) - expected).abs() < 1e-6, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn matmul_transposed_accumulates_a_times_b_transposed() {
        // a: 2×3, b: 2×3 (so bᵀ is 3×2), c starts at 1.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        let mut c = [1.0; 4];
        matmul_transposed(&a, &b, &mut c, 2, 3, 2);
        assert_eq!(c, [5.0, 3.0, 11.0, 6.0]);
    }

    #[test]
    fn softmax_sums_to_one_and_survives_large_inputs() {
        let mut v = [1000.0, 1000.0, f32::NEG_INFINITY];
        softmax(&mut v);
        assert_eq!(v, [0.5, 0.5, 0.0]);
    }

    #[test]
    fn a_file_that_is_not_safetensors_is_refused() {
        let error = Bert::from_safetensors(b"not a model").unwrap_err();
        assert!(error.to_string().contains("model.safetensors"), "{error}");
    }
}
