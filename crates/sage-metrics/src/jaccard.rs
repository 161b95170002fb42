//! Jaccard similarity of cl100k token-id sets.

use sage_core::{Result, Similarity};

use crate::tokens::{cl100k, multiset_intersection, score_token_pairs, sorted, TokenPairMetric};

/// `|A ∩ B| / |A ∪ B|` over the *sets* of cl100k token ids of the two texts, as SAGE's
/// `len(set(a) & set(b)) / len(set(a) | set(b))`; 1 when both texts are empty (Python divides by
/// zero there).
#[derive(Clone, Copy, Debug, Default)]
pub struct Jaccard;

impl TokenPairMetric for Jaccard {
    type Prepared = Vec<u32>;

    fn prepare(&self, tokens: Vec<u32>) -> Vec<u32> {
        let mut set = sorted(tokens);
        set.dedup();
        set
    }

    fn compare(&self, a: &Vec<u32>, b: &Vec<u32>) -> f64 {
        let common = multiset_intersection(a, b);
        let union = a.len() + b.len() - common;
        if union == 0 {
            1.0
        } else {
            common as f64 / union as f64
        }
    }
}

impl Similarity for Jaccard {
    fn name(&self) -> &str {
        "jaccard"
    }

    fn score(&self, reference: &str, candidate: &str) -> Result<f32> {
        Ok(self.compare(
            &self.prepare(cl100k(reference)),
            &self.prepare(cl100k(candidate)),
        ) as f32)
    }

    fn score_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        Ok(score_token_pairs(self, pairs)?
            .into_iter()
            .map(|s| s as f32)
            .collect())
    }
}
