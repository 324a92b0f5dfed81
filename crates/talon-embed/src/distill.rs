//! Distilling the static table from the encoder, as model2vec does: every
//! vocabulary token goes through the model once (`[CLS] token [SEP]`, mean
//! pooled), the vectors are reduced to [`DIM`] dimensions by PCA, and each
//! row is weighted by SIF with frequencies estimated from its rank by
//! Zipf's law (BERT's vocabulary is roughly in frequency order). Without
//! that weighting every sentence's mean points the same way.
//!
//! Deterministic: the same model gives the same table on any machine with
//! the same float semantics (the work is split by rows, never reduced
//! across threads).

use crate::bert::{Bert, HIDDEN, matmul_transposed};
use crate::error::{EmbedError, Result};
use crate::table::StaticTable;
use crate::tokenizer::WordPiece;

/// Width of the table's vectors.
pub const DIM: usize = 256;
/// SIF's smoothing constant (model2vec's default).
const SIF_COEFFICIENT: f64 = 1e-4;

/// How to run the distillation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DistillOptions {
    /// Worker threads (`0`: one per available core).
    pub threads: usize,
    /// Tokens encoded per forward pass.
    pub batch: usize,
}

impl Default for DistillOptions {
    fn default() -> Self {
        Self {
            threads: 0,
            batch: 256,
        }
    }
}

/// Builds the static table of `tokenizer`'s vocabulary from `bert`.
/// Tokens that never come out of the tokenizer (BERT's `[unused…]` slots)
/// get a zero vector and take no part in the PCA.
pub fn distill(bert: &Bert, tokenizer: &WordPiece, options: DistillOptions) -> Result<StaticTable> {
    let vocab = tokenizer.len();
    if bert.vocab() != vocab {
        return Err(EmbedError::invalid(format!(
            "the model knows {} tokens, the tokenizer {vocab}",
            bert.vocab()
        )));
    }
    let used: Vec<bool> = tokenizer
        .tokens()
        .iter()
        .map(|t| !t.starts_with("[unused"))
        .collect();
    let raw = encode_vocabulary(bert, tokenizer, &used, options)?;
    let projected = pca(&raw, &used, vocab)?;
    let mut vectors = Vec::with_capacity(vocab * DIM);
    let weights = sif_weights(vocab);
    for (id, row) in projected.chunks_exact(DIM).enumerate() {
        let w = if used[id] { weights[id] } else { 0.0 };
        vectors.extend(row.iter().map(|v| half::f16::from_f64(v * w)));
    }
    StaticTable::new(tokenizer.clone(), DIM, vectors)
}

