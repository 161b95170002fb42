//! The [`Similarity`] trait: how every metric and every embedding model is used.

use ndarray::Array2;
use rayon::prelude::*;

use crate::Result;

/// A similarity between two texts, higher meaning more similar.
///
/// The first argument is the *reference* (the source document, the corpus side) and the second the
/// *candidate* (the summary, the perturbed copy, the query). Symmetric measures ignore the
/// distinction; asymmetric ones (BM25: the reference is the one-document corpus, the candidate the
/// query) say so in [`Similarity::is_symmetric`].
///
/// Only [`Similarity::name`] and [`Similarity::score`] are required. The batch methods have
/// correct defaults built on `score`; implementations override them where a batch can be done
/// better — an embedding model embeds each distinct text once per call, BM25 normalises over the
/// batch. Tasks always call the widest batch method that fits their shape, so the implementation
/// sees as much of the work at once as possible.
pub trait Similarity: Send + Sync {
    /// A stable, human-readable name used in reports and result paths (`levenshtein`,
    /// `all-MiniLM-L6-v2`, ...).
    fn name(&self) -> &str;

    /// Similarity of one pair.
    fn score(&self, reference: &str, candidate: &str) -> Result<f32>;

    /// Similarity of every `(reference, candidate)` pair, in input order.
    ///
    /// Scores of batch-normalised measures (BM25) depend on the whole batch: callers that compare
    /// scores with each other should score them in one call.
    fn score_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        pairs.par_iter().map(|(a, b)| self.score(a, b)).collect()
    }

    /// Similarity of one reference against many candidates: `out[j] = sim(reference, candidates[j])`.
    fn score_one_to_many(&self, reference: &str, candidates: &[&str]) -> Result<Vec<f32>> {
        let pairs: Vec<(&str, &str)> = candidates.iter().map(|c| (reference, *c)).collect();
        self.score_pairs(&pairs)
    }

    /// The full matrix `out[[i, j]] = sim(references[i], candidates[j])`, in one batch.
    fn score_matrix(&self, references: &[&str], candidates: &[&str]) -> Result<Array2<f32>> {
        let pairs: Vec<(&str, &str)> = references
            .iter()
            .flat_map(|r| candidates.iter().map(move |c| (*r, *c)))
            .collect();
        let flat = self.score_pairs(&pairs)?;
        Ok(
            Array2::from_shape_vec((references.len(), candidates.len()), flat)
                .expect("score_pairs returns one score per pair"),
        )
    }

    /// Scores of every pair that stay comparable *across calls*, for ranking a large candidate
    /// set in chunks (retrieval): any strictly increasing function of the measure will do.
    /// Measures normalised over their batch (BM25's min–max) return their raw scores here, since
    /// a per-chunk normalisation would rank chunks against each other arbitrarily; everything
    /// else returns [`Similarity::score_pairs`].
    ///
    /// Each pair is `(document, query)`: embedding models embed the first in their document role
    /// and the second in their query role ([`crate::Role`]).
    fn score_pairs_for_ranking(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        self.score_pairs(pairs)
    }

    /// Whether `score(a, b) == score(b, a)` for every pair (lets clustering score half the matrix).
    fn is_symmetric(&self) -> bool {
        true
    }
}

impl<S: Similarity + ?Sized> Similarity for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn score(&self, reference: &str, candidate: &str) -> Result<f32> {
        (**self).score(reference, candidate)
    }
    fn score_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        (**self).score_pairs(pairs)
    }
    fn score_one_to_many(&self, reference: &str, candidates: &[&str]) -> Result<Vec<f32>> {
        (**self).score_one_to_many(reference, candidates)
    }
    fn score_matrix(&self, references: &[&str], candidates: &[&str]) -> Result<Array2<f32>> {
        (**self).score_matrix(references, candidates)
    }
    fn score_pairs_for_ranking(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        (**self).score_pairs_for_ranking(pairs)
    }
    fn is_symmetric(&self) -> bool {
        (**self).is_symmetric()
    }
}
