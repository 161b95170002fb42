//! The rank rule and the scores.

use std::collections::HashMap;

use ndarray::{Array2, Axis};
use rayon::prelude::*;
use sage_core::{normalize_rows, Embedder, Timings, VectorSimilarity};
use sage_measures as measures;
use serde::{Deserialize, Serialize};

use crate::{EvalRankError, PostProcess, Result};

/// EvalRank's summary of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalRankScores {
    /// Mean reciprocal rank ×100.
    pub mrr: f64,
    /// Share of pairs ranked first ×100.
    pub hits_at_1: f64,
    /// Share of pairs ranked in the top 3 ×100.
    pub hits_at_3: f64,
    /// Mean rank.
    pub mean_rank: f64,
    /// Directed pairs evaluated.
    pub pairs: usize,
    /// Background size (distinct texts).
    pub background: usize,
    /// cos or l2.
    pub similarity: String,
    /// Post-processing applied before ranking.
    pub post_processing: String,
}

/// Ranks of the directed pairs `(x, y)` (row indices into `vectors`, which holds the whole
/// background): `1 + #{b ∉ {x, y} : sim(x, b) > sim(x, y)}`. `vectors` must already be
/// prepared (centred, and normalised for cos).
pub fn rank_pairs(
    vectors: &Array2<f32>,
    pairs: &[(usize, usize)],
    similarity: VectorSimilarity,
) -> Vec<usize> {
    // group pairs by pivot so each pivot row is computed once
    let mut by_pivot: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, &(x, _)) in pairs.iter().enumerate() {
        by_pivot.entry(x).or_default().push(i);
    }
    let mut pivots: Vec<usize> = by_pivot.keys().copied().collect();
    pivots.sort_unstable();
    let squared_norms: Vec<f32> = vectors.rows().into_iter().map(|r| r.dot(&r)).collect();
    let mut ranks = vec![0usize; pairs.len()];
    for block in pivots.chunks(256) {
        let pivot_rows = vectors.select(Axis(0), block);
        // one matrix product per block: [block, background]
        let dots = pivot_rows.dot(&vectors.t());
        let results: Vec<(usize, usize)> = block
            .par_iter()
            .enumerate()
            .flat_map_iter(|(bi, &x)| {
                let row = dots.row(bi);
                // sim for every background item, as a monotone score: cos = dot; l2 = -distance²
                let score = |b: usize| -> f32 {
                    match similarity {
                        VectorSimilarity::Cosine => row[b],
                        VectorSimilarity::L2 => {
                            -(squared_norms[x] + squared_norms[b] - 2.0 * row[b]).max(0.0)
                        }
                    }
                };
                let scores: Vec<f32> = (0..vectors.nrows()).map(score).collect();
                by_pivot[&x]
                    .iter()
                    .map(|&pair| {
                        let y = pairs[pair].1;
                        let target = scores[y];
                        let above = scores
                            .iter()
                            .enumerate()
                            .filter(|&(b, &s)| b != x && b != y && s > target)
                            .count();
                        (pair, 1 + above)
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        for (pair, rank) in results {
            ranks[pair] = rank;
        }
    }
    ranks
}

/// Embeds `background` (every pair text must be in it), prepares the vectors and scores the
/// directed `pairs`.
pub fn evaluate(
    embedder: &dyn Embedder,
    pairs: &[(String, String)],
    background: &[String],
    similarity: VectorSimilarity,
    post: PostProcess,
    timings: &mut Timings,
) -> Result<EvalRankScores> {
    if pairs.is_empty() || background.is_empty() {
        return Err(EvalRankError::Invalid(
            "EvalRank needs pairs and a background".into(),
        ));
    }
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(background.len());
    let mut distinct: Vec<&str> = Vec::with_capacity(background.len());
    for text in background {
        index.entry(text.as_str()).or_insert_with(|| {
            distinct.push(text);
            distinct.len() - 1
        });
    }
    let pair_rows = pairs
        .iter()
        .map(
            |(x, y)| match (index.get(x.as_str()), index.get(y.as_str())) {
                (Some(&a), Some(&b)) => Ok((a, b)),
                _ => Err(EvalRankError::Invalid(format!(
                    "pair ({x:?}, {y:?}) is not in the background"
                ))),
            },
        )
        .collect::<Result<Vec<_>>>()?;
    let vectors = timings.time("evalrank/embed", || embedder.embed(&distinct))?;
    let ranks = timings.time("evalrank/rank", || {
        let mut vectors = post.apply(vectors);
        let mean = vectors.mean_axis(Axis(0)).expect("non-empty background");
        vectors -= &mean;
        if similarity == VectorSimilarity::Cosine {
            normalize_rows(&mut vectors);
        }
        rank_pairs(&vectors, &pair_rows, similarity)
    });
    let as_f64: Vec<f64> = ranks.iter().map(|&r| r as f64).collect();
    Ok(EvalRankScores {
        mrr: 100.0 * measures::mean_reciprocal_rank(&ranks)?,
        hits_at_1: 100.0 * measures::hits_at_k(&ranks, 1)?,
        hits_at_3: 100.0 * measures::hits_at_k(&ranks, 3)?,
        mean_rank: measures::mean(&as_f64)?,
        pairs: pairs.len(),
        background: distinct.len(),
        similarity: similarity.name().to_owned(),
        post_processing: post.name(),
    })
}

#[cfg(test)]
mod tests {
    use ndarray::array;

    use super::*;

    #[test]
    fn rank_rule_excludes_pivot_and_target_and_favours_ties() {
        // rows: 0 pivot, 1 positive, 2 tie with the positive, 3 above, 4 below
        let v = array![
            [1.0f32, 0.0],
            [0.8, 0.6],
            [0.8, -0.6],
            [0.96, 0.28],
            [0.0, 1.0]
        ];
        // sim(0, ·) = [1, .8, .8, .96, 0]: only row 3 is strictly above the positive
        assert_eq!(rank_pairs(&v, &[(0, 1)], VectorSimilarity::Cosine), vec![2]);
        // the reverse direction: pivot 1
        // sim(1, ·) = [.8, 1, .28, .936, .6]: row 3 (.936) is above sim(1, 0) = .8
        assert_eq!(rank_pairs(&v, &[(1, 0)], VectorSimilarity::Cosine), vec![2]);
        // a positive identical to the best item ranks first
        assert_eq!(rank_pairs(&v, &[(0, 3)], VectorSimilarity::Cosine), vec![1]);
        // l2 on the same vectors: distances from 0: [0, .632, .632, .283, 1.414]
        assert_eq!(
            rank_pairs(&v, &[(0, 1), (0, 4)], VectorSimilarity::L2),
            vec![2, 4]
        );
    }

    #[test]
    fn many_pivots_span_blocks() {
        let n = 600;
        let v = Array2::from_shape_fn((n, 3), |(i, j)| ((i * 7 + j * 13) % 17) as f32 - 8.0);
        let pairs: Vec<(usize, usize)> = (0..n - 1).map(|i| (i, i + 1)).collect();
        let fast = rank_pairs(&v, &pairs, VectorSimilarity::Cosine);
        for (k, &(x, y)) in pairs.iter().enumerate().step_by(37) {
            let target = v.row(x).dot(&v.row(y));
            let above = (0..n)
                .filter(|&b| b != x && b != y && v.row(x).dot(&v.row(b)) > target)
                .count();
            assert_eq!(fast[k], 1 + above);
        }
    }
}