/// Every token's pooled vector, `vocab × HIDDEN`, computed by `threads`
/// workers over contiguous ranges of ids.
fn encode_vocabulary(
    bert: &Bert,
    tokenizer: &WordPiece,
    used: &[bool],
    options: DistillOptions,
) -> Result<Vec<f32>> {
    let vocab = tokenizer.len();
    let threads = match options.threads {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    }
    .min(vocab)
    .max(1);
    let batch = options.batch.max(1);
    let mut raw = vec![0.0f32; vocab * HIDDEN];
    let per_thread = vocab.div_ceil(threads);
    let (cls, sep) = (tokenizer.cls(), tokenizer.sep());
    std::thread::scope(|scope| {
        let workers: Vec<_> = raw
            .chunks_mut(per_thread * HIDDEN)
            .enumerate()
            .map(|(t, out)| {
                let first = t * per_thread;
                scope.spawn(move || -> Result<()> {
                    let rows = out.len() / HIDDEN;
                    for start in (0..rows).step_by(batch) {
                        let end = (start + batch).min(rows);
                        let ids: Vec<usize> = (first + start..first + end)
                            .filter(|&id| used[id])
                            .collect();
                        let sequences: Vec<[u32; 3]> =
                            ids.iter().map(|&id| [cls, id as u32, sep]).collect();
                        let refs: Vec<&[u32]> = sequences.iter().map(|s| s.as_slice()).collect();
                        let pooled = bert.pooled(&refs)?;
                        for (id, vector) in ids.iter().zip(pooled) {
                            let at = (id - first) * HIDDEN;
                            out[at..at + HIDDEN].copy_from_slice(&vector);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .map_err(|_| EmbedError::invalid("a distillation worker panicked"))?
        })
    })?;
    Ok(raw)
}

/// Centres the used rows and projects every row onto the [`DIM`]
/// principal axes of the used rows: `vocab × DIM`, in f64.
fn pca(raw: &[f32], used: &[bool], vocab: usize) -> Result<Vec<f64>> {
    let kept = used.iter().filter(|u| **u).count();
    if kept <= DIM {
        return Err(EmbedError::invalid(format!(
            "{kept} usable tokens: too few for {DIM} principal components"
        )));
    }
    let mut mean = [0.0f64; HIDDEN];
    for (row, _) in raw.chunks_exact(HIDDEN).zip(used).filter(|(_, u)| **u) {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += f64::from(*v);
        }
    }
    mean.iter_mut().for_each(|m| *m /= kept as f64);

    // The centred used rows, transposed (HIDDEN × kept), so that the
    // covariance is one product of it with itself.
    let mut centred_t = vec![0.0f32; HIDDEN * kept];
    for (col, (row, _)) in raw
        .chunks_exact(HIDDEN)
        .zip(used)
        .filter(|(_, u)| **u)
        .enumerate()
    {
        for (d, v) in row.iter().enumerate() {
            centred_t[d * kept + col] = (f64::from(*v) - mean[d]) as f32;
        }
    }
    let mut covariance = vec![0.0f32; HIDDEN * HIDDEN];
    matmul_transposed(
        &centred_t,
        &centred_t,
        &mut covariance,
        HIDDEN,
        kept,
        HIDDEN,
    );
    let covariance: Vec<f64> = covariance
        .iter()
        .map(|c| f64::from(*c) / kept as f64)
        .collect();
    let axes = top_eigenvectors(covariance, HIDDEN, DIM);

    let mut projected = vec![0.0f64; vocab * DIM];
    for (row, out) in raw
        .chunks_exact(HIDDEN)
        .zip(projected.chunks_exact_mut(DIM))
    {
        for (axis, o) in axes.chunks_exact(HIDDEN).zip(out.iter_mut()) {
            *o = row
                .iter()
                .zip(&mean)
                .zip(axis)
                .map(|((v, m), a)| (f64::from(*v) - m) * a)
                .sum();
        }
    }
    Ok(projected)
}

/// The `k` eigenvectors of the symmetric `n × n` matrix `a` with the
/// largest eigenvalues, as rows (`k × n`), each signed so that its first
/// component of the largest magnitude is positive. Cyclic Jacobi rotations.
fn top_eigenvectors(mut a: Vec<f64>, n: usize, k: usize) -> Vec<f64> {
    let mut v = vec![0.0f64; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let total: f64 = a.iter().map(|x| x * x).sum();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j] * a[i * n + j])
            .sum();
        if off <= total * 1e-22 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                // `signum` of 0 is 1: a 45° rotation.
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for r in 0..n {
                    let (arp, arq) = (a[r * n + p], a[r * n + q]);
                    a[r * n + p] = c * arp - s * arq;
                    a[r * n + q] = s * arp + c * arq;
                }
                for r in 0..n {
                    let (apr, aqr) = (a[p * n + r], a[q * n + r]);
                    a[p * n + r] = c * apr - s * aqr;
                    a[q * n + r] = s * apr + c * aqr;
                }
                for r in 0..n {
                    let (vrp, vrq) = (v[r * n + p], v[r * n + q]);
                    v[r * n + p] = c * vrp - s * vrq;
                    v[r * n + q] = s * vrp + c * vrq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| a[j * n + j].total_cmp(&a[i * n + i]).then(i.cmp(&j)));
    let mut rows = Vec::with_capacity(k * n);
    for &col in order.iter().take(k) {
        let mut axis: Vec<f64> = (0..n).map(|r| v[r * n + col]).collect();
        // The first component of the largest magnitude decides the sign.
        let largest = axis.iter().copied().fold(0.0f64, |best, x| {
            if x.abs() > best.abs() + 1e-12 {
                x
            } else {
                best
            }
        });
        if largest < 0.0 {
            axis.iter_mut().for_each(|x| *x = -*x);
        }
        rows.extend(axis);
    }
    rows
}

/// SIF weights `a / (a + p(rank))` with `p` Zipf's law over ranks 1..=n
/// (token id `i` has rank `i + 1`).
fn sif_weights(n: usize) -> Vec<f64> {
    let inv: Vec<f64> = (0..n).map(|i| 1.0 / (i as f64 + 2.0)).collect();
    let sum: f64 = inv.iter().sum();
    inv.iter()
        .map(|x| SIF_COEFFICIENT / (SIF_COEFFICIENT + x / sum))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eigenvectors_of_a_known_matrix() {
        // Eigenvalues 3 (axis (1,1)/√2) and 1 (axis (1,-1)/√2), plus 0.5.
        let a = vec![2.0, 1.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.5];
        let rows = top_eigenvectors(a, 3, 2);
        let h = std::f64::consts::FRAC_1_SQRT_2;
        let expected = [h, h, 0.0, h, -h, 0.0];
        for (got, want) in rows.iter().zip(expected) {
            assert!((got - want).abs() < 1e-9, "{rows:?}");
        }
    }

    #[test]
    fn sif_weights_grow_with_rank() {
        let w = sif_weights(30_522);
        assert!(w[0] < w[100] && w[100] < w[30_000], "{:?}", &w[..3]);
        assert!(w.iter().all(|x| *x > 0.0 && *x < 1.0));
    }
}
